package v1alpha1

import (
	"time"

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
	if c.Spec.TLS.CertificateDuration == nil || c.Spec.TLS.CertificateDuration.Duration <= 0 {
		return DefaultCertificateDuration
	}
	return c.Spec.TLS.CertificateDuration.Duration
}

// GetRenewBefore returns spec.tls.renewBefore or its default, capped at two thirds of
// the certificate's lifetime so that a short-lived certificate is not renewed in a loop.
func (c *OpenBaoCluster) GetRenewBefore() time.Duration {
	d := DefaultRenewBefore
	if c.Spec.TLS.RenewBefore != nil && c.Spec.TLS.RenewBefore.Duration > 0 {
		d = c.Spec.TLS.RenewBefore.Duration
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
