package workload

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// OwnerReference makes the cluster the controller of an object, so that the garbage
// collector removes it with the cluster and the controller is told of its changes.
func OwnerReference(c *baov1.OpenBaoCluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         baov1.GroupVersion.String(),
		Kind:               "OpenBaoCluster",
		Name:               c.Name,
		UID:                c.UID,
		Controller:         ptrTo(true),
		BlockOwnerDeletion: ptrTo(true),
	}
}

func objectMeta(c *baov1.OpenBaoCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Namespace,
		Labels:          CommonLabels(c),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(c)},
	}
}

// ServiceAccounts returns the member and executor service accounts. Neither mounts
// the legacy API token: members get a projected token, executors an audience-bound one.
func ServiceAccounts(c *baov1.OpenBaoCluster) []*corev1.ServiceAccount {
	n := NamesFor(c)
	mk := func(name, component string) *corev1.ServiceAccount {
		sa := &corev1.ServiceAccount{
			TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:                   objectMeta(c, name),
			AutomountServiceAccountToken: ptrTo(false),
		}
		sa.Labels[LabelComponent] = component
		return sa
	}
	return []*corev1.ServiceAccount{mk(n.ServiceAccount(), "server"), mk(n.ExecutorServiceAccount(), "executor")}
}

// MaxMembers is the largest spec.replicas the API admits.
const MaxMembers = 9

// ServiceRegistrationRBAC lets members read and label the cluster's own member pods,
// which is what OpenBao's Kubernetes service registration does (openbao-active,
// openbao-sealed, ...): get and patch (it sends a JSON patch of its labels, never an
// update), and only on the pods the cluster's members have or may have
// (MemberPodNames), never on another pod of the namespace, whose image a patch could
// change.
func ServiceRegistrationRBAC(c *baov1.OpenBaoCluster) (*rbacv1.Role, *rbacv1.RoleBinding) {
	n := NamesFor(c)
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: objectMeta(c, n.ServiceRegistrationRole()),
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"pods"},
			ResourceNames: MemberPodNames(c),
			Verbs:         []string{"get", "patch"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: objectMeta(c, n.ServiceRegistrationRole()),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: n.ServiceAccount(), Namespace: c.Namespace}},
	}
	return role, binding
}

// ExecutorRBAC lets the executor's service account read its cluster's executor
// mailbox (get, list and watch, only that ConfigMap: a list or watch must pin its name
// with a field selector), answer in it (patch) and read its cluster (list pinned to
// its name, for the step its status persists), and nothing else of the Kubernetes
// API: what it asks of OpenBao it does with its own projected token.
func ExecutorRBAC(c *baov1.OpenBaoCluster) (*rbacv1.Role, *rbacv1.RoleBinding) {
	n := NamesFor(c)
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: objectMeta(c, n.ExecutorMailbox()),
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"configmaps"},
			ResourceNames: []string{n.ExecutorMailbox()},
			Verbs:         []string{"get", "list", "watch", "patch"},
		}, {
			// The status says which step the executor may run (executorjob.Authorize).
			// list (with a field selector on the name, which is what lets resourceNames
			// authorize it), not get: the operator reads clusters from its cache and
			// holds list and watch only, and may grant only what it holds.
			APIGroups:     []string{baov1.GroupVersion.Group},
			Resources:     []string{"openbaoclusters"},
			ResourceNames: []string{c.Name},
			Verbs:         []string{"list"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: objectMeta(c, n.ExecutorMailbox()),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: n.ExecutorServiceAccount(), Namespace: c.Namespace}},
	}
	return role, binding
}

// ExecutorMailbox is the executor mailbox ConfigMap as the workload reconciler
// creates it: empty. The upgrade manager adds requests to it and the executor its
// answers, each under keys of their own (merge patches), which the workload
// reconciler's apply leaves alone.
func ExecutorMailbox(c *baov1.OpenBaoCluster) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(c, NamesFor(c).ExecutorMailbox()),
	}
}

// ExecutorKeys is the Secret of the operations' mailbox keys as the workload
// reconciler creates it: empty. The upgrade manager adds an operation's key (under its
// ID) before its first request and drops the keys of operations that ended, with merge
// patches that this apply leaves alone.
func ExecutorKeys(c *baov1.OpenBaoCluster) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(c, NamesFor(c).ExecutorKeys()),
		Type:       corev1.SecretTypeOpaque,
	}
}

