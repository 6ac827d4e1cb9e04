package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BootstrapSpec says what a new cluster starts from. Without it a cluster starts
// empty and initializes itself.
type BootstrapSpec struct {
	// fromSnapshot starts the cluster from a Raft snapshot instead of empty data:
	// the cluster starts with one member, initializes, restores the snapshot (after
	// checking its SHA-256), restarts that member, and only then grows to
	// spec.replicas through Raft and creates its client Service, so that no client
	// writes into data the restore replaces. kubectl bao restore --into writes it
	// from a snapshot's receipt.
	// +required
	FromSnapshot SnapshotSource `json:"fromSnapshot"`
}

// SnapshotSource names one verified snapshot in object storage.
type SnapshotSource struct {
	// s3 is the bucket that holds the snapshot (endpoint, bucket, credentials); its
	// prefix is not used: key is the object's whole key.
	// +required
	S3 S3Target `json:"s3"`

	// key is the object's key in the bucket: the part after s3://BUCKET/ of the
	// receipt's location.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`

	// sha256 is the receipt's checksum of the object, 64 lowercase hex digits. The
	// object is downloaded and checked against it before anything is sent to
	// OpenBao: a different object is refused, and nothing is restored.
	// +required
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{64}$')",message="spec.bootstrap.fromSnapshot.sha256 must be the 64 lowercase hex digits of the snapshot's receipt (status.lastSnapshot.sha256 or status.snapshots.taken[*].sha256 of the cluster it was taken from)"
	SHA256 string `json:"sha256"`

	// version is the OpenBao version the snapshot was taken on (the receipt's
	// version). spec.version must be the same or later: OpenBao does not read data
	// written by a newer version. When empty it is not checked.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// sourceCluster is the name of the OpenBaoCluster in this namespace that the
	// snapshot was taken from (it may no longer exist). The restored data trusts that
	// cluster's identity (its JWT roles name its executor service account and
	// audience): after the restore, baokeeper logs in once as that identity and
	// rewrites the two roles to this cluster's. Default: this cluster's name (a
	// cluster re-created under the same name needs no rewrite).
	// +optional
	// +kubebuilder:validation:MaxLength=40
	SourceCluster string `json:"sourceCluster,omitempty"`

	// canary is the restore canary's value the snapshot holds (the receipt's
	// canary): once restored, the controller reads baokeeper/data/canary and the
	// restore succeeds only when it is this value. Empty: not checked (a snapshot
	// of a cluster initialized before baokeeper wrote one).
	// +optional
	// +kubebuilder:validation:MaxLength=1100
	Canary string `json:"canary,omitempty"`

	// sealKeySecretRef names the Secret (key "key") that holds the static-seal key
	// the snapshot's data was sealed with; its key is copied into this cluster's own
	// seal Secret when the cluster is created. Default: <sourceCluster>-seal. Not
	// used with spec.seal.type Custom, whose seal must be the source's.
	// +optional
	SealKeySecretRef *corev1.LocalObjectReference `json:"sealKeySecretRef,omitempty"`
}

// RestoreStep is the step a restore is at.
// +kubebuilder:validation:Enum=Restore;Restart;Rebind;Check;Done;Failed
type RestoreStep string

const (
	// RestoreStepRestore: an executor Job downloads the object, checks its
	// SHA-256 and sends it to the active node (snapshot-force): the one member of a
	// new cluster, the leader of a running one.
	RestoreStepRestore RestoreStep = "Restore"
	// RestoreStepRestart: the member is restarted, so that it loads the restored
	// keyring before any other member joins.
	RestoreStepRestart RestoreStep = "Restart"
	// RestoreStepRebind: an executor Job logs in with the source cluster's identity
	// and rewrites the two baokeeper roles to this cluster's.
	RestoreStepRebind RestoreStep = "Rebind"
	// RestoreStepCheck: the controller reads the restored member with its own role;
	// in place, every member must be an unsealed, healthy voter at the restored
	// index.
	RestoreStepCheck RestoreStep = "Check"
	// RestoreStepDone: the data is the snapshot's; the cluster grows and serves.
	RestoreStepDone RestoreStep = "Done"
	// RestoreStepFailed: the restore stopped; status.restore.failure says why and
	// what to do.
	RestoreStepFailed RestoreStep = "Failed"
)

