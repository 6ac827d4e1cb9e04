package snapshot

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Event reasons of a restore.
const (
	// EventRestoreStarted: the restore of a cluster that starts from a snapshot began.
	EventRestoreStarted baov1.Reason = "RestoreStarted"
	// EventSnapshotRestored: the member accepted the snapshot (before its restart).
	EventSnapshotRestored baov1.Reason = "SnapshotRestored"
	// EventRestoreCompleted: the restored member was verified; the cluster grows.
	EventRestoreCompleted baov1.Reason = "RestoreCompleted"
	// EventRestoreFailed: the restore stopped.
	EventRestoreFailed baov1.Reason = "RestoreFailed"
)

// Job steps of a restore (the baokeeper.dev/step label and the Jobs' names).
const (
	StepRestore = "restore"
	StepRebind  = "rebind"
)

// RestoreAttempts is how many Jobs a restore step may take before the restore fails.
const RestoreAttempts = operation.DefaultMaxJobAttempts

// RestoreCheckTimeout is how long the restored member may take to be readable with
// the cluster's own role before the restore fails: a rebind that did not take, or
// a snapshot whose roles baokeeper cannot use.
const RestoreCheckTimeout = 5 * time.Minute

// RestoreWorkDir is where the restore Job keeps the downloaded object (an emptyDir:
// the root filesystem is read-only).
const RestoreWorkDir = "/var/run/baokeeper-restore"

// restoreActiveDeadlineSeconds bounds one restore Job.
const restoreActiveDeadlineSeconds = int64(30 * 60)

// fatalMarker starts the termination message of an executor action that retrying
// cannot help.
const fatalMarker = ": fatal: "

// RestorePending reports whether the cluster starts from a snapshot whose restore
// has not succeeded: until it has, nothing else runs on the cluster (no scaling, no
// upgrade, no snapshot), and a failed restore keeps it so.
func RestorePending(c *baov1.OpenBaoCluster) bool {
	return c.Spec.Bootstrap != nil && !c.Restored()
}

// RestoreOperation restores the snapshot of spec.bootstrap.fromSnapshot into a new
// cluster: with the operation lock, once its one member initialized, an executor
// Job downloads the object, checks its SHA-256 and sends it to the member; the
// member is restarted (it loads the restored Raft keyring only when it starts, and
// a member that joined before would be handed keys the leader does not use); a Job
// with the source cluster's identity rewrites the two baokeeper roles the data
// holds to this cluster's; the controller reads the member with its own role; then
// the lock is released and the scaling grows the cluster. Each step is persisted in
// status.restore before it is taken.
type RestoreOperation struct{}

// Name implements operation.Operation.
func (RestoreOperation) Name() string { return "Restore" }

// Decide implements operation.Operation.
func (RestoreOperation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	if c.Spec.Bootstrap == nil {
		return operation.Nothing()
	}
	st := s.Status()
	persist := operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist, RequeueAfter: persistRequeue}}
	r := st.Restore
	if r == nil {
		src := c.Spec.Bootstrap.FromSnapshot
		r = &baov1.RestoreStatus{Source: Location(src.S3.Bucket, src.Key), SHA256: src.SHA256,
			ID: operation.ID(c, "restore", s.Now), Step: baov1.RestoreStepRestore, StartedAt: ptrTime(s.Now), StepStartedAt: ptrTime(s.Now)}
		if err := operation.Acquire(st, operation.OperationRestore, operation.HolderUpgradeManager, "restoring "+r.Source, s.Now); err != nil {
			// A new cluster has no other operation; one that took the lock first
			// (an object written by hand) is waited for.
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: "the restore waits: " + err.Error()}}
		}
		st.Restore = r
		r.WaitingFor = "waiting for " + memberName(c) + " to initialize"
		return persist.Say(operation.Normal(EventRestoreStarted, fmt.Sprintf("Restoring %s (sha256 %s) into %s once its first member initialized", r.Source, r.SHA256, c.Name)))
	}
	switch r.Step {
	case baov1.RestoreStepRestore:
		return restoreStep(s, st, r, persist)
	case baov1.RestoreStepRestart:
		return restartStep(s, st, r, persist)
	case baov1.RestoreStepRebind:
		return rebindStep(s, st, r, persist)
	case baov1.RestoreStepCheck:
		return checkStep(s, st, r, persist)
	}
	return operation.Nothing()
}

