package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OfflineUpgradeStatus is the record of an offline upgrade's outage.
type OfflineUpgradeStatus struct {
	// stoppedAt is when every member was asked to stop; set before any pod is
	// deleted.
	// +optional
	StoppedAt *metav1.Time `json:"stoppedAt,omitempty"`
	// committedIndex is the leader's committed Raft index read just before the stop:
	// every acknowledged write is at or below it, and the members must be back at
	// least there.
	// +optional
	CommittedIndex int64 `json:"committedIndex,omitempty"`
	// leaderBefore is the member that led before the stop.
	// +optional
	LeaderBefore string `json:"leaderBefore,omitempty"`
	// servingAt is when a leader on the target version was first seen after the
	// stop: the end of the window in which no member answered writes (Window).
	// +optional
	ServingAt *metav1.Time `json:"servingAt,omitempty"`
}

// Window is how long no member answered: servingAt minus stoppedAt, to the second
// ("23s"); "" until a leader on the target was seen. Derived, not stored: the two
// times are the record.
func (o *OfflineUpgradeStatus) Window() string {
	if o == nil || o.StoppedAt == nil || o.ServingAt == nil {
		return ""
	}
	return o.ServingAt.Sub(o.StoppedAt.Time).Round(time.Second).String()
}

// UpgradeStrategyType names how a version change is rolled out.
// +kubebuilder:validation:Enum=RollingUpdate;BlueGreen;Offline
type UpgradeStrategyType string

const (
	// RollingUpdateStrategy replaces members in place: followers one at a time, the leader last.
	RollingUpdateStrategy UpgradeStrategyType = "RollingUpdate"
	// BlueGreenStrategy starts a second ("green") set of members as non-voters and switches over.
	BlueGreenStrategy UpgradeStrategyType = "BlueGreen"
	// OfflineStrategy stops every member at once and starts each again on the target
	// on its own volume: no two versions ever run side by side, at the cost of a
	// window in which no member answers. The way across a version boundary that two
	// versions cannot share (the VersionCompatibility precheck).
	OfflineStrategy UpgradeStrategyType = "Offline"
)

// Duration is a length of time written as a Go duration string with a unit, for
// example "10s", "5m" or "1h30m".
//
// Unlike metav1.Duration it decodes any string: a value that the API server stored
// before it validated durations (or that reached etcd around validation) keeps its
// text, and baokeeper refuses that one cluster with SpecValid=False naming the field,
// instead of failing to list, and so to serve, every cluster of the installation.
// Parse it with Parse.
// +kubebuilder:validation:MaxLength=32
type Duration string

// SnapshotPolicy says when a Raft snapshot is taken before an upgrade.
// +kubebuilder:validation:Enum=Always;IfOlderThan;Never
type SnapshotPolicy string

const (
	// SnapshotAlways takes a fresh snapshot before every upgrade.
	SnapshotAlways SnapshotPolicy = "Always"
	// SnapshotIfOlderThan reuses the last snapshot when it is younger than maxAge.
	SnapshotIfOlderThan SnapshotPolicy = "IfOlderThan"
	// SnapshotNever takes no snapshot. Undo then means restoring a backup taken elsewhere.
	SnapshotNever SnapshotPolicy = "Never"
)

// SealType selects how OpenBao unseals.
// +kubebuilder:validation:Enum=Static;Custom
type SealType string

const (
	// StaticSeal uses a 32-byte key that baokeeper generates once and keeps in a Secret.
	StaticSeal SealType = "Static"
	// CustomSeal uses a seal stanza the user writes (transit, pkcs11, a cloud KMS, ...).
	CustomSeal SealType = "Custom"
)

// OpenBaoClusterSpec is the desired state of an OpenBao Raft cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.snapshots) || !has(self.snapshots.verify) || has(self.snapshots.s3) || (has(self.upgrade) && has(self.upgrade.preUpgradeSnapshot) && has(self.upgrade.preUpgradeSnapshot.s3))",message="spec.snapshots.verify needs a bucket to restore from: set spec.snapshots.s3 (or spec.upgrade.preUpgradeSnapshot.s3)"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap)",message="spec.bootstrap can only be given when the cluster is created: it says what a new cluster starts from. To restore a snapshot, create a new cluster with kubectl bao restore --into NAME"
// +kubebuilder:validation:XValidation:rule="!has(self.seal) || !has(self.seal.type) || self.seal.type != 'Custom' || (has(self.seal.customStanza) && size(self.seal.customStanza) > 0)",message="spec.seal.customStanza is required when spec.seal.type is Custom; add the seal stanza or set spec.seal.type to Static"
// +kubebuilder:validation:XValidation:rule="!has(self.snapshots) || !has(self.snapshots.schedule) || size(self.snapshots.schedule) == 0 || has(self.snapshots.s3) || (has(self.upgrade) && has(self.upgrade.preUpgradeSnapshot) && has(self.upgrade.preUpgradeSnapshot.s3))",message="spec.snapshots.schedule needs a bucket: set spec.snapshots.s3 (or spec.upgrade.preUpgradeSnapshot.s3, which scheduled snapshots use when spec.snapshots.s3 is unset)"
type OpenBaoClusterSpec struct {
	// version is the OpenBao version the cluster should run, as a semantic version
	// (MAJOR.MINOR.PATCH, an optional leading "v", prerelease and build metadata allowed).
	// Changing it starts an upgrade. Downgrades below status.currentVersion are refused.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?(0|[1-9][0-9]*)\\\\.(0|[1-9][0-9]*)\\\\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\\\\+[0-9A-Za-z.-]+)?$')",message="spec.version must be a semantic version MAJOR.MINOR.PATCH such as 2.4.0 (a leading v is allowed)"
	Version string `json:"version"`

	// image is the OpenBao container image. Defaults to the OpenBao image repository
	// with tag = version. A tag that looks like a semantic version must equal version;
	// a digest (@sha256:...) is accepted as it is.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// replicas is the number of Raft voters: an odd number from 1 to 9, so that a
	// majority always exists. 3 tolerates one failure, 5 tolerates two. Changing it
	// scales the cluster through Raft, one member at a time: a new member joins as a
	// non-voter, catches up and is promoted; a removed member (highest ordinal first)
	// leaves Raft before its pod goes, and its volume is kept. It cannot change while an
	// upgrade runs. A 1-member cluster cannot change version (scale to 3 first).
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +kubebuilder:validation:XValidation:rule="self % 2 == 1",message="spec.replicas must be odd (1, 3, 5, 7 or 9) so Raft always has a majority; change it to an odd number"
	Replicas *int32 `json:"replicas,omitempty"`

	// historyLimit is how many ended operations status.history keeps (kubectl bao
	// history), from 1 to 50. Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	HistoryLimit *int32 `json:"historyLimit,omitempty"`

	// upgrade controls how a change of spec.version (or of spec.image at the same
	// version) is rolled out: the strategy, pausing, the pre-upgrade snapshot and the
	// per-member gates. See docs/upgrades.md.
	// +optional
	// +kubebuilder:default={}
	Upgrade UpgradeSpec `json:"upgrade,omitempty"`

	// tls configures the listener certificates. By default baokeeper runs its own CA.
	// +optional
	// +kubebuilder:default={}
	TLS TLSSpec `json:"tls,omitempty"`

	// seal configures how members unseal themselves. By default a static key that
	// baokeeper generates once and never overwrites.
	// +optional
	// +kubebuilder:default={}
	Seal SealSpec `json:"seal,omitempty"`

	// storage configures the persistent volume that holds each member's Raft data.
	// It cannot change once the cluster exists.
	// +optional
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.storage cannot change once the cluster exists: baokeeper does not resize or move Raft volumes. To grow a volume, expand each claim data-<member> where its StorageClass allows it (kubectl patch pvc); to move to another StorageClass, create a new cluster and restore a snapshot into it (docs/runbooks/restore-from-snapshot.md)"
	Storage StorageSpec `json:"storage,omitempty"`

	// raft tunes the integrated storage.
	// +optional
	// +kubebuilder:default={}
	Raft RaftSpec `json:"raft,omitempty"`

	// resources are the compute resources of each OpenBao container. A change rolls
	// out to every member: followers first, the leader last, each gated on Raft.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// placement says where members run. Without affinity and topology spread
	// constraints, members spread evenly across the nodes that can run them (a
	// topology spread constraint on kubernetes.io/hostname with maxSkew 1 and
	// DoNotSchedule, honouring node taints and affinity): required where the cluster
	// has enough nodes, and no obstacle where it has fewer. A change rolls out to
	// every member like any other change of the pod template.
	// +optional
	Placement PlacementSpec `json:"placement,omitempty"`

	// imagePullSecrets are the Secrets the members and executor Jobs pull images with.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// networkPolicy makes baokeeper keep a NetworkPolicy that admits to the members
	// only who needs them. Off unless enabled (see NetworkPolicySpec).
	// +optional
	NetworkPolicy NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// podAnnotations are set on every member pod (for example for a service mesh or
	// a backup tool). Keys under baokeeper.dev/ are reserved. A change rolls out to
	// every member.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('baokeeper.dev/'))",message="spec.podAnnotations may not use keys under baokeeper.dev/, which baokeeper sets itself; rename the annotation"
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// initialization configures OpenBao's self-initialization, which runs once on first
	// start. baokeeper always enables the service-account auth method and the two
	// operator roles; extraRequests run after them.
	// +optional
	// +kubebuilder:default={}
	Initialization InitializationSpec `json:"initialization,omitempty"`

	// audit configures OpenBao's audit device. Off unless set (see AuditSpec).
	// +optional
	Audit AuditSpec `json:"audit,omitempty"`

	// snapshots configures Raft snapshots besides the pre-upgrade one: on a schedule,
	// and on request (the baokeeper.dev/snapshot annotation, kubectl bao snapshot),
	// with retention that prunes old objects from the bucket. Each snapshot is read
	// back and verified, and is an operation under the operation lock: one due while
	// an upgrade or a scaling runs waits for it.
	// +optional
	Snapshots SnapshotsSpec `json:"snapshots,omitempty"`

	// bootstrap says what the cluster starts from: empty (the default), or a Raft
	// snapshot (fromSnapshot). It is read when the cluster is created and cannot be
	// set, changed or removed afterwards. See docs/restore.md.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.bootstrap cannot change once the cluster exists: it says what a new cluster starts from. To restore another snapshot, create a new cluster with kubectl bao restore --into NAME"
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
}

