package v1alpha1

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Defaults that the API server fills in through the CRD's defaults. The helpers below
// apply them again so code that builds objects in memory (tests, fake clients) sees the
// same values.
const (
	// DefaultReplicas is the number of members when spec.replicas is unset.
	DefaultReplicas int32 = 3
	// DefaultPerformanceMultiplier is Raft's timing factor when unset.
	DefaultPerformanceMultiplier int32 = 1
	// DefaultStorageSize is the Raft volume size when unset.
	DefaultStorageSize = "1Gi"
	// DefaultCertificateDuration is the lifetime of operator-issued certificates.
	DefaultCertificateDuration = 90 * 24 * time.Hour
	// DefaultRenewBefore renews operator-issued certificates this long before expiry.
	DefaultRenewBefore = 30 * 24 * time.Hour
	// DefaultStepTimeout bounds one member's step of a rolling upgrade.
	DefaultStepTimeout = 10 * time.Minute
	// DefaultSettleTime is waited after a member passed every gate: none. The gates
	// and the quorum budget, judged on a fresh read right before the next deletion,
	// are the signal (docs/design/rolling-upgrade.md, "No settle time by default").
	DefaultSettleTime = 0 * time.Second
	// DefaultMinSyncDuration is how long green stays healthy before promotion.
	DefaultMinSyncDuration = time.Minute
	// DefaultPhaseTimeout bounds each waiting phase of a blue-green upgrade.
	DefaultPhaseTimeout = 10 * time.Minute
	// DefaultMaxJobFailures is how many executor Job attempts of one blue-green step
	// may fail before the upgrade fails.
	DefaultMaxJobFailures int32 = 3
	// DefaultValidationHookTimeout bounds the blue-green validation hook.
	DefaultValidationHookTimeout = 5 * time.Minute
)

// GetReplicas returns spec.replicas or its default.
func (c *OpenBaoCluster) GetReplicas() int32 {
	if c.Spec.Replicas == nil {
		return DefaultReplicas
	}
	return *c.Spec.Replicas
}

// GetStrategy returns spec.upgrade.strategy or its default.
func (c *OpenBaoCluster) GetStrategy() UpgradeStrategyType {
	if c.Spec.Upgrade.Strategy == "" {
		return RollingUpdateStrategy
	}
	return c.Spec.Upgrade.Strategy
}

// GetSealType returns spec.seal.type or its default.
func (c *OpenBaoCluster) GetSealType() SealType {
	if c.Spec.Seal.Type == "" {
		return StaticSeal
	}
	return c.Spec.Seal.Type
}

// GetPerformanceMultiplier returns spec.raft.performanceMultiplier or its default.
func (c *OpenBaoCluster) GetPerformanceMultiplier() int32 {
	if c.Spec.Raft.PerformanceMultiplier == nil {
		return DefaultPerformanceMultiplier
	}
	return *c.Spec.Raft.PerformanceMultiplier
}

// GetStorageSize returns spec.storage.size or its default.
func (c *OpenBaoCluster) GetStorageSize() resource.Quantity {
	if c.Spec.Storage.Size == nil {
		return resource.MustParse(DefaultStorageSize)
	}
	return *c.Spec.Storage.Size
}

// GetCertificateDuration returns spec.tls.certificateDuration or its default.
func (c *OpenBaoCluster) GetCertificateDuration() time.Duration {
	if d := DurationOr(c.Spec.TLS.CertificateDuration, DefaultCertificateDuration); d > 0 {
		return d
	}
	return DefaultCertificateDuration
}

// GetRenewBefore returns spec.tls.renewBefore or its default, capped at two thirds of
// the certificate's lifetime so that a short-lived certificate is not renewed in a loop.
func (c *OpenBaoCluster) GetRenewBefore() time.Duration {
	d := DefaultRenewBefore
	if v := DurationOr(c.Spec.TLS.RenewBefore, DefaultRenewBefore); v > 0 {
		d = v
	}
	if limit := c.GetCertificateDuration() * 2 / 3; d > limit {
		d = limit
	}
	return d
}

// UpgradeInProgress reports whether status.upgrade is set.
func (c *OpenBaoCluster) UpgradeInProgress() bool {
	return c.Status.Upgrade != nil
}

// DurationOf returns d as a *Duration, for code that builds objects in memory.
func DurationOf(d time.Duration) *Duration {
	v := Duration(d.String())
	return &v
}

// Parse returns the duration, or an error that says how to write it. Go's unitless
// "0" is refused like any other number without a unit, as the API server does.
func (d Duration) Parse() (time.Duration, error) {
	s := string(d)
	if s == "" || s == "0" || strings.IndexFunc(s, unicode.IsLetter) < 0 {
		return 0, fmt.Errorf("%q is not a duration with a unit: write it like 10s or 5m (units: ns, us, ms, s, m, h)", s)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration with a unit: write it like 10s or 5m (units: ns, us, ms, s, m, h)", s)
	}
	return v, nil
}

