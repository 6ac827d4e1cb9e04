package snapshot

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

const (
	inPlaceSHA   = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	inPlaceOlder = "0000000000000000000000000000000000000000000000000000000000000001"
	inPlaceLoc   = "s3://snaps/ns/bao/requested-2.4.0-20261206T090000Z-1.snap"
)

// servingCluster is bao, three members on 2.4.0 with two receipts: the newest
// requested one (inPlaceSHA) and the last upgrade's (inPlaceOlder).
func servingCluster(mut ...func(*baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns", UID: "u1"}}
	three := int32(3)
	c.Spec.Replicas = &three
	c.Spec.Version = "2.4.0"
	c.Spec.Snapshots.S3 = &baov1.S3Target{Endpoint: "http://s3:9000", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}
	c.Status.CurrentVersion = "2.4.0"
	c.Status.Snapshots = &baov1.SnapshotsStatus{Taken: []baov1.SnapshotReceipt{{Location: inPlaceLoc, SHA256: inPlaceSHA, SizeBytes: 4096,
		RaftIndex: 120, Version: "2.4.0", TakenAt: &metav1.Time{Time: t0.Add(-time.Hour)}}}}
	c.Status.LastSnapshot = &baov1.SnapshotReceipt{Location: "s3://snaps/ns/bao/pre-upgrade-2.3.9.snap", SHA256: inPlaceOlder, SizeBytes: 2048,
		RaftIndex: 80, Version: "2.3.9", TakenAt: &metav1.Time{Time: t0.Add(-48 * time.Hour)}}
	for _, m := range mut {
		m(c)
	}
	return c
}

func TestRestoreRequestSHA256(t *testing.T) {
	for value, want := range map[string]string{
		inPlaceSHA:                        inPlaceSHA,
		inPlaceSHA + "-1764633600-3fa9c2": inPlaceSHA,
		inPlaceSHA + "-again":             inPlaceSHA,
		strings.ToUpper(inPlaceSHA):       "",
		inPlaceSHA[:63]:                   "",
		inPlaceSHA + "x":                  "",
		"now":                             "",
		"":                                "",
	} {
		if got := RestoreRequestSHA256(value); got != want {
			t.Errorf("RestoreRequestSHA256(%q) = %q, want %q", value, got, want)
		}
	}
}

func TestDecideRestore(t *testing.T) {
	tests := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		value  string
		accept bool
		text   string
	}{
		{reason: "the newest receipt, with a token", c: servingCluster(), value: inPlaceSHA + "-1", accept: true, text: "every write made since the snapshot is replaced"},
		{reason: "the last upgrade's receipt, which is older than the cluster's version", c: servingCluster(), value: inPlaceOlder, accept: true, text: "Raft index 80"},
		{reason: "queued behind the operation that holds the lock",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationSnapshot, Message: "taking a snapshot"}
			}),
			value: inPlaceSHA, accept: true, text: "queued after the operation in progress (Snapshot"},
		{reason: "no binding: the value is not a checksum", c: servingCluster(), value: "now", text: "must be the sha256 of one of this cluster's snapshot receipts"},
		{reason: "no binding: the checksum of no receipt", c: servingCluster(), value: strings.Repeat("e", 64), text: "no snapshot receipt of this cluster has sha256 eeee"},
		{reason: "the receipts are named when the checksum is unknown", c: servingCluster(), value: strings.Repeat("e", 64), text: inPlaceSHA + " (" + inPlaceLoc},
		{reason: "a cluster without receipts says to take one", c: servingCluster(func(c *baov1.OpenBaoCluster) { c.Status.Snapshots, c.Status.LastSnapshot = nil, nil }),
			value: inPlaceSHA, text: "take one first"},
		{reason: "during an upgrade",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1"}
			}),
			value: inPlaceSHA, text: "the cluster is upgrading from 2.4.0 to 2.4.1"},
		{reason: "a snapshot newer than the version the cluster runs",
			c:     servingCluster(func(c *baov1.OpenBaoCluster) { c.Status.Snapshots.Taken[0].Version = "2.5.0" }),
			value: inPlaceSHA, text: "taken on OpenBao 2.5.0 and the cluster runs 2.4.0"},
		{reason: "while break-glass is active",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost}
			}),
			value: inPlaceSHA, text: "acknowledge it first"},
		{reason: "while another in-place restore runs",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.InPlaceRestore = &baov1.RestoreStatus{Source: inPlaceLoc, SHA256: inPlaceSHA, Step: baov1.RestoreStepCheck}
			}),
			value: inPlaceSHA + "-2", text: "already at step Check"},
		{reason: "after one that ended, the same snapshot again",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.InPlaceRestore = &baov1.RestoreStatus{Source: inPlaceLoc, SHA256: inPlaceSHA, Step: baov1.RestoreStepDone}
			}),
			value: inPlaceSHA + "-2", accept: true},
		{reason: "a bucket the spec no longer names",
			c:     servingCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Snapshots.S3.Bucket = "other" }),
			value: inPlaceSHA, text: "name that bucket in spec.snapshots.s3 again"},
		{reason: "a cluster that still restores its bootstrap snapshot",
			c: servingCluster(func(c *baov1.OpenBaoCluster) {
				c.Spec.Bootstrap = &baov1.BootstrapSpec{}
			}),
			value: inPlaceSHA, text: "still restoring spec.bootstrap.fromSnapshot"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			d := DecideRestore(tt.c, tt.value)
			g.Expect(d.Accept).To(Equal(tt.accept), d.Message)
			g.Expect(d.Message).To(ContainSubstring(tt.text))
			if !tt.accept {
				g.Expect(d.Message).To(HavePrefix(baov1.AnnotationRestore+"="+tt.value+" refused: "), "the refusal names the annotation and its value")
				g.Expect(d.Message).To(HaveSuffix("; nothing was done"))
			}
		})
	}
}

