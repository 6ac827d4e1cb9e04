package snapshot

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// rehearsing is the drill source with an upgrade to 2.4.1 that has not started,
// rehearsal Required.
func rehearsing(mut ...func(*baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
	return drillSource(append([]func(*baov1.OpenBaoCluster){func(c *baov1.OpenBaoCluster) {
		c.Spec.Version = "2.4.1"
		c.Spec.Upgrade.Rehearsal = baov1.RehearsalRequired
		c.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1"}
	}}, mut...)...)
}

func rehearsalAt(step baov1.RehearsalStep, mut ...func(*baov1.RehearsalStatus)) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		r := &baov1.RehearsalStatus{ID: "r1r1r1r1", Cluster: "bao-rehearsal", Snapshot: "s3://snaps/p/ns/bao/requested-2.4.0-x-1.snap", SHA256: restoreSHA,
			TargetVersion: "2.4.1", Step: step, StartedAt: &metav1.Time{Time: t0}}
		for _, m := range mut {
			m(r)
		}
		c.Status.Upgrade.Rehearsal = r
	}
}

// rehearsalCopy is the copy as observed.
func rehearsalCopy(id string, mut ...func(*baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
	d := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao-rehearsal", Namespace: "ns", Labels: map[string]string{LabelRehearsalOf: "bao", LabelRehearsalID: id}}}
	d.Spec.Version = "2.4.0"
	d.Spec.Bootstrap = &baov1.BootstrapSpec{}
	for _, m := range mut {
		m(d)
	}
	return d
}

// upgradedTo241 is a copy that restored and then reached 2.4.1.
func upgradedTo241(mut ...func(*baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
	return rehearsalCopy("r1r1r1r1", append([]func(*baov1.OpenBaoCluster){restoredCopy, func(d *baov1.OpenBaoCluster) {
		d.Spec.Version, d.Status.CurrentVersion = "2.4.1", "2.4.1"
	}}, mut...)...)
}

// withCanary records canary in the rehearsed snapshot's receipt.
func withCanary(canary string) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Taken[0].Canary = canary }
}

func restoredCopy(d *baov1.OpenBaoCluster) {
	d.Status.Restore = &baov1.RestoreStatus{Step: baov1.RestoreStepDone, RaftIndex: 50}
	d.Status.Phase, d.Status.CurrentVersion = baov1.PhaseRunning, "2.4.0"
}

