package workload

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

const testImage = "openbao/openbao:2.4.0"

func buildStatefulSet(t *testing.T, c *baov1.OpenBaoCluster, existing *appsv1.StatefulSet) *appsv1.StatefulSet {
	t.Helper()
	sts, err := StatefulSet(c, StatefulSetParams{Image: testImage, TLSSecretName: "bao-tls", Existing: existing})
	if err != nil {
		t.Fatalf("StatefulSet: %v", err)
	}
	return sts
}

func openbaoContainer(g Gomega, sts *appsv1.StatefulSet) corev1.Container {
	g.Expect(sts.Spec.Template.Spec.Containers).To(HaveLen(1))
	ctr := sts.Spec.Template.Spec.Containers[0]
	g.Expect(ctr.Name).To(Equal(ContainerName))
	return ctr
}

func envValue(g Gomega, ctr corev1.Container, name string) string {
	for _, e := range ctr.Env {
		if e.Name == name {
			return e.Value
		}
	}
	g.Expect(name).To(BeEmpty(), "env var %s is missing", name)
	return ""
}

func TestStatefulSetNew(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	sts := buildStatefulSet(t, c, nil)
	ctr := openbaoContainer(g, sts)

	g.Expect(sts.Name).To(Equal("bao"))
	g.Expect(sts.Namespace).To(Equal("ns"))
	g.Expect(sts.OwnerReferences).To(Equal([]metav1.OwnerReference{OwnerReference(c)}))
	g.Expect(sts.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedByValue))
	g.Expect(ctr.Image).To(Equal(testImage))
	g.Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.OnDeleteStatefulSetStrategyType),
		"only the upgrade manager replaces members, in the order it chose")
	g.Expect(sts.Spec.UpdateStrategy.RollingUpdate).To(BeNil())
	g.Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.OrderedReadyPodManagement),
		"ordinal 0 must initialize alone before any other member starts")
	g.Expect(sts.Spec.Replicas).To(HaveValue(Equal(baov1.DefaultReplicas)))
	g.Expect(sts.Spec.ServiceName).To(Equal("bao-internal"), "member DNS names come from the headless Service")
	g.Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy).To(Equal(&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}), "Raft data must survive deleting the cluster and scaling down")

	g.Expect(sts.Spec.Selector.MatchLabels).To(Equal(SelectorLabels(c)))
	for k, v := range sts.Spec.Selector.MatchLabels {
		g.Expect(sts.Spec.Template.Labels).To(HaveKeyWithValue(k, v), "the API server rejects a template its selector does not match")
	}

	probe := ctr.ReadinessProbe
	g.Expect(probe).NotTo(BeNil())
	g.Expect(probe.HTTPGet).NotTo(BeNil())
	g.Expect(probe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS), "the listener serves TLS only")
	g.Expect(probe.HTTPGet.Port).To(Equal(intstr.FromInt32(8200)))
	g.Expect(probe.HTTPGet.Path).To(Equal(ReadinessPath))
	g.Expect(ReadinessPath).To(ContainSubstring("standbyok=true"), "standbys are Ready; only sealed or uninitialized members are not")

	g.Expect(sts.Spec.Template.Spec.TerminationGracePeriodSeconds).To(HaveValue(BeNumerically(">=", 20)),
		"a leader that just stepped down needs ~10 s to exit on SIGTERM")

	g.Expect(ctr.Command).To(Equal([]string{"/bin/sh", "-c"}))
	g.Expect(ctr.Args).To(Equal([]string{startScript}))
	g.Expect(ctr.Ports).To(ConsistOf(
		corev1.ContainerPort{Name: "https", ContainerPort: 8200, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{Name: "cluster", ContainerPort: 8201, Protocol: corev1.ProtocolTCP},
	))

	pod := sts.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal("bao"))
	g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.SecurityContext.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)), "the runtime's default system-call filter")
	g.Expect(ctr.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
}

