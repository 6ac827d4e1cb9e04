package snapshot

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-version"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// An in-place restore replaces the data of a running cluster with one of its own
// snapshots. It is asked for with baokeeper.dev/restore, whose value binds the
// request to exactly one snapshot: the SHA-256 of a receipt the cluster recorded,
// optionally followed by "-" and a token of the requester's own (the same snapshot
// can then be asked for again). OpenBao restores into a running cluster by itself:
// the active node takes the snapshot (sys/storage/raft/snapshot-force), installs it
// through Raft, and every follower installs it from the leader and reloads its
// keyring (openbao internal/vault/raft.go, raftSnapshotRestoreCallback). baokeeper
// sends it, waits until the active node applied it, and then verifies every member.

// StepRestoreInPlace is the Job step label of an in-place restore's Job.
const StepRestoreInPlace = "restore-in-place"

// inPlaceValue is a baokeeper.dev/restore value: a receipt's SHA-256, optionally
// followed by "-" and a token.
var inPlaceValue = regexp.MustCompile(`^([0-9a-f]{64})(-[A-Za-z0-9._:+-]+)?$`)

// RestoreRequestSHA256 is the SHA-256 a baokeeper.dev/restore value names, or ""
// when the value names none.
func RestoreRequestSHA256(value string) string {
	m := inPlaceValue.FindStringSubmatch(value)
	if m == nil {
		return ""
	}
	return m[1]
}

// FindReceipt returns the receipt the cluster recorded with that SHA-256
// (status.snapshots.taken, then status.lastSnapshot), or nil.
func FindReceipt(st *baov1.OpenBaoClusterStatus, sha string) *baov1.SnapshotReceipt {
	if sha == "" {
		return nil
	}
	if ss := st.Snapshots; ss != nil {
		for i := range ss.Taken {
			if ss.Taken[i].SHA256 == sha {
				return &ss.Taken[i]
			}
		}
	}
	if r := st.LastSnapshot; r != nil && r.SHA256 == sha {
		return r
	}
	return nil
}

// InPlaceRunning reports whether an in-place restore was accepted and has not
// ended.
func InPlaceRunning(st *baov1.OpenBaoClusterStatus) bool {
	r := st.InPlaceRestore
	return r != nil && r.Step != baov1.RestoreStepDone && r.Step != baov1.RestoreStepFailed
}

// DecideRestore decides a baokeeper.dev/restore value: accepted (the restore runs
// as soon as it holds the operation lock) or refused, with what to do instead.
// The operator and kubectl bao both decide with it.
func DecideRestore(c *baov1.OpenBaoCluster, value string) RequestDecision {
	refuse := func(why string) RequestDecision {
		return RequestDecision{Message: fmt.Sprintf("%s=%s refused: %s; nothing was done", baov1.AnnotationRestore, value, why)}
	}
	st := &c.Status
	sha := RestoreRequestSHA256(value)
	switch {
	case st.BreakGlass != nil && st.BreakGlass.Active:
		return refuse(fmt.Sprintf("break-glass is active (%s) and every automation of this cluster is stopped; acknowledge it first (%s), then ask again with a new value",
			st.BreakGlass.Reason, baov1.AnnotationBreakGlassAck))
	case RestorePending(c):
		return refuse("the cluster is still restoring spec.bootstrap.fromSnapshot (status.restore); an in-place restore can be asked for once that one is done")
	case InPlaceRunning(st):
		r := st.InPlaceRestore
		return refuse(fmt.Sprintf("an in-place restore of %s (sha256 %s) is already at step %s; wait until it ended (status.inPlaceRestore)", r.Source, r.SHA256, r.Step))
	case sha == "":
		return refuse("the value must be the sha256 of one of this cluster's snapshot receipts (64 lowercase hex digits), optionally followed by - and a token of your own: " +
			"it names exactly the snapshot to restore. " + receiptsHint(st))
	}
	rc := FindReceipt(st, sha)
	if rc == nil {
		return refuse(fmt.Sprintf("no snapshot receipt of this cluster has sha256 %s. %s", sha, receiptsHint(st)))
	}
	if up := st.Upgrade; up != nil {
		return refuse(fmt.Sprintf("the cluster is upgrading from %s to %s: a restore would replace the data under the upgrade's steps. "+
			"Ask again once the upgrade finished or was rolled back (or cancel it by setting spec.version back to %s before a member was replaced)",
			up.FromVersion, up.TargetVersion, up.FromVersion))
	}
	if newerThan(rc.Version, st.CurrentVersion) {
		return refuse(fmt.Sprintf("the snapshot was taken on OpenBao %s and the cluster runs %s, which does not read data written by a newer version; "+
			"restore it into a new cluster at %s or later instead (kubectl bao restore %s --into NEW --sha256 %s)", rc.Version, st.CurrentVersion, rc.Version, c.Name, sha))
	}
	if _, _, err := TargetFor(c, rc.Location); err != nil {
		return refuse(err.Error() + ": name that bucket in spec.snapshots.s3 again so that baokeeper can read the object")
	}
	msg := fmt.Sprintf("Restoring %s (sha256 %s, taken %s on %s, Raft index %d) into %s in place: every write made since the snapshot is replaced",
		rc.Location, rc.SHA256, takenAt(rc), orUnknown(rc.Version), rc.RaftIndex, c.Name)
	if l := st.OperationLock; l != nil && l.Operation != operation.OperationRestore {
		msg += fmt.Sprintf("; queued after the operation in progress (%s: %s)", l.Operation, l.Message)
	}
	return RequestDecision{Accept: true, Message: msg}
}

