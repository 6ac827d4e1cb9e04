package openbaocluster_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"

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

// TestDropForeignData: the cache keeps the data of the Secrets and ConfigMaps an
// OpenBaoCluster controls under the names baokeeper derives, and of nothing else
// (issue 38: anyone may set the label the cache selects on).
func TestDropForeignData(t *testing.T) {
	owner := func(kind, apiVersion, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u", Controller: ptr.To(true)}}
	}
	bao := owner("OpenBaoCluster", baov1.GroupVersion.String(), "bao")
	big := map[string]string{"k": strings.Repeat("x", 1<<20)}
	tests := []struct {
		name string
		obj  client.Object
		keep bool
	}{
		{"the cluster's mailbox", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bao-executor", OwnerReferences: bao}, Data: big}, true},
		{"the cluster's config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bao-config", OwnerReferences: bao}, Data: big}, true},
		{"the cluster's CA", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bao-ca", OwnerReferences: bao}, Data: map[string][]byte{"k": []byte("x")}}, true},
		{"the cluster's mailbox keys", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bao-executor-keys", OwnerReferences: bao}, Data: map[string][]byte{"k": []byte("x")}}, true},
		{"a labelled ConfigMap of a tenant", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "flood-1"}, Data: big}, false},
		{"one that claims the cluster as its controller under another name", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "flood-2", OwnerReferences: bao}, Data: big}, false},
		{"one a Deployment controls", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bao-config", OwnerReferences: owner("Deployment", "apps/v1", "bao")}, Data: big}, false},
		{"a kind of the same name in another group", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bao-config", OwnerReferences: owner("OpenBaoCluster", "evil.example/v1", "bao")}, Data: big}, false},
		{"the seal key (no owner on purpose: only its existence is read from the cache)", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bao-seal"}, Data: map[string][]byte{"k": []byte("x")}}, false},
		{"the mailbox name as a Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bao-executor", OwnerReferences: bao}, Data: map[string][]byte{"k": []byte("x")}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := controller.DropForeignData(tc.obj)
			g.Expect(err).NotTo(HaveOccurred())
			var n int
			switch o := out.(type) {
			case *corev1.ConfigMap:
				n = len(o.Data) + len(o.BinaryData)
			case *corev1.Secret:
				n = len(o.Data) + len(o.StringData)
			}
			_, marked := tc.obj.GetAnnotations()[controller.AnnotationDataDropped]
			if tc.keep {
				g.Expect(n).To(Equal(1))
				g.Expect(marked).To(BeFalse())
			} else {
				g.Expect(n).To(BeZero(), "metadata only")
				g.Expect(marked).To(BeTrue())
			}
		})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	out, err := controller.DropForeignData(pod)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(out).To(BeIdenticalTo(pod), "other kinds as they are")
}
