package statusapply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// FieldOwner is the field manager of every status write of baokeeper.
const FieldOwner = "baokeeper-status"

// Apply writes cluster.Status when it differs semantically from before. It reports
// whether a write was made.
func Apply(ctx context.Context, c client.Client, cluster *baov1.OpenBaoCluster, before *baov1.OpenBaoClusterStatus) (bool, error) {
	if before != nil && equality.Semantic.DeepEqual(*before, cluster.Status) {
		return false, nil
	}
	u, err := ApplyConfiguration(cluster)
	if err != nil {
		return false, err
	}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("failed to apply status of OpenBaoCluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	return true, nil
}

// ApplyConfiguration is the server-side-apply body of the cluster's status: identity
// plus the whole status, nothing from spec or metadata.
func ApplyConfiguration(cluster *baov1.OpenBaoCluster) (*unstructured.Unstructured, error) {
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cluster.Status)
	if err != nil {
		return nil, fmt.Errorf("failed to convert status of OpenBaoCluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetAPIVersion(baov1.GroupVersion.String())
	u.SetKind("OpenBaoCluster")
	u.SetName(cluster.Name)
	u.SetNamespace(cluster.Namespace)
	return u, nil
}