// DurationField is one duration field of the spec, by its path.
type DurationField struct {
	// Path is the field's JSON path, for example spec.upgrade.rolling.settleTime.
	Path string
	// Value is the field; nil when unset.
	Value *Duration
	// Default is what an unset field means.
	Default time.Duration
	// AllowZero says whether 0s makes sense for the field (no wait).
	AllowZero bool
}

// DurationFields lists every duration field of the spec with its default.
func (c *OpenBaoCluster) DurationFields() []DurationField {
	u := &c.Spec.Upgrade
	var hookTimeout *Duration
	if u.BlueGreen.ValidationHook != nil {
		hookTimeout = u.BlueGreen.ValidationHook.Timeout
	}
	var retentionMaxAge, drillTimeout *Duration
	if r := c.Spec.Snapshots.Retention; r != nil {
		retentionMaxAge = r.MaxAge
	}
	if v := c.Spec.Snapshots.Verify; v != nil {
		drillTimeout = v.Timeout
	}
	fields := []DurationField{
		{Path: "spec.upgrade.rolling.stepTimeout", Value: u.Rolling.StepTimeout, Default: DefaultStepTimeout},
		{Path: "spec.upgrade.rolling.settleTime", Value: u.Rolling.SettleTime, Default: DefaultSettleTime, AllowZero: true},
		{Path: "spec.upgrade.preUpgradeSnapshot.maxAge", Value: u.PreUpgradeSnapshot.MaxAge},
		{Path: "spec.upgrade.blueGreen.minSyncDuration", Value: u.BlueGreen.MinSyncDuration, Default: DefaultMinSyncDuration, AllowZero: true},
		{Path: "spec.upgrade.blueGreen.validationHook.timeout", Value: hookTimeout, Default: DefaultValidationHookTimeout},
		{Path: "spec.upgrade.blueGreen.phaseTimeout", Value: u.BlueGreen.PhaseTimeout, Default: DefaultPhaseTimeout},
		{Path: "spec.tls.certificateDuration", Value: c.Spec.TLS.CertificateDuration, Default: DefaultCertificateDuration},
		{Path: "spec.tls.renewBefore", Value: c.Spec.TLS.RenewBefore, Default: DefaultRenewBefore},
		{Path: "spec.snapshots.retention.maxAge", Value: retentionMaxAge},
		{Path: "spec.snapshots.verify.timeout", Value: drillTimeout, Default: DefaultDrillTimeout},
		{Path: "spec.upgrade.rehearsalTimeout", Value: u.RehearsalTimeout, Default: DefaultRehearsalTimeout},
	}
	for i, a := range u.After {
		fields = append(fields, DurationField{Path: fmt.Sprintf("spec.upgrade.after[%d].soak", i), Value: a.Soak, AllowZero: true, Default: 24 * time.Hour})
	}
	return fields
}

// DefaultDrillTimeout bounds a restore drill when spec.snapshots.verify.timeout is unset.
const DefaultDrillTimeout = 20 * time.Minute

// DrillTimeout is how long one restore drill may take.
func (c *OpenBaoCluster) DrillTimeout() time.Duration {
	if v := c.Spec.Snapshots.Verify; v != nil {
		return DurationOr(v.Timeout, DefaultDrillTimeout)
	}
	return DefaultDrillTimeout
}

// ValidateDurations checks every duration field as the API server does, for objects
// stored before it did. The error names each bad field and says how to write it.
func (c *OpenBaoCluster) ValidateDurations() error {
	var errs []error
	for _, f := range c.DurationFields() {
		if f.Value == nil {
			continue
		}
		d, err := f.Value.Parse()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %w", f.Path, err))
		case d < 0 || (d == 0 && !f.AllowZero):
			errs = append(errs, fmt.Errorf("%s %q must be greater than 0s, for example %s", f.Path, string(*f.Value), exampleFor(f)))
		}
	}
	return errors.Join(errs...)
}

func exampleFor(f DurationField) string {
	if f.Default > 0 {
		return f.Default.String()
	}
	return "1h"
}

// DurationOr returns the parsed duration of f, or def when it is unset. An invalid
// value also gives def: callers that act on durations check ValidateDurations first.
func DurationOr(d *Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	v, err := d.Parse()
	if err != nil || v < 0 {
		return def
	}
	return v
}

// GetStepTimeout returns spec.upgrade.rolling.stepTimeout or its default.
func (c *OpenBaoCluster) GetStepTimeout() time.Duration {
	return DurationOr(c.Spec.Upgrade.Rolling.StepTimeout, DefaultStepTimeout)
}

// GetLeaderHandoff returns spec.upgrade.rolling.leaderHandoff or the default.
func (c *OpenBaoCluster) GetLeaderHandoff() LeaderHandoff {
	if h := c.Spec.Upgrade.Rolling.LeaderHandoff; h != "" {
		return h
	}
	return DefaultLeaderHandoff
}

// GetSettleTime returns spec.upgrade.rolling.settleTime or its default; 0s is kept.
func (c *OpenBaoCluster) GetSettleTime() time.Duration {
	return DurationOr(c.Spec.Upgrade.Rolling.SettleTime, DefaultSettleTime)
}

