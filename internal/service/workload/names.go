package workload

import (
	"fmt"
	"strings"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Ports and paths shared by the builders, the config and the probes.
const (
	// APIPort is OpenBao's API and client port.
	APIPort = 8200
	// ClusterPort is OpenBao's Raft and request-forwarding port.
	ClusterPort = 8201

	// ContainerName is the name of the OpenBao container in each member pod.
	ContainerName = "openbao"

	configMountPath = "/openbao/config"
	runMountPath    = "/openbao/run"
	tmpMountPath    = "/openbao/tmp"
	tlsMountPath    = "/openbao/tls"
	sealMountPath   = "/openbao/seal"
	// DataMountPath is where a member's data volume is mounted: OpenBao's Raft
	// storage path (its Raft directory, where a peers.json recovery goes, is raft/
	// under it).
	DataMountPath = "/openbao/data"

	// ConfigKey is the ConfigMap key of the shared server configuration.
	ConfigKey = "config.hcl"
	// InitializeKey is the key of the self-initialization stanzas in the init Secret
	// (and in the ConfigMap of StatefulSets created before it).
	InitializeKey = "initialize.hcl"
	// SealKeyKey is the Secret key holding the static-seal key (64 hex characters).
	SealKeyKey = "key"
	// CACertKey, TLSCertKey and TLSKeyKey are the keys of TLS Secrets.
	CACertKey = "ca.crt"
	// CAKeyKey is the CA private key in the operator's CA Secret.
	CAKeyKey = "ca.key"
	// TLSCertKey is the serving certificate chain.
	TLSCertKey = "tls.crt"
	// TLSKeyKey is the serving private key.
	TLSKeyKey = "tls.key"

	// PodIPPlaceholder is replaced by the pod's IP by the start script.
	PodIPPlaceholder = "__POD_IP__"
)

// Labels baokeeper puts on everything it creates.
const (
	// LabelManagedBy marks objects baokeeper manages; the controller's cache selects on it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "baokeeper"
	// LabelName is the application name.
	LabelName = "app.kubernetes.io/name"
	// LabelInstance is the OpenBaoCluster name.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelComponent distinguishes members from executor Jobs.
	LabelComponent = "app.kubernetes.io/component"
	// LabelCluster names the owning OpenBaoCluster; used to map pods back to it.
	LabelCluster = "baokeeper.dev/cluster"
	// LabelActive is set to "true" on the active member by OpenBao's service registration.
	LabelActive = "openbao-active"
)

// Names returns the object names of one cluster.
type Names struct {
	cluster string
	// members is the StatefulSet whose pods Member and MemberHost name.
	members string
}

// NamesFor returns the names of the cluster's objects; members are those of the
// serving StatefulSet (status.statefulSet, or the cluster's name).
func NamesFor(c *baov1.OpenBaoCluster) Names {
	return Names{cluster: c.Name, members: c.ServingStatefulSet()}
}

// ForStatefulSet returns the same names with members of another StatefulSet of the
// cluster (green's during a blue-green upgrade).
func (n Names) ForStatefulSet(name string) Names { n.members = name; return n }

// StatefulSet is the member StatefulSet: the cluster's name until a blue-green
// upgrade moves the members to <name>-<revision>.
func (n Names) StatefulSet() string { return n.members }

// GreenStatefulSet is the name of the StatefulSet a blue-green upgrade with the
// given revision creates.
func (n Names) GreenStatefulSet(revision string) string { return n.cluster + "-" + revision }

// ClientService balances over Ready members.
func (n Names) ClientService() string { return n.cluster }

// HeadlessService gives each member a stable DNS name, ready or not.
func (n Names) HeadlessService() string { return n.cluster + "-internal" }

// ActiveService selects only the active member.
func (n Names) ActiveService() string { return n.cluster + "-active" }

// ConfigMap holds config.hcl and initialize.hcl.
func (n Names) ConfigMap() string { return n.cluster + "-config" }

// InitSecret holds initialize.hcl: the self-initialization requests, which can carry
// credentials, until the cluster initialized, then the disabled stanza.
func (n Names) InitSecret() string { return n.cluster + "-init" }

// SealSecret holds the static-seal key.
func (n Names) SealSecret() string { return n.cluster + "-seal" }

// CASecret holds the operator-run CA.
func (n Names) CASecret() string { return n.cluster + "-ca" }

// TLSSecret holds the operator-issued serving certificate.
func (n Names) TLSSecret() string { return n.cluster + "-tls" }

// ServiceAccount is the identity of the member pods.
func (n Names) ServiceAccount() string { return n.cluster }

// ExecutorServiceAccount is the identity of executor Jobs.
func (n Names) ExecutorServiceAccount() string { return n.cluster + "-executor" }

// ExecutorMailbox is the ConfigMap through which the operator asks an operation's
// executor for each membership step and the executor answers (package
// executorjob). It is also the name of the Role and RoleBinding that let the
// executor read and answer it, and nothing else.
func (n Names) ExecutorMailbox() string { return n.cluster + "-executor" }

// ExecutorKeys is the Secret of the operations' mailbox keys, one key per operation
// ID, which only the operator reads and each operation's executor mounts its own of
// (executorjob.Trusted says why).
func (n Names) ExecutorKeys() string { return n.cluster + "-executor-keys" }

// ServiceRegistrationRole lets members label their own pods.
func (n Names) ServiceRegistrationRole() string { return n.cluster + "-service-registration" }

// PodDisruptionBudget protects quorum from voluntary disruption.
func (n Names) PodDisruptionBudget() string { return n.cluster }

// NetworkPolicy admits to the members only who needs them (spec.networkPolicy).
func (n Names) NetworkPolicy() string { return n.cluster }

// Member is the pod name of ordinal i.
func (n Names) Member(i int32) string { return fmt.Sprintf("%s-%d", n.members, i) }

// MemberHost is the stable DNS name of ordinal i.
func (n Names) MemberHost(i int32, namespace string) string {
	return fmt.Sprintf("%s.%s.%s.svc", n.Member(i), n.HeadlessService(), namespace)
}

// SelectorLabels select the member pods of the cluster's serving StatefulSet: the
// StatefulSet's own selector, and the client Service's.
func SelectorLabels(c *baov1.OpenBaoCluster) map[string]string {
	return SetSelectorLabels(c, c.ServingStatefulSet())
}

// SetSelectorLabels select the member pods of one StatefulSet of the cluster. The
// instance label carries the StatefulSet's name, so the selectors of blue and
// green never overlap (a StatefulSet's selector is immutable, and blue's was
// created with instance = the cluster's name).
func SetSelectorLabels(c *baov1.OpenBaoCluster, statefulSet string) map[string]string {
	return map[string]string{
		LabelName:     "openbao",
		LabelInstance: statefulSet,
		LabelCluster:  c.Name,
	}
}

// MemberLabels select every member pod of the cluster, of any StatefulSet: the
// headless Service (stable DNS names for blue and green alike), the
// PodDisruptionBudget, and the operator's observation.
func MemberLabels(c *baov1.OpenBaoCluster) map[string]string {
	return map[string]string{LabelName: "openbao", LabelCluster: c.Name}
}

// CommonLabels are put on every object of a cluster.
func CommonLabels(c *baov1.OpenBaoCluster) map[string]string {
	l := SetSelectorLabels(c, c.Name)
	l[LabelManagedBy] = ManagedByValue
	return l
}

// DataVolume is the name of the members' volume claim template; a member's claim
// is <DataVolume>-<pod>.
const DataVolume = "data"

// VolumesOf are the names, among claims, of the data volume claims of one
// StatefulSet's members: data-<set>-<ordinal>, any ordinal (a claim left by an
// earlier scale-down too). Green's claims (data-<blue>-<revision>-<ordinal>) never
// match blue's name.
func VolumesOf(set string, claims []string) []string {
	prefix := DataVolume + "-" + set + "-"
	var out []string
	for _, name := range claims {
		rest, ok := strings.CutPrefix(name, prefix)
		if ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			out = append(out, name)
		}
	}
	return out
}

// CASecretName is the Secret that holds the cluster's CA: the user's
// (spec.tls.secretName) or baokeeper's.
func CASecretName(c *baov1.OpenBaoCluster) string {
	if c.Spec.TLS.SecretName != "" {
		return c.Spec.TLS.SecretName
	}
	return NamesFor(c).TLSSecret()
}
