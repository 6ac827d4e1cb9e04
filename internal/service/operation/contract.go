package operation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Operation is the one contract of every long-running operation of a cluster (a
// rolling upgrade, a rollout of the pod template, a blue-green upgrade, a scaling,
// the pre-upgrade snapshot, the planning that starts them): a pure decision over
// one observed Snapshot that returns a Plan. The upgrade manager chooses one
// operation per pass, asks it once, and carries out the Plan with its one executor;
// nothing else decides.
type Operation interface {
	// Name says which operation this is, for logs and tests.
	Name() string
	// Decide returns the next step. It reads the snapshot and changes nothing of
	// it (the status it wants is in the Plan); the same snapshot gives the same Plan.
	Decide(s *Snapshot) Plan
}

// Snapshot is everything one pass observed, read once at its start: the cluster
// object (spec, and status with this pass's requests applied), the members and the
// Raft view, the executor Jobs, the volume claims, the client Service's selection
// and the clock. Every read a decision needs is here; a decision never reads the API
// server or OpenBao itself.
type Snapshot struct {
	// Cluster holds the members, the Raft view, the StatefulSets and Now.
	*Cluster
	// Object is the OpenBaoCluster as read. Decisions must not change it: they
	// start from a copy of its status (Status) and return it in the Plan.
	Object *baov1.OpenBaoCluster
	// Jobs are the cluster's executor Jobs by name.
	Jobs map[string]ObservedJob
	// Volumes are the names of the cluster's volume claims that are not being
	// deleted, sorted.
	Volumes []string
	// VolumeUIDs are the UIDs of those claims, by name.
	VolumeUIDs map[string]string
	// ClientSelects is the StatefulSet the client Service selects; empty without
	// the Service.
	ClientSelects string
	// ExecutorImage is the image of executor Jobs.
	ExecutorImage string
	// Drill is the cluster's restore-drill cluster (labelled baokeeper.dev/drill-of
	// with its name), nil when there is none.
	Drill *baov1.OpenBaoCluster
	// Rehearsal is the copy of the cluster's upgrade rehearsal (labelled
	// baokeeper.dev/rehearsal-of with its name), nil when there is none.
	Rehearsal *baov1.OpenBaoCluster
	// RehearsalCanary is the restore canary as read on the rehearsal's copy after
	// its upgrade, with the controller's role (snapshot.RehearsalCanaryWanted says
	// when); nil when it was not read this pass.
	RehearsalCanary *CanaryRead
	// Fleet is what the pass read of the other OpenBaoClusters, read only when the
	// cluster orders its upgrades after others (spec.upgrade.after).
	Fleet Fleet
	// ControllerSubject is the subject (system:serviceaccount:NS:NAME) of the
	// operator's service account, which the cluster's controller role binds.
	ControllerSubject string
	// OperatorExecutorImage is the operator's own executor image: the one a restore's
	// steps run, whatever spec.upgrade.executor.image says (they hold a snapshot's
	// credentials and, for a rebind, another cluster's identity). Empty: ExecutorImage.
	OperatorExecutorImage string
	// RestoreSource is what the pass read of the cluster a bootstrap snapshot was
	// taken from, when the restore is at its rebind step; nil otherwise.
	RestoreSource *RestoreSource
}

// RestoreSource is the source cluster of a restore and the executor ServiceAccount
// of its name, as read: what decides whether the rebind may log in as it.
type RestoreSource struct {
	// Cluster is the source OpenBaoCluster; nil when it does not exist.
	Cluster *baov1.OpenBaoCluster
	// AccountExists says whether a ServiceAccount <source>-executor exists;
	// AccountController is its controller ("" without one) as Kind/Name/UID.
	AccountExists     bool
	AccountController *metav1.OwnerReference
}

// RestoreImage is the image of the steps that must never run an image a tenant
// chose (spec.upgrade.executor.image): a restore's and a recovery's from a lost
// majority. The operator's own.
func (s *Snapshot) RestoreImage() string {
	if s.OperatorExecutorImage != "" {
		return s.OperatorExecutorImage
	}
	return s.ExecutorImage
}

// ObservedJob is one executor Job as read.
type ObservedJob struct {
	// Job is its phase, finish time and failure message.
	Job
	// Operation is its baokeeper.dev/operation label.
	Operation string
	// Stuck says why its pod cannot start (an image that cannot be pulled, a Secret
	// that is gone), when it runs but cannot; empty otherwise. The executor deletes
	// such a Job after the pass.
	Stuck string
	// Termination is the termination message its pod left, once it finished.
	Termination string
}

// Status returns a copy of the observed status for a decision to change.
func (s *Snapshot) Status() *baov1.OpenBaoClusterStatus {
	return s.Object.Status.DeepCopy()
}

// JobOf is the Job named name of the operation with ID opID, as that operation sees
// it: none when it does not exist; failed when it belongs to another operation (so
// the next attempt gets a name of its own), or when its pod cannot start (after the
// executor's start grace, instead of the Job's whole deadline). An empty opID (an
// upgrade started before IDs existed) takes the Job whatever its label.
func (s *Snapshot) JobOf(name, opID string) Job {
	j, ok := s.Jobs[name]
	switch {
	case !ok:
		return Job{}
	case opID != "" && j.Operation != opID:
		return Job{Phase: JobFailed, FinishedAt: s.Now,
			Message: fmt.Sprintf("Job %s belongs to another operation (baokeeper.dev/operation=%q), not to this one (%s)", name, j.Operation, opID)}
	case j.Stuck != "":
		return Job{Phase: JobFailed, FinishedAt: s.Now,
			Message: j.Stuck + "; check spec.upgrade.executor.image and the Secrets the Job uses, then set the baokeeper.dev/retry annotation"}
	}
	return j.Job
}

// HasVolume reports whether the named volume claim exists and is not being deleted.
func (s *Snapshot) HasVolume(name string) bool {
	_, found := slices.BinarySearch(s.Volumes, name)
	return found
}

// Event is a transition a Plan announces.
type Event struct {
	// Warning is true for a Warning event, false for a Normal one.
	Warning bool
	// Reason is the event's reason.
	Reason baov1.Reason
	// Message says what happened, with names as they are.
	Message string
}

// Normal is a Normal event.
func Normal(reason baov1.Reason, msg string) Event { return Event{Reason: reason, Message: msg} }

// Warning is a Warning event.
func Warning(reason baov1.Reason, msg string) Event {
	return Event{Warning: true, Reason: reason, Message: msg}
}

// Plan is what an operation decided for one pass: the status the pass leaves (the
// intent of the next step, persisted before that step is taken in a later pass),
// the one effect on the world (Action, from a closed set), the Job a CreateJob
// creates, the events, and how long the operation waits.
type Plan struct {
	Action
	// Status is the whole status this pass leaves; nil leaves it as observed.
	Status *baov1.OpenBaoClusterStatus
	// Job is the executor Job of a CreateJob, built from the persisted step.
	Job *batchv1.Job
	// Events are announced once the status write landed (a pass whose write is
	// discarded announces nothing, and its successor decides them again).
	Events []Event
	// JobEvent is announced when this pass created Job (not when it existed); the
	// executor appends the Job's name.
	JobEvent *Event
	// LeaderTransferred is true when this pass verified a planned hand-off of the
	// leadership (for the metrics).
	LeaderTransferred bool
	// Poll is how soon a pass that waits on OpenBao or a pod looks again (OpenBao
	// has no watch); 0 for the executor's default.
	Poll time.Duration
}

// Until is when a timer ends the plan's wait; zero without a timer.
func (p Plan) Until(now time.Time) time.Time {
	if p.RequeueAfter <= 0 {
		return time.Time{}
	}
	return now.Add(p.RequeueAfter)
}

// Say adds events to the plan and returns it.
func (p Plan) Say(ev ...Event) Plan {
	p.Events = append(p.Events, ev...)
	return p
}

// Nothing is the plan of a pass with nothing to do: no status change, no action.
func Nothing() Plan { return Plan{Action: Action{Kind: KindNone}} }

// ID is a short identity of one operation for the names and labels of its executor
// Jobs: 8 hex digits of a hash of the cluster's UID, the operation and its start
// time, persisted in status with the operation so it is the same after a restart.
func ID(c *baov1.OpenBaoCluster, what string, started time.Time) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", c.UID, what, started.UnixNano())))
	return hex.EncodeToString(sum[:4])
}

// With is the snapshot with its object's status replaced by st: what a guard that
// decided part of a pass (the lock, the quorum watch) hands to the phase that decides
// the rest, so that the phase's Plan carries both.
func (s *Snapshot) With(st *baov1.OpenBaoClusterStatus) *Snapshot {
	obj := *s.Object
	obj.Status = *st
	out := *s
	out.Object = &obj
	return &out
}
