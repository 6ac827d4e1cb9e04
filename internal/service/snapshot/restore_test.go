package snapshot

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

const restoreSHA = "5f2b9c1e0d3a4b6c7d8e9f00112233445566778899aabbccddeeff0011223344"

func restoreCluster(mut ...func(*baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao2", Namespace: "ns", UID: "u2"}}
	c.Spec.Version = "2.4.0"
	c.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{
		S3:  baov1.S3Target{Endpoint: "http://s3:9000", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}},
		Key: "ns/bao/requested-2.4.0-20261206T100000Z-1.snap", SHA256: restoreSHA, Version: "2.4.0", SourceCluster: "bao",
	}}
	for _, m := range mut {
		m(c)
	}
	return c
}

func atStep(step baov1.RestoreStep, attempts int32, mut ...func(*baov1.RestoreStatus)) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		r := &baov1.RestoreStatus{Source: "s3://snaps/" + c.Spec.Bootstrap.FromSnapshot.Key, SHA256: restoreSHA, ID: "abcd0123",
			Step: step, Attempts: attempts, StepStartedAt: &metav1.Time{Time: t0}, RaftIndex: 120}
		for _, m := range mut {
			m(r)
		}
		c.Status.Restore = r
		c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRestore, Holder: operation.HolderUpgradeManager}
	}
}

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

// member0 is bao2-0 serving: Ready, initialized, unsealed, the leader's voter.
func member0(mut ...func(*operation.Member)) operation.Member {
	m := operation.Member{Name: "bao2-0", Ordinal: 0, UID: "pod-1", PodExists: true, PodReady: true, Initialized: true, InRaft: true, Voter: true, Healthy: true}
	for _, f := range mut {
		f(&m)
	}
	return m
}

func restoreSnap(c *baov1.OpenBaoCluster, now time.Time, members []operation.Member, jobs map[string]operation.ObservedJob) *operation.Snapshot {
	cl := &operation.Cluster{Now: now, Members: members, AutopilotKnown: true, Leader: "bao2-0", LeaderIndex: 130}
	if jobs == nil {
		jobs = map[string]operation.ObservedJob{}
	}
	return &operation.Snapshot{Cluster: cl, Object: c, Jobs: jobs, ExecutorImage: "baokeeper:test", ControllerSubject: "system:serviceaccount:baokeeper-system:baokeeper",
		RestoreSource: liveSource()}
}

// liveSource is the source cluster bao as a rebind reads it: it exists, lists the
// snapshot, and controls its executor account.
func liveSource() *operation.RestoreSource {
	src := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns", UID: "u1"}}
	src.Status.LastSnapshot = &baov1.SnapshotReceipt{Location: "s3://snaps/ns/bao/requested-2.4.0-20261206T100000Z-1.snap", SHA256: restoreSHA}
	return &operation.RestoreSource{Cluster: src, AccountExists: true,
		AccountController: &metav1.OwnerReference{Kind: "OpenBaoCluster", Name: "bao", UID: "u1"}}
}