// newerThan reports whether version snap is later than running (both parsed; an
// unparsable or empty one is not judged).
func newerThan(snap, running string) bool {
	if snap == "" || running == "" {
		return false
	}
	a, errA := version.NewSemver(snap)
	b, errB := version.NewSemver(running)
	return errA == nil && errB == nil && b.LessThan(a)
}

// receiptsHint names the newest receipts a request may name.
func receiptsHint(st *baov1.OpenBaoClusterStatus) string {
	var rs []baov1.SnapshotReceipt
	if ss := st.Snapshots; ss != nil {
		rs = append(rs, ss.Taken...)
	}
	if r := st.LastSnapshot; r != nil && !slices.ContainsFunc(rs, func(x baov1.SnapshotReceipt) bool { return x.SHA256 == r.SHA256 }) {
		rs = append(rs, *r)
	}
	if len(rs) == 0 {
		return "The cluster has recorded no snapshot: take one first (kubectl bao snapshot CLUSTER --wait)"
	}
	var parts []string
	for i, r := range rs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more (status.snapshots.taken)", len(rs)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s, taken %s)", r.SHA256, r.Location, takenAt(&r)))
	}
	return "Its receipts: " + strings.Join(parts, "; ")
}

func takenAt(r *baov1.SnapshotReceipt) string {
	if r.TakenAt == nil {
		return "at an unknown time"
	}
	return r.TakenAt.UTC().Format(time.RFC3339)
}

func orUnknown(v string) string {
	if v == "" {
		return "an unknown version"
	}
	return v
}

// RequestInPlace records an accepted in-place restore in status: it starts as soon
// as it holds the operation lock.
func RequestInPlace(st *baov1.OpenBaoClusterStatus, value string, now time.Time) {
	rc := FindReceipt(st, RestoreRequestSHA256(value))
	if rc == nil {
		return
	}
	st.InPlaceRestore = &baov1.RestoreStatus{Source: rc.Location, SHA256: rc.SHA256, Request: value, Version: rc.Version, RaftIndex: rc.RaftIndex,
		SizeBytes: rc.SizeBytes, Step: baov1.RestoreStepRestore, StartedAt: ptrTime(now),
		WaitingFor: "waiting for the operation lock"}
}

// InPlaceRestoreOperation restores a snapshot into the running cluster: with the
// operation lock, an executor Job downloads the object, checks its SHA-256 and
// archive, sends it to the active node and waits until that node applied it; then
// every member must be an unsealed, healthy voter at the restored index. A loss of
// quorum while it runs is break-glass. Each step is persisted in
// status.inPlaceRestore before it is taken.
type InPlaceRestoreOperation struct{}

// Name implements operation.Operation.
func (InPlaceRestoreOperation) Name() string { return "InPlaceRestore" }

