package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/baokeeper/baokeeper/test/testenv"
)

func deploymentOf(objs []*unstructured.Unstructured) *appsv1.Deployment {
	GinkgoHelper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			dep := &appsv1.Deployment{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep)).To(Succeed())
			return dep
		}
	}
	Fail("no Deployment rendered")
	return nil
}

func byKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

var _ = Describe("the chart's values", func() {
	It("installs the CRD as a template that helm upgrade changes, kept on uninstall, or not at all", func() {
		crds := byKind(render(), "CustomResourceDefinition")
		Expect(crds).To(HaveLen(1))
		Expect(crds[0].GetName()).To(Equal("openbaoclusters.openbao.baokeeper.dev"))
		Expect(crds[0].GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
		Expect(crds[0].GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
		versions, _, _ := unstructured.NestedSlice(crds[0].Object, "spec", "versions")
		Expect(versions).NotTo(BeEmpty(), "the whole CRD, not a stub")

		Expect(byKind(render("--set", "crds.install=false"), "CustomResourceDefinition")).To(BeEmpty())
		Expect(byKind(render("--set", "crds.keep=false"), "CustomResourceDefinition")[0].GetAnnotations()).NotTo(HaveKey("helm.sh/resource-policy"))
		_, err := os.Stat(filepath.Join(chart, "crds"))
		Expect(os.IsNotExist(err)).To(BeTrue(), "a crds/ directory would be installed once and never upgraded, and would collide with the template")
	})

	It("gives each release a Lease of its own, and grants Leases only in the release namespace", func() {
		leaseArg := func(release string) string {
			for _, a := range deploymentOf(renderAs(release)).Spec.Template.Spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--leader-elect-id="); ok {
					return v
				}
			}
			return ""
		}
		Expect(leaseArg("baokeeper")).To(Equal("baokeeper.openbao.baokeeper.dev"))
		Expect(leaseArg("team-a")).To(Equal("team-a-baokeeper.openbao.baokeeper.dev"))

		objs := renderAs("team-a")
		for _, cr := range byKind(objs, "ClusterRole") {
			rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
			for _, r := range rules {
				res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
				Expect(res).NotTo(ContainElement("leases"), "ClusterRole %s grants Leases cluster-wide", cr.GetName())
			}
		}
		var leaseRules []string
		for _, role := range byKind(objs, "Role") {
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			for _, r := range rules {
				m := r.(map[string]any)
				res, _, _ := unstructured.NestedStringSlice(m, "resources")
				if slices.Contains(res, "leases") {
					names, _, _ := unstructured.NestedStringSlice(m, "resourceNames")
					verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
					leaseRules = append(leaseRules, role.GetNamespace()+" "+strings.Join(verbs, ",")+" "+strings.Join(names, ","))
				}
			}
		}
		Expect(leaseRules).To(ConsistOf("baokeeper-system create ", "baokeeper-system get,update team-a-baokeeper.openbao.baokeeper.dev"))
	})

	It("takes the security contexts, extra arguments, environment and volumes it is given", func() {
		dep := deploymentOf(render("--set", "podSecurityContext.runAsUser=1001,securityContext.readOnlyRootFilesystem=false",
			"--set", "extraArgs={--openbao-timeout=10s}",
			"--set", "extraEnv[0].name=HTTPS_PROXY,extraEnv[0].value=http://proxy:3128",
			"--set", "extraVolumes[0].name=ca,extraVolumes[0].configMap.name=corp-ca",
			"--set", "extraVolumeMounts[0].name=ca,extraVolumeMounts[0].mountPath=/etc/corp-ca"))
		pod := dep.Spec.Template.Spec
		Expect(pod.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(1001)))
		Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()), "the other defaults stay")
		c := pod.Containers[0]
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeFalse()))
		Expect(c.Args).To(ContainElement("--openbao-timeout=10s"))
		Expect(c.Env).To(ContainElement(HaveField("Name", "HTTPS_PROXY")))
		Expect(pod.Volumes).To(ContainElement(HaveField("Name", "ca")))
		Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", "/etc/corp-ca")))
	})

	It("spreads two replicas over nodes behind a PodDisruptionBudget, and adds neither to one replica", func() {
		objs := render("--set", "replicas=2")
		pdbs := byKind(objs, "PodDisruptionBudget")
		Expect(pdbs).To(HaveLen(1))
		mu, _, _ := unstructured.NestedFieldNoCopy(pdbs[0].Object, "spec", "maxUnavailable")
		Expect(mu).To(BeEquivalentTo(1))
		spread := deploymentOf(objs).Spec.Template.Spec.TopologySpreadConstraints
		Expect(spread).To(HaveLen(1))
		Expect(spread[0].TopologyKey).To(Equal("kubernetes.io/hostname"))

		one := render()
		Expect(byKind(one, "PodDisruptionBudget")).To(BeEmpty(), "a budget over one replica would block every drain")
		Expect(deploymentOf(one).Spec.Template.Spec.TopologySpreadConstraints).To(BeEmpty())
	})

	It("adds OpenBaoClusters to the view, edit and admin roles", func() {
		agg := map[string][]string{}
		for _, cr := range byKind(render(), "ClusterRole") {
			for k := range cr.GetLabels() {
				if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") {
					agg[strings.TrimPrefix(k, "rbac.authorization.k8s.io/aggregate-to-")] = append(agg[strings.TrimPrefix(k, "rbac.authorization.k8s.io/aggregate-to-")], cr.GetName())
				}
			}
		}
		Expect(agg).To(HaveKey("view"))
		Expect(agg).To(HaveKey("edit"))
		Expect(agg).To(HaveKey("admin"))
		Expect(byKind(render("--set", "rbac.aggregateToDefaultRoles=false"), "ClusterRole")).NotTo(ContainElement(
			WithTransform(func(o *unstructured.Unstructured) string { return o.GetName() }, HaveSuffix("-openbaoclusters-view"))))
	})

	It("renders the opt-in admission policy with the registries it is given", func() {
		Expect(byKind(render(), "ValidatingAdmissionPolicy")).To(BeEmpty(), "opt-in")
		objs := render("--set", "admissionPolicy.enabled=true,admissionPolicy.allowedRegistries={registry.corp.example/mirror/}")
		policies := byKind(objs, "ValidatingAdmissionPolicy")
		Expect(policies).To(HaveLen(1))
		vars, _, _ := unstructured.NestedSlice(policies[0].Object, "spec", "variables")
		Expect(vars[0].(map[string]any)).To(HaveKeyWithValue("expression", "['registry.corp.example/mirror/']"))
		Expect(byKind(objs, "ValidatingAdmissionPolicyBinding")).To(HaveLen(1))
	})

	DescribeTable("refuses values its schema does not allow, saying which",
		func(set, want string) {
			out, err := exec.Command(helm, "template", "baokeeper", chart, "--set", set).CombinedOutput()
			Expect(err).To(HaveOccurred(), "helm accepted --set %s", set)
			Expect(string(out)).To(ContainSubstring(want))
		},
		Entry("a misspelt key", "replica=2", "replica"),
		Entry("replicas as a word", "replicas=two", "replicas"),
		Entry("a log level that does not exist", "logLevel=verbose", "logLevel"),
		Entry("an image digest that is not sha256", "image.digest=md5:abc", "digest"),
		Entry("a namespace name with capitals", "watchNamespaces={Team-A}", "watchNamespaces"),
		Entry("a registry prefix without its slash", "admissionPolicy.allowedRegistries={ghcr.io/openbao}", "allowedRegistries"),
	)

	It("documents every value in its README, and nothing that is not a value", func() {
		raw, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var values map[string]any
		Expect(sigsyaml.Unmarshal(raw, &values)).To(Succeed())
		var keys []string
		var walk func(prefix string, m map[string]any)
		// Kubernetes objects given whole (resources, security contexts) are one row each.
		whole := map[string]bool{"resources": true, "podSecurityContext": true, "securityContext": true}
		walk = func(prefix string, m map[string]any) {
			for k, v := range m {
				if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !whole[prefix+k] {
					walk(prefix+k+".", sub)
					continue
				}
				keys = append(keys, prefix+k)
			}
		}
		walk("", values)
		sort.Strings(keys)

		readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
		Expect(err).NotTo(HaveOccurred())
		documented := map[string]bool{}
		for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z0-9_.]+)` \\|").FindAllStringSubmatch(string(readme), -1) {
			documented[m[1]] = true
		}
		var missing, extra []string
		for _, k := range keys {
			if !documented[k] {
				missing = append(missing, k)
			}
			delete(documented, k)
		}
		for k := range documented {
			extra = append(extra, k)
		}
		Expect(missing).To(BeEmpty(), "values.yaml keys missing from the README's table")
		Expect(extra).To(BeEmpty(), "README rows for keys values.yaml does not have")

		schema, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
		Expect(err).NotTo(HaveOccurred())
		var s map[string]any
		Expect(json.Unmarshal(schema, &s)).To(Succeed())
		props, _ := s["properties"].(map[string]any)
		for k := range values {
			Expect(props).To(HaveKey(k), "values.schema.json has no property %s", k)
		}
	})
})

var _ = Describe("the kustomize installs", func() {
	DescribeTable("build, reference the release image, carry the chart's hardening, and every object is accepted by the API server (server-side dry run)",
		func(ctx SpecContext, dir string, namespaceMode bool) {
			assets, skip := testenv.Assets()
			if skip != "" {
				Skip(skip)
			}
			out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", dir)).Output()
			Expect(err).NotTo(HaveOccurred(), "kubectl kustomize config/%s", dir)
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
			var kinds []string
			for {
				u := &unstructured.Unstructured{}
				if err := dec.Decode(&u.Object); err != nil {
					Expect(errors.Is(err, io.EOF)).To(BeTrue(), "%v", err)
					break
				}
				if len(u.Object) == 0 {
					continue
				}
				kinds = append(kinds, u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName())
				switch u.GetKind() {
				case "Deployment":
					dep := &appsv1.Deployment{}
					Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep)).To(Succeed())
					pod := dep.Spec.Template.Spec
					Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
					Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
					c := pod.Containers[0]
					Expect(c.Image).NotTo(HaveSuffix(":latest"))
					Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
					Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
					Expect(c.Resources.Limits).NotTo(BeEmpty())
					if namespaceMode {
						Expect(c.Args).To(ContainElement("--watch-namespaces=openbao"))
					}
				case "ClusterRole":
					if !namespaceMode || u.GetName() == "baokeeper-metrics-reader" {
						break
					}
					rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
					for _, r := range rules {
						res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
						for _, x := range res {
							Expect(x).To(BeElementOf("tokenreviews", "subjectaccessreviews"), "ClusterRole %s grants %s cluster-wide", u.GetName(), x)
						}
					}
				}
				err := k8s.Patch(ctx, u, client.Apply, client.FieldOwner("kustomize-test"), client.DryRunAll, client.ForceOwnership)
				Expect(err).NotTo(HaveOccurred(), "%s %s refused by the API server", u.GetKind(), u.GetName())
			}
			want := []string{"Deployment/baokeeper-system/baokeeper", "Role/baokeeper-system/baokeeper-token",
				"CustomResourceDefinition//openbaoclusters.openbao.baokeeper.dev"}
			if namespaceMode {
				want = append(want, "Role/openbao/baokeeper-manager", "ClusterRole//baokeeper-manager-cluster", "Role/baokeeper-system/baokeeper-leader-election")
			} else {
				want = append(want, "ClusterRole//baokeeper-manager")
			}
			Expect(kinds).To(ContainElements(want))
		},
		Entry("config/default: every namespace", "default", false),
		Entry("config/namespaced: the namespace openbao", "namespaced", true),
	)

	It("config/monitoring: the operator serves cert-manager's certificate for its metrics Service, the ServiceMonitor verifies it against that CA, and the API server accepts every object (issue 38)", func(ctx SpecContext) {
		assets, skip := testenv.Assets()
		if skip != "" {
			Skip(skip)
		}
		out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", "monitoring")).Output()
		Expect(err).NotTo(HaveOccurred(), "kubectl kustomize config/monitoring")
		objs := decodeObjects(out)
		var dep *appsv1.Deployment
		var svc *corev1.Service
		var tlsConfig map[string]any
		issuers := map[string]map[string]any{}
		certs := map[string]map[string]any{} // by the Secret each one fills
		for _, u := range objs {
			switch u.GetKind() {
			case "Deployment":
				dep = deploymentOf([]*unstructured.Unstructured{u})
			case "Service":
				svc = &corev1.Service{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc)).To(Succeed())
			case "ServiceMonitor":
				eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
				Expect(eps).To(HaveLen(1))
				tlsConfig, _, _ = unstructured.NestedMap(eps[0].(map[string]any), "tlsConfig")
			case "Issuer":
				spec, _, _ := unstructured.NestedMap(u.Object, "spec")
				issuers[u.GetName()] = spec
			case "Certificate":
				spec, _, _ := unstructured.NestedMap(u.Object, "spec")
				certs[spec["secretName"].(string)] = spec
			}
			Expect(k8s.Patch(ctx, u, client.Apply, client.FieldOwner("kustomize-test"), client.DryRunAll, client.ForceOwnership)).
				To(Succeed(), "%s %s refused by the API server", u.GetKind(), u.GetName())
		}
		Expect(dep).NotTo(BeNil())
		Expect(svc).NotTo(BeNil())

		By("the ServiceMonitor verifies the Service's name against ca.crt of a Secret")
		Expect(tlsConfig).NotTo(HaveKey("insecureSkipVerify"), "the scraper verifies the endpoint")
		serverName := svc.Name + "." + svc.Namespace + ".svc"
		Expect(tlsConfig).To(HaveKeyWithValue("serverName", serverName))
		secret, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "name")
		key, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "key")
		Expect(key).To(Equal("ca.crt"))

		By("cert-manager fills that Secret with a certificate for that name from a CA issuer, whose CA comes from a self-signed one")
		cert, ok := certs[secret]
		Expect(ok).To(BeTrue(), "no Certificate fills the Secret %s the ServiceMonitor trusts", secret)
		Expect(cert["dnsNames"]).To(ContainElement(serverName))
		Expect(cert).NotTo(HaveKey("isCA"))
		issuer := issuers[cert["issuerRef"].(map[string]any)["name"].(string)]
		Expect(issuer).To(HaveKey("ca"), "the endpoint's certificate comes from a CA: a renewal keeps ca.crt")
		caSecret, _, _ := unstructured.NestedString(issuer, "ca", "secretName")
		ca, ok := certs[caSecret]
		Expect(ok).To(BeTrue(), "no Certificate makes the CA Secret %s", caSecret)
		Expect(ca).To(HaveKeyWithValue("isCA", true))
		Expect(issuers[ca["issuerRef"].(map[string]any)["name"].(string)]).To(HaveKey("selfSigned"))

		By("the operator serves the certificate of that Secret")
		pod := dep.Spec.Template.Spec
		var certDir string
		for _, a := range pod.Containers[0].Args {
			if d, ok := strings.CutPrefix(a, "--metrics-cert-dir="); ok {
				certDir = d
			}
		}
		Expect(certDir).NotTo(BeEmpty(), "the operator runs with --metrics-cert-dir")
		var volume string
		for _, m := range pod.Containers[0].VolumeMounts {
			if m.MountPath == certDir {
				volume = m.Name
			}
		}
		Expect(volume).NotTo(BeEmpty(), "nothing is mounted at %s", certDir)
		Expect(pod.Volumes).To(ContainElement(SatisfyAll(
			HaveField("Name", volume), HaveField("Secret", HaveField("SecretName", secret)))))
		Expect(svc.Spec.Ports).To(ContainElement(HaveField("TargetPort.StrVal", "metrics")))
	})

	It("config/network-policy admits to the operator's pods only config/manager's metrics port, and the API server accepts it", func(ctx SpecContext) {
		assets, skip := testenv.Assets()
		if skip != "" {
			Skip(skip)
		}
		build := func(dir string) []*unstructured.Unstructured {
			out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", dir)).Output()
			Expect(err).NotTo(HaveOccurred(), "kubectl kustomize config/%s", dir)
			return decodeObjects(out)
		}
		var dep *appsv1.Deployment
		for _, u := range build("default") {
			if u.GetKind() == "Deployment" {
				dep = &appsv1.Deployment{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep)).To(Succeed())
			}
		}
		Expect(dep).NotTo(BeNil())
		objs := build("network-policy")
		Expect(objs).To(HaveLen(1))
		np := &networkingv1.NetworkPolicy{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, np)).To(Succeed())
		Expect(np.Namespace).To(Equal(dep.Namespace))
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		Expect(err).NotTo(HaveOccurred())
		Expect(sel.Matches(labels.Set(dep.Spec.Template.Labels))).To(BeTrue(), "it selects the operator's pods")
		var metricsPort int32
		for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
			if p.Name == "metrics" {
				metricsPort = p.ContainerPort
			}
		}
		Expect(np.Spec.Ingress).To(HaveLen(1))
		Expect(np.Spec.Ingress[0].Ports).To(HaveLen(1))
		Expect(np.Spec.Ingress[0].Ports[0].Port.IntValue()).To(Equal(int(metricsPort)))
		Expect(k8s.Patch(ctx, objs[0], client.Apply, client.FieldOwner("kustomize-test"), client.DryRunAll, client.ForceOwnership)).To(Succeed())
	})
})
