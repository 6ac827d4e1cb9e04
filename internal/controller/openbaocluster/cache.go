package openbaocluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// CacheOptions restricts the manager's cache to what baokeeper labels, plus the
// OpenBaoClusters themselves, so that memory does not grow with unrelated objects.
// With namespaces (--watch-namespaces), the cache watches only those: the operator
// then needs read and write access in them alone, through Roles, and no
// cluster-wide access to any namespaced object.
//
// With excluded namespaces instead (--exclude-namespaces), the cache watches every
// namespace but those: another installation of baokeeper (a namespace-mode release)
// manages them, and this one never sees their clusters.
func CacheOptions(namespaces ...string) cache.Options {
	return CacheOptionsExcluding(namespaces, nil)
}

// CacheOptionsExcluding is CacheOptions with namespaces left out of an all-namespace
// cache. With namespaces given, excluded is ignored.
func CacheOptionsExcluding(namespaces, excluded []string) cache.Options {
	managed, err := labels.NewRequirement(workload.LabelManagedBy, selection.Equals, []string{workload.ManagedByValue})
	if err != nil {
		// The requirement is built from constants; an error is a programming mistake.
		panic(err)
	}
	o := cache.Options{
		DefaultLabelSelector: labels.NewSelector().Add(*managed),
		DefaultTransform:     DropForeignData,
		ByObject: map[client.Object]cache.ByObject{
			&baov1.OpenBaoCluster{}: {Label: labels.Everything()},
		},
	}
	switch {
	case len(namespaces) > 0:
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	case len(excluded) > 0:
		var sels []fields.Selector
		for _, ns := range excluded {
			sels = append(sels, fields.OneTermNotEqualSelector("metadata.namespace", ns))
		}
		o.DefaultNamespaces = map[string]cache.Config{cache.AllNamespaces: {FieldSelector: fields.AndSelectors(sels...)}}
	}
	return o
}

// AnnotationDataDropped marks a cached Secret or ConfigMap whose data the cache
// dropped (DropForeignData); it is never written to the API server.
const AnnotationDataDropped = "baokeeper.dev/cache-data-dropped"

// DropForeignData is the cache's transform: a Secret or ConfigMap keeps its data in
// the cache only when an OpenBaoCluster controls it and it has one of the names
// baokeeper derives for that cluster (workload.CreatedObjects); every other one is
// cached as metadata only, without managed fields. Why: anyone may set the
// app.kubernetes.io/managed-by=baokeeper label the cache selects on, in any
// namespace; without this, a few hundred labelled 1 MiB ConfigMaps held in memory
// keep the operator OOM-killed, and every cluster loses its upgrades, renewals and
// break-glass detection (issue 38). A tenant can make at most the handful of derived
// names of a cluster that exists cost memory, and those are the cluster's own. What
// baokeeper reads of other labelled Secrets is their existence (the seal key, which
// has no owner on purpose) or goes through the API server (a restore's source key).
func DropForeignData(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Secret:
		if !derivedOf(o, workload.KindSecret) {
			o.Data, o.StringData, o.ManagedFields = nil, nil, nil
			markDropped(&o.ObjectMeta)
		}
	case *corev1.ConfigMap:
		if !derivedOf(o, workload.KindConfigMap) {
			o.Data, o.BinaryData, o.ManagedFields = nil, nil, nil
			markDropped(&o.ObjectMeta)
		}
	}
	return obj, nil
}

// derivedOf reports whether an OpenBaoCluster controls obj and obj has one of the
// names of kind that baokeeper derives for it.
func derivedOf(obj metav1.Object, kind string) bool {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "OpenBaoCluster" || ref.APIVersion != baov1.GroupVersion.String() {
		return false
	}
	owner := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: obj.GetNamespace()}}
	for _, r := range workload.CreatedObjects(owner) {
		if r.Kind == kind && r.Name == obj.GetName() {
			return true
		}
	}
	return false
}

func markDropped(m *metav1.ObjectMeta) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[AnnotationDataDropped] = "true"
}
