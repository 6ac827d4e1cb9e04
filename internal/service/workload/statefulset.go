package workload

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

const (
	// TerminationGracePeriodSeconds covers OpenBao's 10 s step-down cooldown (a leader
	// that just stepped down takes about 10 s to exit on SIGTERM) with room to spare.
	TerminationGracePeriodSeconds int64 = 30

	// ReadinessPath is Ready for active and standby members, not for sealed or
	// uninitialized ones.
	ReadinessPath = "/v1/sys/health?standbyok=true&perfstandbyok=true"

	// OpenBaoUID and OpenBaoGID are the user and group of the official image.
	OpenBaoUID int64 = 100
	OpenBaoGID int64 = 1000
)

// startScript renders the per-pod listener address and starts OpenBao. Only ordinal 0
// loads initialize.hcl, so at most one member can ever self-initialize; the others
// join it through retry_join.
//
// OpenBao reloads its listener certificate on SIGHUP. The script keeps OpenBao as
// its child and watches the mounted serving certificate and key: when the kubelet
// updates them (a renewal, a user's new certificate), it sends SIGHUP, so the member
// serves the successor without a restart and without an election. It forwards
// SIGTERM and exits with OpenBao's status. A member that does not reload within
// CertificateReloadGrace is restarted through the rollout instead (the upgrade
// manager's fallback).
const startScript = `set -e
case "$POD_IP" in *:*) ip="[$POD_IP]" ;; *) ip="$POD_IP" ;; esac
sed "s/` + PodIPPlaceholder + `/$ip/g" ` + configMountPath + `/` + ConfigKey + ` > ` + runMountPath + `/` + ConfigKey + `
set -- server -config=` + runMountPath + `/` + ConfigKey + `
case "$POD_NAME" in
  *-0) set -- "$@" -config=` + configMountPath + `/` + InitializeKey + ` ;;
esac
set +e
bao "$@" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' TERM INT
tls_sum() { cat ` + tlsMountPath + `/` + TLSCertKey + ` ` + tlsMountPath + `/` + TLSKeyKey + ` 2>/dev/null | cksum; }
last=$(tls_sum)
while kill -0 $pid 2>/dev/null; do
  sleep 2 & wait $!
  now=$(tls_sum)
  if [ "$now" != "$last" ]; then
    last=$now
    echo "baokeeper: the serving certificate changed; reloading it (SIGHUP)" >&2
    kill -HUP $pid 2>/dev/null
  fi
done
wait $pid
`

// StatefulSetParams are the inputs of the StatefulSet builder.
type StatefulSetParams struct {
	// Image is the OpenBao image of a new StatefulSet. An existing StatefulSet keeps its
	// own image: only the upgrade manager changes it.
	Image string
	// TLSSecretName is the Secret mounted at the TLS path.
	TLSSecretName string
	// Existing is the observed StatefulSet, nil when there is none yet.
	Existing *appsv1.StatefulSet
	// TemplateAnnotations go on the pod template (TemplateAnnotations).
	TemplateAnnotations map[string]string
	// Name is the StatefulSet to build; empty means the serving one
	// (NamesFor(c).StatefulSet()). A blue-green upgrade builds green's under
	// Names.GreenStatefulSet.
	Name string
}

// RunDirLimit bounds the members' run directory (the rendered config.hcl, a few KiB):
// a bug or a bad stanza cannot fill the node's disk through it.
const RunDirLimit = "16Mi"

// TmpDirLimit bounds the members' tmp directory (TMPDIR): OpenBao writes a snapshot
// it restores there first, so it is as large as the largest snapshot a restore
// accepts (snapshot.RestoreWorkLimit). A constant, not the data volume's size: the
// pod template must not change with a field that cannot change.
const TmpDirLimit = "16Gi"

