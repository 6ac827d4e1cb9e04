package openbaocluster_test

import (
	"context"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

const crdName = "openbaoclusters.openbao.baokeeper.dev"

// rawCluster builds an OpenBaoCluster from JSON, so that a spec can carry values a
// typed client cannot express (a duration without a unit, a number as a string).
func rawCluster(ns, name, specJSON string) *unstructured.Unstructured {
	GinkgoHelper()
	spec := map[string]any{}
	Expect(json.Unmarshal([]byte(specJSON), &spec)).To(Succeed())
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": baov1.GroupVersion.String(), "kind": "OpenBaoCluster",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     spec,
	}}
	return u
}

// These specs send raw JSON to the real API server: they prove that every duration
// field is refused, with a message that names the field and gives an example, before
// it can reach the operator.
var _ = Describe("Duration fields", func() {
	var ns string
	ctx := context.Background()

	BeforeEach(func() { ns = newNamespace(ctx) })

	DescribeTable("are refused by the API server when they make no sense",
		func(specJSON string, wantMsg ...string) {
			err := k8s.Create(ctx, rawCluster(ns, "bad", specJSON))
			Expect(err).To(HaveOccurred(), "the API server accepted %s", specJSON)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			for _, m := range wantMsg {
				Expect(err.Error()).To(ContainSubstring(m))
			}
		},
		Entry("settleTime without a unit", `{"version":"2.4.0","upgrade":{"rolling":{"settleTime":"10"}}}`,
			"spec.upgrade.rolling.settleTime must be a duration with a unit, for example 10s"),
		Entry("stepTimeout without a unit", `{"version":"2.4.0","upgrade":{"rolling":{"stepTimeout":"600"}}}`,
			"spec.upgrade.rolling.stepTimeout must be a duration with a unit, for example 10m"),
		Entry("stepTimeout negative", `{"version":"2.4.0","upgrade":{"rolling":{"stepTimeout":"-5m"}}}`,
			"spec.upgrade.rolling.stepTimeout must be greater than 0s"),
		Entry("stepTimeout zero", `{"version":"2.4.0","upgrade":{"rolling":{"stepTimeout":"0s"}}}`,
			"spec.upgrade.rolling.stepTimeout must be greater than 0s"),
		Entry("settleTime negative", `{"version":"2.4.0","upgrade":{"rolling":{"settleTime":"-1s"}}}`,
			"spec.upgrade.rolling.settleTime must not be negative"),
		Entry("stepTimeout in words", `{"version":"2.4.0","upgrade":{"rolling":{"stepTimeout":"ten minutes"}}}`,
			"spec.upgrade.rolling.stepTimeout must be a duration with a unit"),
		Entry("stepTimeout with a unit Go does not know", `{"version":"2.4.0","upgrade":{"rolling":{"stepTimeout":"1d"}}}`,
			"spec.upgrade.rolling.stepTimeout must be a duration with a unit"),
		Entry("maxAge without a unit", `{"version":"2.4.0","upgrade":{"preUpgradeSnapshot":{"policy":"IfOlderThan","maxAge":"3600"}}}`,
			"spec.upgrade.preUpgradeSnapshot.maxAge must be a duration with a unit, for example 1h"),
		Entry("maxAge zero", `{"version":"2.4.0","upgrade":{"preUpgradeSnapshot":{"policy":"IfOlderThan","maxAge":"0s"}}}`,
			"spec.upgrade.preUpgradeSnapshot.maxAge must be greater than 0s"),
		Entry("minSyncDuration without a unit", `{"version":"2.4.0","upgrade":{"blueGreen":{"minSyncDuration":"60"}}}`,
			"spec.upgrade.blueGreen.minSyncDuration must be a duration with a unit, for example 1m"),
		Entry("validation hook timeout without a unit", `{"version":"2.4.0","upgrade":{"blueGreen":{"validationHook":{"image":"busybox:1.37","timeout":"300"}}}}`,
			"spec.upgrade.blueGreen.validationHook.timeout must be a duration with a unit, for example 5m"),
		Entry("validation hook timeout zero", `{"version":"2.4.0","upgrade":{"blueGreen":{"validationHook":{"image":"busybox:1.37","timeout":"0s"}}}}`,
			"spec.upgrade.blueGreen.validationHook.timeout must be greater than 0s"),
		Entry("certificateDuration without a unit", `{"version":"2.4.0","tls":{"certificateDuration":"90"}}`,
			"spec.tls.certificateDuration must be a duration with a unit, for example 2160h"),
		Entry("renewBefore zero", `{"version":"2.4.0","tls":{"renewBefore":"0s"}}`,
			"spec.tls.renewBefore must be greater than 0s"),
		Entry("a number instead of a string", `{"version":"2.4.0","upgrade":{"rolling":{"settleTime":10}}}`,
			"spec.upgrade.rolling.settleTime", "must be of type string"),
	)

	DescribeTable("are accepted when they parse",
		func(specJSON string) {
			Expect(k8s.Create(ctx, rawCluster(ns, "ok", specJSON))).To(Succeed())
		},
		Entry("settleTime 0s (no wait)", `{"version":"2.4.0","upgrade":{"rolling":{"settleTime":"0s","stepTimeout":"90s"}}}`),
		Entry("compound and fractional", `{"version":"2.4.0","upgrade":{"rolling":{"settleTime":"1.5s","stepTimeout":"1h30m"}}}`),
		Entry("milliseconds", `{"version":"2.4.0","upgrade":{"rolling":{"settleTime":"500ms"}}}`),
	)
})