// MemberPodNames are the names every member pod of the cluster has or may have: the
// ordinals up to MaxMembers (a scaling needs no new rule) of the serving StatefulSet,
// of blue and green during a blue-green upgrade, and of the green StatefulSet a
// planned blue-green upgrade will create (named after its ID, persisted before green
// exists, so the rule is there before green's members start; OpenBao retries a
// refused label patch every 5 s meanwhile). Sorted.
func MemberPodNames(c *baov1.OpenBaoCluster) []string {
	sets := []string{c.ServingStatefulSet()}
	if bg := c.Status.BlueGreen; bg != nil {
		sets = append(sets, bg.Blue.StatefulSet, bg.Green.StatefulSet)
	}
	if up := c.Status.Upgrade; up != nil && up.Strategy == baov1.BlueGreenStrategy && up.ID != "" {
		sets = append(sets, NamesFor(c).GreenStatefulSet(up.ID))
	}
	var out []string
	for _, s := range sets {
		if s == "" {
			continue
		}
		for i := range MaxMembers {
			out = append(out, fmt.Sprintf("%s-%d", s, i))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ConfigMap holds config.hcl and initialize.hcl.
// initialize is what its initialize.hcl holds: InitializeDisabled, except for a
// StatefulSet created before the init Secret (UsesConfigMapInit) that has not
// initialized yet.
// It carries the audience of the cluster's JWT roles (AnnotationJWTAudience), written
// with the initialization that names it, so that the audience is known even when the
// status write of the pass that rendered it failed.
func ConfigMap(c *baov1.OpenBaoCluster, config, initialize, audience string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(c, NamesFor(c).ConfigMap()),
		Data:       map[string]string{ConfigKey: config, InitializeKey: initialize},
	}
	cm.Annotations = map[string]string{AnnotationJWTAudience: audience}
	return cm
}

func servicePorts() []corev1.ServicePort {
	return []corev1.ServicePort{
		{Name: "https", Port: APIPort, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP},
		{Name: "cluster", Port: ClusterPort, TargetPort: intstr.FromString("cluster"), Protocol: corev1.ProtocolTCP},
	}
}

// Services returns the headless Service (stable member DNS names, including members
// that are not Ready, which Raft needs to form), the client Service (Ready members)
// and the active Service (the member OpenBao labelled active).
func Services(c *baov1.OpenBaoCluster) []*corev1.Service {
	n := NamesFor(c)
	headless := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(c, n.HeadlessService()),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 MemberLabels(c),
			Ports:                    servicePorts(),
		},
	}
	client := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(c, n.ClientService()),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: SelectorLabels(c),
			Ports:    servicePorts()[:1],
		},
	}
	// The active member, of whichever StatefulSet: during a blue-green upgrade
	// leadership moves to green before the client Service does.
	activeSel := MemberLabels(c)
	activeSel[LabelActive] = "true"
	active := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(c, n.ActiveService()),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: activeSel,
			Ports:    servicePorts()[:1],
		},
	}
	return []*corev1.Service{headless, client, active}
}

// PodDisruptionBudget allows one voluntary disruption at a time, which keeps quorum for
// 3 or more members. A single member is never evicted voluntarily: its loss is an outage.
func PodDisruptionBudget(c *baov1.OpenBaoCluster) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: objectMeta(c, NamesFor(c).PodDisruptionBudget()),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: MemberLabels(c)},
		},
	}
	if c.GetReplicas() == 1 {
		one := intstr.FromInt32(1)
		pdb.Spec.MinAvailable = &one
	} else {
		one := intstr.FromInt32(1)
		pdb.Spec.MaxUnavailable = &one
	}
	return pdb
}

// InitSecret holds initialize.hcl: the rendered initialization until the cluster
// initialized, InitializeDisabled afterwards.
func InitSecret(c *baov1.OpenBaoCluster, initialize string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(c, NamesFor(c).InitSecret()),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{InitializeKey: []byte(initialize)},
	}
}