func TestRequestInPlace(t *testing.T) {
	g := NewWithT(t)
	c := servingCluster()
	RequestInPlace(&c.Status, inPlaceOlder+"-7", t0)
	r := c.Status.InPlaceRestore
	g.Expect(r).NotTo(BeNil())
	g.Expect(*r).To(Equal(baov1.RestoreStatus{Source: "s3://snaps/ns/bao/pre-upgrade-2.3.9.snap", SHA256: inPlaceOlder, Request: inPlaceOlder + "-7",
		Version: "2.3.9", RaftIndex: 80, SizeBytes: 2048, Step: baov1.RestoreStepRestore, StartedAt: &metav1.Time{Time: t0}, WaitingFor: "waiting for the operation lock"}))
	g.Expect(InPlaceRunning(&c.Status)).To(BeTrue())

	c = servingCluster()
	RequestInPlace(&c.Status, strings.Repeat("e", 64), t0)
	g.Expect(c.Status.InPlaceRestore).To(BeNil(), "a value no receipt has records nothing (DecideRestore refused it)")
}

func inPlaceAt(step baov1.RestoreStep, attempts int32, mut ...func(*baov1.RestoreStatus)) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		r := &baov1.RestoreStatus{Source: inPlaceLoc, SHA256: inPlaceSHA, Request: inPlaceSHA + "-1", ID: "ef012345", Step: step, Attempts: attempts,
			StartedAt: &metav1.Time{Time: t0}, StepStartedAt: &metav1.Time{Time: t0}, RaftIndex: 120, Version: "2.4.0"}
		if step == baov1.RestoreStepCheck {
			r.AppliedIndex = 400
		}
		for _, m := range mut {
			m(r)
		}
		c.Status.InPlaceRestore = r
		c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRestore, Holder: operation.HolderUpgradeManager}
	}
}

// threeServing is bao-0..2, bao-1 leading, all unsealed healthy voters at index.
func threeServing(index uint64, mut ...func(*operation.Member)) []operation.Member {
	var out []operation.Member
	for i, n := range []string{"bao-0", "bao-1", "bao-2"} {
		m := operation.Member{Name: n, Ordinal: i, UID: "pod-" + n, PodExists: true, PodReady: true, Initialized: true, InRaft: true, Voter: true, Healthy: true, LastIndex: index, Version: "2.4.0"}
		for _, f := range mut {
			f(&m)
		}
		out = append(out, m)
	}
	return out
}

