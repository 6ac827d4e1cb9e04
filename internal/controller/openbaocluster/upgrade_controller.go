package openbaocluster

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/app/openbaocluster/adminops"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;watch;delete

// SetupUpgradeWithManager registers the operations (adminops) reconciler: it watches
// the clusters' spec and annotations, their StatefulSets, member pods and executor
// Jobs.
func SetupUpgradeWithManager(mgr ctrl.Manager, r *adminops.Reconciler) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("openbaocluster-upgrade").
		For(&baov1.OpenBaoCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.StatefulSet{}).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCluster)).
		Complete(r)
}