// SnapshotsSpec configures scheduled and requested snapshots.
type SnapshotsSpec struct {
	// s3 is the bucket that receives them; when unset, the pre-upgrade snapshot's
	// (spec.upgrade.preUpgradeSnapshot.s3). Objects go under
	// <prefix>/<namespace>/<cluster>/, next to the pre-upgrade snapshots.
	// +optional
	S3 *S3Target `json:"s3,omitempty"`

	// schedule takes a snapshot at these times: a cron expression of five fields
	// (minute hour day-of-month month day-of-week, for example "0 */6 * * *"), or
	// @hourly, @daily, @weekly, @monthly. Empty: only on request. A snapshot missed
	// while the operator was down, or while another operation held the cluster, is
	// taken once, as soon as it can be.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || self.matches('^@(hourly|daily|midnight|weekly|monthly|yearly|annually)$') || self.matches('^\\\\s*\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s*$')",message="spec.snapshots.schedule must be a cron expression of five fields (minute hour day-of-month month day-of-week), for example \"0 */6 * * *\", or one of @hourly, @daily, @weekly, @monthly"
	Schedule string `json:"schedule,omitempty"`

	// timeZone is the IANA time zone the schedule is read in, for example
	// Europe/Berlin. Default UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// retention prunes snapshot objects of this cluster from the bucket after each
	// scheduled or requested snapshot. Without it nothing is deleted. Never pruned:
	// the newest verified snapshot, and any snapshot an upgrade's receipt names.
	// +optional
	Retention *SnapshotRetention `json:"retention,omitempty"`

	// verify runs restore drills on a schedule: the newest verified snapshot is
	// restored into a short-lived one-member cluster in the same namespace
	// (<name>-drill), checked (its SHA-256, the restore, the member unsealed and
	// leading, read with baokeeper's own role, at the snapshot's Raft index or past
	// it), and deleted with its volume. The result is in status.snapshots.drills,
	// the baokeeper_restore_drill_* series and the BaokeeperRestoreDrillFailed
	// alert. A drill while the cluster is degraded is skipped and says so. See
	// docs/restore.md.
	// +optional
	Verify *SnapshotVerifySpec `json:"verify,omitempty"`
}

// SnapshotRetention says which snapshot objects are kept.
// +kubebuilder:validation:XValidation:rule="has(self.count) || has(self.maxAge)",message="spec.snapshots.retention needs count, maxAge or both, for example count: 7"
type SnapshotRetention struct {
	// count keeps the newest count snapshot objects of the cluster; older ones are
	// deleted. At least 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Count *int32 `json:"count,omitempty"`

	// maxAge deletes snapshot objects older than this. A duration with a unit,
	// greater than 0s, for example 168h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.snapshots.retention.maxAge must be a duration with a unit, for example 168h (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="spec.snapshots.retention.maxAge must be greater than 0s, for example 168h"
	MaxAge *Duration `json:"maxAge,omitempty"`
}

// UpgradeSpec controls version changes.
type UpgradeSpec struct {
	// strategy is how a version change is rolled out: RollingUpdate (default) replaces
	// followers one at a time and the leader last. BlueGreen starts a second
	// StatefulSet (<name>-<revision>) on the target whose members join as non-voters,
	// sync, pass the optional validation hook and wait for baokeeper.dev/promote (or
	// autoPromote); then green gets the votes and the leadership, in one election, and
	// blue is removed. Offline stops every member at once and starts each again on
	// the target on its own volume: the only strategy across a version boundary that
	// two versions cannot share, at the cost of a window in which no member answers
	// (measured in status.upgrade.offline); it needs a pre-upgrade snapshot. It may
	// change only while no upgrade runs (status.upgrade is empty).
	// +optional
	// +kubebuilder:default=RollingUpdate
	Strategy UpgradeStrategyType `json:"strategy,omitempty"`

	// rehearsal runs a version change on a copy first. Required: before the real
	// upgrade starts (it is the last precheck, Rehearsal), the newest verified
	// snapshot is restored into a short-lived cluster of the same size
	// (<name>-rehearsal), the same upgrade runs there with the same strategy and
	// gates, and the copy is deleted; only a rehearsal that reached the target lets
	// the real upgrade start, and a failed one holds it with the rehearsal's failure.
	// Default: no rehearsal. See docs/upgrades.md.
	// +optional
	// +kubebuilder:validation:Enum=Required;Disabled
	Rehearsal RehearsalPolicy `json:"rehearsal,omitempty"`

	// rehearsalTimeout bounds one rehearsal, from the copy's creation to its
	// verdict. Default 30m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.rehearsalTimeout must be a duration with a unit, for example 30m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) >= duration('1m')",message="spec.upgrade.rehearsalTimeout must be at least 1m"
	RehearsalTimeout *Duration `json:"rehearsalTimeout,omitempty"`

	// paused holds an upgrade at the next safe point (before the snapshot, or between
	// two members), with the UpgradePaused condition saying so. Setting it back to
	// false resumes.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// after orders this cluster's upgrades after other clusters' (development,
	// then staging, then production): an upgrade to version V starts only when
	// every cluster named here has run V or a later version, Available, with no
	// upgrade in progress, no failure and no break-glass, for at least its soak.
	// A named cluster that failed its upgrade, rolled it back or entered
	// break-glass holds this one, with the reason in the UpgradeOrder precheck. A
	// cycle, or a name that does not exist, holds the upgrade and says which.
	// Rollouts (pod-template changes) are not ordered. See docs/fleet.md.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.name == a.name && (has(b.__namespace__) ? b.__namespace__ : '') == (has(a.__namespace__) ? a.__namespace__ : '')))",message="spec.upgrade.after names the same cluster more than once: name each cluster once"
	After []UpgradeOrder `json:"after,omitempty"`

	// windows are the maintenance windows in which a version change, a rollout
	// and a scheduled restore drill may start. Without windows they start at any
	// time. Outside every window they wait (the MaintenanceWindow precheck says
	// until when). Not held by windows: a restart or restore a person asks for
	// with an annotation, a scaling, scheduled snapshots, and the rollout that
	// restarts members which did not reload a renewed certificate (urgent: the
	// old one expires). See windowEnd for a window that closes mid-way.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Windows []MaintenanceWindow `json:"windows,omitempty"`

	// windowEnd says what an upgrade or rollout still running when its window
	// closes does. Pause (default) finishes the member in progress and holds at
	// the next safe point until a window opens; Finish runs it to its end. A
	// blue-green upgrade past its point of no return, and an offline upgrade once
	// its members were stopped, always finish.
	// +optional
	// +kubebuilder:default=Pause
	WindowEnd WindowEndPolicy `json:"windowEnd,omitempty"`

	// preUpgradeSnapshot says whether and where a Raft snapshot is taken before an
	// upgrade; the upgrade changes nothing until the snapshot is verified and its
	// receipt is in status.upgrade.snapshot.
	// +optional
	// +kubebuilder:default={}
	PreUpgradeSnapshot PreUpgradeSnapshotSpec `json:"preUpgradeSnapshot,omitempty"`

	// rolling tunes the RollingUpdate strategy: how long a member may take, how long
	// to wait after it, and how far behind the leader it may be.
	// +optional
	// +kubebuilder:default={}
	Rolling RollingUpdateSpec `json:"rolling,omitempty"`

	// blueGreen tunes the BlueGreen strategy.
	// +optional
	// +kubebuilder:default={}
	BlueGreen BlueGreenSpec `json:"blueGreen,omitempty"`

	// executor configures the Jobs that perform Raft operations (step-down, promote,
	// demote and remove-peer when scaling, snapshot) with the mutating OpenBao role.
	// +optional
	Executor ExecutorSpec `json:"executor,omitempty"`
}

// PreUpgradeSnapshotSpec configures the snapshot taken before an upgrade.
// +kubebuilder:validation:XValidation:rule="!has(self.policy) || self.policy != 'IfOlderThan' || has(self.maxAge)",message="spec.upgrade.preUpgradeSnapshot.maxAge is required when policy is IfOlderThan; add maxAge such as 1h"
type PreUpgradeSnapshotSpec struct {
	// policy is Always (default), IfOlderThan (reuse a snapshot younger than maxAge) or Never.
	// Under Always and IfOlderThan an upgrade is refused by its precheck until s3 is set.
	// +optional
	// +kubebuilder:default=Always
	Policy SnapshotPolicy `json:"policy,omitempty"`

	// maxAge is how old a reusable snapshot may be under IfOlderThan. A duration with
	// a unit, greater than 0s, for example 1h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.preUpgradeSnapshot.maxAge must be a duration with a unit, for example 1h (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="spec.upgrade.preUpgradeSnapshot.maxAge must be greater than 0s, for example 1h"
	MaxAge *Duration `json:"maxAge,omitempty"`

	// s3 is the S3-compatible object store that receives the snapshot.
	// +optional
	S3 *S3Target `json:"s3,omitempty"`
}

