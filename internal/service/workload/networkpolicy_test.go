package workload

import (
	"testing"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// admits is what a network plugin enforcing np does with a connection to one of
// the members on port from a pod with podLabels in namespace ns (whose labels are
// the API server's kubernetes.io/metadata.name only), as the NetworkPolicy API
// defines it: a peer with a pod selector alone means pods of np's namespace; one with
// a namespace selector, pods of the matching namespaces.
func admits(t *testing.T, np *networkingv1.NetworkPolicy, ns string, podLabels map[string]string, port int32) bool {
	t.Helper()
	matches := func(sel *metav1.LabelSelector, l map[string]string) bool {
		if sel == nil {
			return true
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatalf("selector %v: %v", sel, err)
		}
		return s.Matches(labels.Set(l))
	}
	for _, rule := range np.Spec.Ingress {
		portOK := false
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.IntVal == port {
				portOK = true
			}
		}
		if !portOK {
			continue
		}
		for _, peer := range rule.From {
			if peer.IPBlock != nil {
				continue
			}
			if peer.NamespaceSelector == nil && ns != np.Namespace {
				continue
			}
			if peer.NamespaceSelector != nil && !matches(peer.NamespaceSelector, map[string]string{namespaceNameLabel: ns}) {
				continue
			}
			if matches(peer.PodSelector, podLabels) {
				return true
			}
		}
	}
	return false
}

func TestNetworkPolicy(t *testing.T) {
	c := newCluster(func(c *baov1.OpenBaoCluster) {
		c.Spec.NetworkPolicy.Enabled = true
		c.Spec.NetworkPolicy.Clients = []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: "monitoring"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prometheus"}},
		}}
	})
	np := NetworkPolicy(c, "baokeeper-system")
	member := MemberLabels(c)
	green := SetSelectorLabels(c, "bao-green")
	executor := map[string]string{LabelName: "baokeeper-executor", LabelCluster: c.Name, LabelComponent: "executor"}
	operator := map[string]string{LabelName: OperatorName}
	tests := []struct {
		name   string
		ns     string
		labels map[string]string
		port   int32
		want   bool
	}{
		{"a member, to the cluster port", c.Namespace, member, ClusterPort, true},
		{"a green member, to the cluster port", c.Namespace, green, ClusterPort, true},
		{"a member, to the API port", c.Namespace, member, APIPort, true},
		{"an executor or hook Job, to the API port", c.Namespace, executor, APIPort, true},
		{"an executor, to the cluster port", c.Namespace, executor, ClusterPort, false},
		{"a labelled client, to the API port", c.Namespace, map[string]string{LabelClientOf: c.Name}, APIPort, true},
		{"a labelled client, to the cluster port", c.Namespace, map[string]string{LabelClientOf: c.Name}, ClusterPort, false},
		{"a client of another cluster", c.Namespace, map[string]string{LabelClientOf: "other"}, APIPort, false},
		{"a pod labelled as a client in another namespace", "elsewhere", map[string]string{LabelClientOf: c.Name}, APIPort, false},
		{"an unlabelled pod of the namespace", c.Namespace, map[string]string{"app": "web"}, APIPort, false},
		{"a member of another cluster of the namespace", c.Namespace, map[string]string{LabelName: "openbao", LabelCluster: "other"}, ClusterPort, false},
		{"the operator, to the API port", "baokeeper-system", operator, APIPort, true},
		{"the operator, to the cluster port", "baokeeper-system", operator, ClusterPort, false},
		{"another pod of the operator's namespace", "baokeeper-system", map[string]string{"app": "web"}, APIPort, false},
		{"a pod named like the operator in another namespace", "elsewhere", operator, APIPort, false},
		{"a peer of spec.networkPolicy.clients", "monitoring", map[string]string{"app": "prometheus"}, APIPort, true},
		{"another pod of that peer's namespace", "monitoring", map[string]string{"app": "grafana"}, APIPort, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(admits(t, np, tt.ns, tt.labels, tt.port)).To(Equal(tt.want))
		})
	}

	g := NewWithT(t)
	g.Expect(np.Name).To(Equal(NamesFor(c).NetworkPolicy()))
	g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(member), "every member of the cluster, blue and green")
	g.Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}), "egress is not restricted")
	g.Expect(np.OwnerReferences).To(HaveLen(1))
	g.Expect(np.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedByValue), "the cache sees it")

	c.Spec.NetworkPolicy.Clients[0].PodSelector.MatchLabels["app"] = "changed"
	g.Expect(np.Spec.Ingress[1].From[len(np.Spec.Ingress[1].From)-1].PodSelector.MatchLabels).To(HaveKeyWithValue("app", "prometheus"),
		"the policy holds a copy of the spec's peers")
}