// Decide implements operation.Operation.
func (InPlaceRestoreOperation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	r := st.InPlaceRestore
	if !InPlaceRunning(st) {
		return operation.Nothing()
	}
	persist := operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist, RequeueAfter: persistRequeue}}
	if r.ID == "" {
		if err := operation.Acquire(st, operation.OperationRestore, operation.HolderUpgradeManager, "restoring "+r.Source+" in place", s.Now); err != nil {
			r.WaitingFor = "the in-place restore waits: " + err.Error()
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: r.WaitingFor}}
		}
		r.ID = operation.ID(c, "restore", s.Now)
		r.StepStartedAt = ptrTime(s.Now)
		r.WaitingFor = "sending the snapshot to the active node"
		return persist.Say(operation.Normal(EventRestoreStarted, fmt.Sprintf("Restoring %s (sha256 %s) into %s in place: every write made since the snapshot is replaced",
			r.Source, r.SHA256, c.Name)))
	}
	w := operation.WatchQuorum(s.Cluster, r.LastVoters, timeOf(r.QuorumLostSince), "", operation.QuorumLossGrace, Poll)
	r.LastVoters, r.QuorumLostSince = w.LastVoters, nil
	if w.LostSince != nil {
		r.QuorumLostSince = ptrTime(*w.LostSince)
	}
	switch {
	case w.BreakGlass:
		r.WaitingFor = "break-glass: " + w.Message
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindBreakGlass, BreakGlass: baov1.BreakGlassQuorumLost,
			Message: fmt.Sprintf("during the in-place restore of %s (step %s), %s", r.Source, r.Step, w.Message)}}
	case w.Hold:
		r.WaitingFor = w.WaitingFor
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: w.RequeueAfter, WaitingFor: w.WaitingFor}}
	}
	switch r.Step {
	case baov1.RestoreStepRestore:
		return inPlaceRestoreStep(s, st, r, persist)
	case baov1.RestoreStepCheck:
		return inPlaceCheckStep(s, st, r, persist)
	}
	return failInPlace(c, st, r, s.Now, persist, fmt.Sprintf("step %s is not a step of an in-place restore", r.Step))
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.Time
	return &v
}

func inPlaceRestoreStep(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan) operation.Plan {
	c := s.Object
	if r.Attempts == 0 {
		if s.Leader == "" {
			r.WaitingFor = "waiting for a leader to send the snapshot to"
			return restoreWait(st, r)
		}
		r.Attempts = 1
		return createInPlaceJob(s, st, r, persist)
	}
	name := InPlaceRestoreJobName(c, r)
	job := s.JobOf(name, r.ID)
	term := s.Jobs[name].Termination
	switch job.Phase {
	case operation.JobNone:
		return createInPlaceJob(s, st, r, persist)
	case operation.JobRunning:
		r.WaitingFor = fmt.Sprintf("waiting for Job %s (download, check, send the snapshot and wait until the active node applied it)", name)
		return restoreWait(st, r)
	case operation.JobFailed:
		return retryInPlace(s, st, r, persist, job, fmt.Sprintf("Job %s failed: %s", name, orJobMessage(term, job.Message)), term)
	}
	res, err := ParseRestoreResult(term)
	if err == nil && (res.SHA256 != r.SHA256 || res.Location != r.Source) {
		err = fmt.Errorf("it restored %s (sha256 %s), not %s (sha256 %s)", res.Location, res.SHA256, r.Source, r.SHA256)
	}
	if err == nil && res.AppliedIndex == 0 {
		err = fmt.Errorf("it does not say at which Raft index the active node applied the snapshot")
	}
	if err != nil {
		return retryInPlace(s, st, r, persist, operation.Job{Phase: operation.JobFailed, FinishedAt: job.FinishedAt},
			fmt.Sprintf("Job %s succeeded but its result is unusable: %v", name, err), "")
	}
	r.AppliedIndex, r.RaftTerm, r.SizeBytes = int64(res.AppliedIndex), int64(res.RaftTerm), res.SizeBytes
	r.RestoredAt = ptrTime(s.Now)
	if !res.RestoredAt.IsZero() {
		r.RestoredAt = ptrTime(res.RestoredAt)
	}
	nextStep(r, baov1.RestoreStepCheck, s.Now)
	r.WaitingFor = "verifying every member at the restored index"
	return persist.Say(operation.Normal(EventSnapshotRestored, fmt.Sprintf("%s applied %s (%d bytes, snapshot at Raft index %d) at index %d; verifying every member",
		res.RestoredTo, r.Source, r.SizeBytes, r.RaftIndex, r.AppliedIndex)))
}