// S3Target is an S3-compatible bucket for snapshots.
type S3Target struct {
	// endpoint is the URL of the S3 API, for example https://s3.eu-west-1.amazonaws.com.
	// Credentials never go in it (they would show in status and events): they go in
	// the Secret credentialsSecretRef names.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^/]*//[^/?#]*@')",message="spec.upgrade.preUpgradeSnapshot.s3.endpoint must not carry credentials (user:password@): they would show in status, events and logs. Put them in the Secret spec.upgrade.preUpgradeSnapshot.s3.credentialsSecretRef names (keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and give the endpoint as https://HOST[:PORT]"
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#@]+/?$')",message="spec.upgrade.preUpgradeSnapshot.s3.endpoint must be an http:// or https:// URL of a host and nothing after it, for example https://s3.eu-west-1.amazonaws.com or http://minio.storage.svc:9000 (the bucket goes in bucket, a path in prefix)"
	Endpoint string `json:"endpoint"`

	// bucket is the bucket name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Bucket string `json:"bucket"`

	// prefix is prepended to every object key.
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// region is the bucket's region.
	// +optional
	Region string `json:"region,omitempty"`

	// forcePathStyle addresses the bucket as endpoint/bucket, which most self-hosted
	// S3-compatible servers need.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`

	// credentialsSecretRef names a Secret in the cluster's namespace with the keys
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	// +required
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`

	// caBundle names a key of a Secret in the cluster's namespace that holds the PEM
	// certificates of the CA behind an https:// endpoint with a private CA. The Jobs
	// that check the target and take snapshots trust it besides the public roots;
	// the operator itself never connects to the endpoint.
	// +optional
	CABundle *SecretKeyRef `json:"caBundle,omitempty"`
}

// SecretKeyRef names one key of a Secret in the cluster's namespace.
type SecretKeyRef struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the Secret's data.
	// +optional
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// RollingUpdateSpec tunes the rolling strategy.
type RollingUpdateSpec struct {
	// stepTimeout bounds each member's step, from its start (the step-down of a leader,
	// or the deletion of its pod) to the last gate passing. A member that does not pass
	// in time fails the upgrade, naming it; the settle time after the gates is not
	// counted. A duration with a unit, greater than 0s, for example 10m.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.rolling.stepTimeout must be a duration with a unit, for example 10m (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="spec.upgrade.rolling.stepTimeout must be greater than 0s, for example 10m"
	StepTimeout *Duration `json:"stepTimeout,omitempty"`

	// settleTime is waited after a member passed every gate, before the next one
	// starts: a soak, for a version you want to watch run on each member before the
	// next goes. The default, 0s, moves on as soon as every gate holds; the next
	// member's pod is deleted only after a fresh read shows every voter healthy. A
	// duration with a unit, for example 30s.
	// +optional
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.rolling.settleTime must be a duration with a unit, for example 10s (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) >= duration('0s')",message="spec.upgrade.rolling.settleTime must not be negative; use 0s for no wait, or for example 10s"
	SettleTime *Duration `json:"settleTime,omitempty"`

	// maxLagEntries is how far behind the leader's Raft index a restarted voter may be
	// and still count as caught up.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=0
	MaxLagEntries *int64 `json:"maxLagEntries,omitempty"`

	// leaderHandoff is how the leader, replaced last, hands leadership to the members
	// that already run the target: StepDown (an executor Job asks it to step down,
	// then its pod is deleted) or Shutdown (its pod is deleted: OpenBao's graceful
	// shutdown transfers leadership to the most up-to-date voter, all of which run the
	// target by then). Empty means the operator's default (docs/upgrades.md).
	// +optional
	LeaderHandoff LeaderHandoff `json:"leaderHandoff,omitempty"`
}

// LeaderHandoff is how a rolling upgrade moves leadership off the old leader.
// +kubebuilder:validation:Enum=StepDown;Shutdown
type LeaderHandoff string

const (
	// LeaderHandoffStepDown steps the leader down with an executor Job, verifies the
	// new leader, then deletes the old leader's pod.
	LeaderHandoffStepDown LeaderHandoff = "StepDown"
	// LeaderHandoffShutdown deletes the leader's pod once every other voter runs the
	// target; its graceful shutdown hands leadership over.
	LeaderHandoffShutdown LeaderHandoff = "Shutdown"
)

// DefaultLeaderHandoff is the hand-off of an empty spec.upgrade.rolling.leaderHandoff:
// Shutdown, measured faster with the same single election (docs/design/leader-handoff.md).
const DefaultLeaderHandoff = LeaderHandoffShutdown

// BlueGreenSpec tunes the blue-green strategy (docs/upgrades.md, "Blue-green").
type BlueGreenSpec struct {
	// autoPromote promotes green without waiting for the baokeeper.dev/promote annotation.
	// +optional
	AutoPromote bool `json:"autoPromote,omitempty"`

	// minSyncDuration is how long green must stay healthy as non-voters before promotion.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.blueGreen.minSyncDuration must be a duration with a unit, for example 1m (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) >= duration('0s')",message="spec.upgrade.blueGreen.minSyncDuration must not be negative; use 0s for no wait, or for example 1m"
	MinSyncDuration *Duration `json:"minSyncDuration,omitempty"`

	// validationHook is a Job run against green before promotion.
	// +optional
	ValidationHook *ValidationHookSpec `json:"validationHook,omitempty"`

	// autoRollback rolls back on its own when a step fails.
	// +optional
	AutoRollback AutoRollbackSpec `json:"autoRollback,omitempty"`

	// phaseTimeout bounds every phase that waits on the cluster (green members
	// starting and joining, syncing, each promotion, demotion, leadership move and
	// removal); a phase that does not finish within it fails the upgrade with the
	// member and the reason. The hold for promotion has no timeout.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.blueGreen.phaseTimeout must be a duration with a unit, for example 10m (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="spec.upgrade.blueGreen.phaseTimeout must be greater than 0s, for example 10m"
	PhaseTimeout *Duration `json:"phaseTimeout,omitempty"`

	// maxJobFailures is how many executor Job failures are tolerated before the upgrade fails.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	MaxJobFailures *int32 `json:"maxJobFailures,omitempty"`
}

// ValidationHookSpec is a Job that checks green before it is promoted.
type ValidationHookSpec struct {
	// image runs the check.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// command is the entrypoint.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Command []string `json:"command,omitempty"`

	// args are the arguments.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	Args []string `json:"args,omitempty"`

	// env is passed to the container; BAO_ADDR of green is added by baokeeper.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Env []corev1.EnvVar `json:"env,omitempty"`

	// timeout bounds the Job.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.upgrade.blueGreen.validationHook.timeout must be a duration with a unit, for example 5m (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="spec.upgrade.blueGreen.validationHook.timeout must be greater than 0s, for example 5m"
	Timeout *Duration `json:"timeout,omitempty"`
}

// AutoRollbackSpec says when a blue-green upgrade rolls back on its own.
type AutoRollbackSpec struct {
	// onExecutorFailure rolls back when an executor Job fails maxJobFailures times.
	// +optional
	OnExecutorFailure bool `json:"onExecutorFailure,omitempty"`

	// onValidationFailure rolls back when the validation hook fails.
	// +optional
	OnValidationFailure bool `json:"onValidationFailure,omitempty"`
}

// ExecutorSpec configures executor Jobs.
type ExecutorSpec struct {
	// image is the executor image. Defaults to the operator's own image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// placement says where executor Jobs run; empty means anywhere.
	// +optional
	Placement PlacementSpec `json:"placement,omitempty"`
	// resources are the compute resources of an executor Job's container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// PlacementSpec says where pods run, with the fields of a pod spec of the same names.
type PlacementSpec struct {
	// nodeSelector restricts pods to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// affinity is the pods' node and pod (anti-)affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// tolerations let pods run on tainted nodes.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// topologySpreadConstraints replace the default spread of members across nodes.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// priorityClassName is the pods' priority class.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// NetworkPolicySpec configures the NetworkPolicy baokeeper keeps for the members.
type NetworkPolicySpec struct {
	// enabled makes baokeeper create, and keep, the NetworkPolicy <name>: the
	// members' cluster port (8201) admits only the cluster's members, and their API
	// port (8200) only the cluster's own pods (members, executor and hook Jobs), the
	// baokeeper operator's namespace, pods of this namespace labelled
	// baokeeper.dev/client-of=<cluster name>, and the peers of clients. Every other
	// connection to the members is dropped where the network plugin enforces
	// NetworkPolicies. Turning it off deletes the NetworkPolicy. Off by default: an
	// existing client that is neither labelled nor listed would lose the cluster.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// clients are further peers the API port admits: for example Prometheus's
	// namespace, or an ingress controller. A pod selector alone means pods of this
	// namespace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Clients []networkingv1.NetworkPolicyPeer `json:"clients,omitempty"`
}

// TLSSpec configures TLS for the API and cluster listeners.
// +kubebuilder:validation:XValidation:rule="!has(self.certificateDuration) || !has(self.renewBefore) || !self.certificateDuration.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || !self.renewBefore.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self.renewBefore) < duration(self.certificateDuration)",message="spec.tls.renewBefore must be shorter than spec.tls.certificateDuration, or every certificate is due for renewal the moment it is issued; for example certificateDuration 2160h with renewBefore 720h"
type TLSSpec struct {
	// secretName names a kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt) that the user
	// manages. Its certificate must cover every member's DNS name and the Services.
	// When empty, baokeeper runs its own CA and serving certificate.
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// certificateDuration is the lifetime of operator-issued serving certificates.
	// +optional
	// +kubebuilder:default="2160h"
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.tls.certificateDuration must be a duration with a unit, for example 2160h (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="spec.tls.certificateDuration must be greater than 0s, for example 2160h"
	CertificateDuration *Duration `json:"certificateDuration,omitempty"`

	// renewBefore renews an operator-issued serving certificate this long before it expires.
	// +optional
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$')",message="spec.tls.renewBefore must be a duration with a unit, for example 720h (units: ns, us, ms, s, m, h)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?([0-9]+(\\\\.[0-9]+)?(ns|us|ms|s|m|h))+$') || duration(self) > duration('0s')",message="spec.tls.renewBefore must be greater than 0s, for example 720h"
	RenewBefore *Duration `json:"renewBefore,omitempty"`
}

// SealSpec configures unsealing.
type SealSpec struct {
	// type is Static (default: a key generated once and kept in a Secret) or Custom.
	// +optional
	// +kubebuilder:default=Static
	Type SealType `json:"type,omitempty"`

	// customStanza is a complete seal stanza in HCL, used when type is Custom, for
	// example `seal "transit" { ... }`. Credentials it needs go in env via secrets,
	// never in this field.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	CustomStanza string `json:"customStanza,omitempty"`
}

// StorageSpec configures the Raft data volume.
type StorageSpec struct {
	// size of each member's volume.
	// +optional
	// +kubebuilder:default="1Gi"
	Size *resource.Quantity `json:"size,omitempty"`

	// storageClassName of the volume claims; empty uses the cluster default.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// RaftSpec tunes integrated storage.
type RaftSpec struct {
	// performanceMultiplier scales Raft timing: 1 is the fastest failure detection
	// (about 1 s heartbeats), larger values tolerate slower networks.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	PerformanceMultiplier *int32 `json:"performanceMultiplier,omitempty"`
}

// AuditSpec configures the audit device that every member declares in its
// configuration. It is off unless set: an audit device that cannot write makes
// OpenBao refuse every request, so the sink is the operator's choice to make, and
// turning it on restarts every member (one at a time, the leader last).
type AuditSpec struct {
	// file writes every request and response as a JSON line, secret values HMAC'd.
	// +optional
	File *FileAuditSpec `json:"file,omitempty"`
}

// AuditTarget is where the file audit device writes.
// +kubebuilder:validation:Enum=Stdout;DataVolume
type AuditTarget string

const (
	// AuditStdout writes to the member's standard output: kubectl logs and the
	// cluster's log collection read it, and the kubelet rotates it.
	AuditStdout AuditTarget = "Stdout"
	// AuditDataVolume writes /openbao/data/audit.log on the member's data volume,
	// beside Raft's data: a full volume stops both.
	AuditDataVolume AuditTarget = "DataVolume"
)

// FileAuditSpec is OpenBao's file audit device.
type FileAuditSpec struct {
	// target is Stdout (default) or DataVolume.
	// +optional
	// +kubebuilder:default=Stdout
	Target AuditTarget `json:"target,omitempty"`
}

// InitializationSpec configures self-initialization.
type InitializationSpec struct {
	// extraRequests are OpenBao API requests run once, during self-initialization, after
	// baokeeper's own (auth method, policies, roles). Use them to mount secret engines,
	// write policies and create roles for applications. They run with the privileges of
	// initialization, so review them like root-level configuration. Changing them after
	// the cluster initialized has no effect.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	ExtraRequests []InitRequest `json:"extraRequests,omitempty"`
}

// InitRequest is one self-initialization request.
type InitRequest struct {
	// name identifies the request in logs.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// operation is the API operation.
	// +optional
	// +kubebuilder:default=update
	// +kubebuilder:validation:Enum=create;update;delete;read;list
	Operation string `json:"operation,omitempty"`

	// path is the API path without the /v1/ prefix, for example sys/mounts/secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`

	// data is the request body as a JSON object of strings, numbers, booleans, lists and objects.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Data *apiextensionsv1.JSON `json:"data,omitempty"`
}

