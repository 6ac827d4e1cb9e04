package workload

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// ownedObjects returns every object the cluster owns, built by the package.
func ownedObjects(c *baov1.OpenBaoCluster) []metav1.Object {
	var objs []metav1.Object
	for _, sa := range ServiceAccounts(c) {
		objs = append(objs, sa)
	}
	role, binding := ServiceRegistrationRBAC(c)
	objs = append(objs, role, binding, ConfigMap(c, "config", "init", ClusterAudience(c)))
	for _, svc := range Services(c) {
		objs = append(objs, svc)
	}
	return append(objs, PodDisruptionBudget(c))
}

func TestOwnedObjectsHaveControllerReferenceAndLabels(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	objs := ownedObjects(c)

	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	g.Expect(names).To(Equal([]string{
		"bao", "bao-executor", "bao-service-registration", "bao-service-registration", "bao-config",
		"bao-internal", "bao", "bao-active", "bao",
	}))

	want := metav1.OwnerReference{
		APIVersion:         "openbao.baokeeper.dev/v1alpha1",
		Kind:               "OpenBaoCluster",
		Name:               "bao",
		UID:                testUID,
		Controller:         ptrTo(true),
		BlockOwnerDeletion: ptrTo(true),
	}
	g.Expect(baov1.GroupVersion.String()).To(Equal(want.APIVersion))
	for _, o := range objs {
		g.Expect(o.GetOwnerReferences()).To(Equal([]metav1.OwnerReference{want}),
			"%s must be garbage-collected with the cluster and reported to its controller", o.GetName())
		g.Expect(o.GetLabels()).To(HaveKeyWithValue(LabelManagedBy, ManagedByValue),
			"%s: the controller's cache only sees managed-by objects", o.GetName())
		g.Expect(o.GetLabels()).To(HaveKeyWithValue(LabelCluster, "bao"), o.GetName())
		g.Expect(o.GetNamespace()).To(Equal("ns"), o.GetName())
	}
}

func TestOwnedObjectsDoNotShareLabelMaps(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	sas := ServiceAccounts(c)
	g.Expect(sas[0].Labels).To(HaveKeyWithValue(LabelComponent, "server"))
	g.Expect(sas[1].Labels).To(HaveKeyWithValue(LabelComponent, "executor"),
		"setting one account's component must not change the other's (shared map)")

	svcs := Services(c)
	g.Expect(svcs[0].Spec.Selector).NotTo(HaveKey(LabelActive), "the active selector must not leak into the headless Service")
	g.Expect(svcs[1].Spec.Selector).NotTo(HaveKey(LabelActive), "the active selector must not leak into the client Service")
	g.Expect(SelectorLabels(c)).NotTo(HaveKey(LabelActive))
	g.Expect(CommonLabels(c)).NotTo(HaveKey(LabelComponent))
}

func TestServiceAccounts(t *testing.T) {
	g := NewWithT(t)
	sas := ServiceAccounts(newCluster())
	g.Expect(sas).To(HaveLen(2))
	for _, sa := range sas {
		g.Expect(sa.AutomountServiceAccountToken).To(HaveValue(BeFalse()),
			"%s must not mount the legacy token; pods get projected, audience-bound tokens", sa.Name)
	}
}

func TestServiceRegistrationRBAC(t *testing.T) {
	g := NewWithT(t)
	role, binding := ServiceRegistrationRBAC(newCluster())
	g.Expect(role.Rules).To(HaveLen(1))
	g.Expect(role.Rules[0].APIGroups).To(Equal([]string{""}))
	g.Expect(role.Rules[0].Resources).To(Equal([]string{"pods"}), "members may touch pods only")
	g.Expect(role.Rules[0].Verbs).To(ConsistOf("get", "patch"), "service registration reads its pod and sends a JSON patch of its labels")
	g.Expect(role.Rules[0].ResourceNames).To(HaveLen(MaxMembers), "only the cluster's member pods, never another pod of the namespace")
	g.Expect(role.Rules[0].ResourceNames).To(ContainElements("bao-0", "bao-8"))
	g.Expect(role.Rules[0].Verbs).NotTo(ContainElement("delete"), "a member must not be able to delete its peers")
	g.Expect(binding.RoleRef.Name).To(Equal(role.Name))
	g.Expect(binding.RoleRef.Kind).To(Equal("Role"))
	g.Expect(binding.Subjects).To(ConsistOf(HaveField("Name", "bao")))
	g.Expect(binding.Subjects[0].Namespace).To(Equal("ns"))
	g.Expect(binding.Subjects[0].Kind).To(Equal("ServiceAccount"))
}

