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
func CacheOptions() cache.Options {
	managed, err := labels.NewRequirement(workload.LabelManagedBy, selection.Equals, []string{workload.ManagedByValue})
	if err != nil {
		// The requirement is built from constants; an error is a programming mistake.
		panic(err)
	}
	return cache.Options{
		DefaultLabelSelector: labels.NewSelector().Add(*managed),
		ByObject: map[client.Object]cache.ByObject{
			&baov1.OpenBaoCluster{}: {Label: labels.Everything()},
		},
	}
}
