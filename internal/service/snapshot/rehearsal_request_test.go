package snapshot

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestRehearseRequestVersion(t *testing.T) {
	for value, want := range map[string]string{
		"2.4.1":                   "2.4.1",
		"v2.4.1":                  "2.4.1",
		"2.4.1+1764633600-3fa9c2": "2.4.1",
		"2.5.0-beta1+again":       "2.5.0-beta1",
		"now":                     "now",
	} {
		if got := RehearseRequestVersion(value); got != want {
			t.Errorf("RehearseRequestVersion(%q) = %q, want %q", value, got, want)
		}
	}
}

func TestDecideRehearse(t *testing.T) {
	tests := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		value  string
		accept bool
		text   string
	}{
		{reason: "a later version, with a token", c: servingCluster(), value: "2.4.1+1", accept: true,
			text: "Rehearsing the upgrade of bao from 2.4.0 to 2.4.1 (the default image of 2.4.1) on a copy restored from " + inPlaceLoc},
		{reason: "queued behind the operation that holds the lock",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationSnapshot, Message: "taking a snapshot"}
			}),
			value: "2.4.1", accept: true, text: "queued after the operation in progress (Snapshot"},
		{reason: "spec.image tagged with the version: the same repository at the target",
			c:     servingCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Image = "registry.example:5000/mirror/openbao:2.4.0" }),
			value: "2.4.1", accept: true, text: "(registry.example:5000/mirror/openbao:2.4.1)"},
		{reason: "not a version", c: servingCluster(), value: "now", text: `"now" is not a version`},
		{reason: "the version the cluster runs", c: servingCluster(), value: "2.4.0+1", text: "the cluster runs 2.4.0: rehearse a later version"},
		{reason: "an older version", c: servingCluster(), value: "2.3.9", text: "rehearse a later version"},
		{reason: "during an upgrade",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1"}
			}),
			value: "2.4.1", text: "set spec.upgrade.rehearsal to Required"},
		{reason: "while another requested rehearsal runs",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.Rehearsal = &baov1.RehearsalStatus{TargetVersion: "2.4.1", Request: "2.4.1+1", Step: baov1.RehearsalStepUpgrade}
			}),
			value: "2.4.2", text: "the rehearsal of the upgrade to 2.4.1 (baokeeper.dev/rehearse=2.4.1+1) is at step Upgrade"},
		{reason: "after one that ended, the same version again",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.Rehearsal = &baov1.RehearsalStatus{TargetVersion: "2.4.1", Request: "2.4.1+1", Step: baov1.RehearsalStepDone}
			}),
			value: "2.4.1+2", accept: true},
		{reason: "without a verified snapshot", c: servingCluster(func(c *baov1.OpenBaoCluster) { c.Status.Snapshots, c.Status.LastSnapshot = nil, nil }),
			value: "2.4.1", text: "take one first (kubectl bao snapshot bao -n ns --wait)"},
		{reason: "while break-glass is active",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost}
			}),
			value: "2.4.1", text: "acknowledge it first"},
		{reason: "before the cluster reported its version",
			c: servingCluster(func(c *baov1.OpenBaoCluster) { c.Status.CurrentVersion = "" }), value: "2.4.1", text: "status.currentVersion"},
		{reason: "a bucket the spec no longer names",
			c:     servingCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Snapshots.S3.Bucket = "other" }),
			value: "2.4.1", text: "name that bucket in spec.snapshots.s3 again"},
		{reason: "spec.image pinned by digest names no image for the target",
			c:     servingCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Image = "ghcr.io/openbao/openbao@sha256:" + inPlaceSHA }),
			value: "2.4.1", text: "spec.image pins a digest"},
		{reason: "spec.image tagged otherwise than spec.version names no image for the target",
			c:     servingCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Image = "ghcr.io/openbao/openbao:latest" }),
			value: "2.4.1", text: "is not tagged with spec.version"},
		{reason: "a cluster that still restores its bootstrap snapshot",
			c:     servingCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Bootstrap = &baov1.BootstrapSpec{} }),
			value: "2.4.1", text: "still restoring spec.bootstrap.fromSnapshot"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			before := tt.c.DeepCopy()
			d := DecideRehearse(tt.c, tt.value)
			g.Expect(tt.c).To(Equal(before), "deciding changes nothing")
			g.Expect(d.Accept).To(Equal(tt.accept), d.Message)
			g.Expect(d.Message).To(ContainSubstring(tt.text))
			if !tt.accept {
				g.Expect(d.Message).To(HavePrefix(baov1.AnnotationRehearse+"="+tt.value+" refused: "), "the refusal names the annotation and its value")
				g.Expect(d.Message).To(HaveSuffix("; nothing was done"))
			}
		})
	}
}

