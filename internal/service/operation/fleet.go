package operation

import (
	"fmt"
	"slices"
	"strings"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Fleet is what one pass read of the other OpenBaoClusters, for the order of
// upgrades across clusters (spec.upgrade.after): every cluster the operator can
// read, and which namespaces it can read at all.
type Fleet struct {
	// Clusters are the OpenBaoClusters in the namespaces the operator watches.
	Clusters []baov1.OpenBaoCluster
	// Watched are the namespaces the operator watches (--watch-namespaces); empty:
	// every namespace but Excluded.
	Watched []string
	// Excluded are the namespaces another installation manages
	// (--exclude-namespaces).
	Excluded []string
}

// Unreadable says why the operator cannot read OpenBaoClusters in namespace ns, and
// what to do; "" when it can. In namespace mode it reads only the namespaces it
// watches: an order across namespaces never widens its permissions.
func (f Fleet) Unreadable(ns string) string {
	if len(f.Watched) > 0 && !slices.Contains(f.Watched, ns) {
		return fmt.Sprintf("this baokeeper watches only the namespaces %s (namespace mode) and reads no other: add %s to its watched namespaces, or order only clusters in those",
			strings.Join(f.Watched, ", "), ns)
	}
	if slices.Contains(f.Excluded, ns) {
		return fmt.Sprintf("namespace %s is excluded from this baokeeper (--exclude-namespaces: another installation manages it), so its clusters cannot be ordered with this one", ns)
	}
	return ""
}

// Get is the cluster ns/name, or nil.
func (f Fleet) Get(ns, name string) *baov1.OpenBaoCluster {
	for i := range f.Clusters {
		if f.Clusters[i].Namespace == ns && f.Clusters[i].Name == name {
			return &f.Clusters[i]
		}
	}
	return nil
}
