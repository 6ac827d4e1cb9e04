package workload

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// LabelClientOf on a pod of the cluster's namespace, with the cluster's name as its
// value, admits the pod to the members' API port under spec.networkPolicy.
const LabelClientOf = "baokeeper.dev/client-of"

// namespaceNameLabel is the label the API server puts on every namespace, with its
// name as the value.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// OperatorName is the LabelName value of the operator's own pods, in the chart and
// in config/manager alike.
const OperatorName = "baokeeper"

// NetworkPolicy is the members' NetworkPolicy of spec.networkPolicy (docs/security.md,
// "The network"): the cluster port admits only the cluster's members (Raft and request
// forwarding, blue and green alike); the API port admits the cluster's own pods
// (members, executor and hook Jobs: every pod baokeeper labels with the cluster), the
// pods of operatorNamespace (the controller reads health and membership), the pods of
// this namespace labelled LabelClientOf=<cluster>, and spec.networkPolicy.clients.
// Egress is not restricted: members reach the seal, the API server and each other
// through rules of the destination.
func NetworkPolicy(c *baov1.OpenBaoCluster, operatorNamespace string) *networkingv1.NetworkPolicy {
	tcp := func(port int32) []networkingv1.NetworkPolicyPort {
		p := intstr.FromInt32(port)
		proto := corev1.ProtocolTCP
		return []networkingv1.NetworkPolicyPort{{Protocol: &proto, Port: &p}}
	}
	members := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: MemberLabels(c)}}
	api := []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelCluster: c.Name}}},
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelClientOf: c.Name}}},
	}
	if operatorNamespace != "" {
		// The operator's pods (both installers label them so), in its namespace only.
		api = append(api, networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: operatorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{LabelName: OperatorName}},
		})
	}
	for i := range c.Spec.NetworkPolicy.Clients {
		api = append(api, *c.Spec.NetworkPolicy.Clients[i].DeepCopy())
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: objectMeta(c, NamesFor(c).NetworkPolicy()),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: MemberLabels(c)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: tcp(ClusterPort), From: []networkingv1.NetworkPolicyPeer{members}},
				{Ports: tcp(APIPort), From: api},
			},
		},
	}
}
