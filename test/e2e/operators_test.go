//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Two installs of baokeeper run on the rig, both from the Helm chart through Helm 4
// and the image make image builds, each watching its own namespaces, so that no
// cluster has two operators:
//   - the suite's operator, release baokeeper in baokeeper-system, in cluster mode
//     (a ClusterRole), every namespace except chartNamespaces (--exclude-namespaces);
//   - release baokeeper-helm in chartOperatorNS, in namespace mode over
//     chartNamespaces: Roles only, no ClusterRole on namespaced objects. The rolling
//     upgrade Describe (upgrade_test.go) runs under it.
//
// kustomize's config/default is checked by a server-side dry run (test/chart).
//
// A Describe's namespace must be in exactly one of the two lists: createNamespace
// refuses any other.

const (
	chartRelease    = "baokeeper-helm"
	chartOperatorNS = "baokeeper-helm"
	// The rig's pods share one network stack: the chart's operator listens on ports
	// other than the suite's (8443 and 8081).
	chartMetricsPort = 8444
	chartProbePort   = 8082
)

// chartNamespaces are the namespaces the chart-installed operator watches.
var chartNamespaces = []string{upNS}

// suiteNamespaces are the namespaces the suite's operator watches: every Describe's
// and the benchmark's.
func suiteNamespaces() []string {
	out := []string{ns, "e2e-bluegreen", "e2e-rollback", "e2e-scale", snapNS, "e2e-upgrade5", "e2e-opkill", rolloutNS, certNS, tenantNS, freezeNS, partitionNS, clockNS, fleetDev, fleetStaging, fleetProd}
	for i := range concurrentCount() {
		out = append(out, concurrentNamespace(i))
	}
	for _, n := range benchSizes {
		out = append(out, benchBlueGreenNamespace(n))
		for _, a := range benchAlgorithms {
			out = append(out, benchNamespace(a, n))
		}
	}
	return out
}

// operatorToken is a token of the service account of the operator that manages the
// cluster of namespace (named name), for that cluster's audience: OpenBao's
// controller role is bound to both.
func operatorToken(ctx context.Context, namespace string) string {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, c)).To(Succeed())
	Expect(c.Status.JWTAudience).To(Equal("openbao.baokeeper.dev/"+namespace+"/"+name), "a new cluster trusts an audience of its own")
	if slices.Contains(chartNamespaces, namespace) {
		return tokenFor(ctx, chartOperatorNS, chartRelease, c.Status.JWTAudience)
	}
	return tokenFor(ctx, operatorNS, "baokeeper", c.Status.JWTAudience)
}

