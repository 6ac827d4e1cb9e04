//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

const freezeNS = "e2e-operator-freeze"

// leaseHolderPod is the operator pod that holds the leader-election Lease (its
// identity is <pod>_<uid>).
func leaseHolderPod(ctx context.Context, g Gomega) string {
	l, err := cs.CoordinationV1().Leases(operatorNS).Get(ctx, operatorLease, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	holder, _, _ := strings.Cut(ptrValue(l.Spec.HolderIdentity), "_")
	g.Expect(holder).NotTo(BeEmpty(), "nobody holds the lease")
	return holder
}

// restartsOf is the restart count of the manager container of an operator pod.
func restartsOf(ctx context.Context, g Gomega, pod string) int32 {
	p, err := cs.CoreV1().Pods(operatorNS).Get(ctx, pod, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// secondOperator is the name of a second operator Deployment, a copy of the suite's
// with other ports: the rig's pods share one network stack, so two replicas of one
// Deployment would both listen on the same ports. It is a second replica in every way
// that matters here: the same image, service account, arguments and lease.
const secondOperator = "baokeeper-second"

// startSecondOperator runs secondOperator and waits until its pod is Ready; the
// returned function deletes it and waits until the suite's operator holds the lease
// again.
func startSecondOperator(ctx context.Context) func() {
	GinkgoHelper()
	orig, err := cs.AppsV1().Deployments(operatorNS).Get(ctx, "baokeeper", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: secondOperator, Namespace: operatorNS, Labels: orig.Labels}}
	d.Spec = *orig.Spec.DeepCopy()
	one := int32(1)
	d.Spec.Replicas = &one
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "baokeeper", "e2e.baokeeper.dev/replica": "second"}}
	d.Spec.Template.Labels = map[string]string{"app.kubernetes.io/name": "baokeeper", "e2e.baokeeper.dev/replica": "second"}
	ctr := &d.Spec.Template.Spec.Containers[0]
	for i, a := range ctr.Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			ctr.Args[i] = "--metrics-bind-address=:" + secondMetricsPort
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			ctr.Args[i] = "--health-probe-bind-address=:" + secondProbePort
		}
	}
	for i := range ctr.Ports {
		switch ctr.Ports[i].Name {
		case "metrics":
			ctr.Ports[i].ContainerPort = mustAtoi32(secondMetricsPort)
		case "probes":
			ctr.Ports[i].ContainerPort = mustAtoi32(secondProbePort)
		}
	}
	_, err = cs.AppsV1().Deployments(operatorNS).Create(ctx, d, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	kubectl(ctx, "-n", operatorNS, "rollout", "status", "deployment/"+secondOperator, "--timeout=120s")
	return func() {
		ctx := context.Background()
		Expect(cs.AppsV1().Deployments(operatorNS).Delete(ctx, secondOperator, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			pods, err := cs.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{LabelSelector: "e2e.baokeeper.dev/replica=second"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(BeEmpty(), "the second operator's pod is gone")
			g.Expect(leaseHolderPod(ctx, g)).To(HavePrefix("baokeeper-"))
			g.Expect(leaseHolderPod(ctx, g)).NotTo(HavePrefix(secondOperator))
		}, 2*time.Minute, pollEvery).Should(Succeed(), "the suite's operator holds the lease again")
	}
}

const (
	secondMetricsPort = "9443"
	secondProbePort   = "9081"
)

func mustAtoi32(s string) int32 {
	GinkgoHelper()
	n, err := strconv.Atoi(s)
	Expect(err).NotTo(HaveOccurred())
	return int32(n)
}

// Serial: it runs a second operator replica, which the specs that kill the one
// operator pod must not see. A fault: the replica that leads is frozen (SIGSTOP) in
// the middle of a rolling upgrade, the second replica takes the lease over and
// finishes the upgrade, and the frozen one wakes up with a cache and a pass from
// before. It is woken as soon as the successor holds the lease, while the upgrade
// still runs. Expected: the woken replica finds its lease gone and exits
// (controller-runtime stops the manager when leadership is lost), and the upgrade
// completes under the successor with one election, no write lost and every member
// replaced exactly once (a stale pass of the woken replica that deleted a member
// again would show).
var _ = Describe("An operator replica frozen mid-upgrade while a second replica takes over, then woken", Serial, Ordered, SpecPriority(-500), func() {
	var tc *testCluster
	ctx := context.Background()

	BeforeAll(func() {
		By("running a second operator replica, leader election on")
		DeferCleanup(startSecondOperator(ctx))
		tc = newTestCluster(ctx, freezeNS, 3)
		DeferCleanup(func() { deleteNamespace(context.Background(), freezeNS) })
	})

	It("completes the upgrade under the second replica with one election, and the woken replica exits without touching the cluster", func() {
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil(), c.Status.Message)
			g.Expect(c.Status.Upgrade.CurrentStep).NotTo(BeNil(), c.Status.Message)
		}, 2*time.Minute, 50*time.Millisecond).Should(Succeed())

		frozen := leaseHolderPod(ctx, Default)
		pids := operatorPIDs(frozen)
		Expect(pids).NotTo(BeEmpty(), "no baokeeper process in %s", frozen)
		restarts := restartsOf(ctx, Default, frozen)
		By("freezing the leading replica " + frozen)
		thaw := freezePIDs(pids)
		frozenAt := time.Now()

		var successor string
		Eventually(func(g Gomega) {
			successor = leaseHolderPod(ctx, g)
			g.Expect(successor).NotTo(Equal(frozen))
		}, time.Minute, 200*time.Millisecond).Should(Succeed(), "the second replica takes the lease over")
		tookOver := time.Since(frozenAt)

		// Woken at once, while the upgrade still runs under the successor (and well
		// before the liveness probe, 3 failures 10 s apart, would restart it).
		By("waking " + frozen + " up while the upgrade runs under " + successor)
		thaw()
		Eventually(func(g Gomega) {
			g.Expect(restartsOf(ctx, g, frozen)).To(BeNumerically(">", restarts), "the woken replica exits once it finds its lease gone")
		}, time.Minute, pollEvery).Should(Succeed())
		exited := time.Since(frozenAt)
		tc.waitUpgraded(ctx, "2.4.1", 6*time.Minute)
		Expect(leaseHolderPod(ctx, Default)).To(Equal(successor), "the lease stayed with the successor")
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("rolling upgrade, the leading operator replica frozen mid-way and woken after",
			fmt.Sprintf("%s frozen, %s took the lease over after %s, the woken replica exited %s after the freeze", frozen, successor,
				tookOver.Round(100*time.Millisecond), exited.Round(100*time.Millisecond)))
		res.expectClean(tc, 1, "2.4.1")
		tc.expectAllOn(ctx, "2.4.1")
	})
})