func memberName(c *baov1.OpenBaoCluster) string { return workload.NamesFor(c).Member(0) }

// firstMember is the observed member 0; nil when it is not observed.
func firstMember(s *operation.Snapshot) *operation.Member {
	for i := range s.Members {
		if s.Members[i].Ordinal == 0 {
			return &s.Members[i]
		}
	}
	return nil
}

// serving reports whether the member runs, initialized and unsealed.
func serving(m *operation.Member) bool {
	return m != nil && m.PodExists && !m.PodTerminating && m.PodReady && m.Initialized && !m.Sealed
}

func restoreStep(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan) operation.Plan {
	c := s.Object
	if r.Attempts == 0 {
		if m := firstMember(s); !serving(m) {
			r.WaitingFor = fmt.Sprintf("waiting for %s to initialize and unseal before the snapshot is sent to it", memberName(c))
			return restoreWait(st, r)
		}
		r.Attempts = 1
		return createRestoreJob(s, st, r)
	}
	name := RestoreJobName(c, r)
	job := s.JobOf(name, r.ID)
	term := s.Jobs[name].Termination
	switch job.Phase {
	case operation.JobNone:
		return createRestoreJob(s, st, r)
	case operation.JobRunning:
		r.WaitingFor = fmt.Sprintf("waiting for Job %s (download, check and send the snapshot)", name)
		return restoreWait(st, r)
	case operation.JobFailed:
		return retryRestore(s, st, r, persist, name, job, term, "")
	}
	res, err := ParseRestoreResult(term)
	if err == nil && (res.SHA256 != r.SHA256 || res.Location != r.Source) {
		err = fmt.Errorf("it restored %s (sha256 %s), not %s (sha256 %s)", res.Location, res.SHA256, r.Source, r.SHA256)
	}
	if err != nil {
		// The member may hold the snapshot or not; sending it again is harmless.
		return retryRestore(s, st, r, persist, name, operation.Job{Phase: operation.JobFailed, FinishedAt: job.FinishedAt},
			"", fmt.Sprintf("Job %s succeeded but its result is unusable: %v", name, err))
	}
	r.RaftIndex, r.RaftTerm, r.SizeBytes = int64(res.RaftIndex), int64(res.RaftTerm), res.SizeBytes
	r.RestoredAt = ptrTime(s.Now)
	if !res.RestoredAt.IsZero() {
		r.RestoredAt = ptrTime(res.RestoredAt)
	}
	nextStep(r, baov1.RestoreStepRestart, s.Now)
	r.WaitingFor = "restarting " + memberName(c) + " so that it loads the restored data"
	return persist.Say(operation.Normal(EventSnapshotRestored, fmt.Sprintf("%s accepted %s (%d bytes, Raft index %d, term %d); restarting it so that it loads the restored keyring",
		res.RestoredTo, r.Source, r.SizeBytes, r.RaftIndex, r.RaftTerm)))
}

func createRestoreJob(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus) operation.Plan {
	c := s.Object
	job := RestoreJob(c, r, s.RestoreImage())
	r.WaitingFor = fmt.Sprintf("restoring %s (attempt %d of %d)", r.Source, r.Attempts, RestoreAttempts)
	return operation.Plan{Status: st, Job: job, Poll: Poll,
		Action:   operation.Action{Kind: operation.KindCreateJob, Job: operation.JobRestore, RequeueAfter: Poll, WaitingFor: r.WaitingFor},
		JobEvent: &operation.Event{Reason: EventStarted, Message: fmt.Sprintf("Restoring %s into %s, attempt %d of %d", r.Source, memberName(c), r.Attempts, RestoreAttempts)}}
}

// retryRestore starts the next attempt of the restore or rebind Job after
// RetryDelay, or ends the restore as failed: at once when the executor said
// retrying cannot help (a checksum that does not match, an object that is not a
// snapshot, a permission OpenBao refused).
func retryRestore(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan, name string, job operation.Job, term, why string) operation.Plan {
	if why == "" {
		why = fmt.Sprintf("Job %s failed: %s", name, orJobMessage(term, job.Message))
	}
	if strings.Contains(term, fatalMarker) || r.Attempts >= RestoreAttempts {
		return failRestore(s.Object, st, r, s.Now, persist, why)
	}
	if p, pause := retryPause(st, r, job, why, s.Now); pause {
		return p
	}
	r.Attempts++
	if r.Step == baov1.RestoreStepRebind {
		return createRebindJob(s, st, r)
	}
	return createRestoreJob(s, st, r)
}