func TestRehearsalImage(t *testing.T) {
	tests := []struct {
		image, version, target string
		want                   string
		err                    string
	}{
		{version: "2.4.0", target: "2.4.1", want: ""},
		{image: "registry.example:5000/openbao:2.4.0", version: "2.4.0", target: "2.4.1", want: "registry.example:5000/openbao:2.4.1"},
		{image: "openbao:v2.4.0", version: "2.4.0", target: "2.4.1", want: "openbao:v2.4.1"},
		{image: "registry.example:5000/openbao", version: "2.4.0", target: "2.4.1", err: "is not tagged with spec.version"},
		{image: "openbao:2.3.0", version: "2.4.0", target: "2.4.1", err: "is not tagged with spec.version"},
		{image: "openbao@sha256:" + inPlaceSHA, version: "2.4.0", target: "2.4.1", err: "pins a digest"},
	}
	for _, tt := range tests {
		t.Run(tt.image+" to "+tt.target, func(t *testing.T) {
			g := NewWithT(t)
			c := servingCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Image, c.Spec.Version = tt.image, tt.version })
			got, err := RehearsalImage(c, tt.target)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// requested is servingCluster with an accepted rehearsal of 2.4.1 (value 2.4.1+1).
func requested(mut ...func(*baov1.RehearsalStatus)) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		RequestRehearsal(c, &c.Status, "2.4.1+1")
		for _, m := range mut {
			m(c.Status.Rehearsal)
		}
	}
}

func TestRequestRehearsal(t *testing.T) {
	g := NewWithT(t)
	c := servingCluster(requested())
	g.Expect(c.Status.Rehearsal).To(Equal(&baov1.RehearsalStatus{Request: "2.4.1+1", FromVersion: "2.4.0", TargetVersion: "2.4.1",
		Cluster: "bao-rehearsal", Step: baov1.RehearsalStepCreate, WaitingFor: "waiting for the operation lock"}))
	g.Expect(RehearsalRunning(&c.Status)).To(BeTrue())
	g.Expect(ActiveRehearsal(&c.Status)).To(BeNil(), "no copy exists before it holds the lock")

	d := servingCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Image = "openbao@sha256:" + inPlaceSHA })
	RequestRehearsal(d, &d.Status, "2.4.1")
	g.Expect(d.Status.Rehearsal).To(BeNil(), "a request DecideRehearse refuses records nothing")
}

func TestRehearsalOperation(t *testing.T) {
	now := t0.Add(5 * time.Minute)
	started := func(r *baov1.RehearsalStatus) {
		r.ID, r.Snapshot, r.SHA256, r.StartedAt = "r1r1r1r1", inPlaceLoc, inPlaceSHA, &metav1.Time{Time: t0}
	}
	held := func(c *baov1.OpenBaoCluster) {
		c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRehearsal, Holder: operation.HolderUpgradeManager}
	}
	at := func(step baov1.RehearsalStep) func(*baov1.RehearsalStatus) {
		return func(r *baov1.RehearsalStatus) { r.Step = step }
	}
	tests := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		copy   *baov1.OpenBaoCluster

		wantKind   operation.Kind
		wantObject operation.Object
		wantStep   baov1.RehearsalStep
		wantLock   bool
		wantResult baov1.DrillOutcome
		wantEvent  baov1.Reason
		wantText   string
	}{
		{reason: "accepted: it takes the lock, the newest receipt and its ID before anything",
			c: servingCluster(requested()), wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepCreate, wantLock: true, wantEvent: EventRehearsalStarted,
			wantText: "Rehearsing the upgrade from 2.4.0 to 2.4.1 on bao-rehearsal, restored from " + inPlaceLoc},
		{reason: "accepted while another operation holds the lock: it waits and says so",
			c: servingCluster(requested(), func(c *baov1.OpenBaoCluster) {
				c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationScaling, Holder: operation.HolderUpgradeManager}
			}),
			wantKind: operation.KindWait, wantStep: baov1.RehearsalStepCreate, wantText: "the rehearsal waits"},
		{reason: "the copy is created", c: servingCluster(requested(started), held),
			wantKind: operation.KindApply, wantObject: operation.ObjectRehearsalCluster, wantStep: baov1.RehearsalStepCreate, wantLock: true},
		{reason: "the copy upgrades to the requested version", c: servingCluster(requested(started, at(baov1.RehearsalStepUpgrade)), held),
			copy:     rehearsalCopy("r1r1r1r1", restoredCopy),
			wantKind: operation.KindApply, wantObject: operation.ObjectRehearsalVersion, wantStep: baov1.RehearsalStepUpgrade, wantLock: true},
		{reason: "the copy reached the version: passed, the copy deleted next, the lock kept",
			c:        servingCluster(requested(started, at(baov1.RehearsalStepUpgrade)), held),
			copy:     upgradedTo241(),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantLock: true, wantResult: baov1.DrillPassed, wantText: "upgraded from 2.4.0 to 2.4.1"},
		{reason: "the copy is gone after a pass: done, the lock released, and said with how long it counts",
			c: servingCluster(requested(started, at(baov1.RehearsalStepDelete), func(r *baov1.RehearsalStatus) {
				r.Result = &baov1.DrillResult{Outcome: baov1.DrillPassed, Message: "ok", FinishedAt: &metav1.Time{Time: now}}
			}), held),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDone, wantResult: baov1.DrillPassed, wantEvent: EventRehearsalPassed,
			wantText: "an upgrade from 2.4.0 to 2.4.1 within 24h0m0s counts it"},
		{reason: "the copy is gone after a failure: done, the lock released, a Warning that nothing changed",
			c: servingCluster(requested(started, at(baov1.RehearsalStepDelete), func(r *baov1.RehearsalStatus) {
				r.Result = &baov1.DrillResult{Outcome: baov1.DrillFailed, Message: "boom"}
			}), held),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDone, wantResult: baov1.DrillFailed, wantEvent: EventRehearsalFailed,
			wantText: "failed (baokeeper.dev/rehearse=2.4.1+1): boom. Nothing of bao changed"},
		{reason: "one that ended does nothing", c: servingCluster(requested(started, at(baov1.RehearsalStepDone))), wantKind: operation.KindNone},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			s := &operation.Snapshot{Cluster: &operation.Cluster{Now: now, Members: healthyMembers(), AutopilotKnown: true, AutopilotHealthy: true, Leader: "bao-0"},
				Object: tt.c, Jobs: map[string]operation.ObservedJob{}, Rehearsal: tt.copy}
			before := tt.c.DeepCopy()
			p := RehearsalOperation{}.Decide(s)
			g.Expect(tt.c).To(Equal(before), "Decide must not change the snapshot")
			g.Expect(p.Kind).To(Equal(tt.wantKind))
			g.Expect(p.Object).To(Equal(tt.wantObject))
			if tt.wantKind == operation.KindNone {
				return
			}
			r := p.Status.Rehearsal
			g.Expect(r).NotTo(BeNil())
			text := p.WaitingFor + " " + r.WaitingFor
			if tt.wantStep != "" {
				g.Expect(r.Step).To(Equal(tt.wantStep))
			}
			lock := p.Status.OperationLock
			if tt.wantLock {
				g.Expect(lock).NotTo(BeNil())
				g.Expect(lock.Operation).To(Equal(operation.OperationRehearsal))
				g.Expect(r.ID).NotTo(BeEmpty(), "an ID before any object is made")
			} else if lock != nil {
				g.Expect(lock.Operation).NotTo(Equal(operation.OperationRehearsal), "the lock is not held by a rehearsal that waits or ended")
			}
			if tt.wantResult != "" {
				g.Expect(r.Result).NotTo(BeNil())
				g.Expect(r.Result.Outcome).To(Equal(tt.wantResult))
				text += " " + r.Result.Message
			}
			var reasons []baov1.Reason
			for _, ev := range p.Events {
				reasons = append(reasons, ev.Reason)
				text += " " + ev.Message
			}
			if tt.wantEvent != "" {
				g.Expect(reasons).To(ContainElement(tt.wantEvent))
			}
			g.Expect(text).To(ContainSubstring(tt.wantText))
		})
	}
}

