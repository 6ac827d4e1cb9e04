//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	baoapi "github.com/openbao/openbao/api/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

const upNS = "e2e-upgrade"

// writer writes a KV entry every 20 ms through whichever member answers, as a client
// of the client Service would, and remembers every acknowledged write.
type writer struct {
	mu      sync.Mutex
	acked   []string
	failed  atomic.Int64
	longest time.Duration
}

func (w *writer) run(ctx context.Context, clients func() []*baoapi.Client) {
	lastOK := time.Now()
	for seq := 0; ctx.Err() == nil; seq++ {
		key := fmt.Sprintf("secret/data/w-%06d", seq)
		ok := false
		cl := clients()
		for i := range cl {
			// Round robin, so a member that is down costs one short attempt, not every write.
			c := cl[(seq+i)%len(cl)]
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := c.Logical().WriteWithContext(wctx, key, map[string]any{"data": map[string]any{"seq": seq}})
			cancel()
			if err == nil {
				ok = true
				break
			}
			w.failed.Add(1)
		}
		now := time.Now()
		if ok {
			w.mu.Lock()
			w.acked = append(w.acked, key)
			if gap := now.Sub(lastOK); gap > w.longest {
				w.longest = gap
			}
			w.mu.Unlock()
			lastOK = now
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

var _ = Describe("A rolling upgrade of a 3-member cluster from 2.4.0 to 2.4.1", Ordered, func() {
	var caPEM []byte

	BeforeAll(func(ctx SpecContext) {
		caPEM = newTestCluster(ctx, upNS, 3).caPEM
	}, NodeTimeout(bringUp+time.Minute))

	It("keeps every acknowledged write, changes leader exactly once, onto the new version", func(ctx SpecContext) {
		members := []string{"bao-0", "bao-1", "bao-2"}
		ips := map[string]string{}
		for _, m := range members {
			p, err := cs.CoreV1().Pods(upNS).Get(ctx, m, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			ips[m] = p.Status.PodIP // a StatefulSet member keeps its address in the rig
		}
		clientFor := func(m, tok string) *baoapi.Client {
			return apiClient(caPEM, ips[m], fmt.Sprintf("%s.%s-internal.%s.svc", m, name, upNS), tok)
		}
		jwt := token(ctx, upNS, appSA)
		var appTok string
		Eventually(func(g Gomega) {
			s, err := clientFor("bao-0", "").Logical().WriteWithContext(ctx, "auth/baokeeper-jwt/login", map[string]any{"role": "app", "jwt": jwt})
			g.Expect(err).NotTo(HaveOccurred())
			appTok = s.Auth.ClientToken
		}, 30*time.Second, pollEvery).Should(Succeed())
		writeClients := []*baoapi.Client{}
		for _, m := range members {
			writeClients = append(writeClients, clientFor(m, appTok))
		}

		By("watching leadership: the test counts changes itself, polling sys/leader")
		var leaders []string
		var lmu sync.Mutex
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			defer GinkgoRecover()
			for wctx.Err() == nil {
				for _, m := range members {
					l, err := clientFor(m, "").Sys().LeaderWithContext(wctx)
					if err == nil && l.LeaderAddress != "" {
						lmu.Lock()
						if len(leaders) == 0 || leaders[len(leaders)-1] != l.LeaderAddress {
							leaders = append(leaders, l.LeaderAddress)
						}
						lmu.Unlock()
						break
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()

		By("writing a KV entry every 20 ms")
		w := &writer{}
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			w.run(wctx, func() []*baoapi.Client { return writeClients })
		}()
		time.Sleep(2 * time.Second)

		By("changing spec.version to 2.4.1")
		start := time.Now()
		Eventually(func() error {
			c := &baov1.OpenBaoCluster{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: upNS, Name: name}, c); err != nil {
				return err
			}
			c.Spec.Version = "2.4.1"
			return k8s.Update(ctx, c)
		}, 30*time.Second, pollEvery).Should(Succeed())

		var final *baov1.OpenBaoCluster
		Eventually(func(g Gomega) {
			c := &baov1.OpenBaoCluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: upNS, Name: name}, c)).To(Succeed())
			g.Expect(c.Status.Upgrade).To(BeNil(), "%s", c.Status.Message)
			g.Expect(c.Status.CurrentVersion).To(Equal("2.4.1"))
			final = c
		}, 6*time.Minute, pollEvery).Should(Succeed())
		took := time.Since(start)
		time.Sleep(2 * time.Second)
		stop()
		<-done

		By("reading every acknowledged write back")
		lost := 0
		w.mu.Lock()
		acked := append([]string(nil), w.acked...)
		w.mu.Unlock()
		reader := clientFor("bao-0", appTok)
		for _, k := range acked {
			s, err := reader.Logical().ReadWithContext(ctx, k)
			if err != nil || s == nil {
				lost++
			}
		}
		lmu.Lock()
		changes := len(leaders) - 1
		seen := append([]string(nil), leaders...)
		lmu.Unlock()
		AddReportEntry("rolling upgrade 3 members", fmt.Sprintf("took %s, acked writes %d, failed attempts %d, lost %d, longest gap %s, leaders %v",
			took.Round(time.Second), len(acked), w.failed.Load(), lost, w.longest.Round(time.Millisecond), seen))
		GinkgoWriter.Printf("upgrade took %s; acked %d, failed attempts %d, lost %d, longest write gap %s; leaders seen %v\n",
			took.Round(time.Second), len(acked), w.failed.Load(), lost, w.longest.Round(time.Millisecond), seen)

		Expect(len(acked)).To(BeNumerically(">", 100))
		Expect(lost).To(BeZero(), "no acknowledged write may be lost")
		Expect(changes).To(Equal(1), "exactly one leadership change, leaders seen: %v", seen)
		Expect(final.Status.CurrentVersion).To(Equal("2.4.1"))
		Eventually(func(g Gomega) {
			c := &baov1.OpenBaoCluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: upNS, Name: name}, c)).To(Succeed())
			g.Expect(c.Status.Phase).To(Equal(baov1.PhaseRunning))
			g.Expect(c.Status.Message).To(Equal("3 of 3 members Ready, running 2.4.1"))
		}, 30*time.Second, pollEvery).Should(Succeed())
		for _, m := range members {
			h, err := clientFor(m, "").Sys().HealthWithContext(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(h.Version).To(Equal("2.4.1"), m)
		}
	}, SpecTimeout(8*time.Minute))

	It("refuses a downgrade and changes nothing", func(ctx SpecContext) {
		before := podUIDs(ctx)
		setSpec(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.0" })
		Eventually(func(g Gomega) {
			c := getUp(ctx, g)
			cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionSpecValid))
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal("DowngradeRefused"))
			g.Expect(c.Status.Message).To(ContainSubstring("older than the running version 2.4.1"))
			g.Expect(c.Status.Upgrade).To(BeNil())
		}, time.Minute, pollEvery).Should(Succeed())
		Consistently(func() map[string]types.UID { return podUIDs(ctx) }, 5*time.Second, pollEvery).Should(Equal(before))
		setSpec(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(getUp(ctx, g).Status.Conditions, string(baov1.ConditionSpecValid))
			g.Expect(cond.Reason).To(Equal(string(baov1.ReasonSpecAccepted)))
		}, time.Minute, pollEvery).Should(Succeed())
	}, SpecTimeout(3*time.Minute))

	It("holds a paused upgrade before the first member and finishes it when resumed", func(ctx SpecContext) {
		before := podUIDs(ctx)
		setSpec(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Paused = true; c.Spec.Version = "2.5.0" })
		Eventually(func(g Gomega) {
			c := getUp(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Message).To(ContainSubstring("paused by spec.upgrade.paused before bao-"))
			cond := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionUpgradePaused))
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		}, 2*time.Minute, pollEvery).Should(Succeed())
		Consistently(func() map[string]types.UID { return podUIDs(ctx) }, 5*time.Second, pollEvery).Should(Equal(before), "no member replaced while paused")

		setSpec(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Paused = false })
		Eventually(func(g Gomega) {
			c := getUp(ctx, g)
			g.Expect(c.Status.Upgrade).To(BeNil(), "%s", c.Status.Message)
			g.Expect(c.Status.CurrentVersion).To(Equal("2.5.0"))
		}, 5*time.Minute, pollEvery).Should(Succeed())
	}, SpecTimeout(8*time.Minute))
})