// retryPause is the wait of a restore before its next Job attempt: RetryDelay after
// the failed one finished. pause is false once it passed.
func retryPause(st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, job operation.Job, why string, now time.Time) (p operation.Plan, pause bool) {
	wait := job.FinishedAt.Add(RetryDelay).Sub(now)
	if job.FinishedAt.IsZero() || wait <= 0 {
		return operation.Plan{}, false
	}
	r.WaitingFor = fmt.Sprintf("%s; retrying in %s", why, wait.Round(time.Second))
	return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: wait, WaitingFor: r.WaitingFor}}, true
}

func orJobMessage(term, msg string) string {
	if term == "" {
		return msg
	}
	return term
}

// failRestore ends the restore for good: the cluster keeps its one member, serves
// no client, and nothing else runs on it.
func failRestore(c *baov1.OpenBaoCluster, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, now time.Time, persist operation.Plan, why string) operation.Plan {
	msg := fmt.Sprintf("The restore of %s stopped at step %s after %d attempt(s): %s. The cluster keeps one member and no client Service. "+
		"Fix the cause, then delete this OpenBaoCluster and its volume claims (kubectl delete pvc -n %s -l %s=%s) and create it again",
		r.Source, r.Step, r.Attempts, why, c.Namespace, workload.LabelCluster, c.Name)
	return endFailed(st, r, now, persist, msg)
}

// endFailed records a restore's failure (either kind), releases its lock and says
// so in a Warning event.
func endFailed(st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, now time.Time, persist operation.Plan, msg string) operation.Plan {
	r.Failure, r.WaitingFor = msg, ""
	r.Step = baov1.RestoreStepFailed
	r.StepStartedAt = ptrTime(now)
	operation.Release(st, operation.OperationRestore)
	return persist.Say(operation.Warning(EventRestoreFailed, msg))
}

// restoreWait is a pass of a restore that waits for r.WaitingFor, looking again
// after Poll.
func restoreWait(st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus) operation.Plan {
	return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: r.WaitingFor}}
}

func restartStep(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan) operation.Plan {
	c := s.Object
	m := firstMember(s)
	wait := func(what string) operation.Plan {
		r.WaitingFor = what
		return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: what}}
	}
	switch {
	case r.RestartedPod == "":
		if m == nil || !m.PodExists || m.UID == "" {
			return wait("waiting for the pod of " + memberName(c) + " to restart it")
		}
		// The pod to delete, persisted before it is deleted: a pod with another UID
		// is the restarted one.
		r.RestartedPod = m.UID
		return persist
	case m != nil && m.PodExists && m.UID == r.RestartedPod:
		if m.PodTerminating {
			return wait(memberName(c) + " is stopping")
		}
		r.WaitingFor = "restarting " + memberName(c)
		return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectPod, Member: m.Name, WaitingFor: r.WaitingFor}}
	case !serving(m):
		return wait(fmt.Sprintf("waiting for %s to start again and unseal the restored data", memberName(c)))
	}
	if c.BootstrapSourceCluster() != c.Name {
		nextStep(r, baov1.RestoreStepRebind, s.Now)
		r.WaitingFor = "rewriting the roles of " + c.BootstrapSourceCluster() + " that the snapshot holds to this cluster's identity"
		return persist
	}
	nextStep(r, baov1.RestoreStepCheck, s.Now)
	r.WaitingFor = "reading the restored member with the controller's role"
	return persist
}