func TestRehearsalPrecheckCountsARequestedRehearsal(t *testing.T) {
	now := t0.Add(time.Hour)
	passed := func(from, to string, finished time.Time) func(*baov1.OpenBaoCluster) {
		return func(c *baov1.OpenBaoCluster) {
			c.Status.Rehearsal = &baov1.RehearsalStatus{Request: to + "+1", FromVersion: from, TargetVersion: to, Cluster: "bao-rehearsal", Snapshot: inPlaceLoc,
				Step: baov1.RehearsalStepDone, Result: &baov1.DrillResult{Outcome: baov1.DrillPassed, Message: "ok", FinishedAt: &metav1.Time{Time: finished}}}
		}
	}
	tests := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		want   baov1.PrecheckResult
		text   string
	}{
		{reason: "passed for the same two versions an hour ago: passed", c: rehearsing(passed("2.4.0", "2.4.1", t0)), want: baov1.PrecheckPassed,
			text: "rehearsed on request (baokeeper.dev/rehearse=2.4.1+1"},
		{reason: "the same versions written with a v: passed", c: rehearsing(passed("v2.4.0", "v2.4.1", t0)), want: baov1.PrecheckPassed},
		{reason: "passed more than a day ago: rehearsed again", c: rehearsing(passed("2.4.0", "2.4.1", now.Add(-25*time.Hour))), want: baov1.PrecheckPending},
		{reason: "passed for another target: rehearsed again", c: rehearsing(passed("2.4.0", "2.4.2", t0)), want: baov1.PrecheckPending},
		{reason: "passed from another version: rehearsed again", c: rehearsing(passed("2.3.9", "2.4.1", t0)), want: baov1.PrecheckPending},
		{reason: "failed: rehearsed again", c: rehearsing(passed("2.4.0", "2.4.1", t0), func(c *baov1.OpenBaoCluster) {
			c.Status.Rehearsal.Result.Outcome = baov1.DrillFailed
		}), want: baov1.PrecheckPending},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			pc := RehearsalPrecheck(tt.c, tt.c.Status.Upgrade, now)
			g.Expect(pc.Result).To(Equal(tt.want), pc.Message)
			g.Expect(pc.Message).To(ContainSubstring(tt.text))
		})
	}
}
