package workload

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestConflicts(t *testing.T) {
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "apps", UID: types.UID("u-1")}}
	yes := true
	ctl := func(kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}}
	}
	ours := map[string]string{LabelManagedBy: ManagedByValue, LabelCluster: "victim"}
	secret := ObjectRef{KindSecret, "victim-tls"}

	for _, tc := range []struct {
		name     string
		existing ExistingObject
		want     string // "" = not a conflict; otherwise a part of the message
	}{
		{"controlled by this cluster", ExistingObject{Ref: secret, Labels: ours, OwnerReferences: ctl("OpenBaoCluster", "victim", "u-1")}, ""},
		{"controlled by this cluster without labels (a user removed them)", ExistingObject{Ref: secret, OwnerReferences: ctl("OpenBaoCluster", "victim", "u-1")}, ""},
		{"the seal key: no owner, our labels", ExistingObject{Ref: ObjectRef{KindSecret, "victim-seal"}, Labels: ours}, ""},
		{"another application's Secret", ExistingObject{Ref: secret, Labels: map[string]string{"app": "victim"}}, "Secret victim-tls (not created by baokeeper)"},
		{"owned by a Deployment", ExistingObject{Ref: ObjectRef{KindService, "victim"}, OwnerReferences: ctl("Deployment", "web", "d-1")}, "Service victim (owned by Deployment web)"},
		{"our labels but controlled by a Helm-made object", ExistingObject{Ref: secret, Labels: ours, OwnerReferences: ctl("Deployment", "web", "d-1")}, "owned by Deployment web"},
		{"labels of another cluster", ExistingObject{Ref: secret, Labels: map[string]string{LabelManagedBy: ManagedByValue, LabelCluster: "other"}}, "not created by baokeeper"},
		{"controlled by another OpenBaoCluster", ExistingObject{Ref: ObjectRef{KindService, "victim"}, OwnerReferences: ctl("OpenBaoCluster", "vic", "u-2")}, "owned by OpenBaoCluster vic"},
		{"still owned by a deleted cluster of the same name", ExistingObject{Ref: secret, Labels: ours, OwnerReferences: ctl("OpenBaoCluster", "victim", "u-0")}, "earlier OpenBaoCluster victim that is being deleted"},
		{"a non-controller owner reference only, no labels", ExistingObject{Ref: secret, OwnerReferences: []metav1.OwnerReference{{Kind: "OpenBaoCluster", Name: "victim", UID: "u-1"}}}, "not created by baokeeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Conflicts(c, []ExistingObject{tc.existing})
			if tc.want == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(HaveLen(1))
			msg := ConflictMessage(c, got, 10*time.Second)
			g.Expect(msg).To(ContainSubstring(tc.want))
			g.Expect(msg).To(ContainSubstring("Nothing was changed"))
			g.Expect(msg).To(ContainSubstring("another name"))
			g.Expect(msg).To(HaveSuffix("checks again every 10s"))
		})
	}
}

func TestConflictsWithoutUID(t *testing.T) {
	// An object read before the cluster was stored has no UID to match: nothing
	// with an empty UID is taken for the cluster's.
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "apps"}}
	yes := true
	got := Conflicts(c, []ExistingObject{{Ref: ObjectRef{KindConfigMap, "bao-config"}, OwnerReferences: []metav1.OwnerReference{{Kind: "OpenBaoCluster", Name: "bao", Controller: &yes}}}})
	NewWithT(t).Expect(got).To(HaveLen(1))
}

func TestCreatedObjects(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "apps"}}
	names := func(c *baov1.OpenBaoCluster) []string {
		var out []string
		for _, r := range CreatedObjects(c) {
			out = append(out, r.String())
		}
		return out
	}
	g.Expect(names(c)).To(ConsistOf(
		"ServiceAccount bao", "ServiceAccount bao-executor", "Role bao-service-registration", "RoleBinding bao-service-registration",
		"Role bao-executor", "RoleBinding bao-executor", "ConfigMap bao-executor", "Secret bao-executor-keys",
		"ConfigMap bao-config", "Secret bao-init", "Service bao", "Service bao-internal", "Service bao-active", "PodDisruptionBudget bao",
		"StatefulSet bao", "Secret bao-seal", "Secret bao-ca", "Secret bao-tls"))

	for _, ref := range CreatedObjects(c) {
		_, err := clientgoscheme.Scheme.New(ref.GroupVersionKind())
		g.Expect(err).NotTo(HaveOccurred(), "%s: the observation builds a typed object of its kind", ref)
	}

	g.Expect(names(c)).NotTo(ContainElement("NetworkPolicy bao"), "no NetworkPolicy unless spec.networkPolicy.enabled")
	c.Spec.NetworkPolicy.Enabled = true
	g.Expect(names(c)).To(ContainElement("NetworkPolicy bao"))
	for _, ref := range CreatedObjects(c) {
		_, err := clientgoscheme.Scheme.New(ref.GroupVersionKind())
		g.Expect(err).NotTo(HaveOccurred(), "%s: the observation builds a typed object of its kind", ref)
	}

	c.Spec.TLS.SecretName = "mine"
	g.Expect(strings.Join(names(c), ",")).NotTo(ContainSubstring("bao-tls"), "a user-provided certificate is the user's: baokeeper creates no TLS Secret")
	g.Expect(names(c)).NotTo(ContainElement("Secret mine"))
}

func TestNamespaceProblem(t *testing.T) {
	g := NewWithT(t)
	g.Expect(NamespaceProblem("apps", "baokeeper-system")).To(BeEmpty())
	g.Expect(NamespaceProblem("baokeeper-system", "baokeeper-system")).To(ContainSubstring("its own namespace baokeeper-system"))
	g.Expect(NamespaceProblem("kube-system", "baokeeper-system")).To(ContainSubstring("kube-system"))
	g.Expect(NamespaceProblem("default", "")).To(BeEmpty())
}
