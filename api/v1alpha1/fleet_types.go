package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Upgrading a fleet: the order between clusters (spec.upgrade.after), maintenance
// windows (spec.upgrade.windows) and the history of operations (status.history).
// See docs/fleet.md.

// UpgradeOrder names a cluster whose upgrade to the same version goes first.
type UpgradeOrder struct {
	// name of the OpenBaoCluster that goes first.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// namespace of that OpenBaoCluster. Default: this cluster's namespace. An
	// operator that watches only some namespaces reads only clusters in those; a
	// cluster in another namespace is reported, not guessed at (docs/fleet.md).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// soak is how long the named cluster must have run the new version (or a
	// later one), Available, with no upgrade in progress, no failure and no
	// break-glass, before this cluster's upgrade to that version starts. A duration
	// with a unit, 0s or more, for example 24h. Default 0s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.after[].soak must be a duration with a unit, for example 24h (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) >= duration('0s')",message="spec.upgrade.after[].soak must not be negative; use 0s for no wait, or for example 24h"
	Soak *Duration `json:"soak,omitempty"`
}

// MaintenanceWindow is a recurring stretch of time in which disruptive changes may
// start.
type MaintenanceWindow struct {
	// start is when the window opens, in cron syntax (five fields: minute hour
	// day-of-month month day-of-week) or a descriptor such as @daily, read in
	// timeZone. For example "0 2 * * 6" opens it on Saturdays at 02:00.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^@(hourly|daily|midnight|weekly|monthly|yearly|annually)$') || self.matches('^\\\\s*\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s*$')",message="spec.upgrade.windows[].start must be a cron expression of five fields (minute hour day-of-month month day-of-week), for example \"0 2 * * 6\" for Saturdays at 02:00, or one of @daily, @weekly, @monthly"
	Start string `json:"start"`

	// duration is how long the window stays open, a duration with a unit greater
	// than 0s and at most 168h, for example 4h.
	// +required
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.windows[].duration must be a positive duration with a unit, for example 4h (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || (duration(self) > duration('0s') && duration(self) <= duration('168h'))",message="spec.upgrade.windows[].duration must be greater than 0s and at most 168h, for example 4h"
	Duration Duration `json:"duration"`

	// timeZone is the IANA time zone start is read in, for example Europe/Berlin.
	// Default UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
}

// WindowEndPolicy says what an operation running when its window closes does.
// +kubebuilder:validation:Enum=Pause;Finish
type WindowEndPolicy string

const (
	// WindowEndPause finishes the member (or step) in progress and holds at the
	// next safe point until a window opens again. A blue-green upgrade past its
	// point of no return, and an offline upgrade whose members were stopped, always
	// finish.
	WindowEndPause WindowEndPolicy = "Pause"
	// WindowEndFinish runs the operation to its end.
	WindowEndFinish WindowEndPolicy = "Finish"
)

// WindowStatus is the maintenance window that is open, or the next one.
type WindowStatus struct {
	// open is true while a window is open.
	// +optional
	Open bool `json:"open,omitempty"`
	// opensAt is when the window (the open one, or the next) opens.
	// +optional
	OpensAt *metav1.Time `json:"opensAt,omitempty"`
	// closesAt is when it closes.
	// +optional
	ClosesAt *metav1.Time `json:"closesAt,omitempty"`
}

// OperationStats is what an operation in progress tallies for its history entry.
type OperationStats struct {
	// firstTerm is the Raft term first observed while the operation ran.
	// +optional
	FirstTerm int64 `json:"firstTerm,omitempty"`
	// lastTerm is the highest Raft term observed while it ran; lastTerm - firstTerm
	// is the number of elections seen.
	// +optional
	LastTerm int64 `json:"lastTerm,omitempty"`
	// longestStep is the step that took longest so far.
	// +optional
	LongestStep *StepRecord `json:"longestStep,omitempty"`
}

// StepRecord is one step that ended, and how long it took.
type StepRecord struct {
	// action is what the step did: a step action such as ReplaceMember, or
	// OfflineWindow (an offline upgrade's stop to its first leader on the target).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Action string `json:"action,omitempty"`
	// member it acted on.
	// +optional
	Member string `json:"member,omitempty"`
	// seconds it took, from its start to the pass that saw it end.
	// +optional
	Seconds int64 `json:"seconds,omitempty"`
}

// HistoryKind says what an operation in status.history did.
// +kubebuilder:validation:Enum=Version;Image;Rollout;Scaling;QuorumRecovery
type HistoryKind string

// History kinds: the three of status.upgrade (Version, Image, Rollout), scaling, and
// a recovery from a lost majority.
const (
	HistoryVersion        HistoryKind = HistoryKind(OperationVersion)
	HistoryImage          HistoryKind = HistoryKind(OperationImage)
	HistoryRollout        HistoryKind = HistoryKind(OperationRollout)
	HistoryScaling        HistoryKind = "Scaling"
	HistoryQuorumRecovery HistoryKind = "QuorumRecovery"
)

// Outcome is how an operation ended.
// +kubebuilder:validation:Enum=Succeeded;Failed;Cancelled;RolledBack
type Outcome string

const (
	// OutcomeSucceeded: it reached its target.
	OutcomeSucceeded Outcome = "Succeeded"
	// OutcomeFailed: it stopped on a failure and waits for baokeeper.dev/retry (a
	// retried operation that then ends leaves an entry of its own).
	OutcomeFailed Outcome = "Failed"
	// OutcomeCancelled: the spec changed back before it touched a member.
	OutcomeCancelled Outcome = "Cancelled"
	// OutcomeRolledBack: a blue-green upgrade was rolled back to blue.
	OutcomeRolledBack Outcome = "RolledBack"
)

// HistoryEntry is one operation that ended.
type HistoryEntry struct {
	// kind is what it changed.
	// +required
	Kind HistoryKind `json:"kind"`
	// outcome is how it ended.
	// +required
	Outcome Outcome `json:"outcome"`
	// id is the operation's id (status.upgrade.id or status.scaling.id).
	// +optional
	ID string `json:"id,omitempty"`
	// strategy of an upgrade.
	// +optional
	Strategy UpgradeStrategyType `json:"strategy,omitempty"`
	// fromVersion is the version before it.
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`
	// targetVersion is the version it went to.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`
	// changes says what a rollout changed.
	// +optional
	Changes string `json:"changes,omitempty"`
	// fromReplicas and targetReplicas of a scaling.
	// +optional
	FromReplicas int32 `json:"fromReplicas,omitempty"`
	// +optional
	TargetReplicas int32 `json:"targetReplicas,omitempty"`
	// startedAt is when it was planned.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// endedAt is when it ended.
	// +optional
	EndedAt *metav1.Time `json:"endedAt,omitempty"`
	// elections is how many times the Raft term advanced while it ran, as
	// observed.
	// +optional
	Elections int32 `json:"elections,omitempty"`
	// longestStep is the step that took longest.
	// +optional
	LongestStep *StepRecord `json:"longestStep,omitempty"`
	// snapshot is the pre-upgrade snapshot's receipt.
	// +optional
	Snapshot *SnapshotReceipt `json:"snapshot,omitempty"`
	// reason is the failure's reason, or why it was rolled back or cancelled.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says it in a sentence.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// DefaultHistoryLimit is how many entries status.history keeps by default.
const DefaultHistoryLimit = 10

// MaxHistoryLimit is the most spec.historyLimit allows: entries are kept in the
// object's status, which etcd stores whole on every write.
const MaxHistoryLimit = 50

// HistoryLimitOf is spec.historyLimit, or its default.
func (c *OpenBaoCluster) HistoryLimitOf() int {
	if c.Spec.HistoryLimit == nil {
		return DefaultHistoryLimit
	}
	return int(*c.Spec.HistoryLimit)
}

// UpgradePaused reports whether upgrades and rollouts hold at their next safe
// point: spec.upgrade.paused, or the baokeeper.dev/pause annotation set to "true".
func (c *OpenBaoCluster) UpgradePaused() bool {
	return c.Spec.Upgrade.Paused || c.PausedByAnnotation()
}

// PausedByAnnotation reports whether the baokeeper.dev/pause annotation is "true".
func (c *OpenBaoCluster) PausedByAnnotation() bool {
	return c.Annotations[AnnotationPause] == "true"
}

// PausedBy says what pauses the cluster's upgrades, in words: "spec.upgrade.paused",
// "the baokeeper.dev/pause annotation", or both; "" when nothing does.
func (c *OpenBaoCluster) PausedBy() string {
	switch {
	case c.Spec.Upgrade.Paused && c.PausedByAnnotation():
		return "spec.upgrade.paused and the " + AnnotationPause + " annotation"
	case c.Spec.Upgrade.Paused:
		return "spec.upgrade.paused"
	case c.PausedByAnnotation():
		return "the " + AnnotationPause + " annotation"
	}
	return ""
}
