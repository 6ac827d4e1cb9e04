package openbaocluster_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	controller "github.com/baokeeper/baokeeper/internal/controller/openbaocluster"
)

func TestCacheOptionsNamespaces(t *testing.T) {
	g := NewWithT(t)
	g.Expect(controller.CacheOptions().DefaultNamespaces).To(BeEmpty(), "every namespace")

	watched := controller.CacheOptions("team-a", "team-b").DefaultNamespaces
	g.Expect(watched).To(HaveLen(2))
	g.Expect(watched).To(HaveKey("team-a"))

	excluded := controller.CacheOptionsExcluding(nil, []string{"e2e-upgrade", "other"}).DefaultNamespaces
	g.Expect(excluded).To(HaveLen(1))
	g.Expect(excluded).To(HaveKey(cache.AllNamespaces))
	g.Expect(excluded[cache.AllNamespaces].FieldSelector.String()).To(Equal("metadata.namespace!=e2e-upgrade,metadata.namespace!=other"))

	g.Expect(controller.CacheOptionsExcluding([]string{"team-a"}, []string{"team-b"}).DefaultNamespaces).To(HaveLen(1), "a list wins")
}