// RestoreStatus reports a restore: of a cluster bootstrapped from a snapshot
// (status.restore; steps Restore, Restart, Rebind, Check), or of a snapshot into a
// running cluster (status.inPlaceRestore; steps Restore, Check).
type RestoreStatus struct {
	// source is the snapshot's location, s3://BUCKET/KEY.
	Source string `json:"source"`

	// sha256 is the checksum the object must have.
	SHA256 string `json:"sha256"`

	// request is the baokeeper.dev/restore value that asked for an in-place
	// restore.
	// +optional
	Request string `json:"request,omitempty"`

	// id identifies this restore in its Jobs' names.
	// +optional
	ID string `json:"id,omitempty"`

	// step is what the restore does now (persisted before it is done).
	Step RestoreStep `json:"step"`

	// attempts counts the Jobs of the current step.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// startedAt is when the restore started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// stepStartedAt is when the current step started.
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`

	// restoredAt is when the member accepted the snapshot.
	// +optional
	RestoredAt *metav1.Time `json:"restoredAt,omitempty"`

	// completedAt is when the restored member was verified.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// restartedPod is the UID of the member pod that was deleted to restart it: a
	// pod with another UID is the restarted one.
	// +optional
	RestartedPod string `json:"restartedPod,omitempty"`

	// raftIndex and raftTerm are the last Raft index and term the snapshot holds.
	// +optional
	RaftIndex int64 `json:"raftIndex,omitempty"`
	// +optional
	RaftTerm int64 `json:"raftTerm,omitempty"`

	// sizeBytes is the size of the object that was restored.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`

	// version is the OpenBao version the snapshot was taken on (an in-place
	// restore: its receipt's).
	// +optional
	Version string `json:"version,omitempty"`

	// canary is the restore canary's value read back from the restored data, when
	// the snapshot's receipt had one.
	// +optional
	Canary string `json:"canary,omitempty"`

	// appliedIndex is the Raft index the active node had reached once it applied
	// the snapshot (an in-place restore): every member must reach it.
	// +optional
	AppliedIndex int64 `json:"appliedIndex,omitempty"`

	// lastVoters are the voters last seen while an in-place restore is checked: a
	// majority of them silent is a loss of quorum.
	// +optional
	LastVoters []string `json:"lastVoters,omitempty"`

	// quorumLostSince is when a majority of lastVoters stopped answering during an
	// in-place restore; break-glass follows once it lasted the grace.
	// +optional
	QuorumLostSince *metav1.Time `json:"quorumLostSince,omitempty"`

	// waitingFor says what the restore waits for.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`

	// failure says why the restore stopped and what to do.
	// +optional
	Failure string `json:"failure,omitempty"`
}

// Restored reports whether a cluster that starts from a snapshot finished its
// restore; a cluster without spec.bootstrap has nothing to restore.
func (c *OpenBaoCluster) Restored() bool {
	if c.Spec.Bootstrap == nil {
		return true
	}
	r := c.Status.Restore
	return r != nil && r.Step == RestoreStepDone
}

// BootstrapSourceCluster is the cluster a bootstrap snapshot was taken from: the
// spec's sourceCluster, or the cluster's own name.
func (c *OpenBaoCluster) BootstrapSourceCluster() string {
	if b := c.Spec.Bootstrap; b != nil && b.FromSnapshot.SourceCluster != "" {
		return b.FromSnapshot.SourceCluster
	}
	return c.Name
}

// InitialReplicas is how many members the cluster's StatefulSet is created with:
// spec.replicas, or one for a cluster that starts from a snapshot (the snapshot is
// restored into one member before any other joins).
func (c *OpenBaoCluster) InitialReplicas() int32 {
	if c.Spec.Bootstrap != nil {
		return 1
	}
	return c.GetReplicas()
}

