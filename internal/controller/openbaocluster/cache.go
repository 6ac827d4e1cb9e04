package openbaocluster

import (
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