// GetMinSyncDuration returns spec.upgrade.blueGreen.minSyncDuration or its default.
func (c *OpenBaoCluster) GetMinSyncDuration() time.Duration {
	return DurationOr(c.Spec.Upgrade.BlueGreen.MinSyncDuration, DefaultMinSyncDuration)
}

// GetPhaseTimeout returns spec.upgrade.blueGreen.phaseTimeout or its default.
func (c *OpenBaoCluster) GetPhaseTimeout() time.Duration {
	return DurationOr(c.Spec.Upgrade.BlueGreen.PhaseTimeout, DefaultPhaseTimeout)
}

// GetValidationHookTimeout returns the validation hook's timeout or its default.
func (c *OpenBaoCluster) GetValidationHookTimeout() time.Duration {
	if c.Spec.Upgrade.BlueGreen.ValidationHook == nil {
		return DefaultValidationHookTimeout
	}
	return DurationOr(c.Spec.Upgrade.BlueGreen.ValidationHook.Timeout, DefaultValidationHookTimeout)
}

// GetMaxJobFailures returns spec.upgrade.blueGreen.maxJobFailures or its default.
func (c *OpenBaoCluster) GetMaxJobFailures() int32 {
	if v := c.Spec.Upgrade.BlueGreen.MaxJobFailures; v != nil && *v > 0 {
		return *v
	}
	return DefaultMaxJobFailures
}

// ServingStatefulSet is the StatefulSet whose members form the cluster:
// status.statefulSet, or metadata.name before any blue-green upgrade moved it.
func (c *OpenBaoCluster) ServingStatefulSet() string {
	if c.Status.StatefulSet != "" {
		return c.Status.StatefulSet
	}
	return c.Name
}

// BlueGreenPhases are every phase of a blue-green upgrade and of its rollback, in
// order: the values of the API's enum, for the metrics and the dashboards.
func BlueGreenPhases() []BlueGreenPhase {
	return []BlueGreenPhase{BlueGreenDeployGreen, BlueGreenSync, BlueGreenValidate, BlueGreenAwaitPromotion, BlueGreenPromoteGreen,
		BlueGreenDemoteBlue, BlueGreenTransferLeadership, BlueGreenCutover, BlueGreenRemoveBlue, BlueGreenCleanup,
		BlueGreenRollbackPromoteBlue, BlueGreenRollbackDemoteGreen, BlueGreenRollbackRemoveGreen, BlueGreenRollbackCleanup}
}

// DefaultMaxLagEntries is spec.upgrade.rolling.maxLagEntries when unset.
const DefaultMaxLagEntries = 1000

// GetMaxLagEntries is how far behind the leader's last Raft index a member may be
// and still count as caught up.
func (c *OpenBaoCluster) GetMaxLagEntries() uint64 {
	if v := c.Spec.Upgrade.Rolling.MaxLagEntries; v != nil && *v >= 0 {
		return uint64(*v)
	}
	return DefaultMaxLagEntries
}

// Location is where the pre-upgrade snapshot goes, as status and events show it:
// s3://<bucket>/<prefix> (<endpoint without user information>); empty when no
// snapshot is taken.
func (s PreUpgradeSnapshotSpec) Location() string {
	if s.Policy == SnapshotNever || s.S3 == nil {
		return ""
	}
	return fmt.Sprintf("s3://%s/%s (%s)", s.S3.Bucket, strings.TrimPrefix(s.S3.Prefix, "/"), s.S3.DisplayEndpoint())
}

// DisplayEndpoint is the endpoint as status, events and logs show it: without any
// user information (user:password@), which the API server refuses on new writes
// but an object stored before that rule may still carry.
func (t *S3Target) DisplayEndpoint() string {
	if t == nil {
		return ""
	}
	u, err := url.Parse(t.Endpoint)
	if err != nil {
		if i := strings.LastIndex(t.Endpoint, "@"); i >= 0 {
			return "<redacted>@" + t.Endpoint[i+1:]
		}
		return t.Endpoint
	}
	if u.User != nil {
		u.User = nil
		return u.Scheme + "://<redacted>@" + strings.TrimPrefix(u.String(), u.Scheme+"://")
	}
	return t.Endpoint
}

// SnapshotTarget returns the bucket of scheduled and requested snapshots:
// spec.snapshots.s3, else spec.upgrade.preUpgradeSnapshot.s3; nil when neither is set.
func (c *OpenBaoCluster) SnapshotTarget() *S3Target {
	if c.Spec.Snapshots.S3 != nil {
		return c.Spec.Snapshots.S3
	}
	return c.Spec.Upgrade.PreUpgradeSnapshot.S3
}

// GetDrills returns status.snapshots.drills; nil for a nil status.
func (s *SnapshotsStatus) GetDrills() *DrillsStatus {
	if s == nil {
		return nil
	}
	return s.Drills
}

// GetSchedule returns the schedule status.snapshots recorded; "" for a nil status.
func (s *SnapshotsStatus) GetSchedule() string {
	if s == nil {
		return ""
	}
	return s.Schedule
}
