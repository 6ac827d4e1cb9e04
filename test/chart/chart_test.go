// Package chart checks the Helm chart charts/baokeeper with the real helm (built from
// Go modules into bin/ by hack/build-bins.sh helm) and a real kube-apiserver: the
// chart lints, renders with several value sets, and every rendered object is accepted
// by a server-side dry run against an API server that has baokeeper's CRD and the
// prometheus-operator and cert-manager CRDs (test/chart/crds, generated from their API
// types by hack/tools/testcrds). The kustomize installs under config/ are checked the
// same way.
package chart

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/baokeeper/baokeeper/test/testenv"
)

func TestChart(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Helm chart")
}

var (
	root  = testenv.RepoRoot()
	chart = filepath.Join(root, "charts", "baokeeper")
	helm  string
	k8s   client.Client
	// kubeconfig is an admin kubeconfig of the suite's API server, for helm install.
	kubeconfig string
)

// valueSets are the installs the chart must support.
var valueSets = map[string][]string{
	"defaults":                   nil,
	"namespaced, two namespaces": {"--set", "watchNamespaces={team-a,team-b}"},
	"everything on": {"--set", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,grafana.dashboard.enabled=true,admissionPolicy.enabled=true,networkPolicy.enabled=true," +
		"replicas=2,image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
	"plain-HTTP metrics, no leader election": {"--set", "metrics.secure=false,leaderElection.enabled=false,executorImage=registry.example/baokeeper:1.0.0," +
		"metrics.port=9443,healthProbe.port=9081"},
}

var _ = BeforeSuite(func() {
	helm = os.Getenv("HELM_BIN")
	if helm == "" {
		bins, _ := filepath.Glob(filepath.Join(root, "bin", "helm-*"))
		if len(bins) > 0 {
			helm = bins[len(bins)-1]
		}
	}
	if _, err := os.Stat(helm); helm == "" || err != nil {
		why := "helm is not built: run `make helm-bins` (make test does)"
		if testenv.Required() {
			Fail(why)
		}
		Skip(why)
	}
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	env := testenv.StartEnvtest(filepath.Join(chart, "files", "crds"), filepath.Join(root, "test", "chart", "crds"))
	var err error
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	admin, err := env.AddUser(envtest.User{Name: "chart-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	raw, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, raw, 0o600)).To(Succeed())
	for _, ns := range []string{"baokeeper-system", "team-a", "team-b", "openbao"} {
		Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
})

// render runs helm template and returns the rendered objects.
func render(args ...string) []*unstructured.Unstructured {
	GinkgoHelper()
	return renderAs("baokeeper", args...)
}

// renderAs is render with another release name.
func renderAs(release string, args ...string) []*unstructured.Unstructured {
	GinkgoHelper()
	cmd := exec.Command(helm, append([]string{"template", release, chart, "--namespace", "baokeeper-system"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "helm template %v: %s", args, stderr.String())
	return decodeObjects(out)
}

// decodeObjects decodes helm's output: one object per YAML document.
func decodeObjects(out []byte) []*unstructured.Unstructured {
	GinkgoHelper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			Fail("decoding helm's output: " + err.Error())
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	Expect(objs).NotTo(BeEmpty())
	return objs
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

var _ = Describe("charts/baokeeper", func() {
	It("carries the same CRD, manager rules, dashboard and alerts as config/ (make manifests copies them)", func() {
		for copy, src := range map[string]string{
			"files/crds/openbao.baokeeper.dev_openbaoclusters.yaml": "config/crd/bases/openbao.baokeeper.dev_openbaoclusters.yaml",
			"files/manager-role.yaml":                               "config/rbac/role.yaml",
			"files/baokeeper-dashboard.json":                        "config/grafana/baokeeper-dashboard.json",
			"files/baokeeper-rules.yaml":                            "config/prometheus/baokeeper-rules.yaml",
		} {
			a, err := os.ReadFile(filepath.Join(chart, copy))
			Expect(err).NotTo(HaveOccurred())
			b, err := os.ReadFile(filepath.Join(root, src))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(a)).To(Equal(string(b)), "charts/baokeeper/%s differs from %s: run make manifests", copy, src)
		}
	})

	It("references the operator's image by the release version (the chart's appVersion) in the chart and in config/, never by latest", func() {
		chartYAML, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var meta struct {
			AppVersion string `json:"appVersion"`
		}
		Expect(sigsyaml.Unmarshal(chartYAML, &meta)).To(Succeed())
		Expect(meta.AppVersion).NotTo(BeEmpty())
		manager, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(manager), "ghcr.io/baokeeper/baokeeper:"+meta.AppVersion)).To(Equal(2),
			"config/manager/manager.yaml runs and hands executors ghcr.io/baokeeper/baokeeper:%s (make image builds that tag)", meta.AppVersion)
		var deployment string
		for _, o := range render() {
			if o.GetKind() == "Deployment" {
				raw, err := sigsyaml.Marshal(o.Object)
				Expect(err).NotTo(HaveOccurred())
				deployment = string(raw)
			}
		}
		rendered := deployment
		Expect(rendered).To(ContainSubstring("ghcr.io/baokeeper/baokeeper:" + meta.AppVersion))
		for name, text := range map[string]string{"config/manager/manager.yaml": string(manager), "the rendered chart": rendered} {
			Expect(text).NotTo(ContainSubstring("baokeeper:latest"), name)
		}
	})

	It("passes helm lint with every value set", func() {
		for name, args := range valueSets {
			out, err := exec.Command(helm, append([]string{"lint", "--strict", chart}, args...)...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "helm lint (%s): %s", name, out)
		}
	})

	It("renders objects that a real API server accepts (server-side dry run) with every value set", func(ctx SpecContext) {
		for name, args := range valueSets {
			objs := render(args...)
			for _, o := range objs {
				err := k8s.Patch(ctx, o, client.Apply, client.FieldOwner("helm-chart-test"), client.DryRunAll, client.ForceOwnership)
				Expect(err).NotTo(HaveOccurred(), "%s: %s %s/%s refused by the API server", name, o.GetKind(), o.GetNamespace(), o.GetName())
			}
			GinkgoWriter.Printf("%s: %d objects accepted: %s\n", name, len(objs), strings.Join(kinds(objs), ", "))
		}
	})

	It("runs the operator non-root, on a read-only root filesystem, with seccomp RuntimeDefault and no capabilities", func() {
		for name, args := range valueSets {
			var dep *appsv1.Deployment
			for _, o := range render(args...) {
				if o.GetKind() == "Deployment" {
					dep = &appsv1.Deployment{}
					Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep)).To(Succeed())
				}
			}
			Expect(dep).NotTo(BeNil(), name)
			pod := dep.Spec.Template.Spec
			Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()), name)
			Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault), name)
			c := pod.Containers[0]
			Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()), name)
			Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()), name)
			Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")), name)
			Expect(c.Resources.Requests).NotTo(BeEmpty(), name)
			Expect(c.ReadinessProbe).NotTo(BeNil(), name)
			Expect(c.LivenessProbe).NotTo(BeNil(), name)
		}
	})

	It("grants nothing cluster-wide on namespaced objects when it watches a list of namespaces", func() {
		objs := render(valueSets["namespaced, two namespaces"]...)
		bound := map[string]bool{}
		for _, o := range objs {
			if o.GetKind() == "ClusterRoleBinding" {
				name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
				bound[name] = true
			}
		}
		var roles []string
		for _, o := range objs {
			switch {
			case o.GetKind() == "ClusterRole" && bound[o.GetName()]:
				rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
				for _, r := range rules {
					res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
					for _, x := range res {
						Expect(x).To(BeElementOf("tokenreviews", "subjectaccessreviews"),
							"ClusterRole %s grants %s cluster-wide", o.GetName(), x)
					}
				}
			case o.GetKind() == "Role":
				roles = append(roles, o.GetNamespace()+"/"+o.GetName())
			}
		}
		Expect(roles).To(ContainElements("team-a/baokeeper-manager", "team-b/baokeeper-manager", "baokeeper-system/baokeeper-leader-election"))
		var args []string
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				c, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				args, _, _ = unstructured.NestedStringSlice(c[0].(map[string]any), "args")
			}
		}
		Expect(args).To(ContainElement("--watch-namespaces=team-a,team-b"))
	})

	It("serves its metrics with a certificate the ServiceMonitor verifies: generated, or the Secret given (issue 38)", func() {
		objs := render("--set", "metrics.serviceMonitor.enabled=true")
		var sec *corev1.Secret
		var tlsConfig map[string]any
		var args []string
		for _, o := range objs {
			switch o.GetKind() {
			case "Secret":
				if o.GetName() == "baokeeper-metrics-tls" {
					sec = &corev1.Secret{}
					Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, sec)).To(Succeed())
				}
			case "ServiceMonitor":
				eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
				Expect(eps).To(HaveLen(1))
				tlsConfig, _, _ = unstructured.NestedMap(eps[0].(map[string]any), "tlsConfig")
			case "Deployment":
				d := &appsv1.Deployment{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d)).To(Succeed())
				args = d.Spec.Template.Spec.Containers[0].Args
			}
		}
		Expect(tlsConfig).NotTo(HaveKey("insecureSkipVerify"), "the scraper verifies the endpoint")
		Expect(tlsConfig).To(HaveKeyWithValue("serverName", "baokeeper-metrics.baokeeper-system.svc"))
		Expect(tlsConfig).To(HaveKeyWithValue("ca", map[string]any{"secret": map[string]any{"name": "baokeeper-metrics-tls", "key": "ca.crt"}}))
		Expect(args).To(ContainElement("--metrics-cert-dir=/run/baokeeper/metrics-tls"))
		Expect(sec).NotTo(BeNil(), "the chart generates the certificate")
		pool := x509.NewCertPool()
		Expect(pool.AppendCertsFromPEM(sec.Data["ca.crt"])).To(BeTrue())
		block, _ := pem.Decode(sec.Data["tls.crt"])
		Expect(block).NotTo(BeNil())
		cert, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "baokeeper-metrics.baokeeper-system.svc"})
		Expect(err).NotTo(HaveOccurred(), "the certificate is the CA's, for the Service's name")
		_, err = tls.X509KeyPair(sec.Data["tls.crt"], sec.Data["tls.key"])
		Expect(err).NotTo(HaveOccurred())

		By("with metrics.tls.secretName: that Secret, none generated")
		for _, o := range render("--set", "metrics.serviceMonitor.enabled=true,metrics.tls.secretName=metrics-cert") {
			Expect(o.GetKind() == "Secret" && strings.HasSuffix(o.GetName(), "-metrics-tls")).To(BeFalse())
			if o.GetKind() == "ServiceMonitor" {
				eps, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
				name, _, _ := unstructured.NestedString(eps[0].(map[string]any), "tlsConfig", "ca", "secret", "name")
				Expect(name).To(Equal("metrics-cert"))
			}
		}
	})

	It("listens on the ports it is given, and probes and exposes those", func() {
		var dep *appsv1.Deployment
		for _, o := range render(valueSets["plain-HTTP metrics, no leader election"]...) {
			if o.GetKind() == "Deployment" {
				dep = &appsv1.Deployment{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep)).To(Succeed())
			}
		}
		Expect(dep).NotTo(BeNil())
		c := dep.Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("--metrics-bind-address=:9443", "--health-probe-bind-address=:9081"))
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		Expect(ports).To(Equal(map[string]int32{"metrics": 9443, "probes": 9081}))
		Expect(c.ReadinessProbe.HTTPGet.Port.String()).To(Equal("probes"))
	})

	It("admits to the operator's pods only the metrics port, from the peers it is given (issue 38)", func() {
		policies := func(args ...string) []*networkingv1.NetworkPolicy {
			var out []*networkingv1.NetworkPolicy
			for _, o := range render(args...) {
				if o.GetKind() == "NetworkPolicy" {
					np := &networkingv1.NetworkPolicy{}
					Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, np)).To(Succeed())
					out = append(out, np)
				}
			}
			return out
		}
		Expect(policies()).To(BeEmpty(), "off by default")
		nps := policies("--set", "networkPolicy.enabled=true,metrics.port=9443",
			"--set-json", `networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`)
		Expect(nps).To(HaveLen(1))
		np := nps[0]
		Expect(np.Namespace).To(Equal("baokeeper-system"))
		Expect(np.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/name", "baokeeper"), "the operator's pods, as the members' policies name them")
		Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
		Expect(np.Spec.Ingress).To(HaveLen(1))
		Expect(np.Spec.Ingress[0].Ports).To(HaveLen(1))
		Expect(np.Spec.Ingress[0].Ports[0].Port.IntValue()).To(Equal(9443))
		Expect(np.Spec.Ingress[0].From).To(HaveLen(1))
		Expect(np.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels).To(HaveKeyWithValue("kubernetes.io/metadata.name", "monitoring"))
	})

	It("is a real check: the same dry run refuses an invalid object", func(ctx SpecContext) {
		bad := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
			"metadata": map[string]any{"name": "bad", "namespace": "baokeeper-system"},
			"spec":     map[string]any{"endpoints": "not-a-list"},
		}}
		err := k8s.Patch(ctx, bad, client.Apply, client.FieldOwner("helm-chart-test"), client.DryRunAll, client.ForceOwnership)
		var status apierrors.APIStatus
		Expect(errors.As(err, &status)).To(BeTrue(), "the API server answered: %v", err)
		Expect(err.Error()).To(ContainSubstring(".spec.endpoints: expected list"))
	})
})