// SnapshotVerifySpec configures restore drills.
type SnapshotVerifySpec struct {
	// schedule runs a drill at these times: a cron expression of five fields, or
	// @hourly, @daily, @weekly, @monthly, read in spec.snapshots.timeZone. A drill
	// missed while another operation held the cluster runs once, as soon as it can.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^@(hourly|daily|midnight|weekly|monthly|yearly|annually)$') || self.matches('^\\\\s*\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s*$')",message="spec.snapshots.verify.schedule must be a cron expression of five fields (minute hour day-of-month month day-of-week), for example \"0 3 * * 0\", or one of @hourly, @daily, @weekly, @monthly"
	Schedule string `json:"schedule"`

	// timeout bounds one drill, from the drill cluster's creation to its verdict.
	// Default 20m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.snapshots.verify.timeout must be a duration with a unit, for example 20m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="spec.snapshots.verify.timeout must be at least 1m"
	Timeout *Duration `json:"timeout,omitempty"`
}

// DrillStep is the step a restore drill is at.
// +kubebuilder:validation:Enum=Create;Restore;Delete
type DrillStep string

const (
	// DrillStepCreate: the drill cluster is created from the newest receipt.
	DrillStepCreate DrillStep = "Create"
	// DrillStepRestore: the drill cluster restores the snapshot; its Restored
	// condition is the verdict.
	DrillStepRestore DrillStep = "Restore"
	// DrillStepDelete: the drill cluster and its volume are deleted.
	DrillStepDelete DrillStep = "Delete"
)

// DrillOutcome is how a restore drill ended.
// +kubebuilder:validation:Enum=Passed;Failed;Skipped
type DrillOutcome string

const (
	// DrillPassed: the snapshot restored and the drill cluster was verified.
	DrillPassed DrillOutcome = "Passed"
	// DrillFailed: the snapshot did not restore, or the drill cluster could not be verified.
	DrillFailed DrillOutcome = "Failed"
	// DrillSkipped: no drill ran (the cluster was degraded, or had no snapshot).
	DrillSkipped DrillOutcome = "Skipped"
)

// DrillsStatus reports restore drills.
type DrillsStatus struct {
	// schedule is the schedule and time zone nextScheduledAt was computed from.
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// nextScheduledAt is the next time a drill runs.
	// +optional
	NextScheduledAt *metav1.Time `json:"nextScheduledAt,omitempty"`
	// due is the scheduled time of a drill that waits for the operation lock.
	// +optional
	Due *metav1.Time `json:"due,omitempty"`
	// waitingFor says why a due drill has not started: outside every maintenance
	// window (spec.upgrade.windows), it waits for the next.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// current is the drill in progress.
	// +optional
	Current *DrillRun `json:"current,omitempty"`
	// last is the last drill's result.
	// +optional
	Last *DrillResult `json:"last,omitempty"`
	// lastPassedAt is when the last drill that passed finished.
	// +optional
	LastPassedAt *metav1.Time `json:"lastPassedAt,omitempty"`
}

// DrillRun is a restore drill in progress.
type DrillRun struct {
	// id names the drill (the drill cluster's baokeeper.dev/drill-id label).
	ID string `json:"id"`
	// cluster is the drill cluster's name.
	Cluster string `json:"cluster"`
	// snapshot is the location of the snapshot it restores, sha256 its checksum.
	Snapshot string `json:"snapshot"`
	SHA256   string `json:"sha256"`
	// scheduledFor is the scheduled time of the drill.
	// +optional
	ScheduledFor *metav1.Time `json:"scheduledFor,omitempty"`
	// startedAt is when the drill took the operation lock.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// step is Create, Restore, then Delete.
	Step DrillStep `json:"step"`
	// result is the verdict, once known (kept while the drill cluster is deleted).
	// +optional
	Result *DrillResult `json:"result,omitempty"`
}

// DrillResult is how a restore drill ended.
type DrillResult struct {
	// id and cluster name the drill.
	// +optional
	ID string `json:"id,omitempty"`
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// snapshot is the location of the snapshot it restored.
	// +optional
	Snapshot string `json:"snapshot,omitempty"`
	// outcome is Passed, Failed or Skipped.
	Outcome DrillOutcome `json:"outcome"`
	// startedAt and finishedAt bound the drill.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// raftIndex is the Raft index the drill cluster restored.
	// +optional
	RaftIndex int64 `json:"raftIndex,omitempty"`
	// message says what was checked, or why it failed or was skipped.
	// +optional
	Message string `json:"message,omitempty"`
}

