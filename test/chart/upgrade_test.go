package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// previousChart is chart 0.1.0 as released (session 11's commit 0f1b206), packaged:
// its CRD sits in crds/, which Helm applies once and never upgrades.
var previousChart = filepath.Join(root, "test", "chart", "testdata", "baokeeper-0.1.0.tgz")

const crdName = "openbaoclusters.openbao.baokeeper.dev"

// helmRun runs helm against the suite's API server (real helm installs; the API
// server has no controllers, so nothing runs: the objects and the CRD are the point).
func helmRun(args ...string) string {
	GinkgoHelper()
	return helmRunWith(helm, args...)
}

// helmRunWith is helmRun with another helm binary (Helm 3).
func helmRunWith(bin string, args ...string) string {
	GinkgoHelper()
	home := GinkgoT().TempDir()
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "helm %v: %s", args, out)
	return string(out)
}

func liveCRD(ctx context.Context) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	Expect(k8s.Get(ctx, client.ObjectKey{Name: crdName}, u)).To(Succeed())
	return u
}

// endpointRules are the CEL rules of spec.upgrade.preUpgradeSnapshot.s3.endpoint, which
// chart 0.1.0's CRD does not have (bad-inputs rows 83 and 84).
func endpointRules(crd *unstructured.Unstructured) int {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	rules, _, _ := unstructured.NestedSlice(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties",
		"upgrade", "properties", "preUpgradeSnapshot", "properties", "s3", "properties", "endpoint", "x-kubernetes-validations")
	return len(rules)
}

var _ = Describe("upgrading the chart", Ordered, func() {
	It("from 0.1.0: the CRD is adopted as the README says, and helm upgrade applies its changes", func(ctx SpecContext) {
		By("starting from chart 0.1.0 on an API server without the CRD, as a first install would")
		crd := liveCRD(ctx)
		Expect(k8s.Delete(ctx, crd)).To(Succeed())
		Eventually(func() bool {
			err := k8s.Get(ctx, client.ObjectKey{Name: crdName}, crd.DeepCopy())
			return apierrors.IsNotFound(err)
		}, time.Minute, 200*time.Millisecond).Should(BeTrue())
		helmRun("install", "old", previousChart, "--namespace", "upgrade-test", "--create-namespace")
		Expect(endpointRules(liveCRD(ctx))).To(BeZero(), "chart 0.1.0's CRD has no rules on the S3 endpoint")

		By("helm upgrade to this chart without the adoption: Helm refuses to take over the CRD")
		cmd := exec.Command(helm, "--kubeconfig", kubeconfig, "upgrade", "old", chart, "--namespace", "upgrade-test")
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+GinkgoT().TempDir(), "HELM_CONFIG_HOME="+GinkgoT().TempDir(), "HELM_DATA_HOME="+GinkgoT().TempDir())
		out, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred(), "helm upgraded without the adoption: %s", out)
		Expect(string(out)).To(ContainSubstring(crdName))

		By("the README's adoption, then helm upgrade")
		live := liveCRD(ctx)
		labels := live.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["app.kubernetes.io/managed-by"] = "Helm"
		live.SetLabels(labels)
		ann := live.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["meta.helm.sh/release-name"], ann["meta.helm.sh/release-namespace"] = "old", "upgrade-test"
		live.SetAnnotations(ann)
		Expect(k8s.Update(ctx, live)).To(Succeed())
		helmRun("upgrade", "old", chart, "--namespace", "upgrade-test")

		after := liveCRD(ctx)
		Expect(endpointRules(after)).To(Equal(2), "helm upgrade applied the new CRD")
		Expect(after.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))

		By("helm uninstall keeps the CRD")
		helmRun("uninstall", "old", "--namespace", "upgrade-test")
		Expect(liveCRD(ctx).GetName()).To(Equal(crdName))
		history := helmRun("list", "--all-namespaces")
		Expect(strings.Contains(history, "old")).To(BeFalse(), history)
	})
})
