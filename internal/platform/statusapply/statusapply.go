package statusapply

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Owner is one writer of the status: a field manager and the fields it owns. Owners
// own disjoint fields, so neither can write back a stale value of the other's.
type Owner struct {
	// FieldManager is the server-side-apply field manager.
	FieldManager string
	// Fields are the top-level status fields (JSON names) the owner writes.
	Fields []string
	// Conditions are the condition types the owner writes.
	Conditions []baov1.ConditionType
	// FromFreshRead makes the write conditional on the object's resourceVersion as the
	// pass read it: a write computed from a read that another write overtook (the
	// informer cache lags behind the operator's own writes) fails with a Conflict and
	// changes nothing. The owner whose decisions are not idempotent needs it: a second
	// break-glass entry from a stale read would replace the nonce a person holds.
	FromFreshRead bool
}

// Workload owns what the workload reconciler observes and computes.
func Workload() Owner {
	return Owner{
		FieldManager: "baokeeper-status",
		Fields:       []string{"phase", "message", "observedGeneration", "readyMembers", "members", "tls", "voters", "leader", "raft", "jwtAudience"},
		Conditions: []baov1.ConditionType{baov1.ConditionAvailable, baov1.ConditionProgressing, baov1.ConditionDegraded,
			baov1.ConditionSpecValid, baov1.ConditionTLSReady, baov1.ConditionInitialized},
	}
}

// Upgrade owns the version and everything about operations on the cluster.
func Upgrade() Owner {
	return Owner{
		FieldManager: "baokeeper-upgrade",
		Fields:       []string{"currentVersion", "statefulSet", "upgrade", "blueGreen", "breakGlass", "requests", "operationLock", "lastSnapshot", "snapshots", "lastRollback", "scaling", "restart", "restore", "inPlaceRestore", "rehearsal", "history", "window", "refusedInput", "quorum", "quorumRecovery"},
		Conditions:   []baov1.ConditionType{baov1.ConditionUpgradePaused, baov1.ConditionBreakGlass, baov1.ConditionRolledBack, baov1.ConditionRestored, baov1.ConditionInputRefused},
		// Every intent it persists was decided on the status it read; a decision on a
		// stale status must not land.
		FromFreshRead: true,
	}
}

// Apply writes the owner's part of cluster.Status when it differs semantically from
// the same part of before. It reports whether a write was made.
func Apply(ctx context.Context, c client.Client, o Owner, cluster *baov1.OpenBaoCluster, before *baov1.OpenBaoClusterStatus) (bool, error) {
	after, err := o.part(&cluster.Status)
	if err != nil {
		return false, fmt.Errorf("failed to convert status of OpenBaoCluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	if before != nil {
		prev, err := o.part(before)
		if err != nil {
			return false, err
		}
		if equality.Semantic.DeepEqual(prev, after) {
			return false, nil
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": after}}
	u.SetAPIVersion(baov1.GroupVersion.String())
	u.SetKind("OpenBaoCluster")
	u.SetName(cluster.Name)
	u.SetNamespace(cluster.Namespace)
	if o.FromFreshRead {
		u.SetResourceVersion(cluster.ResourceVersion)
	}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(o.FieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsConflict(err) {
			return false, fmt.Errorf("status of OpenBaoCluster %s/%s not written: it was computed from resourceVersion %s, which a later write overtook; "+
				"the pass is discarded and runs again on a fresh read: %w", cluster.Namespace, cluster.Name, cluster.ResourceVersion, err)
		}
		return false, fmt.Errorf("failed to apply status of OpenBaoCluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	return true, nil
}

// part is the owner's fields of st, as the unstructured body of an apply. A field the
// owner leaves empty is omitted, which releases it: server-side apply removes a field
// that no manager applies any more.
func (o Owner) part(st *baov1.OpenBaoClusterStatus) (map[string]any, error) {
	all, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, f := range o.Fields {
		if v, ok := all[f]; ok {
			out[f] = v
		}
	}
	var conds []any
	for _, c := range st.Conditions {
		if slices.Contains(o.Conditions, baov1.ConditionType(c.Type)) {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
			if err != nil {
				return nil, err
			}
			conds = append(conds, u)
		}
	}
	if len(conds) > 0 {
		out["conditions"] = conds
	}
	return out, nil
}