func restoreResult(t *testing.T, mut ...func(*RestoreResult)) string {
	r := RestoreResult{Location: "s3://snaps/ns/bao/requested-2.4.0-20261206T100000Z-1.snap", SHA256: restoreSHA, SizeBytes: 4096, RaftIndex: 120, RaftTerm: 3,
		RestoredTo: "bao2-0", RestoredAt: t0.Add(time.Minute)}
	for _, m := range mut {
		m(&r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRestoreOperation(t *testing.T) {
	now := t0.Add(2 * time.Minute)
	job := func(name string, phase operation.JobPhase, term string) map[string]operation.ObservedJob {
		return map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: phase, FinishedAt: now.Add(-time.Minute)}, Operation: "abcd0123", Termination: term}}
	}
	tests := []struct {
		reason           string
		c                *baov1.OpenBaoCluster
		members          []operation.Member
		jobs             func(t *testing.T) map[string]operation.ObservedJob
		autopilotUnknown bool
		source           func() *operation.RestoreSource

		wantKind   operation.Kind
		wantObject operation.Object
		wantJob    string
		wantStep   baov1.RestoreStep
		wantLock   bool
		wantEvent  baov1.Reason
		wantText   string
	}{
		{reason: "a new cluster records its restore and takes the lock before anything",
			c: restoreCluster(), wantKind: operation.KindPersist, wantStep: baov1.RestoreStepRestore, wantLock: true, wantEvent: EventRestoreStarted},
		{reason: "no Job before the member initialized and unsealed",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, 0)), members: []operation.Member{member0(func(m *operation.Member) { m.Sealed = true })},
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepRestore, wantLock: true, wantText: "initialize and unseal"},
		{reason: "the member serves: the first attempt's Job, persisted with it",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, 0)), members: []operation.Member{member0()},
			wantKind: operation.KindCreateJob, wantJob: "bao2-restore-abcd0123-1", wantStep: baov1.RestoreStepRestore, wantLock: true},
		{reason: "a Job lost with its pass is created again under the same name",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, 2)), members: []operation.Member{member0()},
			wantKind: operation.KindCreateJob, wantJob: "bao2-restore-abcd0123-2", wantStep: baov1.RestoreStepRestore, wantLock: true},
		{reason: "a running Job is waited for",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, 1)), members: []operation.Member{member0()},
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao2-restore-abcd0123-1", operation.JobRunning, "")
			},
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepRestore, wantLock: true},
		{reason: "the Job restored the snapshot: the restart is next, its result recorded",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, 1)), members: []operation.Member{member0()},
			jobs: func(t *testing.T) map[string]operation.ObservedJob {
				return job("bao2-restore-abcd0123-1", operation.JobSucceeded, restoreResult(t))
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepRestart, wantLock: true, wantEvent: EventSnapshotRestored},
		{reason: "a result that names another object is not taken for the restore: retried",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, 1)), members: []operation.Member{member0()},
			jobs: func(t *testing.T) map[string]operation.ObservedJob {
				return job("bao2-restore-abcd0123-1", operation.JobSucceeded, restoreResult(t, func(r *RestoreResult) { r.SHA256 = strings.Repeat("0", 64) }))
			},
			wantKind: operation.KindCreateJob, wantJob: "bao2-restore-abcd0123-2", wantStep: baov1.RestoreStepRestore, wantLock: true},
		{reason: "a checksum that does not match fails the restore at once: retrying cannot help",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, 1)), members: []operation.Member{member0()},
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao2-restore-abcd0123-1", operation.JobFailed, "baokeeper executor restore: fatal: the object s3://snaps/k has sha256 00, not 5f as its receipt says")
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed, wantText: "not 5f as its receipt says"},
		{reason: "a retryable failure waits RetryDelay, then tries again",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, 1)), members: []operation.Member{member0()},
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				j := job("bao2-restore-abcd0123-1", operation.JobFailed, "baokeeper executor restore: retryable failure: no leader")
				o := j["bao2-restore-abcd0123-1"]
				o.FinishedAt = now.Add(-time.Second)
				j["bao2-restore-abcd0123-1"] = o
				return j
			},
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepRestore, wantLock: true, wantText: "retrying in"},
		{reason: "the last attempt failed: the restore fails and releases the lock",
			c: restoreCluster(atStep(baov1.RestoreStepRestore, RestoreAttempts)), members: []operation.Member{member0()},
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao2-restore-abcd0123-3", operation.JobFailed, "baokeeper executor restore: retryable failure: no leader")
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed, wantText: "after 3 attempt(s)"},
		{reason: "restart: the pod to delete is persisted first",
			c: restoreCluster(atStep(baov1.RestoreStepRestart, 0)), members: []operation.Member{member0()},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepRestart, wantLock: true},
		{reason: "restart: the persisted pod is deleted",
			c:        restoreCluster(atStep(baov1.RestoreStepRestart, 0, func(r *baov1.RestoreStatus) { r.RestartedPod = "pod-1" })),
			members:  []operation.Member{member0()},
			wantKind: operation.KindDelete, wantObject: operation.ObjectPod, wantStep: baov1.RestoreStepRestart, wantLock: true},
		{reason: "restart: a pod that is stopping is not deleted again",
			c:        restoreCluster(atStep(baov1.RestoreStepRestart, 0, func(r *baov1.RestoreStatus) { r.RestartedPod = "pod-1" })),
			members:  []operation.Member{member0(func(m *operation.Member) { m.PodTerminating = true })},
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepRestart, wantLock: true},
		{reason: "restart: the new pod is not unsealed yet",
			c:        restoreCluster(atStep(baov1.RestoreStepRestart, 0, func(r *baov1.RestoreStatus) { r.RestartedPod = "pod-1" })),
			members:  []operation.Member{member0(func(m *operation.Member) { m.UID, m.PodReady = "pod-2", false })},
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepRestart, wantLock: true, wantText: "start again"},
		{reason: "restarted from another cluster's snapshot: the roles are rewritten next",
			c:        restoreCluster(atStep(baov1.RestoreStepRestart, 0, func(r *baov1.RestoreStatus) { r.RestartedPod = "pod-1" })),
			members:  []operation.Member{member0(func(m *operation.Member) { m.UID = "pod-2" })},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepRebind, wantLock: true},
		{reason: "restarted from its own name's snapshot: nothing to rewrite, the check is next",
			c: restoreCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Bootstrap.FromSnapshot.SourceCluster = "" },
				atStep(baov1.RestoreStepRestart, 0, func(r *baov1.RestoreStatus) { r.RestartedPod = "pod-1" })),
			members:  []operation.Member{member0(func(m *operation.Member) { m.UID = "pod-2" })},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepCheck, wantLock: true},
		{reason: "rebind: the Job runs as the source's executor",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 0)), members: []operation.Member{member0()}, autopilotUnknown: true,
			wantKind: operation.KindCreateJob, wantJob: "bao2-rebind-abcd0123-1", wantStep: baov1.RestoreStepRebind, wantLock: true},
		{reason: "rebind of a snapshot the live source does not list: refused, nothing runs as the source (issue 38)",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 0)), members: []operation.Member{member0()}, autopilotUnknown: true,
			source: func() *operation.RestoreSource {
				s := liveSource()
				s.Cluster.Status.LastSnapshot.SHA256 = strings.Repeat("0", 64)
				return s
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed,
			wantText: "OpenBaoCluster bao exists and does not list the snapshot ns/bao/requested-2.4.0-20261206T100000Z-1.snap"},
		{reason: "rebind as an account the live source does not control: refused",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 0)), members: []operation.Member{member0()}, autopilotUnknown: true,
			source: func() *operation.RestoreSource {
				s := liveSource()
				s.AccountController = &metav1.OwnerReference{Kind: "Deployment", Name: "web", UID: "u9"}
				return s
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed,
			wantText: "ServiceAccount bao-executor is not the executor account of OpenBaoCluster bao (its controller is Deployment web)"},
		{reason: "rebind after the source is gone: the cluster creates the account itself",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 0)), members: []operation.Member{member0()}, autopilotUnknown: true,
			source:   func() *operation.RestoreSource { return &operation.RestoreSource{} },
			wantKind: operation.KindCreateJob, wantJob: "bao2-rebind-abcd0123-1", wantStep: baov1.RestoreStepRebind, wantLock: true},
		{reason: "rebind after the source is gone, as an account someone else left under its name: refused",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 0)), members: []operation.Member{member0()}, autopilotUnknown: true,
			source:   func() *operation.RestoreSource { return &operation.RestoreSource{AccountExists: true} },
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed,
			wantText: "ServiceAccount bao-executor exists, and no OpenBaoCluster bao does (it has no controller)"},
		{reason: "rebind as the account this cluster created for it (a pass after the create)",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 0)), members: []operation.Member{member0()}, autopilotUnknown: true,
			source: func() *operation.RestoreSource {
				return &operation.RestoreSource{AccountExists: true, AccountController: &metav1.OwnerReference{Kind: "OpenBaoCluster", Name: "bao2", UID: "u2"}}
			},
			wantKind: operation.KindCreateJob, wantJob: "bao2-rebind-abcd0123-1", wantStep: baov1.RestoreStepRebind, wantLock: true},
		{reason: "rebind done: the borrowed identity goes, the check is next",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 1)), members: []operation.Member{member0()},
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao2-rebind-abcd0123-1", operation.JobSucceeded, `{"rebound":true}`)
			},
			wantKind: operation.KindDelete, wantObject: operation.ObjectRestoreIdentity, wantStep: baov1.RestoreStepCheck, wantLock: true},
		{reason: "a rebind attempt that failed after an earlier one rewrote the roles: the controller reads, so it is done",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 2)), members: []operation.Member{member0()},
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao2-rebind-abcd0123-2", operation.JobFailed, "baokeeper executor rebind: fatal: permission denied")
			},
			wantKind: operation.KindDelete, wantObject: operation.ObjectRestoreIdentity, wantStep: baov1.RestoreStepCheck, wantLock: true},
		{reason: "a rebind the snapshot's policy refuses fails the restore, saying why",
			c: restoreCluster(atStep(baov1.RestoreStepRebind, 1)), members: []operation.Member{member0()}, autopilotUnknown: true,
			jobs: func(*testing.T) map[string]operation.ObservedJob {
				return job("bao2-rebind-abcd0123-1", operation.JobFailed, "baokeeper executor rebind: fatal: the snapshot's executor policy does not allow")
			},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed, wantText: "executor policy does not allow"},
		{reason: "check: the controller cannot read yet: wait",
			c: restoreCluster(atStep(baov1.RestoreStepCheck, 0)), members: []operation.Member{member0()}, autopilotUnknown: true,
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepCheck, wantLock: true},
		{reason: "check: the controller reads the leader at or past the snapshot's index: done, lock released",
			c: restoreCluster(atStep(baov1.RestoreStepCheck, 0)), members: []operation.Member{member0()},
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepDone, wantEvent: EventRestoreCompleted},
		{reason: "check: a leader behind the snapshot's index is not the restored data",
			c:        restoreCluster(atStep(baov1.RestoreStepCheck, 0, func(r *baov1.RestoreStatus) { r.RaftIndex = 500 })),
			members:  []operation.Member{member0()},
			wantKind: operation.KindWait, wantStep: baov1.RestoreStepCheck, wantLock: true},
		{reason: "check: unreadable for too long fails the restore",
			c: restoreCluster(atStep(baov1.RestoreStepCheck, 0, func(r *baov1.RestoreStatus) {
				r.StepStartedAt = &metav1.Time{Time: now.Add(-RestoreCheckTimeout - time.Second)}
			})),
			members: []operation.Member{member0()}, autopilotUnknown: true,
			wantKind: operation.KindPersist, wantStep: baov1.RestoreStepFailed, wantEvent: EventRestoreFailed, wantText: "could not read the restored member"},
		{reason: "a failed restore does nothing more",
			c: restoreCluster(atStep(baov1.RestoreStepFailed, 1)), members: []operation.Member{member0()},
			wantKind: operation.KindNone, wantStep: baov1.RestoreStepFailed, wantLock: true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			var jobs map[string]operation.ObservedJob
			if tt.jobs != nil {
				jobs = tt.jobs(t)
			}
			s := restoreSnap(tt.c, now, tt.members, jobs)
			s.AutopilotKnown = !tt.autopilotUnknown
			if tt.source != nil {
				s.RestoreSource = tt.source()
			}
			before := tt.c.DeepCopy()
			p := RestoreOperation{}.Decide(s)
			g.Expect(tt.c).To(Equal(before), "Decide must not change the snapshot")
			g.Expect(p.Kind).To(Equal(tt.wantKind))
			g.Expect(p.Object).To(Equal(tt.wantObject))
			st := &tt.c.Status
			if p.Status != nil {
				st = p.Status
			}
			g.Expect(st.Restore).NotTo(BeNil())
			g.Expect(st.Restore.Step).To(Equal(tt.wantStep))
			g.Expect(st.OperationLock != nil).To(Equal(tt.wantLock), "lock")
			if tt.wantJob != "" {
				g.Expect(p.Job).NotTo(BeNil())
				g.Expect(p.Job.Name).To(Equal(tt.wantJob))
			} else {
				g.Expect(p.Job).To(BeNil())
			}
			var reasons []baov1.Reason
			text := st.Restore.WaitingFor + " " + st.Restore.Failure + " " + p.WaitingFor
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

func TestRestoreJobs(t *testing.T) {
	g := NewWithT(t)
	c := restoreCluster(atStep(baov1.RestoreStepRestore, 1))
	job := RestoreJob(c, c.Status.Restore, "baokeeper:test")
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	g.Expect(args).To(HavePrefix("executor restore --members https://bao2-0."))
	g.Expect(args).To(ContainSubstring("--s3-key ns/bao/requested-2.4.0-20261206T100000Z-1.snap --sha256 " + restoreSHA + " --work-dir " + RestoreWorkDir))
	g.Expect(args).To(ContainSubstring("--s3-bucket snaps"))
	g.Expect(job.Spec.Template.Spec.ServiceAccountName).To(Equal("bao2-executor"), "the restore logs in as the new cluster, before the data changes")
	g.Expect(job.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", RestoreWorkDir)))

	c.Status.Restore.Step = baov1.RestoreStepRebind
	rb := RebindJob(c, c.Status.Restore, "system:serviceaccount:op:baokeeper", "baokeeper:test")
	args = strings.Join(rb.Spec.Template.Spec.Containers[0].Args, " ")
	g.Expect(rb.Name).To(Equal("bao2-rebind-abcd0123-1"))
	g.Expect(rb.Spec.Template.Spec.ServiceAccountName).To(Equal("bao-executor"), "the rebind logs in as the source's executor")
	g.Expect(rb.Spec.Template.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken.Audience).To(Equal("openbao.baokeeper.dev/ns/bao"))
	g.Expect(args).To(ContainSubstring("--executor-subject system:serviceaccount:ns:bao2-executor --controller-subject system:serviceaccount:op:baokeeper --audience openbao.baokeeper.dev/ns/bao2"))

	sa := RestoreIdentityAccount(c)
	g.Expect(sa.Name).To(Equal("bao-executor"))
	g.Expect(metav1.GetControllerOf(sa).UID).To(BeEquivalentTo("u2"), "owned by the cluster that restores")
}