// ClusterPhase is a one-word summary of the cluster's state.
// +kubebuilder:validation:Enum=Pending;Initializing;Running;Upgrading;Scaling;Degraded;Failed;BreakGlass
type ClusterPhase string

const (
	// PhasePending means the workload objects are being created.
	PhasePending ClusterPhase = "Pending"
	// PhaseInitializing means members are starting, initializing or unsealing.
	PhaseInitializing ClusterPhase = "Initializing"
	// PhaseRunning means every member is Ready, initialized and unsealed.
	PhaseRunning ClusterPhase = "Running"
	// PhaseUpgrading means a version change is in progress.
	PhaseUpgrading ClusterPhase = "Upgrading"
	// PhaseScaling means members are being added or removed through Raft.
	PhaseScaling ClusterPhase = "Scaling"
	// PhaseDegraded means the cluster serves but some member is not ready.
	PhaseDegraded ClusterPhase = "Degraded"
	// PhaseFailed means baokeeper refused the spec or a step failed; the message says what to change.
	PhaseFailed ClusterPhase = "Failed"
	// PhaseBreakGlass means all automation stopped until the nonce is acknowledged.
	PhaseBreakGlass ClusterPhase = "BreakGlass"
)

// OpenBaoClusterStatus is the observed state of an OpenBao cluster.
type OpenBaoClusterStatus struct {
	// phase is a one-word summary.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`

	// message says, in a sentence a person can act on, what the cluster waits for.
	// +optional
	Message string `json:"message,omitempty"`

	// currentVersion is the version every member runs. It advances only when every member
	// runs the target version.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// jwtAudience is the audience the cluster's JWT auth roles trust, recorded when
	// baokeeper renders the cluster's initialization: openbao.baokeeper.dev/<namespace>/<name>,
	// unique to the cluster, or "baokeeper" for a cluster initialized before audiences
	// were per cluster. The operator's and the executors' tokens carry it.
	// +optional
	JWTAudience string `json:"jwtAudience,omitempty"`

	// observedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// readyMembers counts members that are Ready, initialized and unsealed.
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`

	// voters is "<healthy voters>/<desired>" as autopilot last reported them, where
	// desired is the larger of spec.replicas and the voters in the Raft
	// configuration: 3/3 when every member votes, 1/3 when two members are
	// non-voters; empty while the Raft view cannot be read.
	// +optional
	Voters string `json:"voters,omitempty"`

	// raft is the Raft view in numbers, as autopilot last reported it; empty while it
	// cannot be read.
	// +optional
	Raft *RaftStatus `json:"raft,omitempty"`

	// leader is the member autopilot last named as the Raft leader; empty when none
	// is known.
	// +optional
	Leader string `json:"leader,omitempty"`

	// statefulSet is the StatefulSet whose members form the cluster and serve its
	// clients; empty means metadata.name. A completed blue-green upgrade moves it to
	// green's StatefulSet, <name>-<revision>.
	// +optional
	StatefulSet string `json:"statefulSet,omitempty"`

	// members lists what each member runs, ordered by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []MemberStatus `json:"members,omitempty"`

	// conditions: Available, Progressing, Degraded, UpgradePaused, BreakGlass, plus
	// TLSReady and SpecValid.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// upgrade describes the upgrade in progress; empty when none runs.
	// +optional
	Upgrade *UpgradeStatus `json:"upgrade,omitempty"`

	// scaling describes a change of membership in progress (spec.replicas changed,
	// a member left in Raft without a pod, a member that should vote does not);
	// empty when none runs.
	// +optional
	Scaling *ScalingStatus `json:"scaling,omitempty"`

	// blueGreen describes a blue-green upgrade in progress.
	// +optional
	BlueGreen *BlueGreenStatus `json:"blueGreen,omitempty"`

	// breakGlass is set when automation stopped and a person must act.
	// +optional
	BreakGlass *BreakGlassStatus `json:"breakGlass,omitempty"`

	// quorum is what baokeeper remembers of the Raft voters between passes, so that a
	// majority that stops answering at rest is told from a slow read, and a majority
	// gone for good (its volumes lost) is said at once.
	// +optional
	Quorum *QuorumStatus `json:"quorum,omitempty"`

	// quorumRecovery is the recovery of a lost majority from one surviving voter
	// (baokeeper.dev/recover-quorum): OpenBao's peers.json recovery on the survivor,
	// its restart as the only voter, then the other members joined afresh. Each step
	// is recorded here before it is taken.
	// +optional
	QuorumRecovery *QuorumRecoveryStatus `json:"quorumRecovery,omitempty"`

	// refusedInput records what baokeeper refused to act on because it did not write
	// it: entries of the executor mailbox that no operator or executor of this cluster
	// signed. Nothing of it ran.
	// +optional
	RefusedInput *RefusedInputStatus `json:"refusedInput,omitempty"`

	// operationLock names the operation that holds the cluster; another operation
	// (an upgrade of another strategy, a restore) waits until it is released.
	// +optional
	OperationLock *OperationLock `json:"operationLock,omitempty"`

	// lastSnapshot is the receipt of the snapshot the last upgrade started from (taken
	// and verified before it, or reused under IfOlderThan): the way back to the
	// version before that upgrade. Scheduled and requested snapshots do not replace
	// it (they are in snapshots.taken); IfOlderThan reuses the newest of all.
	// +optional
	LastSnapshot *SnapshotReceipt `json:"lastSnapshot,omitempty"`

	// snapshots reports scheduled and requested snapshots: the one in progress, the
	// next scheduled time, the last receipts and the last pruning.
	// +optional
	Snapshots *SnapshotsStatus `json:"snapshots,omitempty"`

	// restore reports the restore of a cluster that starts from a snapshot
	// (spec.bootstrap.fromSnapshot): its step, the Raft index it restored, and why it
	// stopped if it did.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`

	// inPlaceRestore reports the last restore of a snapshot into this running
	// cluster (baokeeper.dev/restore): its step, and why it stopped if it did. It
	// stays after it ended, until the next one.
	// +optional
	InPlaceRestore *RestoreStatus `json:"inPlaceRestore,omitempty"`

	// rehearsal reports the last rehearsal asked for with baokeeper.dev/rehearse
	// (kubectl bao rehearse): an upgrade run on a copy restored from the newest
	// snapshot, with nothing of this cluster changed. It stays after it ended,
	// until the next one. The rehearsal of an upgrade in progress is in
	// status.upgrade.rehearsal.
	// +optional
	Rehearsal *RehearsalStatus `json:"rehearsal,omitempty"`

	// lastRollback records the last upgrade that was rolled back. While spec.version
	// still names its target, no upgrade to it starts again until baokeeper.dev/retry
	// is set to a new value; a new upgrade clears it.
	// +optional
	LastRollback *RollbackRecord `json:"lastRollback,omitempty"`

	// requests records the last handled value of each control annotation.
	// +optional
	Requests RequestsStatus `json:"requests,omitempty"`

	// restart is the last restart request (baokeeper.dev/restart) that was
	// accepted. Its token is set on the member pod template, so every member
	// restarts through the rollout: followers first, the leader last.
	// +optional
	Restart *RestartRecord `json:"restart,omitempty"`

	// tls reports the operator-issued serving certificate.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`

	// window is the maintenance window that is open, or the next one; empty
	// without spec.upgrade.windows.
	// +optional
	Window *WindowStatus `json:"window,omitempty"`

	// history lists the last operations that ended (upgrades, rollouts,
	// scalings), newest first, at most spec.historyLimit: what they changed, when,
	// how they ended, the elections seen and the longest step. An entry is written
	// in the same status write that ends the operation.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	History []HistoryEntry `json:"history,omitempty"`
}

// MemberStatus is what one member runs, as last observed.
type MemberStatus struct {
	// name of the pod.
	// +required
	Name string `json:"name"`
	// version the member's OpenBao reports (sys/health), empty when unknown.
	// +optional
	Version string `json:"version,omitempty"`
	// image of the pod's OpenBao container.
	// +optional
	Image string `json:"image,omitempty"`
	// ready is the pod's Ready condition.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// raftRole is the member's place in the Raft configuration as last observed:
	// Leader, Voter, NonVoter, NotInConfiguration, or Unknown when the Raft view
	// could not be read.
	// +optional
	RaftRole RaftRole `json:"raftRole,omitempty"`
	// healthy is autopilot's verdict on the member as last observed.
	// +optional
	Healthy bool `json:"healthy,omitempty"`
	// servedCertificateSHA256 is the fingerprint (SHA-256 of the DER) of the
	// certificate the member presented at its last health read; it equals
	// status.tls.certificateSHA256 once the member serves what the Secret holds.
	// +optional
	ServedCertificateSHA256 string `json:"servedCertificateSHA256,omitempty"`
	// servedCertificateNotAfter is when the certificate the member serves expires.
	// +optional
	ServedCertificateNotAfter *metav1.Time `json:"servedCertificateNotAfter,omitempty"`
}

// RaftRole is a member's place in the Raft configuration.
// +kubebuilder:validation:Enum=Leader;Voter;NonVoter;NotInConfiguration;Unknown
type RaftRole string