func TestRehearse(t *testing.T) {
	now := t0.Add(5 * time.Minute)
	tests := []struct {
		reason     string
		c          *baov1.OpenBaoCluster
		copy       *baov1.OpenBaoCluster
		canary     *operation.CanaryRead
		wantKind   operation.Kind
		wantObject operation.Object
		wantStep   baov1.RehearsalStep
		wantResult baov1.DrillOutcome
		wantEvent  baov1.Reason
		wantText   string
	}{
		{reason: "a rehearsal starts from the newest receipt, recorded before anything",
			c: rehearsing(), wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepCreate, wantEvent: EventRehearsalStarted},
		{reason: "without a verified snapshot it waits, saying how to take one",
			c:        rehearsing(func(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Taken = nil }),
			wantKind: operation.KindWait, wantText: "kubectl bao snapshot bao --wait"},
		{reason: "a rehearsal of another target starts again for this one",
			c:        rehearsing(rehearsalAt(baov1.RehearsalStepDone, func(r *baov1.RehearsalStatus) { r.TargetVersion = "2.4.2" })),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepCreate, wantEvent: EventRehearsalStarted},
		{reason: "create: the copy is created",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepCreate)), wantKind: operation.KindApply, wantObject: operation.ObjectRehearsalCluster, wantStep: baov1.RehearsalStepCreate},
		{reason: "create: a copy of an earlier rehearsal is deleted first",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepCreate)), copy: rehearsalCopy("old"),
			wantKind: operation.KindDelete, wantObject: operation.ObjectRehearsalCluster, wantStep: baov1.RehearsalStepCreate},
		{reason: "restore: waits while the copy restores and grows",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepRestore)), copy: rehearsalCopy("r1r1r1r1", func(d *baov1.OpenBaoCluster) { d.Status.Message = "scaling from 1 to 3" }),
			wantKind: operation.KindWait, wantStep: baov1.RehearsalStepRestore, wantText: "scaling from 1 to 3"},
		{reason: "restore: restored and Running: the upgrade of the copy is next",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepRestore)), copy: rehearsalCopy("r1r1r1r1", restoredCopy),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepUpgrade},
		{reason: "restore: the copy's restore failed: the rehearsal fails",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepRestore)), copy: rehearsalCopy("r1r1r1r1", func(d *baov1.OpenBaoCluster) {
				d.Status.Restore = &baov1.RestoreStatus{Step: baov1.RestoreStepFailed, Failure: "checksum"}
			}),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantResult: baov1.DrillFailed, wantText: "the copy did not restore: checksum"},
		{reason: "upgrade: the copy's version is set to the target",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepUpgrade)), copy: rehearsalCopy("r1r1r1r1", restoredCopy),
			wantKind: operation.KindApply, wantObject: operation.ObjectRehearsalVersion, wantStep: baov1.RehearsalStepUpgrade},
		{reason: "upgrade: waits while the copy upgrades",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepUpgrade)), copy: rehearsalCopy("r1r1r1r1", restoredCopy, func(d *baov1.OpenBaoCluster) {
				d.Spec.Version = "2.4.1"
				d.Status.Upgrade = &baov1.UpgradeStatus{}
				d.Status.Message = "upgrading 2.4.0 to 2.4.1 (1 of 3 members done)"
			}),
			wantKind: operation.KindWait, wantStep: baov1.RehearsalStepUpgrade, wantText: "1 of 3 members done"},
		{reason: "upgrade: the copy reached the target: passed",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepUpgrade)), copy: rehearsalCopy("r1r1r1r1", restoredCopy, func(d *baov1.OpenBaoCluster) {
				d.Spec.Version, d.Status.CurrentVersion = "2.4.1", "2.4.1"
			}),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantResult: baov1.DrillPassed, wantText: "upgraded from 2.4.0 to 2.4.1 with strategy RollingUpdate"},
		{reason: "upgrade: the copy reached the target, its canary read back again: passed, and said",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade)), copy: upgradedTo241(),
			canary:   &operation.CanaryRead{Value: "c4n4ry", Found: true},
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantResult: baov1.DrillPassed, wantText: `restore canary "c4n4ry" read back again after the upgrade`},
		{reason: "upgrade: the copy reached the target, its canary not read yet: waits, saying so",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade)), copy: upgradedTo241(),
			wantKind: operation.KindWait, wantStep: baov1.RehearsalStepUpgrade, wantText: "the restore canary was not read yet"},
		{reason: "upgrade: the canary cannot be read (the upgraded copy refuses the controller): waits within the timeout",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade)), copy: upgradedTo241(),
			canary:   &operation.CanaryRead{Err: "permission denied"},
			wantKind: operation.KindWait, wantStep: baov1.RehearsalStepUpgrade, wantText: "permission denied"},
		{reason: "upgrade: the canary still cannot be read at the timeout: fails with why",
			c:        rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade, func(r *baov1.RehearsalStatus) { r.StartedAt = &metav1.Time{Time: now.Add(-31 * time.Minute)} })),
			copy:     upgradedTo241(),
			canary:   &operation.CanaryRead{Err: "permission denied"},
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantResult: baov1.DrillFailed, wantText: "permission denied"},
		{reason: "upgrade: after the upgrade the canary holds another value: fails at once, the data is not the snapshot's",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade)), copy: upgradedTo241(),
			canary:   &operation.CanaryRead{Value: "other", Found: true},
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantResult: baov1.DrillFailed, wantText: `holds "other", not "c4n4ry"`},
		{reason: "upgrade: after the upgrade the canary is gone: fails at once",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade)), copy: upgradedTo241(),
			canary:   &operation.CanaryRead{},
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantResult: baov1.DrillFailed, wantText: "after its upgrade the restored data has no restore canary"},
		{reason: "upgrade: the copy's upgrade failed: the rehearsal fails with its words",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepUpgrade)), copy: rehearsalCopy("r1r1r1r1", restoredCopy, func(d *baov1.OpenBaoCluster) {
				d.Spec.Version = "2.4.1"
				d.Status.Upgrade = &baov1.UpgradeStatus{Failure: &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout, Message: "bao-rehearsal-2 did not rejoin"}}
			}),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantResult: baov1.DrillFailed, wantText: "bao-rehearsal-2 did not rejoin"},
		{reason: "upgrade: not done within the timeout: fails",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepUpgrade, func(r *baov1.RehearsalStatus) { r.StartedAt = &metav1.Time{Time: now.Add(-31 * time.Minute)} })),
			copy: rehearsalCopy("r1r1r1r1", restoredCopy, func(d *baov1.OpenBaoCluster) {
				d.Spec.Version = "2.4.1"
				d.Status.Upgrade = &baov1.UpgradeStatus{}
			}),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDelete, wantResult: baov1.DrillFailed, wantText: "did not reach 2.4.1 within 30m0s"},
		{reason: "delete: the copy is deleted",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepDelete)), copy: rehearsalCopy("r1r1r1r1"),
			wantKind: operation.KindDelete, wantObject: operation.ObjectRehearsalCluster, wantStep: baov1.RehearsalStepDelete},
		{reason: "delete: gone after a pass: done, and said",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepDelete, func(r *baov1.RehearsalStatus) {
				r.Result = &baov1.DrillResult{Outcome: baov1.DrillPassed, Message: "ok"}
			})),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDone, wantResult: baov1.DrillPassed, wantEvent: EventRehearsalPassed},
		{reason: "delete: gone after a failure: done, and a Warning that the upgrade is held",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepDelete, func(r *baov1.RehearsalStatus) {
				r.Result = &baov1.DrillResult{Outcome: baov1.DrillFailed, Message: "boom"}
			})),
			wantKind: operation.KindPersist, wantStep: baov1.RehearsalStepDone, wantResult: baov1.DrillFailed, wantEvent: EventRehearsalFailed, wantText: "The real upgrade is held"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			s := &operation.Snapshot{Cluster: &operation.Cluster{Now: now, Members: healthyMembers(), AutopilotKnown: true, AutopilotHealthy: true, Leader: "bao-0"},
				Object: tt.c, Jobs: map[string]operation.ObservedJob{}, Rehearsal: tt.copy, RehearsalCanary: tt.canary}
			before := tt.c.DeepCopy()
			st := s.Status()
			p := Rehearse(s, st)
			g.Expect(tt.c).To(Equal(before), "Rehearse must not change the snapshot")
			g.Expect(p.Kind).To(Equal(tt.wantKind))
			g.Expect(p.Object).To(Equal(tt.wantObject))
			r := st.Upgrade.Rehearsal
			text := p.WaitingFor
			if tt.wantStep != "" {
				g.Expect(r).NotTo(BeNil())
				g.Expect(r.Step).To(Equal(tt.wantStep))
				text += " " + r.WaitingFor
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

func TestRehearsalPrecheck(t *testing.T) {
	cases := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		want   baov1.PrecheckResult
		text   string
	}{
		{reason: "not started: pending until the other prechecks pass", c: rehearsing(), want: baov1.PrecheckPending, text: "once every other precheck passed"},
		{reason: "no snapshot: failed, saying how to take one", c: rehearsing(func(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Taken = nil }),
			want: baov1.PrecheckFailed, text: "kubectl bao snapshot bao -n ns --wait"},
		{reason: "running: pending, with the step", c: rehearsing(rehearsalAt(baov1.RehearsalStepUpgrade, func(r *baov1.RehearsalStatus) { r.WaitingFor = "the copy upgrades" })),
			want: baov1.PrecheckPending, text: "(step Upgrade): the copy upgrades"},
		{reason: "passed for this target", c: rehearsing(rehearsalAt(baov1.RehearsalStepDone, func(r *baov1.RehearsalStatus) {
			r.Result = &baov1.DrillResult{Outcome: baov1.DrillPassed, Message: "upgraded"}
		})), want: baov1.PrecheckPassed, text: "rehearsed on bao-rehearsal"},
		{reason: "failed: held, saying how to rehearse again", c: rehearsing(rehearsalAt(baov1.RehearsalStepDone, func(r *baov1.RehearsalStatus) {
			r.Result = &baov1.DrillResult{Outcome: baov1.DrillFailed, Message: "boom"}
		})), want: baov1.PrecheckFailed, text: "kubectl bao retry bao -n ns"},
		{reason: "passed for another target: not this one's", c: rehearsing(rehearsalAt(baov1.RehearsalStepDone, func(r *baov1.RehearsalStatus) {
			r.TargetVersion = "2.4.2"
			r.Result = &baov1.DrillResult{Outcome: baov1.DrillPassed}
		})), want: baov1.PrecheckPending},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			pc := RehearsalPrecheck(tc.c, tc.c.Status.Upgrade, t0)
			g.Expect(pc.Name).To(Equal(PrecheckRehearsal))
			g.Expect(pc.Result).To(Equal(tc.want))
			g.Expect(pc.Message).To(ContainSubstring(tc.text))
		})
	}
}

