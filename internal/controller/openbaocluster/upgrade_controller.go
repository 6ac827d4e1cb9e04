package openbaocluster

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/app/openbaocluster/adminops"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;watch;delete
// +kubebuilder:rbac:groups=openbao.baokeeper.dev,resources=openbaoclusters,verbs=create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets;serviceaccounts,verbs=delete

// raftViewChanged wakes the upgrade manager when the workload loop, which observes
// every cluster at least every app.StatusRefresh, reports a different Raft view:
// voters, the leader, or a member's role. OpenBao has no watch, and an idle
// cluster's Kubernetes objects do not change when a member falls out of Raft or
// rejoins as a non-voter; this is how the upgrade manager learns of it. A new
// serving certificate in the Secret wakes it too: it checks that the members reload
// it (upgrade.CheckServedCertificates), and restarts them when they do not.
func raftViewChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldC, ok1 := e.ObjectOld.(*baov1.OpenBaoCluster)
		newC, ok2 := e.ObjectNew.(*baov1.OpenBaoCluster)
		if !ok1 || !ok2 {
			return false
		}
		if oldC.Status.Voters != newC.Status.Voters || oldC.Status.Leader != newC.Status.Leader || len(oldC.Status.Members) != len(newC.Status.Members) ||
			tlsHash(oldC) != tlsHash(newC) {
			return true
		}
		for i := range newC.Status.Members {
			if oldC.Status.Members[i].RaftRole != newC.Status.Members[i].RaftRole {
				return true
			}
		}
		return false
	}}
}

// SetupUpgradeWithManager registers the operations (adminops) reconciler: it watches
// the clusters' spec and annotations, their StatefulSets, member pods and executor
// Jobs.
func SetupUpgradeWithManager(mgr ctrl.Manager, r *adminops.Reconciler, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("openbaocluster-upgrade").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		For(&baov1.OpenBaoCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, raftViewChanged()))).
		Owns(&appsv1.StatefulSet{}).
		Owns(&batchv1.Job{}).
		// The executor's answers in the mailbox wake the pass that reads them, as a
		// step Job's completion does.
		Owns(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(isExecutorMailbox))).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCluster)).
		// A cluster that others are ordered after (spec.upgrade.after) wakes them
		// when its status changes: its version, its upgrade's end, its failure.
		Watches(&baov1.OpenBaoCluster{}, handler.EnqueueRequestsFromMapFunc(orderedAfter(mgr.GetClient())),
			builder.WithPredicates(orderStatusChanged())).
		Complete(r)
}

// orderedAfter maps a cluster to the clusters whose spec.upgrade.after names it.
func orderedAfter(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		all := &baov1.OpenBaoClusterList{}
		if err := c.List(ctx, all); err != nil {
			// The waiting cluster looks again on its own (fleet.OrderPrecheck's wake).
			return nil
		}
		key := obj.GetNamespace() + "/" + obj.GetName()
		var out []reconcile.Request
		for i := range all.Items {
			if slices.Contains(fleet.Names(&all.Items[i]), key) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&all.Items[i])})
			}
		}
		return out
	}
}

// orderStatusChanged passes the status changes that the order across clusters
// reads: the version a cluster runs, an upgrade that starts, fails or ends,
// break-glass, the Available condition, a rollback.
func orderStatusChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*baov1.OpenBaoCluster)
			n, ok2 := e.ObjectNew.(*baov1.OpenBaoCluster)
			if !ok1 || !ok2 {
				return false
			}
			a, b := &o.Status, &n.Status
			return a.CurrentVersion != b.CurrentVersion || (a.Upgrade == nil) != (b.Upgrade == nil) ||
				(a.Upgrade != nil && b.Upgrade != nil && (a.Upgrade.Failure == nil) != (b.Upgrade.Failure == nil)) ||
				(a.BreakGlass != nil && a.BreakGlass.Active) != (b.BreakGlass != nil && b.BreakGlass.Active) ||
				(a.LastRollback == nil) != (b.LastRollback == nil) ||
				meta.IsStatusConditionTrue(a.Conditions, string(baov1.ConditionAvailable)) != meta.IsStatusConditionTrue(b.Conditions, string(baov1.ConditionAvailable))
		},
	}
}

// isExecutorMailbox reports whether obj is a cluster's executor mailbox (its name,
// on a ConfigMap the cluster owns).
func isExecutorMailbox(obj client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "OpenBaoCluster" && obj.GetName() == workload.NamesFor(&baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: ref.Name}}).ExecutorMailbox() {
			return true
		}
	}
	return false
}

func tlsHash(c *baov1.OpenBaoCluster) string {
	if c.Status.TLS == nil {
		return ""
	}
	return c.Status.TLS.CertificateSHA256
}
