package openbaocluster_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Inputs of docs/bad-inputs.md that only the API server can refuse: names that the
// derived objects cannot carry, and changes at the wrong moment.
var _ = Describe("Bad inputs refused by the API server", func() {
	var ns string
	ctx := context.Background()

	BeforeEach(func() { ns = newNamespace(ctx) })

	DescribeTable("refuses a name baokeeper cannot derive its objects' names from",
		func(name string) {
			err := k8s.Create(ctx, newCluster(ns, name))
			Expect(err).To(HaveOccurred(), "bug: %q was accepted, then stuck at Pending without naming the error", name)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring("metadata.name must be at most 40 characters of lower-case letters, digits and '-'"))
		},
		Entry("a dot", "my.bao"),
		Entry("41 characters", "b"+strings.Repeat("a", 40)),
		Entry("a leading digit", "1bao"),
	)

	It("accepts a name of 40 characters", func() {
		Expect(k8s.Create(ctx, newCluster(ns, "b"+strings.Repeat("a", 39)))).To(Succeed())
	})

	It("refuses a replicas change while an upgrade runs, and a version change while the cluster scales", func() {
		c := newCluster(ns, "moment")
		Expect(k8s.Create(ctx, c)).To(Succeed())

		By("marking an upgrade as running in status")
		setStatus(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1"}
		})
		err := tryUpdate(ctx, c, func(cur *baov1.OpenBaoCluster) { five := int32(5); cur.Spec.Replicas = &five })
		Expect(err).To(HaveOccurred(), "bug: replicas changed mid-upgrade made planned pods vanish or new members start outside the plan")
		Expect(err.Error()).To(ContainSubstring("spec.replicas cannot change while an upgrade runs (status.upgrade is set): wait for the upgrade to finish, then scale"))

		By("marking a scaling operation as running instead")
		setStatus(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Status.Upgrade = nil
			cur.Status.Scaling = &baov1.ScalingStatus{ID: "0a1b2c3d", FromReplicas: 3, TargetReplicas: 5}
		})
		err = tryUpdate(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Version = "2.4.1" })
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.version cannot change while the cluster scales (status.scaling is set)"))

		By("changing replicas again while it scales: allowed, the operation re-plans toward the new value")
		Expect(tryUpdate(ctx, c, func(cur *baov1.OpenBaoCluster) { five := int32(5); cur.Spec.Replicas = &five })).To(Succeed())
	})
})

func setStatus(ctx context.Context, c *baov1.OpenBaoCluster, mutate func(*baov1.OpenBaoCluster)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := getCluster(ctx, c)
		mutate(cur)
		return k8s.Status().Update(ctx, cur)
	})).To(Succeed())
}

// tryUpdate applies mutate to the current object and returns the API server's
// answer, retrying only conflicts.
func tryUpdate(ctx context.Context, c *baov1.OpenBaoCluster, mutate func(*baov1.OpenBaoCluster)) error {
	var err error
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := getCluster(ctx, c)
		mutate(cur)
		err = k8s.Update(ctx, cur)
		if apierrors.IsConflict(err) {
			return err
		}
		return nil
	})).To(Succeed())
	return err
}