func createInPlaceJob(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan) operation.Plan {
	c := s.Object
	job, err := InPlaceRestoreJob(c, r, inPlaceMembers(s), s.ExecutorImage)
	if err != nil {
		return failInPlace(c, st, r, s.Now, persist, err.Error())
	}
	r.WaitingFor = fmt.Sprintf("restoring %s (attempt %d of %d)", r.Source, r.Attempts, RestoreAttempts)
	return operation.Plan{Status: st, Job: job, Poll: Poll,
		Action:   operation.Action{Kind: operation.KindCreateJob, Job: operation.JobRestore, RequeueAfter: Poll, WaitingFor: r.WaitingFor},
		JobEvent: &operation.Event{Reason: EventStarted, Message: fmt.Sprintf("Restoring %s into %s in place, attempt %d of %d", r.Source, c.Name, r.Attempts, RestoreAttempts)}}
}

// retryInPlace starts the next attempt of the restore Job after RetryDelay, or
// ends the restore as failed: at once when the executor said retrying cannot help.
// Sending a snapshot again is harmless: it replaces the data with the same data
// (and the writes of the seconds in between).
func retryInPlace(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan, job operation.Job, why, term string) operation.Plan {
	if strings.Contains(term, fatalMarker) || r.Attempts >= RestoreAttempts {
		return failInPlace(s.Object, st, r, s.Now, persist, why)
	}
	if p, pause := retryPause(st, r, job, why, s.Now); pause {
		return p
	}
	r.Attempts++
	return createInPlaceJob(s, st, r, persist)
}

// failInPlace ends the in-place restore: the lock is released and the cluster goes
// on with whatever data its members hold.
func failInPlace(c *baov1.OpenBaoCluster, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, now time.Time, persist operation.Plan, why string) operation.Plan {
	next := "The snapshot was not applied: the cluster's data is what it was"
	if r.Step == baov1.RestoreStepCheck {
		next = "The active node applied the snapshot, but not every member was verified: read status.members and the members' logs"
	}
	msg := fmt.Sprintf("The in-place restore of %s stopped at step %s after %d attempt(s): %s. %s. To try again once the cause is fixed, set %s=%s-<a new token>",
		r.Source, r.Step, max(r.Attempts, 1), why, next, baov1.AnnotationRestore, r.SHA256)
	return endFailed(st, r, now, persist, msg)
}

// inPlaceCheckStep verifies every member: the leader and each member the
// StatefulSet runs an unsealed, healthy voter whose Raft index reached the one the
// active node applied the snapshot at, and the canary the receipt records.
func inPlaceCheckStep(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, r *baov1.RestoreStatus, persist operation.Plan) operation.Plan {
	c := s.Object
	n := inPlaceMembers(s)
	problems := InPlaceProblems(s.Cluster, n, uint64(r.AppliedIndex))
	timedOut := r.StepStartedAt != nil && s.Now.Sub(r.StepStartedAt.Time) > RestoreCheckTimeout
	if len(problems) > 0 {
		what := strings.Join(problems, "; ")
		if timedOut {
			return failInPlace(c, st, r, s.Now, persist, fmt.Sprintf("not every member was verified within %s: %s", RestoreCheckTimeout, what))
		}
		r.WaitingFor = "verifying every member at the restored index: " + what
		return restoreWait(st, r)
	}
	want := canaryOf(st, r.SHA256)
	if cok, why, wrong := canaryVerdict(want, s.Canary); !cok {
		if wrong || timedOut {
			return failInPlace(c, st, r, s.Now, persist, why)
		}
		r.WaitingFor = why
		return restoreWait(st, r)
	}
	r.Canary = want
	nextStep(r, baov1.RestoreStepDone, s.Now)
	r.CompletedAt, r.WaitingFor = ptrTime(s.Now), ""
	r.LastVoters, r.QuorumLostSince = nil, nil
	operation.Release(st, operation.OperationRestore)
	took := ""
	if r.StartedAt != nil {
		took = fmt.Sprintf(" in %s", s.Now.Sub(r.StartedAt.Time).Round(time.Second))
	}
	return persist.Say(operation.Normal(EventRestoreCompleted, fmt.Sprintf("Restored %s in place%s: %s leads, and every member (%s) is an unsealed, healthy voter at Raft index %d or later%s",
		r.Source, took, s.Leader, strings.Join(memberNames(s.Cluster, n), ", "), r.AppliedIndex, canaryWords(r.Canary))))
}