const (
	// RaftRoleLeader is the Raft leader.
	RaftRoleLeader RaftRole = "Leader"
	// RaftRoleVoter is a voting follower.
	RaftRoleVoter RaftRole = "Voter"
	// RaftRoleNonVoter receives the log but does not vote.
	RaftRoleNonVoter RaftRole = "NonVoter"
	// RaftRoleNotInConfiguration is a member the Raft configuration does not list.
	RaftRoleNotInConfiguration RaftRole = "NotInConfiguration"
	// RaftRoleUnknown means the Raft view could not be read.
	RaftRoleUnknown RaftRole = "Unknown"
)

// TLSStatus reports the operator-issued serving certificate.
type TLSStatus struct {
	// notAfter is the expiry of the serving certificate.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// renewAt is when baokeeper renews it.
	// +optional
	RenewAt *metav1.Time `json:"renewAt,omitempty"`
	// certificateSHA256 is the SHA-256 of the DER of the serving certificate
	// (tls.crt) the Secret holds now, operator-issued or user-provided. Members
	// reload a new one in place (SIGHUP) and report what they serve in
	// status.members[].servedCertificateSHA256; a member that does not serve it
	// within a few minutes is restarted through the rollout.
	// +optional
	CertificateSHA256 string `json:"certificateSHA256,omitempty"`
	// observedAt is when the operator first saw the certificate named by
	// certificateSHA256 in the Secret: the members' reload is measured from it.
	// +optional
	ObservedAt *metav1.Time `json:"observedAt,omitempty"`
}

// OperationKind says what an operation in status.upgrade changes.
// +kubebuilder:validation:Enum=Version;Image;Rollout
type OperationKind string

const (
	// OperationVersion changes the version the members run (spec.version).
	OperationVersion OperationKind = "Version"
	// OperationImage changes the image at the same version (spec.image).
	OperationImage OperationKind = "Image"
	// OperationRollout restarts every member on the current pod template without
	// changing what runs: a change of resources, configuration, certificate,
	// placement, or a restart request.
	OperationRollout OperationKind = "Rollout"
)

// UpgradeStatus describes an upgrade in progress: a version change, an image
// change at the same version, or a rollout of the member pod template. Each goes
// through the same Raft-safe rolling machinery (a rollout is always rolling).
type UpgradeStatus struct {
	// kind is what the operation changes; empty means Version (an operation started
	// by an earlier release).
	// +optional
	Kind OperationKind `json:"kind,omitempty"`
	// changes says, for a Rollout, what changed in the pod template, in words.
	// +optional
	Changes string `json:"changes,omitempty"`
	// strategy used by this upgrade.
	// +optional
	Strategy UpgradeStrategyType `json:"strategy,omitempty"`
	// fromVersion is the version the cluster ran when the upgrade started.
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`
	// targetVersion is the version being rolled out.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`
	// targetImage is the image being rolled out.
	// +optional
	TargetImage string `json:"targetImage,omitempty"`
	// id identifies this upgrade in the names and labels of its executor Jobs, so
	// that a Job left by an earlier upgrade never counts for this one.
	// +optional
	ID string `json:"id,omitempty"`
	// deferredVersion is a spec.version set while this upgrade could no longer be
	// cancelled (a member was already replaced): the upgrade finishes first, then the
	// deferred version is planned.
	// +optional
	DeferredVersion string `json:"deferredVersion,omitempty"`
	// startedAt is when the upgrade started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// plan is what will happen, computed before anything changes.
	// +optional
	Plan *UpgradePlan `json:"plan,omitempty"`
	// waitingFor says what the upgrade waits for now, in a sentence a person can act on.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// progress counts the upgrade's steps, whatever the strategy: members replaced
	// for RollingUpdate, phases passed for BlueGreen.
	// +optional
	Progress *UpgradeProgress `json:"progress,omitempty"`
	// currentStep is the step in progress.
	// +optional
	CurrentStep *UpgradeStep `json:"currentStep,omitempty"`
	// completedPods are the members already on the target version, in order.
	// +optional
	// +listType=atomic
	CompletedPods []string `json:"completedPods,omitempty"`
	// snapshot is the receipt of the pre-upgrade snapshot.
	// +optional
	Snapshot *SnapshotReceipt `json:"snapshot,omitempty"`
	// rehearsal is the rehearsal of this upgrade on a copy (spec.upgrade.rehearsal:
	// Required): its step, and its verdict once known.
	// +optional
	Rehearsal *RehearsalStatus `json:"rehearsal,omitempty"`

	// offline is the state of an offline upgrade (strategy Offline): when every
	// member was stopped, the leader's committed Raft index before, and when a
	// leader on the target answered again.
	// +optional
	Offline *OfflineUpgradeStatus `json:"offline,omitempty"`
	// failure says why the upgrade stopped.
	// +optional
	Failure *UpgradeFailure `json:"failure,omitempty"`
	// lastVoters are the Raft voters as autopilot was last read during the upgrade:
	// what a pass that cannot read autopilot counts a loss of quorum over.
	// +optional
	// +listType=atomic
	LastVoters []string `json:"lastVoters,omitempty"`
	// quorumLostSince is when a pass first saw a majority of lastVoters not
	// answering; break-glass follows when it lasts QuorumLossGrace.
	// +optional
	QuorumLostSince *metav1.Time `json:"quorumLostSince,omitempty"`

	// stats tallies, while it runs, what its history entry reports: the Raft terms
	// seen and the longest step.
	// +optional
	Stats *OperationStats `json:"stats,omitempty"`
}

// UpgradeProgress is strategy-neutral progress, for status messages and dashboards.
type UpgradeProgress struct {
	// stage names where the upgrade stands, for example ReplaceMember or Sync.
	// +optional
	Stage string `json:"stage,omitempty"`
	// completed counts steps done.
	// +optional
	Completed int32 `json:"completed"`
	// total counts steps planned.
	// +optional
	Total int32 `json:"total"`
}

// ScalingStatus describes a membership change in progress.
type ScalingStatus struct {
	// id identifies this operation in the names and labels of its executor Jobs, so
	// that a Job of another operation never counts for it.
	// +optional
	ID string `json:"id,omitempty"`
	// fromReplicas is the StatefulSet's replicas when the operation started.
	// +optional
	FromReplicas int32 `json:"fromReplicas,omitempty"`
	// targetReplicas is spec.replicas.
	// +optional
	TargetReplicas int32 `json:"targetReplicas,omitempty"`
	// startedAt is when the operation started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// currentStep is the member being added, promoted or removed.
	// +optional
	CurrentStep *UpgradeStep `json:"currentStep,omitempty"`
	// completed lists the steps done, for example "added bao-3" or "removed bao-4".
	// +optional
	// +listType=atomic
	Completed []string `json:"completed,omitempty"`
	// waitingFor says what the operation waits for, in a sentence a person can act on.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// failure says why the operation stopped; a retry annotation goes on.
	// +optional
	Failure *UpgradeFailure `json:"failure,omitempty"`

	// stats tallies, while it runs, what its history entry reports.
	// +optional
	Stats *OperationStats `json:"stats,omitempty"`
}

// UpgradePlan is the plan of an upgrade.
type UpgradePlan struct {
	// pods in the order they are replaced.
	// +optional
	// +listType=atomic
	Pods []string `json:"pods,omitempty"`
	// prechecks and their results.
	// +optional
	// +listType=map
	// +listMapKey=name
	Prechecks []Precheck `json:"prechecks,omitempty"`
	// snapshotLocation is where the pre-upgrade snapshot goes.
	// +optional
	SnapshotLocation string `json:"snapshotLocation,omitempty"`
	// undoPath says how to undo the upgrade.
	// +optional
	UndoPath string `json:"undoPath,omitempty"`
}

// PrecheckResult is the outcome of a precheck.
// +kubebuilder:validation:Enum=Pending;Passed;Failed
type PrecheckResult string

const (
	// PrecheckPending means not evaluated yet.
	PrecheckPending PrecheckResult = "Pending"
	// PrecheckPassed means the check passed.
	PrecheckPassed PrecheckResult = "Passed"
	// PrecheckFailed means the check failed; the message says why.
	PrecheckFailed PrecheckResult = "Failed"
)

// Precheck is one check made before an upgrade starts.
type Precheck struct {
	// name of the check.
	// +required
	Name string `json:"name"`
	// result of the check.
	// +optional
	Result PrecheckResult `json:"result,omitempty"`
	// message explains the result.
	// +optional
	Message string `json:"message,omitempty"`
}

// StepAction is what an upgrade or scaling step does.
// +kubebuilder:validation:Enum=TakeSnapshot;TransferLeadership;ReplaceMember;ShutdownLeader;AddMember;PromoteMember;DemoteMember;RemoveMember;RejoinMember;Validate
type StepAction string

// Step actions.
const (
	// StepTakeSnapshot is the pre-upgrade snapshot.
	StepTakeSnapshot StepAction = "TakeSnapshot"
	// StepTransferLeadership moves leadership off a member (a step-down).
	StepTransferLeadership StepAction = "TransferLeadership"
	// StepReplaceMember replaces a member's pod (rolling).
	StepReplaceMember StepAction = "ReplaceMember"
	// StepShutdownLeader replaces the leader's pod once every other voter runs the
	// target: its graceful shutdown hands leadership over (leaderHandoff: Shutdown).
	StepShutdownLeader StepAction = "ShutdownLeader"
	// StepAddMember starts a new member (scaling), which joins as a non-voter,
	// catches up and is promoted.
	StepAddMember StepAction = "AddMember"
	// StepPromoteMember makes a member that is in Raft as a non-voter a voter.
	StepPromoteMember StepAction = "PromoteMember"
	// StepDemoteMember makes a voter a non-voter.
	StepDemoteMember StepAction = "DemoteMember"
	// StepRemoveMember takes a member out of the Raft configuration.
	StepRemoveMember StepAction = "RemoveMember"
	// StepRejoinMember brings back a member whose pod serves but which is not in
	// the Raft configuration (removed by hand, by a tool): its data is deleted, and it
	// joins again as a non-voter and is promoted (scaling).
	StepRejoinMember StepAction = "RejoinMember"
	// StepValidate runs the blue-green validation hook Job.
	StepValidate StepAction = "Validate"
)

