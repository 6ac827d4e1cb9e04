package v1alpha1

// ConditionType names a condition of an OpenBaoCluster.
type ConditionType string

// Condition types. Available, Progressing and Degraded follow the Kubernetes convention;
// the others are specific to baokeeper.
const (
	// ConditionAvailable is True when a majority of members is Ready, unsealed and serving.
	ConditionAvailable ConditionType = "Available"
	// ConditionProgressing is True while the cluster moves toward its spec: first creation,
	// initialization, or a version change.
	ConditionProgressing ConditionType = "Progressing"
	// ConditionDegraded is True when the cluster serves with fewer members than desired,
	// or when baokeeper refused the spec.
	ConditionDegraded ConditionType = "Degraded"
	// ConditionUpgradePaused is True while spec.upgrade.paused holds an upgrade.
	ConditionUpgradePaused ConditionType = "UpgradePaused"
	// ConditionBreakGlass is True while automation is stopped and a person must act.
	ConditionBreakGlass ConditionType = "BreakGlass"
	// ConditionRolledBack is True after a blue-green upgrade was rolled back, until
	// the next upgrade starts; its message says why and what to do.
	ConditionRolledBack ConditionType = "RolledBack"
	// ConditionSpecValid is False when the version or image policy refused the spec.
	ConditionSpecValid ConditionType = "SpecValid"
	// ConditionTLSReady is True when a serving certificate that covers every member exists.
	ConditionTLSReady ConditionType = "TLSReady"
	// ConditionInitialized is True once a member reported the cluster initialized. It
	// never goes back to False: from then on self-initialization is disabled, so a
	// member that lost its data joins the cluster instead of starting a second one.
	ConditionInitialized ConditionType = "Initialized"
	// ConditionRestored is set on a cluster that starts from a snapshot
	// (spec.bootstrap.fromSnapshot): False while the restore runs or after it
	// failed, True once the restored member was verified.
	ConditionRestored ConditionType = "Restored"
	// ConditionInputRefused is True for an hour after baokeeper refused input it did
	// not write (status.refusedInput): someone tried to drive it from outside.
	ConditionInputRefused ConditionType = "InputRefused"
)

// Reason is the CamelCase reason of a condition or an event.
type Reason string

// Reasons of the Available condition.
const (
	// ReasonQuorumReady means a majority of members is Ready and unsealed.
	ReasonQuorumReady Reason = "QuorumReady"
	// ReasonQuorumNotReady means fewer than a majority of members is Ready.
	ReasonQuorumNotReady Reason = "QuorumNotReady"
	// ReasonNoLeader means members are Ready but none is the active node.
	ReasonNoLeader Reason = "NoLeader"
	// ReasonQuorumLost means fewer than a majority of Raft voters is healthy.
	ReasonQuorumLost Reason = "QuorumLost"
	// ReasonLeaderActive means a member is active but the Raft view could not be read.
	ReasonLeaderActive Reason = "LeaderActive"
)

// Reasons of the Progressing condition.
const (
	// ReasonCreating means workload objects are being created.
	ReasonCreating Reason = "Creating"
	// ReasonInitializing means members are starting, initializing or unsealing.
	ReasonInitializing Reason = "Initializing"
	// ReasonWaitingForVoters means a new cluster's members serve, but not every one
	// of them votes yet.
	ReasonWaitingForVoters Reason = "WaitingForVoters"
	// ReasonReconciled means the cluster matches its spec.
	ReasonReconciled Reason = "Reconciled"
	// ReasonUpgradePending means a version change passed the policy and waits for the
	// upgrade manager.
	ReasonUpgradePending Reason = "UpgradePending"
	// ReasonUpgrading means a version change is being rolled out.
	ReasonUpgrading Reason = "Upgrading"
	// ReasonUpgradeBlocked means a planned version change waits for a failing precheck.
	ReasonUpgradeBlocked Reason = "UpgradeBlocked"
	// ReasonUpgradeFailed means a version change stopped; it waits for a retry.
	ReasonUpgradeFailed Reason = "UpgradeFailed"
	// ReasonScaling means members are being added or removed through Raft.
	ReasonScaling Reason = "Scaling"
	// ReasonScalingFailed means a membership change stopped; it waits for a retry.
	ReasonScalingFailed Reason = "ScalingFailed"
	// ReasonRestoring means a cluster that starts from a snapshot restores it
	// (also a reason of the Restored condition).
	ReasonRestoring Reason = "Restoring"
)

// Reasons of the Restored condition (besides ReasonRestoring).
const (
	// ReasonSnapshotRestored means the snapshot was restored and the member verified.
	ReasonSnapshotRestored Reason = "SnapshotRestored"
	// ReasonRestoreFailed means the restore stopped; status.restore.failure says why.
	ReasonRestoreFailed Reason = "RestoreFailed"
)

