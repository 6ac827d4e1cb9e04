package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/baokeeper/baokeeper/test/testenv"
)

// The chart is checked with Helm 4; users still on Helm 3 must be able to install it
// too (a chart of apiVersion v2, a JSON schema both majors read, no Helm 4-only
// template function). Helm 3 is built beside Helm 4 (hack/build-bins.sh helm).
var _ = Describe("the chart under Helm 3", Ordered, func() {
	var helm3 string
	BeforeAll(func() {
		helm3 = os.Getenv("HELM3_BIN")
		if helm3 == "" {
			bins, _ := filepath.Glob(filepath.Join(root, "bin", "helm-v3.*"))
			if len(bins) > 0 {
				helm3 = bins[len(bins)-1]
			}
		}
		if _, err := os.Stat(helm3); helm3 == "" || err != nil {
			why := "Helm 3 is not built: run `make helm-bins` (make test does)"
			if testenv.Required() {
				Fail(why)
			}
			Skip(why)
		}
		out, err := exec.Command(helm3, "version", "--short").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(HavePrefix("v3."), "HELM3_BIN is not Helm 3")
	})

	It("passes Helm 3's lint with every value set", func() {
		for name, args := range valueSets {
			out, err := exec.Command(helm3, append([]string{"lint", "--strict", chart}, args...)...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "helm 3 lint (%s): %s", name, out)
		}
	})

	It("renders exactly what Helm 4 renders, with every value set", func() {
		for name, args := range valueSets {
			tmpl := func(bin string) []*unstructured.Unstructured {
				cmd := exec.Command(bin, append([]string{"template", "baokeeper", chart, "--namespace", "baokeeper-system"}, args...)...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				Expect(err).NotTo(HaveOccurred(), "%s template (%s): %s", bin, name, stderr.String())
				return decodeObjects(out)
			}
			v3, v4 := tmpl(helm3), tmpl(helm)
			// The metrics endpoint's generated CA and certificate differ at every render.
			for _, objs := range [][]*unstructured.Unstructured{v3, v4} {
				for _, o := range objs {
					if o.GetKind() == "Secret" && strings.HasSuffix(o.GetName(), "-metrics-tls") {
						unstructured.RemoveNestedField(o.Object, "data")
					}
				}
			}
			Expect(kinds(v3)).To(Equal(kinds(v4)), "%s: Helm 3 and Helm 4 render other objects", name)
			for i := range v4 {
				Expect(v3[i].Object).To(Equal(v4[i].Object), "%s: Helm 3 renders %s otherwise", name, kinds(v4)[i])
			}
		}
	})

	It("refuses an unknown value under Helm 3 too (values.schema.json)", func() {
		out, err := exec.Command(helm3, "template", "baokeeper", chart, "--set", "replica=2").CombinedOutput()
		Expect(err).To(HaveOccurred(), "an unknown key was accepted: %s", out)
		Expect(string(out)).To(ContainSubstring("replica"))
	})

	It("installs, upgrades and uninstalls a release against a real API server", func(ctx SpecContext) {
		const ns, release = "team-b", "baokeeper-h3"
		key := client.ObjectKey{Namespace: ns, Name: release}
		// Namespace mode in team-b, and no CRD: the suite's CRD belongs to another
		// release (the upgrade spec's), which a second owner would be refused.
		helmRunWith(helm3, "install", release, chart, "--namespace", ns, "--set", "watchNamespaces={team-b},crds.install=false")
		d := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, key, d)).To(Succeed())
		Expect(*d.Spec.Replicas).To(BeEquivalentTo(1))
		Expect(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")).To(ContainSubstring("--watch-namespaces=team-b"))

		helmRunWith(helm3, "upgrade", release, chart, "--namespace", ns, "--reuse-values", "--set", "replicas=2")
		Expect(k8s.Get(ctx, key, d)).To(Succeed())
		Expect(*d.Spec.Replicas).To(BeEquivalentTo(2), "helm 3 upgrade applied the new value")

		helmRunWith(helm3, "uninstall", release, "--namespace", ns)
		err := k8s.Get(ctx, key, d)
		Expect(apierrors.IsNotFound(err) || !d.DeletionTimestamp.IsZero()).To(BeTrue(), "the Deployment is gone with the release: %v", err)
	})
})