func TestRehearsalCluster(t *testing.T) {
	g := NewWithT(t)
	c := rehearsing(rehearsalAt(baov1.RehearsalStepCreate), func(c *baov1.OpenBaoCluster) { c.Spec.Image = "ghcr.io/openbao/openbao:2.4.1" })
	d, err := RehearsalCluster(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Name).To(Equal("bao-rehearsal"))
	g.Expect(d.Labels).To(HaveKeyWithValue(LabelRehearsalOf, "bao"))
	g.Expect(metav1.IsControlledBy(d, c)).To(BeTrue())
	g.Expect(d.Spec.Version).To(Equal("2.4.0"), "the copy starts on the version the members run")
	g.Expect(d.Spec.Image).To(BeEmpty(), "the target's image comes with the copy's upgrade")
	g.Expect(d.GetReplicas()).To(Equal(c.GetReplicas()), "same size, same strategy, same gates")
	g.Expect(d.Spec.Upgrade.Rehearsal).To(Equal(baov1.RehearsalDisabled), "a copy does not rehearse itself")
	g.Expect(d.Spec.Upgrade.PreUpgradeSnapshot.Policy).To(Equal(baov1.SnapshotNever))
	g.Expect(d.Spec.Bootstrap.FromSnapshot.SourceCluster).To(Equal("bao"))
}