// An object stored before the CRD validated durations still reaches the operator.
// One such object must stop only its own cluster, never the informer that serves
// every cluster (the bug: "time: missing unit in duration" failed the list, and no
// cluster of the installation was reconciled until the object was deleted).
var _ = Describe("An OpenBaoCluster stored before durations were validated", Ordered, func() {
	ctx := context.Background()
	var badNS, goodNS string

	BeforeAll(func() {
		badNS, goodNS = newNamespace(ctx), newNamespace(ctx)

		By("relaxing the CRD to what an earlier release served: no rule on settleTime")
		original := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: crdName}, original)).To(Succeed())
		setSettleTimeRules(ctx, nil)
		DeferCleanup(func() {
			By("restoring the CRD")
			setSettleTimeRules(ctx, settleTimeRules(original))
			Eventually(func() error {
				err := k8s.Create(ctx, rawCluster(goodNS, "probe-after", `{"version":"2.4.0","upgrade":{"rolling":{"settleTime":"10"}}}`))
				if err == nil {
					return errorString("the restored CRD still accepts a unitless settleTime")
				}
				return nil
			}, timeout, interval).Should(Succeed())
		})

		By("storing a cluster whose settleTime has no unit")
		Eventually(func() error {
			return k8s.Create(ctx, rawCluster(badNS, "old", `{"version":"2.4.0","upgrade":{"rolling":{"settleTime":"10"}}}`))
		}, timeout, interval).Should(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, rawCluster(badNS, "old", `{}`)))).To(Succeed())
		})
	})

	It("keeps serving every other cluster: a new one is reconciled and its pause takes effect", func() {
		good := newCluster(goodNS, "healthy")
		Expect(k8s.Create(ctx, good)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: goodNS, Name: "healthy"}, &appsv1.StatefulSet{})).To(Succeed())
		}, timeout, interval).Should(Succeed())
		updateCluster(ctx, good, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Paused = true })
		Eventually(func(g Gomega) {
			c := getCluster(ctx, good)
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, string(baov1.ConditionUpgradePaused))).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})

	It("refuses only that cluster, naming the field and how to write it, and creates nothing for it", func() {
		Eventually(func(g Gomega) {
			c := &baov1.OpenBaoCluster{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: badNS, Name: "old"}, c)).To(Succeed())
			cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionSpecValid))
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(BeEquivalentTo("False"))
			g.Expect(cond.Reason).To(Equal(string(baov1.ReasonInvalidDuration)))
			g.Expect(cond.Message).To(ContainSubstring(`spec.upgrade.rolling.settleTime "10" is not a duration with a unit: write it like 10s or 5m`))
			g.Expect(c.Status.Message).To(Equal(cond.Message))
		}, timeout, interval).Should(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: badNS, Name: "old"}, &appsv1.StatefulSet{}))
		}, "2s").Should(BeTrue(), "no StatefulSet may be created for a refused spec")
	})
})

type errorString string

func (e errorString) Error() string { return string(e) }

func settleTimeSchema(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, p := range strings.Split("spec.upgrade.rolling.settleTime", ".") {
		next := s.Properties[p]
		s = &next
	}
	return s
}

func settleTimeRules(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.ValidationRules {
	return settleTimeSchema(crd).XValidations
}

// setSettleTimeRules replaces the CEL rules of spec.upgrade.rolling.settleTime.
func setSettleTimeRules(ctx context.Context, rules apiextensionsv1.ValidationRules) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			return err
		}
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		spec := root.Properties["spec"]
		up := spec.Properties["upgrade"]
		rolling := up.Properties["rolling"]
		st := rolling.Properties["settleTime"]
		st.XValidations = rules
		rolling.Properties["settleTime"] = st
		up.Properties["rolling"] = rolling
		spec.Properties["upgrade"] = up
		root.Properties["spec"] = spec
		return k8s.Update(ctx, crd)
	})).To(Succeed())
}
