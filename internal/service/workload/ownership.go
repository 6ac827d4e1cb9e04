package workload

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Kinds of the objects the workload reconciler creates for a cluster.
const (
	KindServiceAccount      = "ServiceAccount"
	KindRole                = "Role"
	KindRoleBinding         = "RoleBinding"
	KindConfigMap           = "ConfigMap"
	KindSecret              = "Secret"
	KindService             = "Service"
	KindPodDisruptionBudget = "PodDisruptionBudget"
	KindStatefulSet         = "StatefulSet"
	KindNetworkPolicy       = "NetworkPolicy"
)

// ObjectRef names one object of a cluster's namespace.
type ObjectRef struct {
	Kind string
	Name string
}

func (r ObjectRef) String() string { return r.Kind + " " + r.Name }

// GroupVersionKind is the API type of the object's kind.
func (r ObjectRef) GroupVersionKind() schema.GroupVersionKind {
	switch r.Kind {
	case KindRole, KindRoleBinding:
		return rbacv1.SchemeGroupVersion.WithKind(r.Kind)
	case KindPodDisruptionBudget:
		return policyv1.SchemeGroupVersion.WithKind(r.Kind)
	case KindStatefulSet:
		return appsv1.SchemeGroupVersion.WithKind(r.Kind)
	case KindNetworkPolicy:
		return networkingv1.SchemeGroupVersion.WithKind(r.Kind)
	}
	return corev1.SchemeGroupVersion.WithKind(r.Kind)
}

// CreatedObjects are the objects the workload reconciler creates or updates for the
// cluster, by kind and name. Every one of them must be absent or already the
// cluster's before the reconciler writes anything (Conflicts).
func CreatedObjects(c *baov1.OpenBaoCluster) []ObjectRef {
	n := NamesFor(c)
	refs := []ObjectRef{
		{KindServiceAccount, n.ServiceAccount()},
		{KindServiceAccount, n.ExecutorServiceAccount()},
		{KindRole, n.ServiceRegistrationRole()},
		{KindRoleBinding, n.ServiceRegistrationRole()},
		{KindRole, n.ExecutorMailbox()},
		{KindRoleBinding, n.ExecutorMailbox()},
		{KindConfigMap, n.ExecutorMailbox()},
		{KindSecret, n.ExecutorKeys()},
		{KindConfigMap, n.ConfigMap()},
		{KindSecret, n.InitSecret()},
		{KindService, n.ClientService()},
		{KindService, n.HeadlessService()},
		{KindService, n.ActiveService()},
		{KindPodDisruptionBudget, n.PodDisruptionBudget()},
		{KindStatefulSet, n.StatefulSet()},
	}
	if c.Spec.NetworkPolicy.Enabled {
		refs = append(refs, ObjectRef{KindNetworkPolicy, n.NetworkPolicy()})
	}
	if c.GetSealType() == baov1.StaticSeal {
		refs = append(refs, ObjectRef{KindSecret, n.SealSecret()})
	}
	if c.Spec.TLS.SecretName == "" {
		refs = append(refs, ObjectRef{KindSecret, n.CASecret()}, ObjectRef{KindSecret, n.TLSSecret()})
	}
	return refs
}

// ExistingObject is what a read found under one of CreatedObjects' names.
type ExistingObject struct {
	Ref             ObjectRef
	Labels          map[string]string
	Annotations     map[string]string
	OwnerReferences []metav1.OwnerReference
}

// Conflict is an existing object the cluster must not take over.
type Conflict struct {
	Ref ObjectRef
	// Owner is the controller of the object ("Deployment web"), empty when it has none.
	Owner string
}

// Conflicts returns the existing objects that are not the cluster's, in the order of
// existing. An object is the cluster's when the cluster is its controller (same UID),
// or when it has no controller and carries the labels baokeeper put on it for a
// cluster of this name: the seal key Secret has no owner on purpose, and objects
// orphaned by deleting an earlier cluster of the same name (kubectl delete
// --cascade=orphan) are adopted. Anything else (another application's object, one
// whose controller is another OpenBaoCluster, one a previous cluster of this name
// still owns while the garbage collector deletes it) is a conflict: writing it would
// overwrite the other's data or make the cluster its owner.
func Conflicts(c *baov1.OpenBaoCluster, existing []ExistingObject) []Conflict {
	var out []Conflict
	for _, e := range existing {
		ctl := controllerOf(e.OwnerReferences)
		switch {
		case ctl != nil && ctl.UID == c.UID && c.UID != "":
			continue
		case ctl == nil && e.Labels[LabelManagedBy] == ManagedByValue && e.Labels[LabelCluster] == c.Name:
			continue
		}
		conflict := Conflict{Ref: e.Ref}
		if ctl != nil {
			conflict.Owner = ctl.Kind + " " + ctl.Name
		}
		out = append(out, conflict)
	}
	return out
}

func controllerOf(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
	}
	return nil
}

// ConflictMessage says which objects are in the way and how to resolve it; recheck
// is how soon baokeeper looks again.
func ConflictMessage(c *baov1.OpenBaoCluster, conflicts []Conflict, recheck time.Duration) string {
	items := make([]string, 0, len(conflicts))
	for _, cf := range conflicts {
		switch {
		case cf.Owner == "OpenBaoCluster "+c.Name:
			items = append(items, fmt.Sprintf("%s (still owned by an earlier OpenBaoCluster %s that is being deleted)", cf.Ref, c.Name))
		case cf.Owner != "":
			items = append(items, fmt.Sprintf("%s (owned by %s)", cf.Ref, cf.Owner))
		default:
			items = append(items, fmt.Sprintf("%s (not created by baokeeper)", cf.Ref))
		}
	}
	slices.Sort(items)
	return fmt.Sprintf("Name conflict: this cluster would take over objects it did not create in namespace %s: %s. "+
		"Nothing was changed. Create the OpenBaoCluster under another name, or delete or rename those objects if nothing needs them; "+
		"baokeeper checks again every %s",
		c.Namespace, strings.Join(items, ", "), recheck)
}

// NamespaceProblem says why baokeeper refuses to run a cluster in namespace ns, or
// "" when it may. The operator's own namespace holds its ServiceAccount, its
// leader-election Lease and its configuration: a cluster there would let its author
// run an image of their choice beside them. kube-system belongs to the platform.
func NamespaceProblem(ns, operatorNamespace string) string {
	switch {
	case ns == "kube-system":
		return "baokeeper does not run OpenBao clusters in kube-system, which belongs to the Kubernetes platform: create the OpenBaoCluster in a namespace of its own"
	case operatorNamespace != "" && ns == operatorNamespace:
		return fmt.Sprintf("baokeeper does not run OpenBao clusters in its own namespace %s, where a cluster's pods would run beside the operator's identity and configuration: create the OpenBaoCluster in a namespace of its own", ns)
	}
	return ""
}
