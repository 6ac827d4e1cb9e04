package openbaocluster

import (
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
func CacheOptions(namespaces ...string) cache.Options {
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
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}
