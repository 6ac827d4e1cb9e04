package workload

import (
	"k8s.io/apimachinery/pkg/api/meta"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// AnnotationJWTAudience on the cluster's ConfigMap is the audience its initialization
// names (JWTAudience when the ConfigMap was written).
const AnnotationJWTAudience = "baokeeper.dev/jwt-audience"

// ClusterAudience is the audience of the cluster's JWT roles when baokeeper
// initializes it: unique to the cluster, so that a token issued for one cluster (the
// controller's, sent to an OpenBao image a tenant chose) is refused by every other.
// The roles also bind the token's subject (the operator's or the cluster's executor
// service account).
func ClusterAudience(c *baov1.OpenBaoCluster) string {
	return "openbao.baokeeper.dev/" + c.Namespace + "/" + c.Name
}

// JWTAudience is the audience the cluster's JWT roles trust: status.jwtAudience once
// recorded; LegacyTokenAudience for a cluster that initialized before it was
// recorded (its roles were written with it); else ClusterAudience, which the pass
// that renders the initialization records.
func JWTAudience(c *baov1.OpenBaoCluster) string {
	switch {
	case c.Status.JWTAudience != "":
		return c.Status.JWTAudience
	case meta.IsStatusConditionTrue(c.Status.Conditions, string(baov1.ConditionInitialized)):
		return LegacyTokenAudience
	}
	return ClusterAudience(c)
}