// inPlaceMembers is how many members the restore verifies: those the StatefulSet
// runs (a spec.replicas changed meanwhile is the scaling's, which waits for the
// lock), or spec.replicas before the StatefulSet is observed.
func inPlaceMembers(s *operation.Snapshot) int32 {
	if n := s.Replicas(); n > 0 {
		return n
	}
	return s.Object.GetReplicas()
}

// InPlaceProblems lists, in words, why the members of an in-place restore are not
// verified yet: no leader or autopilot, the leader behind the applied index, or a
// member that is not an unsealed, healthy voter at it. Empty when verified. Pure.
func InPlaceProblems(c *operation.Cluster, replicas int32, applied uint64) []string {
	var out []string
	switch {
	case !c.AutopilotKnown || c.Leader == "":
		return []string{"autopilot cannot be read or names no leader (kubectl bao status shows what the controller reads; the leader's log says why it does not lead)"}
	case c.LeaderIndex < applied:
		out = append(out, fmt.Sprintf("the leader %s is at Raft index %d, below %d", c.Leader, c.LeaderIndex, applied))
	}
	for i := range c.Members {
		m := &c.Members[i]
		if int32(m.Ordinal) >= replicas {
			continue
		}
		switch {
		case !m.PodExists || m.PodTerminating:
			out = append(out, m.Name+" has no running pod")
		case !m.Initialized || m.Sealed:
			out = append(out, m.Name+" is sealed")
		case !m.InRaft || !m.Voter:
			out = append(out, m.Name+" is not a voter")
		case !m.Healthy:
			out = append(out, m.Name+" is not healthy for autopilot")
		case m.Name != c.Leader && m.LastIndex < applied:
			out = append(out, fmt.Sprintf("%s is at Raft index %d, below %d", m.Name, m.LastIndex, applied))
		}
	}
	if n := len(memberNames(c, replicas)); int32(n) < replicas {
		out = append(out, fmt.Sprintf("%d of %d members observed", n, replicas))
	}
	return out
}

func memberNames(c *operation.Cluster, replicas int32) []string {
	var out []string
	for _, m := range c.Members {
		if int32(m.Ordinal) < replicas {
			out = append(out, m.Name)
		}
	}
	return out
}

// InPlaceRestoreJobName is <cluster>-restore-in-place-<id>-<attempt>.
func InPlaceRestoreJobName(c *baov1.OpenBaoCluster, r *baov1.RestoreStatus) string {
	return executorjob.BoundedName(fmt.Sprintf("%s-%s-%s-%d", c.Name, StepRestoreInPlace, r.ID, r.Attempts))
}

// InPlaceRestoreJob is the Job of the in-place restore's current attempt: it
// downloads the object into an emptyDir, checks its SHA-256 against the receipt's,
// sends it to the active node among every member and waits until that node applied
// it. The bucket is the one of the spec's targets the receipt's location names.
func InPlaceRestoreJob(c *baov1.OpenBaoCluster, r *baov1.RestoreStatus, members int32, image string) (*batchv1.Job, error) {
	target, key, err := TargetFor(c, r.Source)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"executor", ActionRestore,
		"--members", strings.Join(executorjob.MemberAddressesN(c, members), ","),
		"--ca-file", executorjob.CAFile,
		"--token-file", executorjob.TokenFile,
		"--s3-key", key,
		"--sha256", r.SHA256,
		"--work-dir", RestoreWorkDir,
		"--wait-applied",
	}, targetArgs(target)...)
	vols, mounts := targetVolumes(target)
	vols = append(vols, corev1.Volume{Name: "restore-work", VolumeSource: corev1.VolumeSource{EmptyDir: restoreWorkDir()}})
	mounts = append(mounts, corev1.VolumeMount{Name: "restore-work", MountPath: RestoreWorkDir})
	return executorjob.ExecutorJob(c, executorjob.ExecutorJobSpec{
		Name: InPlaceRestoreJobName(c, r), Step: StepRestoreInPlace, Operation: r.ID, Image: image, Args: args,
		Env:                   targetEnv(target),
		Volumes:               vols,
		VolumeMounts:          mounts,
		ActiveDeadlineSeconds: restoreActiveDeadlineSeconds,
		MemoryLimit:           MemoryLimit,
	}), nil
}