func TestExecutorRBAC(t *testing.T) {
	g := NewWithT(t)
	role, binding := ExecutorRBAC(newCluster())
	g.Expect(role.Rules).To(HaveLen(2), "the executor reads and answers its mailbox and reads its cluster, nothing else")
	g.Expect(role.Rules[0].APIGroups).To(Equal([]string{""}))
	g.Expect(role.Rules[0].Resources).To(Equal([]string{"configmaps"}))
	g.Expect(role.Rules[0].ResourceNames).To(Equal([]string{"bao-executor"}), "only the cluster's mailbox, never another ConfigMap of the namespace")
	g.Expect(role.Rules[0].Verbs).To(ConsistOf("get", "list", "watch", "patch"), "no create, update or delete")
	g.Expect(role.Rules[1].APIGroups).To(Equal([]string{"openbao.baokeeper.dev"}))
	g.Expect(role.Rules[1].Resources).To(Equal([]string{"openbaoclusters"}), "its status says which step may run; not the status subresource")
	g.Expect(role.Rules[1].ResourceNames).To(Equal([]string{"bao"}), "only its own cluster")
	g.Expect(role.Rules[1].Verbs).To(Equal([]string{"list"}), "list pinned to the name: the operator holds list, not get, and grants only what it holds")
	g.Expect(ExecutorKeys(newCluster()).Data).To(BeEmpty(), "the workload reconciler owns no key: the upgrade manager adds each operation's")
	g.Expect(binding.RoleRef).To(HaveField("Name", role.Name))
	g.Expect(binding.Subjects).To(ConsistOf(HaveField("Name", "bao-executor")))
	g.Expect(ExecutorMailbox(newCluster()).Data).To(BeEmpty(), "the workload reconciler owns no key of the mailbox")
}

func TestMemberPodNames(t *testing.T) {
	ordinals := func(sts string) []string {
		var out []string
		for i := range MaxMembers {
			out = append(out, fmt.Sprintf("%s-%d", sts, i))
		}
		return out
	}
	tests := []struct {
		reason string
		change func(c *baov1.OpenBaoCluster)
		want   []string
	}{
		{reason: "at rest: the serving StatefulSet's ordinals, up to the API's largest cluster (a scaling needs no new rule)",
			want: ordinals("bao")},
		{reason: "a blue-green upgrade planned: green's pods are named before green exists (from the persisted ID)",
			change: func(c *baov1.OpenBaoCluster) {
				c.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.BlueGreenStrategy, ID: "1a2b3c4d"}
			}, want: append(ordinals("bao"), ordinals("bao-1a2b3c4d")...)},
		{reason: "a rolling upgrade creates no StatefulSet",
			change: func(c *baov1.OpenBaoCluster) {
				c.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, ID: "1a2b3c4d"}
			}, want: ordinals("bao")},
		{reason: "after the cut-over green serves and blue is still there until it is removed",
			change: func(c *baov1.OpenBaoCluster) {
				c.Status.StatefulSet = "bao-1a2b3c4d"
				c.Status.BlueGreen = &baov1.BlueGreenStatus{Blue: baov1.MemberSet{StatefulSet: "bao"}, Green: baov1.MemberSet{StatefulSet: "bao-1a2b3c4d"}}
			}, want: append(ordinals("bao"), ordinals("bao-1a2b3c4d")...)},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			c := newCluster()
			if tc.change != nil {
				tc.change(c)
			}
			want := slices.Clone(tc.want)
			slices.Sort(want)
			NewWithT(t).Expect(MemberPodNames(c)).To(Equal(want))
		})
	}
}

func TestConfigMap(t *testing.T) {
	g := NewWithT(t)
	cm := ConfigMap(newCluster(), "cfg-text", "init-text", "openbao.baokeeper.dev/ns/bao")
	g.Expect(cm.Name).To(Equal("bao-config"))
	g.Expect(cm.Data).To(Equal(map[string]string{"config.hcl": "cfg-text", "initialize.hcl": "init-text"}))
	g.Expect(cm.Annotations).To(HaveKeyWithValue("baokeeper.dev/jwt-audience", "openbao.baokeeper.dev/ns/bao"),
		"the audience travels with the initialization that names it")
}

func TestServices(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	svcs := Services(c)
	g.Expect(svcs).To(HaveLen(3))
	headless, client, active := svcs[0], svcs[1], svcs[2]

	g.Expect(headless.Name).To(Equal("bao-internal"))
	g.Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone), "members need per-pod DNS names")
	g.Expect(headless.Spec.PublishNotReadyAddresses).To(BeTrue(),
		"unsealed-but-not-ready members must resolve, or Raft can never form")
	g.Expect(headless.Spec.Selector).To(Equal(MemberLabels(c)),
		"the headless Service resolves the members of every StatefulSet of the cluster (blue and green)")
	g.Expect(headless.Spec.Ports).To(ConsistOf(
		And(HaveField("Port", int32(APIPort)), HaveField("TargetPort", intstr.FromString("https"))),
		And(HaveField("Port", int32(ClusterPort)), HaveField("TargetPort", intstr.FromString("cluster"))),
	), "the headless Service carries Raft traffic on 8201 too")

	g.Expect(client.Name).To(Equal("bao"))
	g.Expect(client.Spec.ClusterIP).To(BeEmpty())
	g.Expect(client.Spec.PublishNotReadyAddresses).To(BeFalse(), "clients must only reach Ready members")
	g.Expect(client.Spec.Selector).To(Equal(SelectorLabels(c)))
	g.Expect(client.Spec.Ports).To(ConsistOf(HaveField("Port", int32(APIPort))))

	g.Expect(active.Name).To(Equal("bao-active"))
	g.Expect(active.Spec.Selector).To(HaveKeyWithValue("openbao-active", "true"),
		"the active Service must select only the member OpenBao labelled active")
	for k, v := range MemberLabels(c) {
		g.Expect(active.Spec.Selector).To(HaveKeyWithValue(k, v), "the active Service must stay within this cluster")
	}
	g.Expect(active.Spec.Ports).To(ConsistOf(HaveField("Port", int32(APIPort))))
}