func rebindStep(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan) operation.Plan {
	c := s.Object
	if why := RebindRefusal(c, s.RestoreSource); why != "" && r.Attempts == 0 {
		return failRestore(c, st, r, s.Now, persist, why)
	}
	if r.Attempts == 0 {
		r.Attempts = 1
		return createRebindJob(s, st, r)
	}
	name := RebindJobName(c, r)
	job := s.JobOf(name, r.ID)
	term := s.Jobs[name].Termination
	switch job.Phase {
	case operation.JobNone:
		if why := RebindRefusal(c, s.RestoreSource); why != "" {
			return failRestore(c, st, r, s.Now, persist, why)
		}
		return createRebindJob(s, st, r)
	case operation.JobRunning:
		r.WaitingFor = fmt.Sprintf("waiting for Job %s (rewrite the roles)", name)
		return restoreWait(st, r)
	case operation.JobFailed:
		if s.AutopilotKnown {
			// The controller reads the member with its own role: an earlier attempt
			// rewrote the roles (this one then failed to log in as the source).
			break
		}
		return retryRestore(s, st, r, persist, name, job, term, "")
	}
	// The source's executor identity is not needed any more: the ServiceAccount
	// this cluster created for it goes (a no-op when it was the source's own).
	// The next step is in the same status write; a pass that loses it deletes
	// again, which finds nothing.
	nextStep(r, baov1.RestoreStepCheck, s.Now)
	r.WaitingFor = "reading the restored member with the controller's role"
	return operation.Plan{Status: st, Poll: Poll, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectRestoreIdentity, WaitingFor: r.WaitingFor}}
}

func createRebindJob(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus) operation.Plan {
	c := s.Object
	job := RebindJob(c, r, s.ControllerSubject, s.RestoreImage())
	r.WaitingFor = fmt.Sprintf("rewriting the roles the snapshot holds (attempt %d of %d)", r.Attempts, RestoreAttempts)
	return operation.Plan{Status: st, Job: job, Poll: Poll,
		Action: operation.Action{Kind: operation.KindCreateJob, Job: operation.JobRebind, RequeueAfter: Poll, WaitingFor: r.WaitingFor},
		JobEvent: &operation.Event{Reason: EventStarted, Message: fmt.Sprintf("Logging in to %s as %s's executor to rewrite the roles the snapshot holds to %s's identity, attempt %d of %d",
			memberName(c), c.BootstrapSourceCluster(), c.Name, r.Attempts, RestoreAttempts)}}
}

func checkStep(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan) operation.Plan {
	c := s.Object
	m := firstMember(s)
	ok := serving(m) && s.AutopilotKnown && s.Leader != "" && m.InRaft && m.Voter
	if ok && s.LeaderIndex > 0 && s.LeaderIndex < uint64(r.RaftIndex) {
		ok = false
	}
	timedOut := r.StepStartedAt != nil && s.Now.Sub(r.StepStartedAt.Time) > RestoreCheckTimeout
	if !ok {
		if timedOut {
			return failRestore(c, st, r, s.Now, persist, fmt.Sprintf("the controller could not read the restored member with its own role within %s "+
				"(the roles the snapshot holds may not be baokeeper's; see docs/restore.md)", RestoreCheckTimeout))
		}
		r.WaitingFor = fmt.Sprintf("waiting to read %s with the controller's role (leader, Raft configuration, autopilot)", memberName(c))
		return restoreWait(st, r)
	}
	want := c.Spec.Bootstrap.FromSnapshot.Canary
	if cok, why, wrong := canaryVerdict(want, s.Canary); !cok {
		if wrong || timedOut {
			return failRestore(c, st, r, s.Now, persist, why)
		}
		r.WaitingFor = why
		return restoreWait(st, r)
	}
	r.Canary = want
	nextStep(r, baov1.RestoreStepDone, s.Now)
	r.CompletedAt, r.WaitingFor = ptrTime(s.Now), ""
	operation.Release(st, operation.OperationRestore)
	took := ""
	if r.StartedAt != nil {
		took = fmt.Sprintf(" in %s", s.Now.Sub(r.StartedAt.Time).Round(time.Second))
	}
	return persist.Say(operation.Normal(EventRestoreCompleted, fmt.Sprintf("Restored %s (Raft index %d)%s: %s leads with the restored data%s; the cluster grows to %d members",
		r.Source, r.RaftIndex, took, s.Leader, canaryWords(r.Canary), c.GetReplicas())))
}

func nextStep(r *baov1.RestoreStatus, step baov1.RestoreStep, now time.Time) {
	r.Step, r.Attempts, r.StepStartedAt = step, 0, ptrTime(now)
}

// RestoreJobName is <cluster>-restore-<id>-<attempt>.
func RestoreJobName(c *baov1.OpenBaoCluster, r *baov1.RestoreStatus) string {
	return executorjob.BoundedName(fmt.Sprintf("%s-%s-%s-%d", c.Name, StepRestore, r.ID, r.Attempts))
}

// RebindJobName is <cluster>-rebind-<id>-<attempt>.
func RebindJobName(c *baov1.OpenBaoCluster, r *baov1.RestoreStatus) string {
	return executorjob.BoundedName(fmt.Sprintf("%s-%s-%s-%d", c.Name, StepRebind, r.ID, r.Attempts))
}

