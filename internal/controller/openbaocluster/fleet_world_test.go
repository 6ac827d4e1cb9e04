package openbaocluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
)

// The order of upgrades across clusters, maintenance windows and the history, each
// driven pass by pass against a real API server with the world's fake clock: a
// window that opens or closes, or a soak that ends, is a clock set forward, never a
// sleep.
var _ = Describe("Upgrading a fleet: windows, order and history", Ordered, func() {
	var k client.WithWatch
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())

	BeforeAll(func() { k = isolatedAPIServer() })

	It("plans a version change outside every window, waits until the window opens, and upgrades inside it", func() {
		w := fleetWorld(ctx, k, "window-start", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 1 * * *", Duration: "1h"}} // the world starts at 00:00
		})
		setVersion(ctx, k, w, restartTo)
		w.passes(ctx, k, 6)
		c := w.get(ctx)
		Expect(w.deletions()).To(BeEmpty(), "nothing is touched outside the window")
		Expect(c.Status.OperationLock).To(BeNil())
		pc := prechecked(c, fleet.PrecheckWindow)
		Expect(pc.Result).To(Equal(baov1.PrecheckPending))
		Expect(pc.Message).To(ContainSubstring("waits until the next opens at 2026-01-01T01:00:00Z"))
		Expect(c.Status.Upgrade.WaitingFor).To(ContainSubstring("MaintenanceWindow"))
		Expect(c.Status.Window).NotTo(BeNil())
		Expect(c.Status.Window.Open).To(BeFalse())
		Expect(c.Status.Window.OpensAt.Time).To(BeTemporally("==", time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)))

		w.clock.SetTime(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))
		opened := w.pass
		w.untilDone(ctx, k)
		c = w.get(ctx)
		Expect(c.Status.CurrentVersion).To(Equal(restartTo))
		Expect(w.deletions()).To(HaveLen(3))
		for _, d := range w.deletions() {
			Expect(d.pass).To(BeNumerically(">=", opened), "%s deleted before the window opened", d.member)
		}
		Expect(c.Status.History).To(HaveLen(1))
		Expect(c.Status.History[0].Outcome).To(Equal(baov1.OutcomeSucceeded))
		Expect(c.Status.Window.Open).To(BeTrue())
	})

	It("pauses at the next safe point when the window closes mid-way, and finishes in the next window", func() {
		// A reference run says when the first member's pod is deleted (the worlds are
		// deterministic); the window then closes right after that pass.
		ref := fleetWorld(ctx, k, "window-close-ref", nil)
		setVersion(ctx, k, ref, restartTo)
		for len(ref.deletions()) == 0 {
			ref.passes(ctx, k, 1)
		}
		midnight := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		open := ref.clock.Now().Sub(midnight)
		w := fleetWorld(ctx, k, "window-close", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 0 * * *", Duration: baov1.Duration(open.String())}}
		})
		setVersion(ctx, k, w, restartTo)
		for len(w.deletions()) == 0 {
			w.passes(ctx, k, 1)
		}
		Expect(w.clock.Now()).To(BeTemporally("==", midnight.Add(open)), "the window closes now")
		w.passes(ctx, k, 12)
		c := w.get(ctx)
		Expect(c.Status.Upgrade).NotTo(BeNil())
		held := len(w.deletions())
		Expect(held).To(Equal(1), "the member in progress finished, and no other was started")
		Expect(c.Status.Upgrade.CurrentStep).To(BeNil(), "held between two members: %+v", c.Status.Upgrade)
		Expect(c.Status.Upgrade.WaitingFor).To(ContainSubstring("the maintenance window closed (spec.upgrade.windowEnd: Pause): holding until the next opens at 2026-01-02T00:00:00Z"))
		Expect(c.Status.OperationLock).NotTo(BeNil(), "it keeps the lock while it holds")

		w.passes(ctx, k, 10)
		Expect(w.deletions()).To(HaveLen(held), "nothing more is touched while the window is closed")

		w.clock.SetTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
		w.untilDone(ctx, k)
		c = w.get(ctx)
		Expect(c.Status.CurrentVersion).To(Equal(restartTo))
		Expect(w.deletions()).To(HaveLen(3), "each member replaced once")
		Expect(c.Status.History).To(HaveLen(1))
		Expect(c.Status.History[0].Outcome).To(Equal(baov1.OutcomeSucceeded))
		Expect(c.Status.History[0].EndedAt.Time).To(BeTemporally(">=", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)))
	})

	It("upgrades prod only after staging ran the version for its soak, and holds it with the reason while staging's upgrade failed", func() {
		staging := fleetWorld(ctx, k, "order-staging", nil)
		prod := fleetWorld(ctx, k, "order-prod", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "bao", Namespace: "order-staging", Soak: baov1.DurationOf(time.Hour)}}
		})
		// Both are given the new version at once.
		setVersion(ctx, k, staging, restartTo)
		setVersion(ctx, k, prod, restartTo)
		prod.passes(ctx, k, 3)
		pc := prechecked(prod.get(ctx), fleet.PrecheckOrder)
		Expect(pc.Result).To(Equal(baov1.PrecheckPending))
		Expect(pc.Message).To(ContainSubstring("waits for order-staging/bao"))

		// Staging's upgrade fails: a member does not come back within its step timeout.
		for len(staging.deletions()) == 0 {
			staging.passes(ctx, k, 1)
		}
		staging.failed[staging.deletions()[0].member] = true
		staging.passes(ctx, k, 3)
		staging.clock.Step(2 * time.Minute)
		staging.passes(ctx, k, 2)
		sc := staging.get(ctx)
		Expect(sc.Status.Upgrade.Failure).NotTo(BeNil(), "staging's upgrade failed")
		prod.passes(ctx, k, 2)
		pc = prechecked(prod.get(ctx), fleet.PrecheckOrder)
		Expect(pc.Result).To(Equal(baov1.PrecheckFailed))
		Expect(pc.Message).To(ContainSubstring("order-staging/bao's upgrade to 2.4.1 failed (StepTimeout"))
		Expect(prod.get(ctx).Status.Upgrade.WaitingFor).To(ContainSubstring("order-staging/bao's upgrade to 2.4.1 failed"))
		Expect(prod.deletions()).To(BeEmpty())

		// Fixed and retried: staging completes, as the workload loop says it is Available.
		staging.failed = map[string]bool{}
		sc = staging.get(ctx)
		sc.Annotations = map[string]string{baov1.AnnotationRetry: "1"}
		Expect(k.Update(ctx, sc)).To(Succeed())
		staging.untilDone(ctx, k)
		sc = staging.get(ctx)
		Expect(sc.Status.History).To(HaveLen(2))
		Expect(sc.Status.History[1].Outcome).To(Equal(baov1.OutcomeFailed))
		Expect(sc.Status.History[0].Outcome).To(Equal(baov1.OutcomeSucceeded))
		ended := sc.Status.History[0].EndedAt.Time
		meta.SetStatusCondition(&sc.Status.Conditions, metav1.Condition{Type: string(baov1.ConditionAvailable), Status: metav1.ConditionTrue,
			Reason: "Serving", Message: "3 of 3 members serve", LastTransitionTime: metav1.NewTime(ended.Add(-time.Hour))})
		Expect(k.Status().Update(ctx, sc)).To(Succeed())

		prod.clock.SetTime(ended.Add(30 * time.Minute))
		prod.passes(ctx, k, 2)
		pc = prechecked(prod.get(ctx), fleet.PrecheckOrder)
		Expect(pc.Result).To(Equal(baov1.PrecheckPending))
		Expect(pc.Message).To(ContainSubstring("to soak on 2.4.1: healthy for 30m"))
		Expect(pc.Message).To(ContainSubstring("of 1h0m0s, until " + ended.Add(time.Hour).UTC().Format(time.RFC3339)))
		Expect(prod.deletions()).To(BeEmpty())

		prod.clock.SetTime(ended.Add(time.Hour))
		prod.untilDone(ctx, k)
		pcx := prod.get(ctx)
		Expect(pcx.Status.CurrentVersion).To(Equal(restartTo))
		Expect(pcx.Status.History).To(HaveLen(1))
		Expect(pcx.Status.History[0].StartedAt.Time).To(BeTemporally("<", ended), "planned when its version changed")
		for _, d := range prod.deletions() {
			Expect(d.pass).To(BeNumerically(">", 0))
		}
	})

	It("reports a cycle and a name that does not exist, and starts nothing", func() {
		a := fleetWorld(ctx, k, "cycle-a", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "bao", Namespace: "cycle-b"}}
		})
		b := fleetWorld(ctx, k, "cycle-b", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "bao", Namespace: "cycle-a"}, {Name: "nope"}}
		})
		setVersion(ctx, k, a, restartTo)
		setVersion(ctx, k, b, restartTo)
		a.passes(ctx, k, 3)
		b.passes(ctx, k, 3)
		Expect(prechecked(a.get(ctx), fleet.PrecheckOrder).Message).To(ContainSubstring("spec.upgrade.after forms a cycle (cycle-a/bao → cycle-b/bao → cycle-a/bao)"))
		Expect(prechecked(b.get(ctx), fleet.PrecheckOrder).Message).To(ContainSubstring("forms a cycle (cycle-b/bao → cycle-a/bao → cycle-b/bao)"))
		Expect(a.deletions()).To(BeEmpty())
		Expect(b.deletions()).To(BeEmpty())

		// b drops a: the cycle is gone, and the missing name is what holds b now.
		bc := b.get(ctx)
		bc.Spec.Upgrade.After = bc.Spec.Upgrade.After[1:]
		Expect(k.Update(ctx, bc)).To(Succeed())
		b.passes(ctx, k, 2)
		Expect(prechecked(b.get(ctx), fleet.PrecheckOrder).Message).To(Equal(
			"spec.upgrade.after names cycle-b/nope, which does not exist: create it, or remove it from spec.upgrade.after"))
		Expect(b.deletions()).To(BeEmpty())
	})
})

