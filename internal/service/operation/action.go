package operation

import (
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Kind is what the executor does with an Action. The set is closed: a strategy
// says what to do in these terms only, and the one executor of the adminops
// reconciler knows how. Why closed: every disruptive effect a strategy can have is
// then listed here, gated by the executor in one place (persisted intent first,
// idempotent, named after the operation), and a new strategy cannot add a side
// door.
type Kind string

// Kinds of actions.
const (
	// KindNone does nothing: the pass leaves status and cluster as they are.
	KindNone Kind = "None"
	// KindPersist writes the strategy's new status and nothing else: an intent
	// recorded before the action that follows it in a later pass.
	KindPersist Kind = "Persist"
	// KindApply creates or updates Object from the persisted status (server-side
	// apply, or create when absent).
	KindApply Kind = "Apply"
	// KindCreateJob creates the executor Job of the persisted current step.
	KindCreateJob Kind = "CreateJob"
	// KindDelete deletes Object (tolerating that it is gone).
	KindDelete Kind = "Delete"
	// KindWait waits for the world to change; WaitingFor says for what.
	KindWait Kind = "Wait"
	// KindHold waits for a person (a promote request, spec.upgrade.paused).
	KindHold Kind = "Hold"
	// KindFail records a failure with Reason and Message; a retry goes on.
	KindFail Kind = "Fail"
	// KindComplete ends the operation: the new currentVersion and the cleared
	// status in one write (invariant 8).
	KindComplete Kind = "Complete"
	// KindRolledBack ends a rolled-back operation: the cleared status and the
	// rollback's record in one write, currentVersion unchanged.
	KindRolledBack Kind = "RolledBack"
	// KindBreakGlass stops every automation of the cluster (invariant 7):
	// status.breakGlass with BreakGlass and Message, a fresh nonce and the Raft
	// view, until a person acknowledges the nonce.
	KindBreakGlass Kind = "BreakGlass"
)

// Object names the object an Apply or Delete acts on. The executor builds it from
// the cluster and the persisted status; the strategy never builds objects.
type Object string

// Objects.
const (
	// ObjectPodTemplate is the image of the serving StatefulSet's pod template.
	ObjectPodTemplate Object = "PodTemplate"
	// ObjectPod is the pod of Action.Member (UID precondition).
	ObjectPod Object = "Pod"
	// ObjectPods are the pods of Action.Members, deleted together and directly (not
	// evicted: an offline upgrade stops every member, which no
	// PodDisruptionBudget admits), each with its UID precondition.
	ObjectPods Object = "Pods"
	// ObjectGreenStatefulSet is green's StatefulSet (created in DeployGreen, deleted
	// in a rollback's cleanup).
	ObjectGreenStatefulSet Object = "GreenStatefulSet"
	// ObjectGreenVolumes are the PersistentVolumeClaims of green's members (deleted
	// in a rollback's cleanup).
	ObjectGreenVolumes Object = "GreenVolumes"
	// ObjectClientService is the client Service, selecting the serving StatefulSet.
	ObjectClientService Object = "ClientService"
	// ObjectBlueStatefulSet is blue's StatefulSet (deleted in cleanup).
	ObjectBlueStatefulSet Object = "BlueStatefulSet"
	// ObjectBlueVolumes are the PersistentVolumeClaims of blue's members.
	ObjectBlueVolumes Object = "BlueVolumes"
	// ObjectReplicas is the serving StatefulSet's replicas (Action.Replicas).
	ObjectReplicas Object = "Replicas"
	// ObjectVolume is the data volume claim of Action.Member (UID precondition).
	ObjectVolume Object = "Volume"
	// ObjectRestoreIdentity is the source cluster's executor ServiceAccount that a
	// restore's rebind Job runs as: created (owned by this cluster) only when no
	// object of that name exists, deleted afterwards only when this cluster owns it.
	ObjectRestoreIdentity Object = "RestoreIdentity"
	// ObjectDrillCluster is the drill cluster of a restore drill: created from
	// the persisted drill, deleted (with its volume claims and seal key) only when
	// it is labelled as this cluster's drill.
	ObjectDrillCluster Object = "DrillCluster"
	// ObjectRehearsalCluster is the copy of a rehearsal: created from the
	// persisted rehearsal, deleted (with its volume claims and seal key) only when
	// it is labelled as this cluster's rehearsal.
	ObjectRehearsalCluster Object = "RehearsalCluster"
	// ObjectRehearsalVersion is the copy's spec.version (and spec.image), set to
	// the rehearsal's target.
	ObjectRehearsalVersion Object = "RehearsalVersion"
	// ObjectMemberData are the data volume claims and then the pods of
	// Action.Members, each deleted only while it has the UID Action.Preconditions
	// names for it (a member joins afresh after a recovery from a lost majority); an
	// object without a UID there is left alone.
	ObjectMemberData Object = "MemberData"
)

// JobKind is the executor action of a CreateJob.
type JobKind string

// Job kinds.
const (
	JobStepDown   JobKind = "StepDown"
	JobPromote    JobKind = "Promote"
	JobDemote     JobKind = "Demote"
	JobRemovePeer JobKind = "RemovePeer"
	JobValidate   JobKind = "Validate"
	JobSnapshot   JobKind = "Snapshot"
	// JobPrune deletes the snapshot objects retention no longer keeps.
	JobPrune JobKind = "Prune"
	// JobCheckTarget checks that the snapshot target is reachable from the
	// cluster's namespace (a precheck; it changes nothing).
	JobCheckTarget JobKind = "CheckTarget"
	// JobRestore sends a verified snapshot to the member of a cluster that starts
	// from it.
	JobRestore JobKind = "Restore"
	// JobRebind rewrites the baokeeper roles a restored snapshot holds to the
	// cluster's own identity.
	JobRebind JobKind = "Rebind"
	// JobWritePeers writes OpenBao's peers.json into a survivor's Raft directory (a
	// recovery from a lost majority).
	JobWritePeers JobKind = "WritePeers"
)

// Action is one decision of a strategy for one pass.
type Action struct {
	Kind Kind
	// Object is what Apply and Delete act on.
	Object Object
	// Job is the executor action of CreateJob.
	Job JobKind
	// Member is the member the action is about, if any.
	Member string
	// Members are the members of a Delete of ObjectPods.
	Members []string
	// Image is the pod template's image of an Apply of ObjectPodTemplate.
	Image string
	// Replicas is the StatefulSet's replicas of an Apply of ObjectReplicas.
	Replicas int32
	// Volumes are the names of the volume claims a Delete of ObjectBlueVolumes,
	// ObjectGreenVolumes or ObjectVolume deletes.
	Volumes []string
	// Preconditions are the UIDs, by object name (pods and volume claims), that a
	// Delete of ObjectMemberData requires.
	Preconditions map[string]string
	// WaitingFor is the status message: what the operation waits for, in words a
	// person can act on.
	WaitingFor string
	// Event, when set, is emitted as a Normal event by the executor: a transition
	// worth telling (a phase entered, a member promoted).
	Event string
	// Reason and Message describe a failure (KindFail) or a hold.
	Reason  baov1.FailureReason
	Message string
	// BreakGlass is why automation stops (KindBreakGlass); Message says more.
	BreakGlass baov1.BreakGlassReason
	// Recovery is what a break-glass of a majority lost at rest records beyond the
	// Raft view; nil for the other reasons.
	Recovery *Recovery
	// RequeueAfter is set when the next event is a timer.
	RequeueAfter time.Duration
}

// Disruptive reports whether the action changes the cluster (anything but a
// status write or a wait). Such an action is taken only on a persisted intent.
func (a Action) Disruptive() bool {
	switch a.Kind {
	case KindApply, KindCreateJob, KindDelete:
		return true
	}
	return false
}

// Recovery is what break-glass MajorityLost records beyond the Raft view: the last
// voters, the survivor to recover from, what a recovery from it loses, and why each
// lost voter's data is gone.
type Recovery struct {
	// Voters are the voters of the last readable autopilot state.
	Voters []string
	// Survivor is the survivor with the highest committed index; empty for none.
	Survivor string
	// Loss says what a recovery from Survivor loses, and why.
	Loss string
	// Gone says, by voter, why its data is gone for good.
	Gone map[string]string
}