func getUp(ctx context.Context, g Gomega) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: upNS, Name: name}, c)).To(Succeed())
	return c
}

func setSpec(ctx context.Context, mutate func(*baov1.OpenBaoCluster)) {
	GinkgoHelper()
	Eventually(func() error {
		c := &baov1.OpenBaoCluster{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: upNS, Name: name}, c); err != nil {
			return err
		}
		mutate(c)
		return k8s.Update(ctx, c)
	}, 30*time.Second, pollEvery).Should(Succeed())
}

func podUIDs(ctx context.Context) map[string]types.UID {
	GinkgoHelper()
	out := map[string]types.UID{}
	for _, m := range []string{"bao-0", "bao-1", "bao-2"} {
		p, err := cs.CoreV1().Pods(upNS).Get(ctx, m, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		out[m] = p.UID
	}
	return out
}

var _ = Describe("A member that never becomes ready", Ordered, func() {
	const failNS = "e2e-fail"

	BeforeAll(func(ctx SpecContext) {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: failNS}})).To(Succeed())
		three := int32(3)
		settle := metav1.Duration{Duration: 2 * time.Second}
		stepTimeout := metav1.Duration{Duration: 60 * time.Second}
		c := &baov1.OpenBaoCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: failNS},
			Spec: baov1.OpenBaoClusterSpec{Version: "2.4.0", Replicas: &three, Upgrade: baov1.UpgradeSpec{
				PreUpgradeSnapshot: baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotNever},
				Rolling:            baov1.RollingUpdateSpec{SettleTime: &settle, StepTimeout: &stepTimeout},
			}},
		}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &baov1.OpenBaoCluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: failNS, Name: name}, got)).To(Succeed())
			g.Expect(got.Status.CurrentVersion).To(Equal("2.4.0"))
		}, bringUp, pollEvery).Should(Succeed())
	}, NodeTimeout(bringUp+time.Minute))

	It("fails after stepTimeout naming the member and those not started, and a retry after the fix completes", func(ctx SpecContext) {
		get := func(g Gomega) *baov1.OpenBaoCluster {
			c := &baov1.OpenBaoCluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: failNS, Name: name}, c)).To(Succeed())
			return c
		}
		update := func(mutate func(*baov1.OpenBaoCluster)) {
			Eventually(func() error {
				c := &baov1.OpenBaoCluster{}
				if err := k8s.Get(ctx, types.NamespacedName{Namespace: failNS, Name: name}, c); err != nil {
					return err
				}
				mutate(c)
				return k8s.Update(ctx, c)
			}, 30*time.Second, pollEvery).Should(Succeed())
		}
		update(func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1"; c.Spec.Image = flakyImage })

		var failure *baov1.UpgradeFailure
		var plan []string
		Eventually(func(g Gomega) {
			c := get(g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.Failure).NotTo(BeNil(), "%s", c.Status.Message)
			failure, plan = c.Status.Upgrade.Failure, c.Status.Upgrade.Plan.Pods
			g.Expect(c.Status.Message).To(ContainSubstring("baokeeper.dev/retry"))
		}, 3*time.Minute, pollEvery).Should(Succeed())
		Expect(failure.Reason).To(Equal("StepTimeout"))
		Expect(failure.Pod).To(Equal(plan[0]), "the first member of the plan is the one that never became ready")
		Expect(failure.Message).To(ContainSubstring(plan[0] + " did not finish within 1m0s"))
		Expect(failure.Message).To(ContainSubstring("not started: " + plan[1] + ", " + plan[2]))
		Consistently(func(g Gomega) { g.Expect(get(g).Status.Upgrade.Failure).NotTo(BeNil()) }, 5*time.Second, pollEvery).
			Should(Succeed(), "a failed upgrade waits for a person")

		By("fixing the cause, restarting the crash-looping pod instead of waiting out its back-off, and retrying")
		Expect(os.WriteFile(fixMarker(), []byte("fixed"), 0o600)).To(Succeed())
		Expect(cs.CoreV1().Pods(failNS).Delete(ctx, failure.Pod, metav1.DeleteOptions{})).To(Succeed())
		update(func(c *baov1.OpenBaoCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[baov1.AnnotationRetry] = "1"
		})
		Eventually(func(g Gomega) {
			c := get(g)
			g.Expect(c.Status.Upgrade).To(BeNil(), "%s", c.Status.Message)
			g.Expect(c.Status.CurrentVersion).To(Equal("2.4.1"))
			g.Expect(c.Status.Requests.Retry).To(Equal("1"))
		}, 5*time.Minute, pollEvery).Should(Succeed())
	}, SpecTimeout(10*time.Minute))
})