// UpgradeStep is the step in progress.
type UpgradeStep struct {
	// action is what the step does, for example ReplaceMember or TransferLeadership.
	// +optional
	Action StepAction `json:"action,omitempty"`
	// pod the step acts on.
	// +optional
	Pod string `json:"pod,omitempty"`
	// startedAt is when the step started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// waitingFor says what the step waits for, in a sentence a person can act on.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// gatesPassedAt is when every gate of the member first held; the settle time runs from it.
	// +optional
	GatesPassedAt *metav1.Time `json:"gatesPassedAt,omitempty"`
	// attempts counts executor Jobs started for this step (step-down or snapshot retries).
	// Job names carry the attempt number, so it never goes back.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// maxAttempts is the attempt count at which the step gives up; 0 means the
	// default of 3. A retry requested with the baokeeper.dev/retry annotation raises it.
	// +optional
	MaxAttempts int32 `json:"maxAttempts,omitempty"`
	// podUID is the UID of the member's pod when a RejoinMember step began: that pod
	// is the one whose data is deleted, never the one the StatefulSet creates after.
	// +optional
	PodUID string `json:"podUID,omitempty"`
}

// OperationLock is the per-cluster lock of disruptive operations.
type OperationLock struct {
	// operation is what holds the lock, for example RollingUpgrade.
	// +required
	Operation string `json:"operation"`
	// holder is the controller that holds it.
	// +optional
	Holder string `json:"holder,omitempty"`
	// message says what the operation does.
	// +optional
	Message string `json:"message,omitempty"`
	// acquiredAt is when the lock was taken.
	// +optional
	AcquiredAt *metav1.Time `json:"acquiredAt,omitempty"`
	// waiting lists what waits for the lock, in words: a due or requested snapshot,
	// a due restore drill, an upgrade or rollout that has not started, a scaling the
	// spec asks for.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Waiting []string `json:"waiting,omitempty"`
}

// SnapshotReceipt records a snapshot that was taken.
type SnapshotReceipt struct {
	// location is the object URL.
	// +optional
	Location string `json:"location,omitempty"`
	// takenAt is when the snapshot was taken.
	// +optional
	TakenAt *metav1.Time `json:"takenAt,omitempty"`
	// sizeBytes of the snapshot.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// sha256 of the snapshot, hex-encoded, as read back from the object store.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// raftIndex is the last Raft index the snapshot contains.
	// +optional
	RaftIndex int64 `json:"raftIndex,omitempty"`
	// fromMember is the member (the leader) the snapshot was taken from.
	// +optional
	FromMember string `json:"fromMember,omitempty"`
	// version is the OpenBao version the cluster ran when the snapshot was taken.
	// +optional
	Version string `json:"version,omitempty"`
	// trigger says why it was taken: PreUpgrade, Scheduled or Requested (empty in
	// receipts written before it existed: PreUpgrade).
	// +optional
	Trigger SnapshotTrigger `json:"trigger,omitempty"`
	// request is the baokeeper.dev/snapshot value of a requested snapshot.
	// +optional
	Request string `json:"request,omitempty"`
	// canary is the restore canary's value written just before the snapshot
	// (baokeeper/data/canary): a restore of this snapshot must read it back. Empty
	// for a cluster initialized before baokeeper wrote one.
	// +optional
	// +kubebuilder:validation:MaxLength=1100
	Canary string `json:"canary,omitempty"`
}

// SnapshotTrigger says why a snapshot was taken.
// +kubebuilder:validation:Enum=PreUpgrade;Scheduled;Requested
type SnapshotTrigger string

// Snapshot triggers.
const (
	// SnapshotPreUpgrade is the snapshot an upgrade takes before it changes anything.
	SnapshotPreUpgrade SnapshotTrigger = "PreUpgrade"
	// SnapshotScheduled is a snapshot of spec.snapshots.schedule.
	SnapshotScheduled SnapshotTrigger = "Scheduled"
	// SnapshotRequested is a snapshot of the baokeeper.dev/snapshot annotation.
	SnapshotRequested SnapshotTrigger = "Requested"
)

// SnapshotsStatus reports scheduled and requested snapshots.
type SnapshotsStatus struct {
	// schedule is the schedule and time zone nextScheduledAt was computed from; a
	// change of either computes it again, from the time of the change.
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// nextScheduledAt is the next time the schedule takes a snapshot.
	// +optional
	NextScheduledAt *metav1.Time `json:"nextScheduledAt,omitempty"`
	// due is the scheduled time of a snapshot that is due and not yet started (it
	// waits for the operation lock).
	// +optional
	Due *metav1.Time `json:"due,omitempty"`
	// requested is the baokeeper.dev/snapshot value of a request that was accepted
	// and not yet started (it waits for the operation lock).
	// +optional
	Requested string `json:"requested,omitempty"`
	// current is the snapshot in progress.
	// +optional
	Current *SnapshotRun `json:"current,omitempty"`
	// waitingFor says what the next snapshot waits for, when one is due.
	// +optional
	WaitingFor string `json:"waitingFor,omitempty"`
	// taken are the receipts of the last verified scheduled and requested
	// snapshots, newest first (at most 10).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Taken []SnapshotReceipt `json:"taken,omitempty"`
	// lastFailure is the last snapshot that failed after its attempts.
	// +optional
	LastFailure *SnapshotFailure `json:"lastFailure,omitempty"`
	// lastPrune is the outcome of the last pruning of the bucket.
	// +optional
	LastPrune *PruneRecord `json:"lastPrune,omitempty"`
	// drills reports restore drills (spec.snapshots.verify): the next scheduled
	// time, the drill in progress and the last result.
	// +optional
	Drills *DrillsStatus `json:"drills,omitempty"`
}

// SnapshotRun is a scheduled or requested snapshot in progress.
type SnapshotRun struct {
	// id names the run in its Job and object names.
	// +optional
	ID string `json:"id,omitempty"`
	// trigger is Scheduled or Requested.
	// +optional
	Trigger SnapshotTrigger `json:"trigger,omitempty"`
	// request is the baokeeper.dev/snapshot value of a requested snapshot.
	// +optional
	Request string `json:"request,omitempty"`
	// scheduledFor is the scheduled time of a scheduled snapshot.
	// +optional
	ScheduledFor *metav1.Time `json:"scheduledFor,omitempty"`
	// startedAt is when the run took the operation lock.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// step is TakeSnapshot, then Prune when retention is set.
	// +optional
	Step SnapshotRunStep `json:"step,omitempty"`
	// attempts counts the Jobs of the current step.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// receipt is the verified snapshot, once taken (the Prune step keeps it).
	// +optional
	Receipt *SnapshotReceipt `json:"receipt,omitempty"`
}

// SnapshotRunStep is the step of a snapshot run.
// +kubebuilder:validation:Enum=TakeSnapshot;Prune
type SnapshotRunStep string

// Snapshot run steps.
const (
	// SnapshotRunTake streams and verifies the snapshot.
	SnapshotRunTake SnapshotRunStep = "TakeSnapshot"
	// SnapshotRunPrune deletes the objects retention no longer keeps.
	SnapshotRunPrune SnapshotRunStep = "Prune"
)

// SnapshotFailure records a snapshot that failed after its attempts.
type SnapshotFailure struct {
	// at is when it failed.
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// trigger is Scheduled or Requested.
	// +optional
	Trigger SnapshotTrigger `json:"trigger,omitempty"`
	// request is the baokeeper.dev/snapshot value of a requested snapshot.
	// +optional
	Request string `json:"request,omitempty"`
	// message says what failed and what to check.
	// +optional
	Message string `json:"message,omitempty"`
}

// PruneRecord is the outcome of one pruning.
type PruneRecord struct {
	// at is when it finished.
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// listed counts the cluster's snapshot objects in the bucket before pruning.
	// +optional
	Listed int32 `json:"listed,omitempty"`
	// deleted counts the objects deleted.
	// +optional
	Deleted int32 `json:"deleted,omitempty"`
	// kept counts the objects left.
	// +optional
	Kept int32 `json:"kept,omitempty"`
	// failed says which deletion the bucket refused, and that nothing after it was
	// deleted; empty when every deletion succeeded.
	// +optional
	Failed string `json:"failed,omitempty"`
}

// FailureReason says, in one CamelCase word, why an upgrade or a scaling stopped.
// +kubebuilder:validation:Enum=StepTimeout;StepDownFailed;PromoteFailed;DemoteFailed;RemovePeerFailed;SnapshotFailed;ScalingStepTimeout;ScalingJobFailed;PhaseTimeout;GreenVotedEarly;ValidationFailed;LeaderNotOnTarget;UnknownPhase
type FailureReason string

// Failure reasons.
const (
	// FailureStepTimeout means a member did not pass its gates within stepTimeout.
	FailureStepTimeout FailureReason = "StepTimeout"
	// FailureStepDownFailed means leadership could not be moved off the leader.
	FailureStepDownFailed FailureReason = "StepDownFailed"
	// FailurePromoteFailed means a member could not be made a voter.
	FailurePromoteFailed FailureReason = "PromoteFailed"
	// FailureDemoteFailed means a voter could not be made a non-voter.
	FailureDemoteFailed FailureReason = "DemoteFailed"
	// FailureRemovePeerFailed means a member could not be removed from Raft.
	FailureRemovePeerFailed FailureReason = "RemovePeerFailed"
	// FailureSnapshotFailed means the pre-upgrade snapshot could not be taken.
	FailureSnapshotFailed FailureReason = "SnapshotFailed"
	// FailureScalingStepTimeout means a scaling step did not finish within stepTimeout.
	FailureScalingStepTimeout FailureReason = "ScalingStepTimeout"
	// FailureScalingJobFailed means a scaling step's executor Job kept failing.
	FailureScalingJobFailed FailureReason = "ScalingJobFailed"
	// FailurePhaseTimeout means a blue-green phase waited longer than phaseTimeout.
	FailurePhaseTimeout FailureReason = "PhaseTimeout"
	// FailureGreenVotedEarly means a green member led before green was promoted.
	FailureGreenVotedEarly FailureReason = "GreenVotedEarly"
	// FailureValidationFailed means the blue-green validation hook Job failed.
	FailureValidationFailed FailureReason = "ValidationFailed"
	// FailureLeaderNotOnTarget means the new leader after the step-down is not a
	// member on the target version.
	FailureLeaderNotOnTarget FailureReason = "LeaderNotOnTarget"
	// FailureUnknownPhase means status.blueGreen.phase is one this release does not know.
	FailureUnknownPhase FailureReason = "UnknownPhase"
)

// UpgradeFailure says why an upgrade stopped.
type UpgradeFailure struct {
	// reason is a CamelCase word.
	// +optional
	Reason FailureReason `json:"reason,omitempty"`
	// message names the pod, the cause and the pods not yet started.
	// +optional
	Message string `json:"message,omitempty"`
	// pod the failure is about.
	// +optional
	Pod string `json:"pod,omitempty"`
	// at is when the failure was recorded.
	// +optional
	At *metav1.Time `json:"at,omitempty"`
}