// StatefulSet builds the member StatefulSet. Its OnDelete update strategy means
// Kubernetes never replaces a member on its own: a template change takes effect only
// when the upgrade manager deletes a pod, in the order its plan chose (leader last),
// which a partitioned RollingUpdate cannot express. OrderedReady start means ordinal 0
// initializes alone before any other member starts, and that members join one at a
// time: OpenBao loses a member from its permanent non-voter list when two join as
// non-voters at once (docs/design/bluegreen.md), so green's StatefulSet starts its
// members this way too.
func StatefulSet(c *baov1.OpenBaoCluster, p StatefulSetParams) (*appsv1.StatefulSet, error) {
	n := NamesFor(c)
	if p.Name != "" {
		n = n.ForStatefulSet(p.Name)
	}
	image := p.Image
	if p.Existing != nil {
		if cur := containerImage(&p.Existing.Spec.Template.Spec); cur != "" {
			image = cur
		}
	}
	if image == "" {
		return nil, fmt.Errorf("no OpenBao image for %s/%s: set spec.version or spec.image", c.Namespace, c.Name)
	}
	podLabels := SetSelectorLabels(c, n.StatefulSet())
	podLabels[LabelManagedBy] = ManagedByValue
	podLabels[LabelComponent] = "server"
	host := fmt.Sprintf("$(POD_NAME).%s.%s.svc", n.HeadlessService(), c.Namespace)

	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "BAO_K8S_POD_NAME", Value: "$(POD_NAME)"},
		{Name: "BAO_K8S_NAMESPACE", Value: "$(POD_NAMESPACE)"},
		{Name: "BAO_RAFT_NODE_ID", Value: "$(POD_NAME)"},
		{Name: "BAO_API_ADDR", Value: fmt.Sprintf("https://%s:%d", host, APIPort)},
		{Name: "BAO_CLUSTER_ADDR", Value: fmt.Sprintf("https://%s:%d", host, ClusterPort)},
		{Name: "BAO_ADDR", Value: fmt.Sprintf("https://%s:%d", host, APIPort)},
		{Name: "BAO_CACERT", Value: tlsMountPath + "/" + CACertKey},
		// The root file system is read-only: OpenBao's temporary files (a snapshot
		// being restored is written to one first) go to the tmp volume.
		{Name: "TMPDIR", Value: tmpMountPath},
	}

	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: configMountPath, ReadOnly: true},
		{Name: "run", MountPath: runMountPath},
		{Name: "tmp", MountPath: tmpMountPath},
		{Name: "tls", MountPath: tlsMountPath, ReadOnly: true},
		{Name: "data", MountPath: DataMountPath},
	}
	volumes := []corev1.Volume{
		{Name: "config", VolumeSource: ConfigVolume(c, p.Existing)},
		{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrTo(resource.MustParse(RunDirLimit))}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrTo(resource.MustParse(TmpDirLimit))}}},
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: p.TLSSecretName}}},
	}
	if c.GetSealType() == baov1.StaticSeal {
		mounts = append(mounts, corev1.VolumeMount{Name: "seal", MountPath: sealMountPath, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "seal", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: n.SealSecret()}}})
	}

	container := corev1.Container{
		Name:         ContainerName,
		Image:        image,
		Command:      []string{"/bin/sh", "-c"},
		Args:         []string{startScript},
		Env:          env,
		Resources:    c.Spec.Resources,
		VolumeMounts: mounts,
		Ports: []corev1.ContainerPort{
			{Name: "https", ContainerPort: APIPort, Protocol: corev1.ProtocolTCP},
			{Name: "cluster", ContainerPort: ClusterPort, Protocol: corev1.ProtocolTCP},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: ReadinessPath, Port: intstr.FromInt32(APIPort), Scheme: corev1.URISchemeHTTPS,
			}},
			PeriodSeconds:    2,
			TimeoutSeconds:   3,
			FailureThreshold: 2,
			SuccessThreshold: 1,
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptrTo(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			// Only the volumes are writable (issue 38): data, run, tmp.
			ReadOnlyRootFilesystem: ptrTo(true),
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}

	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: objectMeta(c, n.StatefulSet()),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptrTo(c.InitialReplicas()),
			ServiceName:         n.HeadlessService(),
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: SetSelectorLabels(c, n.StatefulSet())},
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: memberAnnotations(c, p.TemplateAnnotations)},
				Spec: corev1.PodSpec{
					ServiceAccountName:            n.ServiceAccount(),
					AutomountServiceAccountToken:  ptrTo(true),
					TerminationGracePeriodSeconds: ptrTo(TerminationGracePeriodSeconds),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptrTo(true),
						RunAsUser:    ptrTo(OpenBaoUID),
						RunAsGroup:   ptrTo(OpenBaoGID),
						FSGroup:      ptrTo(OpenBaoGID),
						// The container runtime's default system-call filter (issue 38);
						// members of an earlier release get it on their next rollout.
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{container},
					Volumes:    volumes,
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{volumeClaim(c)},
		},
	}
	memberPlacement(c, &sts.Spec.Template.Spec, SetSelectorLabels(c, n.StatefulSet()))
	if p.Existing != nil {
		// Immutable fields keep what the StatefulSet was created with; a storage change
		// needs a volume migration that this release does not do.
		sts.Spec.VolumeClaimTemplates = p.Existing.Spec.VolumeClaimTemplates
		sts.Spec.PodManagementPolicy = p.Existing.Spec.PodManagementPolicy
		sts.Spec.ServiceName = p.Existing.Spec.ServiceName
		sts.Spec.Selector = p.Existing.Spec.Selector
		// Replicas move one member at a time, through Raft, by the scaling
		// operation; never straight to spec.replicas.
		if p.Existing.Spec.Replicas != nil {
			sts.Spec.Replicas = ptrTo(*p.Existing.Spec.Replicas)
		}
	}
	return sts, nil
}

func volumeClaim(c *baov1.OpenBaoCluster) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: CommonLabels(c)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: c.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: c.GetStorageSize()},
			},
		},
	}
}

func containerImage(spec *corev1.PodSpec) string {
	for _, ctr := range spec.Containers {
		if ctr.Name == ContainerName {
			return ctr.Image
		}
	}
	return ""
}

// ContainerImage returns the image of the OpenBao container of a pod spec.
func ContainerImage(spec *corev1.PodSpec) string { return containerImage(spec) }

// ConfigVolume is the members' /openbao/config: config.hcl from the ConfigMap and
// initialize.hcl from the init Secret, since the initialization requests can carry
// credentials (spec.initialization.extraRequests). A StatefulSet created before the
// init Secret existed keeps its volume (the whole ConfigMap, whose initialize.hcl is
// the disabled one once the cluster initialized): changing it would restart every
// member for nothing.
func ConfigVolume(c *baov1.OpenBaoCluster, existing *appsv1.StatefulSet) corev1.VolumeSource {
	n := NamesFor(c)
	if UsesConfigMapInit(existing) {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: n.ConfigMap()}}}
	}
	return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: n.ConfigMap()},
			Items: []corev1.KeyToPath{{Key: ConfigKey, Path: ConfigKey}}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: n.InitSecret()},
			Items: []corev1.KeyToPath{{Key: InitializeKey, Path: InitializeKey}}}},
	}}}
}

// UsesConfigMapInit reports whether sts mounts the whole ConfigMap at
// /openbao/config, as StatefulSets created before the init Secret did.
func UsesConfigMapInit(sts *appsv1.StatefulSet) bool {
	if sts == nil {
		return false
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "config" {
			return v.ConfigMap != nil
		}
	}
	return false
}