// The members' root file system is read-only; what OpenBao writes has a volume:
// the data, the rendered configuration, and temporary files (a snapshot being
// restored), each emptyDir bounded.
func TestStatefulSetReadOnlyRoot(t *testing.T) {
	g := NewWithT(t)
	sts := buildStatefulSet(t, newCluster(), nil)
	ctr := openbaoContainer(g, sts)
	g.Expect(ctr.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))

	writable := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		if !m.ReadOnly {
			writable[m.MountPath] = m.Name
		}
	}
	g.Expect(writable).To(Equal(map[string]string{"/openbao/data": "data", "/openbao/run": "run", "/openbao/tmp": "tmp"}))
	g.Expect(envValue(g, ctr, "TMPDIR")).To(Equal("/openbao/tmp"), "Go's os.TempDir, where OpenBao writes a snapshot it restores")
	g.Expect(startScript).To(ContainSubstring("> /openbao/run/"), "the start script writes only to the run volume")

	limits := map[string]string{}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.EmptyDir != nil {
			g.Expect(v.EmptyDir.SizeLimit).NotTo(BeNil(), "emptyDir %s is bounded", v.Name)
			limits[v.Name] = v.EmptyDir.SizeLimit.String()
		}
	}
	g.Expect(limits).To(Equal(map[string]string{"run": RunDirLimit, "tmp": TmpDirLimit}))
}

func TestStatefulSetReplicasFollowSpec(t *testing.T) {
	for _, n := range []int32{1, 3, 5} {
		g := NewWithT(t)
		sts := buildStatefulSet(t, newCluster(withReplicas(n)), nil)
		g.Expect(sts.Spec.Replicas).To(HaveValue(Equal(n)))
	}
}