// BlueGreenPhase is where a blue-green upgrade stands. Each phase is recorded in
// status before its first action.
// +kubebuilder:validation:Enum=DeployGreen;Sync;Validate;AwaitPromotion;PromoteGreen;DemoteBlue;TransferLeadership;Cutover;RemoveBlue;Cleanup;RollbackPromoteBlue;RollbackDemoteGreen;RollbackRemoveGreen;RollbackCleanup
type BlueGreenPhase string

// Blue-green phases, in order.
const (
	// BlueGreenDeployGreen creates green's StatefulSet and waits for its members to
	// join blue's Raft cluster as non-voters.
	BlueGreenDeployGreen BlueGreenPhase = "DeployGreen"
	// BlueGreenSync waits for every green member to be healthy and within
	// maxLagEntries of the leader for minSyncDuration.
	BlueGreenSync BlueGreenPhase = "Sync"
	// BlueGreenValidate runs the validation hook Job against green.
	BlueGreenValidate BlueGreenPhase = "Validate"
	// BlueGreenAwaitPromotion holds until baokeeper.dev/promote (or autoPromote).
	BlueGreenAwaitPromotion BlueGreenPhase = "AwaitPromotion"
	// BlueGreenPromoteGreen makes every green member a voter, one at a time.
	BlueGreenPromoteGreen BlueGreenPhase = "PromoteGreen"
	// BlueGreenDemoteBlue makes every blue voter but the leader a non-voter.
	BlueGreenDemoteBlue BlueGreenPhase = "DemoteBlue"
	// BlueGreenTransferLeadership steps the blue leader down once; only green
	// voters can succeed it. Past it, green has led: the point of no return.
	BlueGreenTransferLeadership BlueGreenPhase = "TransferLeadership"
	// BlueGreenCutover points the client Service at green.
	BlueGreenCutover BlueGreenPhase = "Cutover"
	// BlueGreenRemoveBlue removes every blue peer from Raft, verified.
	BlueGreenRemoveBlue BlueGreenPhase = "RemoveBlue"
	// BlueGreenCleanup deletes blue's StatefulSet and volumes, then completes.
	BlueGreenCleanup BlueGreenPhase = "Cleanup"
)

// Rollback phases of a blue-green upgrade, in order, entered from any phase before
// the point of no return (status.blueGreen.rollbackReason says why).
const (
	// BlueGreenRollbackPromoteBlue makes every blue member that was demoted a voter
	// again, one at a time, verified.
	BlueGreenRollbackPromoteBlue BlueGreenPhase = "RollbackPromoteBlue"
	// BlueGreenRollbackDemoteGreen makes every green voter a non-voter, verified.
	BlueGreenRollbackDemoteGreen BlueGreenPhase = "RollbackDemoteGreen"
	// BlueGreenRollbackRemoveGreen removes every green peer from Raft, verified.
	BlueGreenRollbackRemoveGreen BlueGreenPhase = "RollbackRemoveGreen"
	// BlueGreenRollbackCleanup deletes green's StatefulSet and volumes, then ends the
	// upgrade with currentVersion unchanged.
	BlueGreenRollbackCleanup BlueGreenPhase = "RollbackCleanup"
)

// PromotionState says whether green may be promoted.
// +kubebuilder:validation:Enum=Pending;Waiting;Requested;Automatic
type PromotionState string

// Promotion states.
const (
	// PromotionPending means the upgrade has not reached the hold yet.
	PromotionPending PromotionState = "Pending"
	// PromotionWaiting means the upgrade holds for a baokeeper.dev/promote annotation.
	PromotionWaiting PromotionState = "Waiting"
	// PromotionRequested means a person released the hold.
	PromotionRequested PromotionState = "Requested"
	// PromotionAutomatic means spec.upgrade.blueGreen.autoPromote released it.
	PromotionAutomatic PromotionState = "Automatic"
)