// Reasons of the Degraded condition.
const (
	// ReasonAllMembersReady means every desired member is Ready.
	ReasonAllMembersReady Reason = "AllMembersReady"
	// ReasonMembersNotReady means some members are not Ready.
	ReasonMembersNotReady Reason = "MembersNotReady"
	// ReasonSpecRefused means the policy refused the spec.
	ReasonSpecRefused Reason = "SpecRefused"
	// ReasonRaftUnavailable means Raft has no leader or no quorum of healthy voters.
	ReasonRaftUnavailable Reason = "RaftUnavailable"
	// ReasonSealKeyMissing means the static-seal key Secret of an initialized cluster is gone.
	ReasonSealKeyMissing Reason = "SealKeyMissing"
	// ReasonSealKeyRefused means a cluster that starts from a snapshot names a seal
	// key baokeeper does not lend: not created by baokeeper for the source cluster,
	// or for a snapshot that the source cluster does not list.
	ReasonSealKeyRefused Reason = "SealKeyRefused"
	// ReasonApplyFailed means the API server refused a write of one of the cluster's
	// objects; the message carries its answer.
	ReasonApplyFailed Reason = "ApplyFailed"
	// ReasonFailureToleranceLow means Raft serves, but tolerates fewer failed voters
	// than the cluster's size promises ((members-1)/2): a member is a non-voter, or a
	// voter is unhealthy.
	ReasonFailureToleranceLow Reason = "FailureToleranceLow"
)

// Reasons of the SpecValid condition.
const (
	// ReasonSpecAccepted means the version and image passed the policy.
	ReasonSpecAccepted Reason = "SpecAccepted"
	// ReasonStrategyNotSupported means the requested strategy is not carried out by this release.
	ReasonStrategyNotSupported Reason = "StrategyNotSupported"
	// ReasonInvalidDuration means a duration field does not parse or is out of range
	// (an object stored before the API server validated durations).
	ReasonInvalidDuration Reason = "InvalidDuration"
	// ReasonInvalidSchedule means spec.snapshots.schedule or timeZone does not
	// parse (the API server checks the schedule's shape only).
	ReasonInvalidSchedule Reason = "InvalidSchedule"
	// ReasonInvalidWindow means a maintenance window of spec.upgrade.windows does
	// not parse, is in a time zone that does not exist, or never opens.
	ReasonInvalidWindow Reason = "InvalidWindow"
	// ReasonSnapshotNewerThanVersion means spec.bootstrap.fromSnapshot was taken on
	// a version newer than spec.version.
	ReasonSnapshotNewerThanVersion Reason = "SnapshotNewerThanVersion"
	// ReasonInvalidSealStanza means spec.seal.customStanza holds more than seal
	// blocks, or does not parse.
	ReasonInvalidSealStanza Reason = "InvalidSealStanza"
	// ReasonNameConflict means an object the cluster would create or update exists and
	// was not created by baokeeper for this cluster (another application's Secret,
	// Service, ...): baokeeper touches nothing until the conflict is resolved.
	ReasonNameConflict Reason = "NameConflict"
	// ReasonProtectedNamespace means the cluster is in a namespace baokeeper never
	// runs clusters in: its own, or kube-system.
	ReasonProtectedNamespace Reason = "ProtectedNamespace"
)

// Reasons of the TLSReady condition.
const (
	// ReasonCertificateIssued means the operator-issued certificate is current.
	ReasonCertificateIssued Reason = "CertificateIssued"
	// ReasonUserCertificate means the user-provided Secret is used.
	ReasonUserCertificate Reason = "UserCertificate"
	// ReasonUserCertificateMissing means the user-provided Secret is missing or incomplete.
	ReasonUserCertificateMissing Reason = "UserCertificateMissing"
	// ReasonUserCertificateInvalid means the user-provided certificate cannot serve the
	// cluster: unreadable, or it does not name the members and the client Service.
	ReasonUserCertificateInvalid Reason = "UserCertificateInvalid"
)

// Reasons of the Initialized condition.
const (
	// ReasonSelfInitialized means ordinal 0 initialized the cluster and a member became Ready.
	ReasonSelfInitialized Reason = "SelfInitialized"
	// ReasonWaitingForInitialization means no member has become Ready yet.
	ReasonWaitingForInitialization Reason = "WaitingForInitialization"
)

// Reasons of the UpgradePaused and BreakGlass conditions.
const (
	// ReasonNotPaused means spec.upgrade.paused is false.
	ReasonNotPaused Reason = "NotPaused"
	// ReasonPausedBySpec means spec.upgrade.paused is true.
	ReasonPausedBySpec Reason = "PausedBySpec"
	// ReasonPausedByAnnotation means the baokeeper.dev/pause annotation is "true".
	ReasonPausedByAnnotation Reason = "PausedByAnnotation"
	// ReasonNotActive means break-glass is not active.
	ReasonNotActive Reason = "NotActive"
)

// Reasons of the InputRefused condition and its events.
const (
	// ReasonMailboxEntryRefused means an entry of the executor mailbox was not
	// written by baokeeper: it was removed, and nothing of it ran.
	ReasonMailboxEntryRefused Reason = "MailboxEntryRefused"
	// ReasonNoInputRefused means nothing was refused in the last hour.
	ReasonNoInputRefused Reason = "NoInputRefused"
)