func TestInPlaceRestoreOperation(t *testing.T) {
	now := t0.Add(2 * time.Minute)
	job := func(name string, phase operation.JobPhase, term string, finished time.Time) map[string]operation.ObservedJob {
		return map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: phase, FinishedAt: finished}, Operation: "ef012345", Termination: term}}
	}
	applied := func(t *testing.T) string {
		return restoreResult(t, func(r *RestoreResult) {
			r.Location, r.SHA256, r.RestoredTo, r.AppliedIndex = inPlaceLoc, inPlaceSHA, "bao-1", 400
		})
	}
	sealed := func(name string) func(*operation.Member) {
		return func(m *operation.Member) {
			if m.Name == name {
				m.Sealed, m.Healthy = true, false
			}
		}
	}
	tests := []struct {
		reason      string
		c           *baov1.OpenBaoCluster
		members     []operation.Member
		jobs        func(t *testing.T) map[string]operation.ObservedJob
		noAutopilot bool
		leaderIndex uint64
		// stsReplicas is the StatefulSet's replica count; 0 for no StatefulSet.
		stsReplicas int32

		wantKind       operation.Kind
		wantBreakGlass bool
		wantJob        string
		wantStep       baov1.RestoreStep
		wantLock       bool
		wantEvent      baov1.Reason
		wantText       string
	}{
		{reason: "accepted: it takes the lock and gets its ID before anything",
			c:       servingCluster(inPlaceAt(baov1.RestoreStepRestore, 0, func(r *baov1.RestoreStatus) { r.ID = "" }), func(c *baov1.OpenBaoCluster) { c.Status.OperationLock = nil }),
			members: threeServing(300), wantKind: operation.KindPersist, wantStep: baov1.RestoreStepRestore, wantLock: true, wantEvent: EventRestoreStarted},
		{reason: "accepted while another operation holds the lock: it waits and says so",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, 0, func(r *baov1.RestoreStatus) { r.ID = "" }), func(c *baov1.OpenBaoCluster) {
				c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationScaling, Holder: operation.HolderUpgradeManager}
			}),
			members: threeServing(300), wantKind: operation.KindWait, wantStep: baov1.RestoreStepRestore, wantLock: true, wantText: "the in-place restore waits"},
		{reason: "the first attempt's Job, once a member leads",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, 0)), members: threeServing(300),
			wantKind: operation.KindCreateJob, wantJob: "bao-restore-in-place-ef012345-1", wantStep: baov1.RestoreStepRestore, wantLock: true},
		{reason: "a Job lost with its pass is created again under the same name",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, 2)), members: threeServing(300),
			wantKind: operation.KindCreateJob, wantJob: "bao-restore-in-place-ef012345-2", wantStep: baov1.RestoreStepRestore, wantLock: true},
		{reason: "a running Job is waited for",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, 1)), members: threeServing(300),
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao-restore-in-place-ef012345-1", operation.JobRunning, "", time.Time{})
			},
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepRestore, wantLock: true, wantText: "wait until the active node applied it"},
		{reason: "the leader applied it: the check is next, with the applied index",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, 1)), members: threeServing(300),
			jobs: func(t *testing.T) map[string]operation.ObservedJob {
				return job("bao-restore-in-place-ef012345-1", operation.JobSucceeded, applied(t), now.Add(-time.Second))
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepCheck, wantLock: true, wantEvent: EventSnapshotRestored, wantText: "at index 400"},
		{reason: "a result without the applied index is not taken for it: retried",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, 1)), members: threeServing(300),
			jobs: func(t *testing.T) map[string]operation.ObservedJob {
				return job("bao-restore-in-place-ef012345-1", operation.JobSucceeded, restoreResult(t, func(r *RestoreResult) {
					r.Location, r.SHA256 = inPlaceLoc, inPlaceSHA
				}), time.Time{})
			},
			wantKind: operation.KindCreateJob, wantJob: "bao-restore-in-place-ef012345-2", wantStep: baov1.RestoreStepRestore, wantLock: true},
		{reason: "a corrupted object fails at once, and says the data is what it was",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, 1)), members: threeServing(300),
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao-restore-in-place-ef012345-1", operation.JobFailed, "baokeeper executor restore: fatal: the object has sha256 00, not a1 as its receipt says", now)
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed, wantText: "the cluster's data is what it was"},
		{reason: "the failure says how to ask for the same snapshot again",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, RestoreAttempts)), members: threeServing(300),
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao-restore-in-place-ef012345-3", operation.JobFailed, "baokeeper executor restore: retryable failure: no leader", now.Add(-time.Minute))
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed, wantText: baov1.AnnotationRestore + "=" + inPlaceSHA + "-<a new token>"},
		{reason: "a retryable failure waits RetryDelay",
			c: servingCluster(inPlaceAt(baov1.RestoreStepRestore, 1)), members: threeServing(300),
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao-restore-in-place-ef012345-1", operation.JobFailed, "baokeeper executor restore: retryable failure: no leader", now.Add(-time.Second))
			},
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepRestore, wantLock: true, wantText: "retrying in"},
		{reason: "check: every member an unsealed healthy voter at the applied index: done, lock released",
			c: servingCluster(inPlaceAt(baov1.RestoreStepCheck, 0)), members: threeServing(401), leaderIndex: 401,
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepDone, wantEvent: EventRestoreCompleted, wantText: "every member (bao-0, bao-1, bao-2)"},
		{reason: "check: spec.replicas raised meanwhile (the scaling waits for the lock): the members the StatefulSet runs are verified",
			c:       servingCluster(inPlaceAt(baov1.RestoreStepCheck, 0), func(c *baov1.OpenBaoCluster) { five := int32(5); c.Spec.Replicas = &five }),
			members: threeServing(401), leaderIndex: 401, stsReplicas: 3,
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepDone, wantEvent: EventRestoreCompleted, wantText: "every member (bao-0, bao-1, bao-2)"},
		{reason: "check: a follower behind the applied index is waited for",
			c: servingCluster(inPlaceAt(baov1.RestoreStepCheck, 0)), leaderIndex: 401,
			members: threeServing(401, func(m *operation.Member) {
				if m.Name == "bao-2" {
					m.LastIndex = 390
				}
			}),
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepCheck, wantLock: true, wantText: "bao-2 is at Raft index 390, below 400"},
		{reason: "check: a follower that sealed itself is waited for, by name",
			c: servingCluster(inPlaceAt(baov1.RestoreStepCheck, 0)), members: threeServing(401, sealed("bao-0")), leaderIndex: 401,
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepCheck, wantLock: true, wantText: "bao-0 is sealed"},
		{reason: "check: one member not verified in time fails the restore, naming it",
			c: servingCluster(inPlaceAt(baov1.RestoreStepCheck, 0, func(r *baov1.RestoreStatus) {
				r.StepStartedAt = &metav1.Time{Time: now.Add(-RestoreCheckTimeout - time.Second)}
			})),
			members: threeServing(401, sealed("bao-0")), leaderIndex: 401,
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed, wantText: "not every member was verified within 5m0s: bao-0 is sealed"},
		{reason: "check: a majority of voters silent is held first",
			c:           servingCluster(inPlaceAt(baov1.RestoreStepCheck, 0, func(r *baov1.RestoreStatus) { r.LastVoters = []string{"bao-0", "bao-1", "bao-2"} })),
			members:     threeServing(401, sealed("bao-0"), sealed("bao-2")),
			noAutopilot: true,
			wantKind:    operation.KindWait, wantStep: baov1.RestoreStepCheck, wantLock: true, wantText: "break-glass in"},
		{reason: "check: a loss of quorum that lasted the grace is break-glass",
			c: servingCluster(inPlaceAt(baov1.RestoreStepCheck, 0, func(r *baov1.RestoreStatus) {
				r.LastVoters = []string{"bao-0", "bao-1", "bao-2"}
				r.QuorumLostSince = &metav1.Time{Time: now.Add(-operation.QuorumLossGrace - time.Second)}
			})),
			members:     threeServing(401, sealed("bao-0"), sealed("bao-2")),
			noAutopilot: true,
			wantKind:    operation.KindBreakGlass, wantBreakGlass: true, wantStep: baov1.RestoreStepCheck, wantLock: true, wantText: "do not answer"},
		{reason: "a restore that ended does nothing more",
			c: servingCluster(inPlaceAt(baov1.RestoreStepDone, 0)), members: threeServing(401),
			wantKind: operation.KindNone, wantStep: baov1.RestoreStepDone, wantLock: true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			var jobs map[string]operation.ObservedJob
			if tt.jobs != nil {
				jobs = tt.jobs(t)
			}
			cl := &operation.Cluster{Now: now, Members: tt.members, AutopilotKnown: !tt.noAutopilot, AutopilotHealthy: !tt.noAutopilot, Leader: "bao-1", LeaderIndex: tt.leaderIndex}
			if tt.noAutopilot {
				cl.Leader = ""
			}
			if tt.stsReplicas > 0 {
				cl.StatefulSet = &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: &tt.stsReplicas}}
			}
			if jobs == nil {
				jobs = map[string]operation.ObservedJob{}
			}
			s := &operation.Snapshot{Cluster: cl, Object: tt.c, Jobs: jobs, ExecutorImage: "baokeeper:test"}
			before := tt.c.DeepCopy()
			p := InPlaceRestoreOperation{}.Decide(s)
			g.Expect(tt.c).To(Equal(before), "Decide must not change the snapshot")
			g.Expect(p.Kind).To(Equal(tt.wantKind))
			g.Expect(p.BreakGlass == baov1.BreakGlassQuorumLost).To(Equal(tt.wantBreakGlass))
			st := &tt.c.Status
			if p.Status != nil {
				st = p.Status
			}
			g.Expect(st.InPlaceRestore.Step).To(Equal(tt.wantStep))
			if l := st.OperationLock; l != nil && l.Operation == operation.OperationRestore {
				g.Expect(st.InPlaceRestore.ID).NotTo(BeEmpty(), "a restore that holds the lock has its ID, given in the pass that takes it")
			}
			g.Expect(st.OperationLock != nil).To(Equal(tt.wantLock), "lock")
			if tt.wantJob != "" {
				g.Expect(p.Job).NotTo(BeNil())
				g.Expect(p.Job.Name).To(Equal(tt.wantJob))
			} else {
				g.Expect(p.Job).To(BeNil())
			}
			var reasons []baov1.Reason
			text := st.InPlaceRestore.WaitingFor + " " + st.InPlaceRestore.Failure + " " + p.WaitingFor + " " + p.Message
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

func TestInPlaceRestoreJob(t *testing.T) {
	g := NewWithT(t)
	c := servingCluster(inPlaceAt(baov1.RestoreStepRestore, 1))
	job, err := InPlaceRestoreJob(c, c.Status.InPlaceRestore, 3, "baokeeper:test")
	g.Expect(err).NotTo(HaveOccurred())
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	g.Expect(args).To(HavePrefix("executor restore --members https://bao-0."))
	g.Expect(args).To(ContainSubstring("https://bao-2."), "every member: the Job sends to whichever leads")
	g.Expect(args).To(ContainSubstring("--s3-key ns/bao/requested-2.4.0-20261206T090000Z-1.snap --sha256 " + inPlaceSHA))
	g.Expect(args).To(ContainSubstring("--wait-applied"))
	g.Expect(args).To(ContainSubstring("--s3-bucket snaps"))
	g.Expect(job.Spec.Template.Spec.ServiceAccountName).To(Equal("bao-executor"))

	c.Spec.Snapshots.S3.Bucket = "moved"
	_, err = InPlaceRestoreJob(c, c.Status.InPlaceRestore, 3, "baokeeper:test")
	g.Expect(err).To(MatchError(ContainSubstring("bucket snaps")))
}