// MemberSet is one StatefulSet of members in a blue-green upgrade.
type MemberSet struct {
	// statefulSet is the StatefulSet's name; its pods are <statefulSet>-<ordinal>.
	// +optional
	StatefulSet string `json:"statefulSet,omitempty"`
	// revision is the StatefulSet's current revision when it was recorded.
	// +optional
	Revision string `json:"revision,omitempty"`
	// image is the OpenBao image its members run (blue: as observed on the running
	// pods, never taken from the spec).
	// +optional
	Image string `json:"image,omitempty"`
	// version is the OpenBao version its members run.
	// +optional
	Version string `json:"version,omitempty"`
	// replicas is its member count.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// BlueGreenStatus describes a blue-green upgrade.
type BlueGreenStatus struct {
	// phase of the blue-green upgrade.
	// +optional
	Phase BlueGreenPhase `json:"phase,omitempty"`
	// blue is the set of members that served when the upgrade started, recorded
	// before anything was created.
	// +optional
	Blue MemberSet `json:"blue,omitempty"`
	// green is the set of members on the target, fresh volumes and Raft node IDs for
	// every attempt.
	// +optional
	Green MemberSet `json:"green,omitempty"`
	// phaseStartedAt is when the phase started.
	// +optional
	PhaseStartedAt *metav1.Time `json:"phaseStartedAt,omitempty"`
	// syncedSince is when every green member was first seen healthy and caught up
	// without a break since; promotion waits for minSyncDuration from it.
	// +optional
	SyncedSince *metav1.Time `json:"syncedSince,omitempty"`
	// currentStep is the executor Job in progress (promote, demote, step-down,
	// remove-peer, validate) and its attempts.
	// +optional
	CurrentStep *UpgradeStep `json:"currentStep,omitempty"`
	// jobFailures counts executor Job attempts that failed in this upgrade.
	// +optional
	JobFailures int32 `json:"jobFailures,omitempty"`
	// promotion is Pending, Waiting, Requested or Automatic.
	// +optional
	Promotion PromotionState `json:"promotion,omitempty"`
	// leaderMovedAt is when a green member was verified leader on the target: the
	// point of no return, past which blue is never promoted again.
	// +optional
	LeaderMovedAt *metav1.Time `json:"leaderMovedAt,omitempty"`
	// rollbackReason says why a rollback started.
	// +optional
	RollbackReason string `json:"rollbackReason,omitempty"`
}

// RollbackRecord is an upgrade that was rolled back.
type RollbackRecord struct {
	// fromVersion is the version the cluster kept.
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`
	// targetVersion is the version the rolled-back upgrade went to.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`
	// reason says why it was rolled back: the request, or the failure that rolled it
	// back on its own.
	// +optional
	Reason string `json:"reason,omitempty"`
	// at is when the rollback completed.
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// retry is the baokeeper.dev/retry value that allows an upgrade to targetVersion
	// again; empty while none does.
	// +optional
	Retry string `json:"retry,omitempty"`
}

// BreakGlassReason says, in one CamelCase word, why automation stopped.
// +kubebuilder:validation:Enum=RollbackFailed;RollbackTimedOut;GreenLeadsDuringRollback;QuorumLost;MajorityLost
type BreakGlassReason string

// Break-glass reasons.
const (
	// BreakGlassRollbackFailed means a rollback step kept failing: blue voters could
	// not be promoted back, or a green member demoted or removed.
	BreakGlassRollbackFailed BreakGlassReason = "RollbackFailed"
	// BreakGlassRollbackTimedOut means a rollback phase did not finish within
	// phaseTimeout, for example because no blue leader appeared.
	BreakGlassRollbackTimedOut BreakGlassReason = "RollbackTimedOut"
	// BreakGlassGreenLeads means a green member became the leader during a rollback:
	// green has written, and blue's older version must not lead after it.
	BreakGlassGreenLeads BreakGlassReason = "GreenLeadsDuringRollback"
	// BreakGlassQuorumLost means an upgrade saw a majority of voters unhealthy or
	// missing, which it did not plan.
	BreakGlassQuorumLost BreakGlassReason = "QuorumLost"
	// BreakGlassMajorityLost means a cluster at rest lost a majority of its voters
	// for good (their volumes lost) or for longer than MajorityLostAfter: it cannot
	// elect a leader by itself, and only a recovery from a survivor brings it back.
	BreakGlassMajorityLost BreakGlassReason = "MajorityLost"
)

// QuorumStatus is the quorum watch of a cluster at rest.
type QuorumStatus struct {
	// lastVoters are the voters of the last readable autopilot state, each with the
	// UID of the volume claim that held its data then.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	LastVoters []QuorumVoter `json:"lastVoters,omitempty"`
	// lastLeader is the leader of that read.
	// +optional
	LastLeader string `json:"lastLeader,omitempty"`
	// lostSince is when a pass first saw a majority of lastVoters not answering;
	// empty while a majority answers.
	// +optional
	LostSince *metav1.Time `json:"lostSince,omitempty"`
}

// QuorumRecoveryStep is what a recovery from a lost majority does now.
// +kubebuilder:validation:Enum=WritePeers;RestartSurvivor;WaitSoleVoter;ReplaceOthers;Done;Failed
type QuorumRecoveryStep string

// Steps of a recovery from a lost majority, in order.
const (
	// QuorumRecoveryWritePeers: an executor Job on the survivor's node, with the
	// survivor's volume claim mounted, writes peers.json naming the survivor as the
	// only voter.
	QuorumRecoveryWritePeers QuorumRecoveryStep = "WritePeers"
	// QuorumRecoveryRestartSurvivor: the survivor's pod (the UID recorded) is
	// deleted; OpenBao reads peers.json when it starts.
	QuorumRecoveryRestartSurvivor QuorumRecoveryStep = "RestartSurvivor"
	// QuorumRecoveryWaitSoleVoter: until autopilot lists the survivor as the only
	// voter and the leader.
	QuorumRecoveryWaitSoleVoter QuorumRecoveryStep = "WaitSoleVoter"
	// QuorumRecoveryReplaceOthers: the other members' volume claims and pods (the
	// UIDs recorded) are deleted, so that they start empty and join the survivor;
	// scaling makes them voters.
	QuorumRecoveryReplaceOthers QuorumRecoveryStep = "ReplaceOthers"
	// QuorumRecoveryDone: the survivor leads alone and the others join afresh.
	QuorumRecoveryDone QuorumRecoveryStep = "Done"
	// QuorumRecoveryFailed: the recovery stopped; failure says why and what to do.
	QuorumRecoveryFailed QuorumRecoveryStep = "Failed"
)

// QuorumRecoveryStatus is a recovery from a lost majority.
type QuorumRecoveryStatus struct {
	// request is the accepted baokeeper.dev/recover-quorum value (MEMBER:NONCE).
	// +required
	// +kubebuilder:validation:MaxLength=128
	Request string `json:"request"`
	// id names the recovery's executor Jobs.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	ID string `json:"id,omitempty"`
	// survivor is the voter the cluster is recovered from.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Survivor string `json:"survivor"`
	// survivorPod is the UID of the survivor's pod when the recovery was accepted:
	// peers.json is written beside it, and it is the pod restarted.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SurvivorPod string `json:"survivorPod,omitempty"`
	// survivorVolumeClaim is the UID of the survivor's data volume claim: the Job
	// mounts that claim only.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	SurvivorVolumeClaim string `json:"survivorVolumeClaim,omitempty"`
	// node is the node of the survivor's pod, where the Job runs.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node,omitempty"`
	// others are the members that join afresh, each with the UIDs of its pod and
	// data volume claim recorded when the step ReplaceOthers began.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Others []RecoveredMember `json:"others,omitempty"`
	// step is what the recovery does now (persisted before it is done).
	// +required
	Step QuorumRecoveryStep `json:"step"`
	// attempts counts the Jobs of the current step.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// startedAt is when the recovery was accepted.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// stepStartedAt is when the current step started.
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// completedAt is when it ended (Done or Failed).
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// waitingFor says what the recovery waits for.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	WaitingFor string `json:"waitingFor,omitempty"`
	// failure says why the recovery stopped and what to do.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Failure string `json:"failure,omitempty"`
}

// RecoveredMember is a member that joins afresh after a recovery from a lost
// majority.
type RecoveredMember struct {
	// name is the member (the pod name).
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// pod is the UID of its pod to delete; empty when it had none.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Pod string `json:"pod,omitempty"`
	// volumeClaim is the UID of its data volume claim to delete; empty when it had
	// none.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	VolumeClaim string `json:"volumeClaim,omitempty"`
}

// QuorumVoter is one voter of the last readable Raft configuration.
type QuorumVoter struct {
	// name is the node ID (the pod name).
	// +required
	Name string `json:"name"`
	// volumeClaimUID is the UID of the member's data volume claim when it was last
	// seen a voter; empty for a voter without a claim of this cluster. A claim with
	// another UID holds none of that voter's data.
	// +optional
	VolumeClaimUID string `json:"volumeClaimUID,omitempty"`
}

// BreakGlassMember is one Raft server as observed when break-glass was entered.
type BreakGlassMember struct {
	// name is the node ID (the pod name).
	// +required
	Name string `json:"name"`
	// role is the member's Raft role.
	// +optional
	Role RaftRole `json:"role,omitempty"`
	// version is the OpenBao version it reported.
	// +optional
	Version string `json:"version,omitempty"`
	// healthy is autopilot's (or, without autopilot, sys/health's) verdict.
	// +optional
	Healthy bool `json:"healthy,omitempty"`
	// committedIndex is the Raft index the member reported committed (sys/leader),
	// read when a majority was lost; 0 when it did not answer.
	// +optional
	CommittedIndex int64 `json:"committedIndex,omitempty"`
	// lost says why a voter's data is gone for good (its volume claim deleted or
	// replaced); empty for a survivor or a voter that may come back.
	// +optional
	Lost string `json:"lost,omitempty"`
}

// BreakGlassStatus is set when automation stopped.
type BreakGlassStatus struct {
	// active is true while automation is stopped.
	// +optional
	Active bool `json:"active,omitempty"`
	// reason is a CamelCase word.
	// +optional
	Reason BreakGlassReason `json:"reason,omitempty"`
	// message explains what happened.
	// +optional
	Message string `json:"message,omitempty"`
	// leader is the leader observed on entry; empty when none was.
	// +optional
	Leader string `json:"leader,omitempty"`
	// members is the Raft view on entry: every member with its role and version.
	// +optional
	// +listType=atomic
	Members []BreakGlassMember `json:"members,omitempty"`
	// nonce must be copied into the baokeeper.dev/break-glass-ack annotation to go on.
	// +optional
	Nonce string `json:"nonce,omitempty"`
	// enteredAt is when break-glass started.
	// +optional
	EnteredAt *metav1.Time `json:"enteredAt,omitempty"`
	// survivor is, when a majority of voters was lost at rest (reason MajorityLost),
	// the surviving voter to recover from: the one with the highest committed index,
	// the last leader on a tie.
	// +optional
	Survivor string `json:"survivor,omitempty"`
	// loss says what a recovery from survivor loses of the acknowledged writes, and
	// why.
	// +optional
	Loss string `json:"loss,omitempty"`
	// recoverySteps are what a person should do.
	// +optional
	// +listType=atomic
	RecoverySteps []string `json:"recoverySteps,omitempty"`
	// acknowledgedAt is when the nonce was acknowledged.
	// +optional
	AcknowledgedAt *metav1.Time `json:"acknowledgedAt,omitempty"`
	// acknowledgedBy is the field manager that set the acknowledging annotation
	// (kubectl annotate --field-manager=<name> names a person).
	// +optional
	AcknowledgedBy string `json:"acknowledgedBy,omitempty"`
}

// RequestsStatus records the last handled value of each control annotation.
type RequestsStatus struct {
	// promote is the last handled baokeeper.dev/promote value.
	// +optional
	Promote string `json:"promote,omitempty"`
	// rollback is the last handled baokeeper.dev/rollback value.
	// +optional
	Rollback string `json:"rollback,omitempty"`
	// retry is the last handled baokeeper.dev/retry value.
	// +optional
	Retry string `json:"retry,omitempty"`
	// breakGlassAck is the last handled baokeeper.dev/break-glass-ack value.
	// +optional
	BreakGlassAck string `json:"breakGlassAck,omitempty"`
	// restart is the last handled baokeeper.dev/restart value.
	// +optional
	Restart string `json:"restart,omitempty"`
	// snapshot is the last handled baokeeper.dev/snapshot value.
	// +optional
	Snapshot string `json:"snapshot,omitempty"`
	// restore is the last handled baokeeper.dev/restore value.
	// +optional
	Restore string `json:"restore,omitempty"`
	// rehearse is the last handled baokeeper.dev/rehearse value.
	// +optional
	Rehearse string `json:"rehearse,omitempty"`
	// recoverQuorum is the last handled baokeeper.dev/recover-quorum value.
	// +optional
	RecoverQuorum string `json:"recoverQuorum,omitempty"`
}

// RaftStatus counts the servers of the Raft configuration.
type RaftStatus struct {
	// voters are the voting servers, with or without a member.
	// +optional
	Voters int32 `json:"voters,omitempty"`
	// healthyVoters are the voters autopilot reports healthy.
	// +optional
	HealthyVoters int32 `json:"healthyVoters,omitempty"`
	// nonVoters are the servers that do not vote.
	// +optional
	NonVoters int32 `json:"nonVoters,omitempty"`
	// failureTolerance is how many healthy voters may fail before the quorum is
	// lost: healthy voters minus the majority, at least 0.
	// +optional
	FailureTolerance int32 `json:"failureTolerance,omitempty"`
}

// RestartRecord is an accepted restart request.
type RestartRecord struct {
	// token is the value of baokeeper.dev/restart that was accepted.
	// +required
	Token string `json:"token"`
	// requestedAt is when it was accepted.
	// +optional
	RequestedAt *metav1.Time `json:"requestedAt,omitempty"`
}

// OpenBaoCluster is an OpenBao cluster on integrated (Raft) storage whose version
// changes baokeeper carries out without losing quorum or acknowledged writes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bao,categories=baokeeper
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Voters",type=string,JSONPath=`.status.voters`,description="Healthy voters / members that should vote, as autopilot last reported"
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.upgrade.strategy`
// +kubebuilder:printcolumn:name="Stage",type=string,JSONPath=`.status.upgrade.progress.stage`,description="Where the upgrade stands: the rolling step or the blue-green phase"
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.upgrade) || !has(self.spec.upgrade.after) || self.spec.upgrade.after.all(a, has(a.__namespace__) || a.name != self.metadata.name)",message="spec.upgrade.after names this cluster itself: a cluster cannot wait for its own upgrade; name the clusters that go first"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters of lower-case letters, digits and '-', starting with a letter and ending with a letter or digit (no dots), because baokeeper derives Service, pod and StatefulSet names from it; for example bao or bao-prod"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.scaling) || self.spec.version == oldSelf.spec.version",message="spec.version cannot change while the cluster scales (status.scaling is set): wait for the scaling to finish, then change the version"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.upgrade) || (has(self.spec.replicas) ? self.spec.replicas : 3) == (has(oldSelf.spec.replicas) ? oldSelf.spec.replicas : 3)",message="spec.replicas cannot change while an upgrade runs (status.upgrade is set): wait for the upgrade to finish, then scale"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.upgrade) || !has(oldSelf.spec.upgrade) || !has(self.spec.upgrade) || oldSelf.spec.upgrade.strategy == self.spec.upgrade.strategy",message="spec.upgrade.strategy cannot change while an upgrade runs (status.upgrade is set); wait for it to finish or fail, then change the strategy"
type OpenBaoCluster struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec OpenBaoClusterSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status OpenBaoClusterStatus `json:"status,omitempty"`
}

// OpenBaoClusterList is a list of OpenBaoClusters.
//
// +kubebuilder:object:root=true
type OpenBaoClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the clusters.
	Items []OpenBaoCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OpenBaoCluster{}, &OpenBaoClusterList{})
}

// RefusedInputStatus records input that baokeeper refused because it did not write it.
type RefusedInputStatus struct {
	// count is how many inputs were refused since the cluster was created.
	// +optional
	Count int64 `json:"count,omitempty"`
	// lastRefusedAt is when the last one was refused.
	// +optional
	LastRefusedAt *metav1.Time `json:"lastRefusedAt,omitempty"`
	// last are the most recent refusals, newest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	Last []RefusedInput `json:"last,omitempty"`
}

// RefusedInput is one input baokeeper refused.
type RefusedInput struct {
	// source names what was refused, for example "ConfigMap bao-executor, key request.zz1".
	// +required
	// +kubebuilder:validation:MaxLength=320
	Source string `json:"source"`
	// reason says why it was refused.
	// +required
	// +kubebuilder:validation:MaxLength=512
	Reason string `json:"reason"`
	// at is when it was refused.
	// +required
	At metav1.Time `json:"at"`
}