// RestoreJob is the Job of the restore step's current attempt: it downloads the
// object into an emptyDir, checks its SHA-256 against the spec's and sends it to
// member 0.
func RestoreJob(c *baov1.OpenBaoCluster, r *baov1.RestoreStatus, image string) *batchv1.Job {
	src := c.Spec.Bootstrap.FromSnapshot
	args := append([]string{
		"executor", ActionRestore,
		"--members", strings.Join(executorjob.MemberAddressesN(c, 1), ","),
		"--ca-file", executorjob.CAFile,
		"--token-file", executorjob.TokenFile,
		"--s3-key", src.Key,
		"--sha256", src.SHA256,
		"--work-dir", RestoreWorkDir,
	}, targetArgs(&src.S3)...)
	vols, mounts := targetVolumes(&src.S3)
	vols = append(vols, corev1.Volume{Name: "restore-work", VolumeSource: corev1.VolumeSource{EmptyDir: restoreWorkDir()}})
	mounts = append(mounts, corev1.VolumeMount{Name: "restore-work", MountPath: RestoreWorkDir})
	return executorjob.ExecutorJob(c, executorjob.ExecutorJobSpec{
		Name: RestoreJobName(c, r), Step: StepRestore, Operation: r.ID, Image: image, Args: args,
		Env:                   targetEnv(&src.S3),
		Volumes:               vols,
		VolumeMounts:          mounts,
		ActiveDeadlineSeconds: restoreActiveDeadlineSeconds,
		MemoryLimit:           MemoryLimit,
	})
}

// SourceIdentity is the executor ServiceAccount and JWT audience of the cluster a
// bootstrap snapshot was taken from: what the roles in its data trust.
func SourceIdentity(c *baov1.OpenBaoCluster) (serviceAccount types.NamespacedName, audience string) {
	src := &baov1.OpenBaoCluster{}
	src.Name, src.Namespace = c.BootstrapSourceCluster(), c.Namespace
	return types.NamespacedName{Namespace: c.Namespace, Name: workload.NamesFor(src).ExecutorServiceAccount()}, workload.ClusterAudience(src)
}

// RebindJob is the Job of the rebind step's current attempt: it runs as the source
// cluster's executor, with the source's audience, and rewrites the executor and
// controller roles to this cluster's subject and audience.
func RebindJob(c *baov1.OpenBaoCluster, r *baov1.RestoreStatus, controllerSubject, image string) *batchv1.Job {
	sa, audience := SourceIdentity(c)
	args := []string{
		"executor", ActionRebind,
		"--members", strings.Join(executorjob.MemberAddressesN(c, 1), ","),
		"--ca-file", executorjob.CAFile,
		"--token-file", executorjob.TokenFile,
		"--executor-subject", workload.ServiceAccountSubject(c.Namespace, workload.NamesFor(c).ExecutorServiceAccount()),
		"--controller-subject", controllerSubject,
		"--audience", workload.JWTAudience(c),
	}
	return executorjob.ExecutorJob(c, executorjob.ExecutorJobSpec{
		Name: RebindJobName(c, r), Step: StepRebind, Operation: r.ID, Image: image, Args: args,
		ActiveDeadlineSeconds: PruneActiveDeadlineSeconds,
		ServiceAccountName:    sa.Name,
		Audience:              audience,
	})
}

// RestoreIdentityAccount is the ServiceAccount a rebind Job runs as, created by the
// cluster that restores when the source cluster (and so its account) is gone. It is
// labelled for this cluster and owned by it, and deleted after the rebind.
func RestoreIdentityAccount(c *baov1.OpenBaoCluster) *corev1.ServiceAccount {
	sa, _ := SourceIdentity(c)
	return &corev1.ServiceAccount{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace, Labels: workload.CommonLabels(c),
			Annotations:     map[string]string{"baokeeper.dev/note": "Identity of " + c.BootstrapSourceCluster() + " that " + c.Name + " logs in with once, to rewrite the roles of the snapshot it restored; deleted afterwards."},
			OwnerReferences: []metav1.OwnerReference{workload.OwnerReference(c)}},
		AutomountServiceAccountToken: ptrBool(false),
	}
}

func ptrBool(b bool) *bool { return &b }