// createNamespace creates a Describe's namespace, which one of the two operators
// must watch; an existing one (the chart's Role is in it) is kept.
func createNamespace(ctx context.Context, namespace string) {
	GinkgoHelper()
	Expect(slices.Contains(suiteNamespaces(), namespace) || slices.Contains(chartNamespaces, namespace)).To(BeTrue(),
		"namespace %s is watched by no operator of the suite: add it to suiteNamespaces or chartNamespaces (test/e2e/operators_test.go)", namespace)
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// previousChart is chart 0.1.0 as released, packaged (test/chart keeps it).
var previousChart = filepath.Join(root, "test", "chart", "testdata", "baokeeper-0.1.0.tgz")

// installSuiteOperator installs the suite's operator as a user upgrading from the
// previous chart would have it: chart 0.1.0 first (its CRD in crds/, without the
// rules of later releases), then the CRD adopted as charts/baokeeper/README.md says,
// then helm upgrade to charts/baokeeper through Helm 4 as release baokeeper in
// operatorNS. The upgraded release runs in cluster mode (a ClusterRole, every
// namespace) except the chart release's namespaces (--exclude-namespaces), with a
// shorter leader election: a replica takes over a SIGKILLed one in about 6 s instead
// of about 17 s (the specs that kill the operator wait for that takeover five times).
// The whole suite then runs on the upgraded release and its upgraded CRD.
func installSuiteOperator(ctx context.Context) {
	GinkgoHelper()
	// 0.1.0 named an image that was never built; it runs the image under test until
	// the upgrade replaces its Deployment.
	helm(ctx, "install", "baokeeper", previousChart, "--namespace", operatorNS, "--create-namespace",
		"--set", "image.tag="+operatorImageTag())
	const crd = "openbaoclusters.openbao.baokeeper.dev"
	Expect(kubectl(ctx, "get", "crd", crd, "-o", "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.audit}")).
		To(BeEmpty(), "chart 0.1.0's CRD has no spec.audit")

	By("upgrading the release to this chart, after the CRD adoption that its README asks for")
	kubectl(ctx, "label", "crd", crd, "app.kubernetes.io/managed-by=Helm", "--overwrite")
	kubectl(ctx, "annotate", "crd", crd, "meta.helm.sh/release-name=baokeeper", "meta.helm.sh/release-namespace="+operatorNS, "--overwrite")
	helm(ctx, "upgrade", "baokeeper", filepath.Join(root, "charts", "baokeeper"), "--namespace", operatorNS,
		"--set", "leaderElection.leaseDuration=6s,leaderElection.renewDeadline=4s,leaderElection.retryPeriod=1s",
		"--set", "excludeNamespaces={"+strings.Join(chartNamespaces, ",")+"}",
		"--wait", "--timeout", "3m")
	kubectl(ctx, "-n", operatorNS, "rollout", "status", "deployment/baokeeper", "--timeout=120s")
	Expect(kubectl(ctx, "get", "crd", crd, "-o", "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.audit.type}")).
		To(Equal("object"), "helm upgrade applied this chart's CRD (spec.audit is new since 0.1.0)")
	Expect(kubectl(ctx, "get", "crd", crd, "-o", "jsonpath={.metadata.annotations.helm\\.sh/resource-policy}")).To(Equal("keep"))
}

// operatorImageTag is the tag of the image under test: the chart's appVersion.
func operatorImageTag() string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(root, "charts", "baokeeper", "Chart.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	Fail("charts/baokeeper/Chart.yaml has no appVersion")
	return ""
}

// installChartOperator installs charts/baokeeper as release chartRelease in
// chartOperatorNS, watching chartNamespaces (created first: the chart puts its
// Roles there), and waits for its Deployment to be available. The release is
// uninstalled when the calling container ends.
func installChartOperator(ctx context.Context) {
	GinkgoHelper()
	for _, n := range chartNamespaces {
		createNamespace(ctx, n)
	}
	By("installing baokeeper with the Helm chart into " + chartOperatorNS + ", watching " + strings.Join(chartNamespaces, ","))
	helm(ctx, "install", chartRelease, filepath.Join(root, "charts", "baokeeper"),
		"--namespace", chartOperatorNS, "--create-namespace",
		// The suite's release owns the CRD.
		"--set", "crds.install=false",
		"--set", "watchNamespaces={"+strings.Join(chartNamespaces, ",")+"}",
		"--set", fmt.Sprintf("metrics.port=%d,healthProbe.port=%d", chartMetricsPort, chartProbePort),
		"--wait", "--timeout", "2m")
	DeferCleanup(func(ctx SpecContext) {
		helm(ctx, "uninstall", chartRelease, "--namespace", chartOperatorNS, "--wait", "--timeout", "1m")
	}, NodeTimeout(2*time.Minute))

	By("checking that the chart granted nothing cluster-wide on namespaced objects")
	out := kubectl(ctx, "get", "clusterrolebindings", "-l", "app.kubernetes.io/instance="+chartRelease,
		"-o", "jsonpath={range .items[*]}{.roleRef.name}{\"\\n\"}{end}")
	for _, role := range strings.Fields(out) {
		rules := kubectl(ctx, "get", "clusterrole", role, "-o", "jsonpath={range .rules[*]}{.resources}{\"\\n\"}{end}")
		for _, line := range strings.Split(strings.TrimSpace(rules), "\n") {
			Expect(line).To(Or(BeEmpty(), ContainSubstring("tokenreviews"), ContainSubstring("subjectaccessreviews")),
				"ClusterRole %s of the chart grants %s cluster-wide", role, line)
		}
	}
}

// expectChartOperatorManages checks that the chart's operator, not the suite's,
// reconciles the clusters of namespace: it logged creating their StatefulSet, and
// no pod of the suite's operator (the rig keeps the logs of deleted pods too) ever
// logged anything of that namespace.
func expectChartOperatorManages(namespace string) {
	GinkgoHelper()
	key := fmt.Sprintf(`"namespace":%q`, namespace)
	Expect(operatorLogLines(chartOperatorNS, "Creating StatefulSet", key)).NotTo(BeEmpty(),
		"the chart's operator created the StatefulSet of %s", namespace)
	started := operatorLogLines(chartOperatorNS, "Watching OpenBaoClusters in these namespaces only")
	Expect(started).NotTo(BeEmpty(), "the chart's operator logs the namespaces it watches")
	for _, line := range started {
		var entry struct {
			WatchNamespaces []string `json:"watchNamespaces"`
		}
		Expect(json.Unmarshal([]byte(line), &entry)).To(Succeed(), line)
		Expect(entry.WatchNamespaces).To(ContainElement(namespace), line)
	}
	excluding := operatorLogLines(operatorNS, "Watching OpenBaoClusters in every namespace except these")
	Expect(excluding).NotTo(BeEmpty(), "the suite's operator logs the namespaces it leaves alone")
	for _, line := range excluding {
		var entry struct {
			ExcludeNamespaces []string `json:"excludeNamespaces"`
		}
		Expect(json.Unmarshal([]byte(line), &entry)).To(Succeed(), line)
		Expect(entry.ExcludeNamespaces).To(ContainElement(namespace), "the suite's operator must leave %s alone: %s", namespace, line)
	}
	Expect(operatorLogLines(operatorNS, key)).To(BeEmpty(), "the suite's operator never logged anything of %s", namespace)
}

// operatorLogLines returns the lines of every operator pod's log in namespace that
// contain all of subs.
func operatorLogLines(namespace string, subs ...string) []string {
	GinkgoHelper()
	logs, err := filepath.Glob(filepath.Join(rigDir, "nodes", "pods", namespace+"_*", "manager.log"))
	Expect(err).NotTo(HaveOccurred())
	Expect(logs).NotTo(BeEmpty(), "no operator log in %s", namespace)
	var out []string
	for _, l := range logs {
		b, err := os.ReadFile(l)
		Expect(err).NotTo(HaveOccurred())
	lines:
		for _, line := range strings.Split(string(b), "\n") {
			for _, s := range subs {
				if !strings.Contains(line, s) {
					continue lines
				}
			}
			out = append(out, line)
		}
	}
	return out
}

// helm runs helm (bin/helm-<version>, built by make helm-bins) against the rig.
func helm(ctx context.Context, args ...string) string {
	GinkgoHelper()
	bin := os.Getenv("HELM_BIN")
	if bin == "" {
		bins, _ := filepath.Glob(filepath.Join(root, "bin", "helm-v*"))
		Expect(bins).NotTo(BeEmpty(), "no helm in bin/: run make helm-bins, or set HELM_BIN")
		bin = bins[len(bins)-1]
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	// helm keeps its cache and configuration under HOME unless told otherwise.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(rigDir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(rigDir, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(rigDir, "helm", "data"))
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "helm %v: %s", args, out)
	return string(out)
}

// kubectlBao runs the kubectl plugin (bin/kubectl-bao) against the rig and returns
// its standard output; it fails the spec on a non-zero exit.
func kubectlBao(ctx context.Context, args ...string) string {
	GinkgoHelper()
	out, stderr, err := runKubectlBao(ctx, args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl bao %v: %s%s", args, out, stderr)
	return out
}

// runKubectlBao runs the plugin and returns its standard output and error.
// kubectlBaoResult is what one kubectl bao run printed and returned.
type kubectlBaoResult struct {
	out, stderr string
	err         error
}

// kubectlBaoAsync runs kubectl bao in the background (a --wait that the spec acts
// beside: it kills the operator, or restarts a member as asked); the channel
// receives its result.
func kubectlBaoAsync(ctx context.Context, args ...string) <-chan kubectlBaoResult {
	done := make(chan kubectlBaoResult, 1)
	go func() {
		defer GinkgoRecover()
		out, stderr, err := runKubectlBao(ctx, args...)
		done <- kubectlBaoResult{out, stderr, err}
	}()
	return done
}

func runKubectlBao(ctx context.Context, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "kubectl-bao"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}