func TestRehearsalCanaryWanted(t *testing.T) {
	tests := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		copy   *baov1.OpenBaoCluster
		want   string
	}{
		{reason: "the copy runs the target with no upgrade left: the receipt's canary",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade)), copy: upgradedTo241(), want: "c4n4ry"},
		{reason: "a snapshot taken without a canary: nothing to read",
			c: rehearsing(rehearsalAt(baov1.RehearsalStepUpgrade)), copy: upgradedTo241()},
		{reason: "the copy still upgrades: not yet",
			c:    rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade)),
			copy: upgradedTo241(func(d *baov1.OpenBaoCluster) { d.Status.Upgrade = &baov1.UpgradeStatus{} })},
		{reason: "the copy runs the old version: its restore checked the canary already",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade)), copy: rehearsalCopy("r1r1r1r1", restoredCopy)},
		{reason: "the rehearsal is past its upgrade step: not read again",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepDelete)), copy: upgradedTo241()},
		{reason: "no copy: nothing to read",
			c: rehearsing(withCanary("c4n4ry"), rehearsalAt(baov1.RehearsalStepUpgrade))},
		{reason: "no upgrade: nothing to read",
			c: drillSource(withCanary("c4n4ry")), copy: upgradedTo241()},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			NewWithT(t).Expect(RehearsalCanaryWanted(tt.c, tt.copy)).To(Equal(tt.want))
		})
	}
}