func TestStatefulSetEnv(t *testing.T) {
	g := NewWithT(t)
	ctr := openbaoContainer(g, buildStatefulSet(t, newCluster(), nil))

	g.Expect(envValue(g, ctr, "BAO_RAFT_NODE_ID")).To(Equal("$(POD_NAME)"), "the Raft node ID is the pod name, stable across restarts")
	g.Expect(envValue(g, ctr, "BAO_API_ADDR")).To(Equal("https://$(POD_NAME).bao-internal.ns.svc:8200"),
		"the advertised address must be the member's headless DNS name, which the certificate covers")
	g.Expect(envValue(g, ctr, "BAO_CLUSTER_ADDR")).To(Equal("https://$(POD_NAME).bao-internal.ns.svc:8201"))
	g.Expect(envValue(g, ctr, "BAO_CACERT")).To(Equal("/openbao/tls/ca.crt"))

	fieldRefs := map[string]string{}
	for _, e := range ctr.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fieldRefs[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	g.Expect(fieldRefs).To(Equal(map[string]string{
		"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_IP": "status.podIP",
	}), "the start script and the $(VAR) references need these from the downward API")

	// Kubernetes expands $(VAR) only for variables defined earlier in the list;
	// a later definition leaves the literal "$(POD_NAME)" in the value.
	ref := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	defined := map[string]bool{}
	for _, e := range ctr.Env {
		for _, m := range ref.FindAllStringSubmatch(e.Value, -1) {
			g.Expect(defined).To(HaveKey(m[1]), "%s refers to %s before it is defined", e.Name, m[1])
		}
		defined[e.Name] = true
	}
}

func TestStatefulSetVolumes(t *testing.T) {
	cases := []struct {
		name     string
		reason   string
		opts     []func(*baov1.OpenBaoCluster)
		wantSeal bool
	}{
		{name: "default seal", reason: "an unset seal type is Static and needs the key file", wantSeal: true},
		{name: "static seal", reason: "the static seal reads file:///openbao/seal/key", opts: []func(*baov1.OpenBaoCluster){withSealType(baov1.StaticSeal)}, wantSeal: true},
		{name: "custom seal", reason: "a custom seal must not mount (or wait for) a seal Secret that is never created", opts: []func(*baov1.OpenBaoCluster){withCustomSeal(`seal "transit" {}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			sts := buildStatefulSet(t, newCluster(tc.opts...), nil)
			ctr := openbaoContainer(g, sts)
			volumes := map[string]corev1.Volume{}
			for _, v := range sts.Spec.Template.Spec.Volumes {
				volumes[v.Name] = v
			}
			mounts := map[string]corev1.VolumeMount{}
			for _, m := range ctr.VolumeMounts {
				mounts[m.Name] = m
			}

			if tc.wantSeal {
				g.Expect(volumes).To(HaveKey("seal"), tc.reason)
				g.Expect(volumes["seal"].Secret).NotTo(BeNil())
				g.Expect(volumes["seal"].Secret.SecretName).To(Equal("bao-seal"))
				g.Expect(mounts["seal"].MountPath).To(Equal("/openbao/seal"))
				g.Expect(mounts["seal"].ReadOnly).To(BeTrue())
			} else {
				g.Expect(volumes).NotTo(HaveKey("seal"), tc.reason)
				g.Expect(mounts).NotTo(HaveKey("seal"), tc.reason)
			}

			cfg := volumes["config"].Projected
			g.Expect(cfg).NotTo(BeNil(), "config.hcl from the ConfigMap, initialize.hcl from the init Secret")
			g.Expect(cfg.Sources).To(HaveLen(2))
			g.Expect(cfg.Sources[0].ConfigMap.Name).To(Equal("bao-config"))
			g.Expect(cfg.Sources[0].ConfigMap.Items).To(Equal([]corev1.KeyToPath{{Key: "config.hcl", Path: "config.hcl"}}))
			g.Expect(cfg.Sources[1].Secret.Name).To(Equal("bao-init"))
			g.Expect(cfg.Sources[1].Secret.Items).To(Equal([]corev1.KeyToPath{{Key: "initialize.hcl", Path: "initialize.hcl"}}))
			g.Expect(volumes["tls"].Secret).NotTo(BeNil())
			g.Expect(volumes["tls"].Secret.SecretName).To(Equal("bao-tls"))
			g.Expect(volumes["run"].EmptyDir).NotTo(BeNil(), "the start script writes the rendered config here")
			g.Expect(mounts["config"].MountPath).To(Equal("/openbao/config"))
			g.Expect(mounts["run"].MountPath).To(Equal("/openbao/run"))
			g.Expect(mounts["tls"].MountPath).To(Equal("/openbao/tls"))
			g.Expect(mounts["data"].MountPath).To(Equal("/openbao/data"))

			claims := map[string]bool{}
			for _, pvc := range sts.Spec.VolumeClaimTemplates {
				claims[pvc.Name] = true
			}
			for name := range mounts {
				_, isVolume := volumes[name]
				g.Expect(isVolume || claims[name]).To(BeTrue(), "mount %s has no volume or claim template", name)
			}
		})
	}
}

func TestStatefulSetVolumeClaim(t *testing.T) {
	g := NewWithT(t)
	sts := buildStatefulSet(t, newCluster(), nil)
	g.Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))
	pvc := sts.Spec.VolumeClaimTemplates[0]
	g.Expect(pvc.Name).To(Equal("data"))
	g.Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
	g.Expect(pvc.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("1Gi")))
	g.Expect(pvc.Spec.StorageClassName).To(BeNil(), "an unset class uses the cluster default")

	fast := "fast"
	size := resource.MustParse("10Gi")
	sts = buildStatefulSet(t, newCluster(func(c *baov1.OpenBaoCluster) {
		c.Spec.Storage.StorageClassName = &fast
		c.Spec.Storage.Size = &size
	}), nil)
	pvc = sts.Spec.VolumeClaimTemplates[0]
	g.Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal("fast")))
	g.Expect(pvc.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(size))
}

func TestStatefulSetExistingKeepsImageAndImmutableFields(t *testing.T) {
	g := NewWithT(t)
	oldClass := "slow"
	existing := buildStatefulSet(t, newCluster(func(c *baov1.OpenBaoCluster) {
		size := resource.MustParse("5Gi")
		c.Spec.Storage.Size = &size
		c.Spec.Storage.StorageClassName = &oldClass
	}), nil)
	existing.Spec.Template.Spec.Containers[0].Image = "openbao/openbao:2.3.1"
	existing.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	existing.Spec.ServiceName = "legacy-internal"
	existing.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"legacy": "selector"}}
	existingClaims := existing.DeepCopy().Spec.VolumeClaimTemplates

	// The spec now asks for a newer version, five members and bigger volumes.
	c := newCluster(withReplicas(5), func(c *baov1.OpenBaoCluster) {
		size := resource.MustParse("20Gi")
		c.Spec.Storage.Size = &size
	})
	sts, err := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.5.0", TLSSecretName: "bao-tls", Existing: existing})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(openbaoContainer(g, sts).Image).To(Equal("openbao/openbao:2.3.1"),
		"the workload loop never changes what a running cluster runs; only the upgrade manager does")
	g.Expect(sts.Spec.VolumeClaimTemplates).To(Equal(existingClaims), "volumeClaimTemplates are immutable")
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("5Gi")))
	g.Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement), "podManagementPolicy is immutable")
	g.Expect(sts.Spec.ServiceName).To(Equal("legacy-internal"), "serviceName is immutable")
	g.Expect(sts.Spec.Selector.MatchLabels).To(Equal(map[string]string{"legacy": "selector"}), "selector is immutable")
	g.Expect(sts.Spec.Replicas).To(HaveValue(Equal(int32(3))), "bug: replicas followed spec.replicas straight away, so a scale-down removed voters behind Raft's back; the scaling operation moves them")
	g.Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.OnDeleteStatefulSetStrategyType))
}

func TestStatefulSetExistingWithoutOpenBaoContainer(t *testing.T) {
	g := NewWithT(t)
	existing := buildStatefulSet(t, newCluster(), nil)
	existing.Spec.Template.Spec.Containers[0].Name = "something-else"
	existing.Spec.Template.Spec.Containers[0].Image = "other:1"
	sts, err := StatefulSet(newCluster(), StatefulSetParams{Image: testImage, Existing: existing})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(openbaoContainer(g, sts).Image).To(Equal(testImage),
		"with no openbao container to preserve, the requested image is used")
	g.Expect(ContainerImage(&existing.Spec.Template.Spec)).To(BeEmpty())
	g.Expect(ContainerImage(&sts.Spec.Template.Spec)).To(Equal(testImage))
}

func TestStatefulSetRequiresImage(t *testing.T) {
	cases := []struct {
		name     string
		reason   string
		existing *appsv1.StatefulSet
	}{
		{name: "new", reason: "a StatefulSet with an empty image would never start"},
		{name: "existing without image", reason: "an existing StatefulSet with no openbao image gives nothing to keep", existing: &appsv1.StatefulSet{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			sts, err := StatefulSet(newCluster(), StatefulSetParams{TLSSecretName: "bao-tls", Existing: tc.existing})
			g.Expect(err).To(HaveOccurred(), tc.reason)
			g.Expect(err.Error()).To(ContainSubstring("ns/bao"))
			g.Expect(err.Error()).To(ContainSubstring("spec.version"))
			g.Expect(sts).To(BeNil())
		})
	}
}

// runStartScript runs startScript with /bin/sh, its /openbao paths moved into a temp
// dir and a fake bao on PATH, and returns the arguments bao got and the rendered config.
func runStartScript(t *testing.T, podName, podIP string) (args []string, rendered string) {
	t.Helper()
	g := NewWithT(t)
	sh, err := exec.LookPath("/bin/sh")
	if err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skipf("no sed on PATH: %v", err)
	}
	dir := t.TempDir()
	for _, d := range []string{"config", "run", "bin"} {
		g.Expect(os.MkdirAll(filepath.Join(dir, d), 0o755)).To(Succeed())
	}
	config, err := RenderConfig(newCluster())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "config", ConfigKey), []byte(config), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "config", InitializeKey), []byte("# init\n"), 0o644)).To(Succeed())

	argsFile := filepath.Join(dir, "args")
	fakeBao := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS_FILE\"\n"
	g.Expect(os.WriteFile(filepath.Join(dir, "bin", "bao"), []byte(fakeBao), 0o755)).To(Succeed())

	g.Expect(startScript).To(ContainSubstring("/openbao/"))
	script := strings.ReplaceAll(startScript, "/openbao/", dir+"/")
	g.Expect(script).NotTo(ContainSubstring("/openbao/"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-c", script)
	cmd.Env = []string{
		"PATH=" + filepath.Join(dir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"POD_NAME=" + podName,
		"POD_IP=" + podIP,
		"ARGS_FILE=" + argsFile,
	}
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "start script failed: %s", out)

	raw, err := os.ReadFile(argsFile)
	g.Expect(err).NotTo(HaveOccurred(), "the fake bao was not executed")
	cfg, err := os.ReadFile(filepath.Join(dir, "run", ConfigKey))
	g.Expect(err).NotTo(HaveOccurred(), "the start script must write the per-pod config")

	args = strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], dir+"/", "/openbao/")
	}
	return args, string(cfg)
}

func TestStartScript(t *testing.T) {
	cases := []struct {
		name        string
		reason      string
		pod         string
		ip          string
		wantArgs    []string
		wantAddress string
	}{
		{
			name:        "ordinal 0 IPv4",
			reason:      "only ordinal 0 loads initialize.hcl, so at most one member can self-initialize",
			pod:         "bao-0",
			ip:          "10.0.0.7",
			wantArgs:    []string{"server", "-config=/openbao/run/config.hcl", "-config=/openbao/config/initialize.hcl"},
			wantAddress: "10.0.0.7",
		},
		{
			name:        "ordinal 1 IPv6",
			reason:      "other members join through retry_join; an IPv6 address must be bracketed before the port",
			pod:         "bao-1",
			ip:          "fd00::7",
			wantArgs:    []string{"server", "-config=/openbao/run/config.hcl"},
			wantAddress: "[fd00::7]",
		},
		{
			name:        "ordinal 0 IPv6",
			reason:      "bracketing and initialization are independent",
			pod:         "bao-0",
			ip:          "fd00::7",
			wantArgs:    []string{"server", "-config=/openbao/run/config.hcl", "-config=/openbao/config/initialize.hcl"},
			wantAddress: "[fd00::7]",
		},
		{
			name:        "ordinal 10",
			reason:      "bao-10 ends in 0 but is not ordinal 0; it must not initialize a second cluster",
			pod:         "bao-10",
			ip:          "10.0.0.8",
			wantArgs:    []string{"server", "-config=/openbao/run/config.hcl"},
			wantAddress: "10.0.0.8",
		},
		{
			name:        "cluster name ending in -0",
			reason:      "in a cluster named x-0, member x-0-1 is not ordinal 0",
			pod:         "x-0-1",
			ip:          "10.0.0.9",
			wantArgs:    []string{"server", "-config=/openbao/run/config.hcl"},
			wantAddress: "10.0.0.9",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			args, cfg := runStartScript(t, tc.pod, tc.ip)
			g.Expect(args).To(Equal(tc.wantArgs), tc.reason)
			g.Expect(cfg).To(ContainSubstring(`address         = "`+tc.wantAddress+`:8200"`), tc.reason)
			g.Expect(cfg).To(ContainSubstring(`cluster_address = "`+tc.wantAddress+`:8201"`), tc.reason)
			g.Expect(cfg).NotTo(ContainSubstring(PodIPPlaceholder), "every placeholder must be replaced")
		})
	}
}

func TestStartScriptFailsWithoutConfig(t *testing.T) {
	g := NewWithT(t)
	sh, err := exec.LookPath("/bin/sh")
	if err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	dir := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(dir, "run"), 0o755)).To(Succeed())
	g.Expect(os.MkdirAll(filepath.Join(dir, "bin"), 0o755)).To(Succeed())
	marker := filepath.Join(dir, "ran")
	g.Expect(os.WriteFile(filepath.Join(dir, "bin", "bao"), []byte("#!/bin/sh\ntouch \"$MARKER\"\n"), 0o755)).To(Succeed())

	cmd := exec.Command(sh, "-c", strings.ReplaceAll(startScript, "/openbao/", dir+"/"))
	cmd.Env = []string{
		"PATH=" + filepath.Join(dir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"POD_NAME=bao-0", "POD_IP=10.0.0.7", "MARKER=" + marker,
	}
	_, err = cmd.CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "set -e must stop the script when the config cannot be rendered")
	g.Expect(marker).NotTo(BeAnExistingFile(), "OpenBao must not start without its config")
}

// A StatefulSet created before the init Secret keeps mounting the whole ConfigMap:
// changing the volume would restart every member of every existing cluster.
func TestConfigVolumeOfAnExistingStatefulSet(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	legacy, err := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.4.0", TLSSecretName: "bao-tls"})
	g.Expect(err).NotTo(HaveOccurred())
	for i, v := range legacy.Spec.Template.Spec.Volumes {
		if v.Name == "config" {
			legacy.Spec.Template.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "bao-config"}}}
		}
	}
	g.Expect(UsesConfigMapInit(legacy)).To(BeTrue())
	again, err := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.4.0", TLSSecretName: "bao-tls", Existing: legacy})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Spec.Template.Spec.Volumes).To(Equal(legacy.Spec.Template.Spec.Volumes))

	fresh, err := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.4.0", TLSSecretName: "bao-tls", Existing: again.DeepCopy()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(UsesConfigMapInit(fresh)).To(BeTrue(), "stable across passes")
	g.Expect(UsesConfigMapInit(nil)).To(BeFalse(), "a new StatefulSet reads initialize.hcl from the Secret")
}