// Reasons of the RolledBack condition.
const (
	// ReasonNoRollback means no upgrade was rolled back since the last one started.
	ReasonNoRollback Reason = "NoRollback"
	// ReasonRolledBack means the last blue-green upgrade was rolled back.
	ReasonRolledBack Reason = "RolledBack"
)

// Event reasons. Events are emitted only at transitions a person cares about.
const (
	// EventCreated is emitted when the workload objects of a cluster are first created.
	EventCreated Reason = "Created"
	// EventRunning is emitted when every member became Ready, initialized and unsealed.
	EventRunning Reason = "Running"
	// EventDegraded is emitted when a Running cluster lost a member.
	EventDegraded Reason = "Degraded"
	// EventCertificateIssued is emitted when a serving certificate is issued or renewed.
	EventCertificateIssued Reason = "CertificateIssued"
	// EventSpecRefused is emitted when the version or image policy refuses the spec.
	EventSpecRefused Reason = "SpecRefused"
	// EventUpgradePending is emitted when a version change waits for the upgrade manager.
	EventUpgradePending Reason = "UpgradePending"
	// EventApplyFailed is emitted when the API server refuses a write of one of the
	// cluster's objects, once per distinct answer.
	EventApplyFailed Reason = "ApplyFailed"
)

// Control annotations on an OpenBaoCluster. Each is edge-triggered: baokeeper acts once
// per new value and records the handled value in status.requests.
const (
	// AnnotationPromote releases a blue-green upgrade that waits for promotion.
	AnnotationPromote = "baokeeper.dev/promote"
	// AnnotationRollback rolls back a blue-green upgrade.
	AnnotationRollback = "baokeeper.dev/rollback"
	// AnnotationRetry retries a failed upgrade step.
	AnnotationRetry = "baokeeper.dev/retry"
	// AnnotationBreakGlassAck acknowledges break-glass; only the current nonce counts.
	AnnotationBreakGlassAck = "baokeeper.dev/break-glass-ack"
	// AnnotationPause set to "true" holds upgrades and rollouts at their next safe
	// point, as spec.upgrade.paused does; removing it (or any other value)
	// resumes. A control beside the spec, for clusters whose spec a GitOps
	// controller keeps as Git says (docs/fleet.md).
	AnnotationPause = "baokeeper.dev/pause"
	// AnnotationRestart restarts every member through the rollout (followers first,
	// the leader last), once per new value.
	AnnotationRestart = "baokeeper.dev/restart"
	// AnnotationSnapshot takes a verified snapshot (spec.snapshots), once per new
	// value; kubectl bao snapshot sets it.
	AnnotationSnapshot = "baokeeper.dev/snapshot"
	// AnnotationRestore restores, in place, the snapshot whose SHA-256 it names: the
	// value must be the sha256 of a receipt this cluster recorded
	// (status.snapshots.taken or status.lastSnapshot), which binds the request to
	// exactly one snapshot. Every write made since that snapshot is lost. Once per
	// new value; kubectl bao restore CLUSTER --in-place sets it.
	AnnotationRestore = "baokeeper.dev/restore"
	// AnnotationRehearse rehearses an upgrade to the version it names on a copy
	// restored from the newest verified snapshot, without changing the cluster:
	// VERSION, optionally followed by "+" and a token of the requester's own (to
	// rehearse the same version again later). The verdict is in status.rehearsal;
	// an upgrade to that version with spec.upgrade.rehearsal Required counts a
	// rehearsal that passed from the same version within RehearsalValidFor.
	AnnotationRehearse = "baokeeper.dev/rehearse"
	// AnnotationRecoverQuorum recovers a cluster whose majority of voters is lost for
	// good from one survivor: MEMBER:NONCE, where MEMBER is status.breakGlass.survivor
	// and NONCE status.breakGlass.nonce of break-glass MajorityLost. Accepting it
	// acknowledges that break-glass. Everything written after the survivor's
	// committed index is lost (status.breakGlass.loss says what). Once per new value;
	// kubectl bao recover-quorum sets it.
	AnnotationRecoverQuorum = "baokeeper.dev/recover-quorum"
)

// Annotations baokeeper sets on the member pod template. Each carries what a running
// member cannot pick up without a restart; a new value changes the template, and the
// rollout restarts every member onto it.
const (
	// TemplateAnnotationConfig is the SHA-256 of the configuration a member reads at
	// start (config.hcl without the join settings, which a member with data ignores).
	TemplateAnnotationConfig = "baokeeper.dev/config-sha256"
	// TemplateAnnotationCertificate was status.tls.certificateSHA256 on the template
	// of earlier releases, which restarted members to serve a renewed certificate;
	// members now reload it in place, and the template no longer carries it.
	TemplateAnnotationCertificate = "baokeeper.dev/certificate-sha256"
	// TemplateAnnotationRestart is the token of the last accepted restart request.
	TemplateAnnotationRestart = "baokeeper.dev/restart"
)
