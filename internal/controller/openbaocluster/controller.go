package openbaocluster

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	app "github.com/baokeeper/baokeeper/internal/app/openbaocluster"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Least privilege, checked against the audit log of every e2e run (test/e2e/rbac_test.go):
// reads go through the cache (list, watch), writes are server-side applies (patch,
// and create for an apply that creates), deletes only where the code deletes. get
// is the check, before a cluster's first write, that no object of another
// application has the name it would write (metadata only; app.observeExisting).
// Leader election's Lease is not here: a Role in the operator's namespace grants it,
// on the one Lease's name (config/rbac/common/leader_election.yaml, and the chart's).
// +kubebuilder:rbac:groups=openbao.baokeeper.dev,resources=openbaoclusters,verbs=list;watch
// +kubebuilder:rbac:groups=openbao.baokeeper.dev,resources=openbaoclusters/status,verbs=patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps;serviceaccounts,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:urls=/.well-known/openid-configuration;/openid/v1/jwks,verbs=get

// DefaultWorkers is how many clusters each controller reconciles at once.
// controller-runtime never runs two passes of one cluster at the same time, so a
// slow cluster (members timing out) delays only itself.
const DefaultWorkers = 4

// SetupWithManager registers the reconciler with the manager.
func SetupWithManager(mgr ctrl.Manager, r *app.Reconciler, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("openbaocluster").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		For(&baov1.OpenBaoCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, upgradeStatusChanged()))).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCluster)).
		Complete(r)
}

// upgradeStatusChanged lets the workload loop react to what the upgrade manager
// writes (currentVersion, the upgrade in progress, break-glass, the last rollback,
// an accepted restart, whose token goes on the pod template),
// which it reads to compute the phase and the message, and break-glass to stop; its
// own status writes do not trigger a pass.
func upgradeStatusChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldC, ok1 := e.ObjectOld.(*baov1.OpenBaoCluster)
		newC, ok2 := e.ObjectNew.(*baov1.OpenBaoCluster)
		if !ok1 || !ok2 {
			return false
		}
		return oldC.Status.CurrentVersion != newC.Status.CurrentVersion || oldC.Status.StatefulSet != newC.Status.StatefulSet ||
			!equality.Semantic.DeepEqual(oldC.Status.Upgrade, newC.Status.Upgrade) ||
			!equality.Semantic.DeepEqual(oldC.Status.Scaling, newC.Status.Scaling) ||
			!equality.Semantic.DeepEqual(oldC.Status.BreakGlass, newC.Status.BreakGlass) ||
			!equality.Semantic.DeepEqual(oldC.Status.LastRollback, newC.Status.LastRollback) ||
			!equality.Semantic.DeepEqual(oldC.Status.Restart, newC.Status.Restart)
	}}
}

// podToCluster maps a member pod to its OpenBaoCluster through the cluster label.
func podToCluster(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := obj.GetLabels()[workload.LabelCluster]
	if !ok || obj.GetLabels()[workload.LabelManagedBy] != workload.ManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}