// fleetWorld creates a 3-member cluster at restartFrom in namespace ns, with its
// spec changed by edit, and its world; the members are Ready and the first pass
// seeded currentVersion.
func fleetWorld(ctx context.Context, k client.WithWatch, ns string, edit func(*baov1.OpenBaoCluster)) *upgradeWorld {
	GinkgoHelper()
	c := createRestartCluster(ctx, k, ns, 3)
	if edit != nil {
		edit(c)
		Expect(k.Update(ctx, c)).To(Succeed())
	}
	w := newUpgradeWorld(k, c, 1, restartTo)
	w.step(ctx)
	w.step(ctx)
	for name, p := range w.pods {
		w.original[name] = p.UID
	}
	w.passes(ctx, k, 1)
	Expect(w.get(ctx).Status.CurrentVersion).To(Equal(restartFrom), "the first pass seeds currentVersion")
	return w
}

func setVersion(ctx context.Context, k client.Client, w *upgradeWorld, v string) {
	GinkgoHelper()
	c := w.get(ctx)
	c.Spec.Version = v
	Expect(k.Update(ctx, c)).To(Succeed())
}

// get reads the world's cluster as it is now.
func (w *upgradeWorld) get(ctx context.Context) *baov1.OpenBaoCluster {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(w.k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	return c
}

// passes runs n passes of a new upgrade reconciler, each followed by a world step.
func (w *upgradeWorld) passes(ctx context.Context, k client.WithWatch, n int) {
	GinkgoHelper()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.cluster)}
	for range n {
		w.pass++
		w.writes[w.pass] = nil
		_, err := w.reconciler(w.operatorClient(k)).Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "%s: pass %d", w.cluster.Namespace, w.pass)
		w.step(ctx)
	}
}

// untilDone runs passes until the upgrade completed, at most 100.
func (w *upgradeWorld) untilDone(ctx context.Context, k client.WithWatch) {
	GinkgoHelper()
	for range 100 {
		c := w.get(ctx)
		if c.Status.CurrentVersion == w.targetVersion && c.Status.Upgrade == nil {
			return
		}
		w.passes(ctx, k, 1)
	}
	Fail(fmt.Sprintf("%s: the upgrade did not complete in 100 passes; it waits for: %s; passes:%s", w.cluster.Namespace, waitingFor(w.get(ctx)), w.history()))
}

func prechecked(c *baov1.OpenBaoCluster, name string) baov1.Precheck {
	GinkgoHelper()
	Expect(c.Status.Upgrade).NotTo(BeNil(), "an upgrade is planned")
	for _, pc := range c.Status.Upgrade.Plan.Prechecks {
		if pc.Name == name {
			return pc
		}
	}
	Fail(fmt.Sprintf("no precheck %s among %v", name, c.Status.Upgrade.Plan.Prechecks))
	return baov1.Precheck{}
}