// RehearsalPolicy says whether a version change is rehearsed on a copy first.
type RehearsalPolicy string

const (
	// RehearsalRequired rehearses every version change on a copy restored from the
	// newest snapshot, and starts the real one only after the rehearsal passed.
	RehearsalRequired RehearsalPolicy = "Required"
	// RehearsalDisabled rehearses nothing (the default).
	RehearsalDisabled RehearsalPolicy = "Disabled"
)

// RehearsalStep is the step a rehearsal is at.
// +kubebuilder:validation:Enum=Create;Restore;Upgrade;Delete;Done
type RehearsalStep string

const (
	// RehearsalStepCreate: the copy is created from the newest receipt.
	RehearsalStepCreate RehearsalStep = "Create"
	// RehearsalStepRestore: the copy restores the snapshot and grows to its size.
	RehearsalStepRestore RehearsalStep = "Restore"
	// RehearsalStepUpgrade: the copy's spec.version is the target; its own upgrade
	// runs, with the same strategy and gates.
	RehearsalStepUpgrade RehearsalStep = "Upgrade"
	// RehearsalStepDelete: the copy is deleted with its volumes.
	RehearsalStepDelete RehearsalStep = "Delete"
	// RehearsalStepDone: the verdict is final.
	RehearsalStepDone RehearsalStep = "Done"
)

// RehearsalStatus reports the rehearsal of an upgrade on a copy.
type RehearsalStatus struct {
	// id names the rehearsal (the copy's baokeeper.dev/rehearsal-id label).
	ID string `json:"id"`
	// cluster is the copy's name.
	Cluster string `json:"cluster"`
	// snapshot is the location of the snapshot the copy starts from.
	Snapshot string `json:"snapshot"`
	// sha256 is its checksum.
	SHA256 string `json:"sha256"`
	// targetVersion is the version the copy is upgraded to.
	TargetVersion string `json:"targetVersion"`
	// fromVersion is the version the copy starts at (the cluster's).
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`
	// image is the OpenBao image the copy is upgraded to; empty for the image of
	// targetVersion that spec.image gives.
	// +optional
	Image string `json:"image,omitempty"`
	// request is the baokeeper.dev/rehearse value that asked for the rehearsal;
	// empty for the rehearsal of an upgrade (spec.upgrade.rehearsal Required).
	// +optional
	Request string `json:"request,omitempty"`
	// step is what the rehearsal does now.
	Step RehearsalStep `json:"step"`
	// startedAt is when the rehearsal started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// waitingFor says what the rehearsal waits for.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// result is the verdict, once known: Passed or Failed, and what was seen.
	// +optional
	Result *DrillResult `json:"result,omitempty"`
}

// RehearsalTimeout is how long one rehearsal may take.
func (c *OpenBaoCluster) RehearsalTimeout() time.Duration {
	return DurationOr(c.Spec.Upgrade.RehearsalTimeout, DefaultRehearsalTimeout)
}

// RehearsalValidFor is how long a requested rehearsal that passed stands for an
// upgrade between the same two versions that spec.upgrade.rehearsal Required
// holds: the upgrade starts without rehearsing again.
const RehearsalValidFor = 24 * time.Hour

// DefaultRehearsalTimeout bounds a rehearsal when spec.upgrade.rehearsalTimeout is unset.
const DefaultRehearsalTimeout = 30 * time.Minute

// NewestSnapshot is the newest verified snapshot of any trigger: lastSnapshot (the
// last upgrade's) or the newest of snapshots.taken, whichever was taken later; nil
// when there is none. The one rule of "the newest snapshot" for the operations,
// kubectl bao and the metrics.
func (st *OpenBaoClusterStatus) NewestSnapshot() *SnapshotReceipt {
	newest := st.LastSnapshot
	if ss := st.Snapshots; ss != nil && len(ss.Taken) > 0 && ss.Taken[0].TakenAt != nil {
		if newest == nil || newest.TakenAt == nil || ss.Taken[0].TakenAt.After(newest.TakenAt.Time) {
			newest = &ss.Taken[0]
		}
	}
	return newest
}