func TestServicesTargetContainerPorts(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	sts, err := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.4.0", TLSSecretName: "bao-tls"})
	g.Expect(err).NotTo(HaveOccurred())
	ports := map[string]int32{}
	for _, p := range sts.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, svc := range Services(c) {
		for _, p := range svc.Spec.Ports {
			g.Expect(ports).To(HaveKeyWithValue(p.TargetPort.StrVal, p.Port),
				"Service %s port %s must target a named container port with the same number", svc.Name, p.Name)
		}
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	cases := []struct {
		name               string
		reason             string
		replicas           int32
		wantMinAvailable   *intstr.IntOrString
		wantMaxUnavailable *intstr.IntOrString
	}{
		{
			name:             "single member",
			reason:           "the only member must never be evicted voluntarily; its loss is an outage",
			replicas:         1,
			wantMinAvailable: ptrTo(intstr.FromInt32(1)),
		},
		{
			name:               "three members",
			reason:             "losing one of three keeps a quorum of two",
			replicas:           3,
			wantMaxUnavailable: ptrTo(intstr.FromInt32(1)),
		},
		{
			name:               "five members",
			reason:             "one at a time also for five: drains never take two voters at once",
			replicas:           5,
			wantMaxUnavailable: ptrTo(intstr.FromInt32(1)),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster(withReplicas(tc.replicas))
			pdb := PodDisruptionBudget(c)
			g.Expect(pdb.Spec.MinAvailable).To(Equal(tc.wantMinAvailable), tc.reason)
			g.Expect(pdb.Spec.MaxUnavailable).To(Equal(tc.wantMaxUnavailable), tc.reason)
			g.Expect(pdb.Spec.Selector).To(Equal(&metav1.LabelSelector{MatchLabels: MemberLabels(c)}))
			g.Expect(pdb.Name).To(Equal("bao"))
		})
	}
}

// TestServicesFollowTheServingStatefulSet: the client Service selects only the serving
// StatefulSet's pods (blue until a blue-green cutover, green after it), while the
// headless and active Services and the PodDisruptionBudget cover both.
func TestServicesFollowTheServingStatefulSet(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	blue, _ := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.4.0", TLSSecretName: "bao-tls"})
	green, err := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.4.1", TLSSecretName: "bao-tls",
		Name: NamesFor(c).GreenStatefulSet("1a2b3c4d")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(green.Name).To(Equal("bao-1a2b3c4d"))
	g.Expect(green.Spec.PodManagementPolicy).To(Equal(appsv1.OrderedReadyPodManagement),
		"green's members join one at a time: OpenBao loses one of two non-voters that join at once from its permanent non-voter list")
	g.Expect(green.Spec.Template.Spec.Containers[0].Image).To(Equal("openbao/openbao:2.4.1"))
	g.Expect(labels.SelectorFromSet(blue.Spec.Selector.MatchLabels).Matches(labels.Set(green.Spec.Template.Labels))).To(BeFalse(),
		"blue's StatefulSet must never adopt green's pods")
	g.Expect(labels.SelectorFromSet(green.Spec.Selector.MatchLabels).Matches(labels.Set(blue.Spec.Template.Labels))).To(BeFalse(),
		"green's StatefulSet must never adopt blue's pods")

	client := func() map[string]string { return Services(c)[1].Spec.Selector }
	g.Expect(labels.SelectorFromSet(client()).Matches(labels.Set(blue.Spec.Template.Labels))).To(BeTrue())
	g.Expect(labels.SelectorFromSet(client()).Matches(labels.Set(green.Spec.Template.Labels))).To(BeFalse(),
		"clients reach green only after the cutover")
	c.Status.StatefulSet = green.Name
	g.Expect(labels.SelectorFromSet(client()).Matches(labels.Set(green.Spec.Template.Labels))).To(BeTrue())
	g.Expect(labels.SelectorFromSet(client()).Matches(labels.Set(blue.Spec.Template.Labels))).To(BeFalse())
	for _, sel := range []map[string]string{Services(c)[0].Spec.Selector, PodDisruptionBudget(c).Spec.Selector.MatchLabels} {
		g.Expect(labels.SelectorFromSet(sel).Matches(labels.Set(blue.Spec.Template.Labels))).To(BeTrue())
		g.Expect(labels.SelectorFromSet(sel).Matches(labels.Set(green.Spec.Template.Labels))).To(BeTrue())
	}
	g.Expect(NamesFor(c).Member(2)).To(Equal("bao-1a2b3c4d-2"), "members are named after the serving StatefulSet")
	g.Expect(NamesFor(c).ClientService()).To(Equal("bao"), "the client Service keeps the cluster's name")
}
