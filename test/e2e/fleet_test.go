//go:build e2e

package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/cli/kubectlbao"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
)

// The fleet namespaces: three clusters chained dev → staging → prod.
const (
	fleetDev     = "e2e-fleet-dev"
	fleetStaging = "e2e-fleet-staging"
	fleetProd    = "e2e-fleet-prod"
	// fleetSoak is how long each cluster must have run the version before the next
	// one starts.
	fleetSoak = 10 * time.Second
)

// Issue 25's chain on the rig, with real OpenBao under the shared observer: the
// three clusters are given 2.4.1 at once; staging starts only after dev soaked,
// its upgrade fails (a step timeout of one second) and holds prod with the reason
// until it is fixed and retried; prod starts only after staging soaked, and only
// inside its windows (eight seconds every minute), pausing at a safe point each time
// one closes, with the operator killed once at a random time. kubectl bao history
// and kubectl bao fleet show all of it.
var _ = Describe("A fleet chained dev → staging → prod", Ordered, SpecPriority(420), func() {
	var dev, staging, prod *testCluster

	BeforeAll(func(ctx SpecContext) {
		after := func(ns string) func(*baov1.OpenBaoCluster) {
			return func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: name, Namespace: ns, Soak: baov1.DurationOf(fleetSoak)}}
			}
		}
		// The three come up together.
		var devCreated, stagingCreated, prodCreated time.Time
		dev, devCreated = createTestCluster(ctx, fleetDev, 3, nil)
		staging, stagingCreated = createTestCluster(ctx, fleetStaging, 3, func(c *baov1.OpenBaoCluster) {
			after(fleetDev)(c)
			// The failure injected in the middle: no member can come back within 1s.
			c.Spec.Upgrade.Rolling.StepTimeout = baov1.DurationOf(time.Second)
		})
		prod, prodCreated = createTestCluster(ctx, fleetProd, 3, func(c *baov1.OpenBaoCluster) {
			after(fleetStaging)(c)
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "* * * * *", Duration: "8s"}}
			c.Spec.Upgrade.WindowEnd = baov1.WindowEndPause
		})
		dev.waitFormed(ctx, devCreated)
		staging.waitFormed(ctx, stagingCreated)
		prod.waitFormed(ctx, prodCreated)
		DeferCleanup(func(ctx SpecContext) { deleteNamespaces(ctx, fleetDev, fleetStaging, fleetProd) }, NodeTimeout(3*time.Minute))
	}, NodeTimeout(bringUp+3*time.Minute))

	It("upgrades dev at once, and holds staging and prod with what they wait for", func(ctx SpecContext) {
		obs := dev.observe(ctx)
		By("giving the three clusters 2.4.1 at once")
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		staging.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		prod.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
		Eventually(func(g Gomega) {
			pc := precheckOf(staging.get(ctx, g), g, fleet.PrecheckOrder)
			g.Expect(pc.Result).To(Equal(baov1.PrecheckPending))
			g.Expect(pc.Message).To(HavePrefix("waits for " + fleetDev + "/bao"))
			pc = precheckOf(prod.get(ctx, g), g, fleet.PrecheckOrder)
			// Staging's own upgrade is planned and waits: prod says so, without quoting
			// what staging's status says (another namespace's tenant wrote that).
			g.Expect(pc.Result).To(Equal(baov1.PrecheckPending))
			g.Expect(pc.Message).To(Equal("waits for " + fleetStaging + "/bao, upgrading from 2.4.0 to 2.4.1 (details are in its own namespace)"))
		}, time.Minute, pollEvery).Should(Succeed())
		By("kubectl bao wait: exits 0 once dev runs 2.4.1 with nothing in progress")
		waited := kubectlBao(ctx, "-n", fleetDev, "wait", name, "--timeout", "5m")
		GinkgoWriter.Println(waited)
		Expect(waited).To(ContainSubstring("runs 2.4.1 with nothing in progress"))
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("fleet: dev upgraded first")
		res.expectClean(dev, 1, "2.4.1")
		Expect(staging.podUIDs(ctx)).To(HaveLen(3))
		h := dev.get(ctx, Default).Status.History
		Expect(h).To(HaveLen(1))
		Expect(h[0].Outcome).To(Equal(baov1.OutcomeSucceeded))
		Expect(h[0].Elections).To(Equal(int32(1)), "the entry counts the election the observer saw")
	}, SpecTimeout(7*time.Minute))

	It("starts staging only after dev soaked, fails it, holds prod with staging's reason, and goes on once staging is fixed and retried", func(ctx SpecContext) {
		devEnded := dev.get(ctx, Default).Status.History[0].EndedAt.Time
		obs := staging.observe(ctx)
		obs.beginWindow()
		By("kubectl bao wait exits non-zero once staging's upgrade failed: its step timeout is one second")
		out, stderr, err := runKubectlBao(ctx, "-n", fleetStaging, "wait", name, "--timeout", "3m")
		GinkgoWriter.Println(out, stderr)
		Expect(err).To(HaveOccurred(), "kubectl bao wait exits non-zero on a failed upgrade")
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue())
		Expect(exit.ExitCode()).To(Equal(1), "1 is failed, 2 would be the timeout")
		Expect(stderr).To(ContainSubstring("the operation failed: openbaocluster " + fleetStaging + "/bao: the upgrade to 2.4.1 failed (StepTimeout)"))
		failed := staging.get(ctx, Default)
		Expect(failed.Status.Upgrade).NotTo(BeNil())
		Expect(failed.Status.Upgrade.Failure).NotTo(BeNil(), failed.Status.Message)
		Expect(failed.Status.Upgrade.Failure.Reason).To(Equal(baov1.FailureStepTimeout))
		started := failed.Status.OperationLock
		Expect(started).NotTo(BeNil())
		Expect(started.AcquiredAt.Time).To(BeTemporally(">=", devEnded.Add(fleetSoak).Add(-time.Second)),
			"staging started %s after dev ended, its soak is %s", started.AcquiredAt.Sub(devEnded), fleetSoak)
		Expect(failed.Status.History).To(HaveLen(1))
		Expect(failed.Status.History[0].Outcome).To(Equal(baov1.OutcomeFailed))

		By("prod holds, naming staging's failure")
		prodUIDs := prod.podUIDs(ctx)
		Eventually(func(g Gomega) {
			c := prod.get(ctx, g)
			pc := precheckOf(c, g, fleet.PrecheckOrder)
			g.Expect(pc.Result).To(Equal(baov1.PrecheckFailed))
			g.Expect(pc.Message).To(ContainSubstring(fleetStaging + "/bao's upgrade to 2.4.1 failed (StepTimeout"))
			g.Expect(c.Status.Message).To(ContainSubstring("waits for precheck UpgradeOrder: " + fleetStaging + "/bao's upgrade to 2.4.1 failed"))
		}, time.Minute, pollEvery).Should(Succeed())
		var rows []kubectlbao.FleetRow
		Expect(json.Unmarshal([]byte(kubectlBao(ctx, "fleet", "-A", "-o", "json")), &rows)).To(Succeed())
		byName := map[string]kubectlbao.FleetRow{}
		for _, r := range rows {
			byName[r.Namespace] = r
		}
		Expect(byName[fleetProd].WaitsFor).To(ContainSubstring("UpgradeOrder: " + fleetStaging + "/bao's upgrade to 2.4.1 failed"))
		Expect(byName[fleetStaging].WaitsFor).To(Equal("retry: failed (StepTimeout)"))
		Expect(byName[fleetDev].Last).To(Equal("Version 2.4.0 → 2.4.1: Succeeded"))
		Expect(prod.podUIDs(ctx)).To(Equal(prodUIDs), "nothing of prod was touched")

		By("fixing staging (stepTimeout 10m) and retrying with kubectl bao retry")
		staging.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Rolling.StepTimeout = baov1.DurationOf(10 * time.Minute) })
		kubectlBao(ctx, "-n", fleetStaging, "retry", name)
		staging.waitUpgraded(ctx, "2.4.1", 5*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("fleet: staging failed by its step timeout, fixed and retried")
		res.expectClean(staging, 1, "2.4.1")
		h := staging.get(ctx, Default).Status.History
		Expect(h).To(HaveLen(2))
		Expect([]baov1.Outcome{h[0].Outcome, h[1].Outcome}).To(Equal([]baov1.Outcome{baov1.OutcomeSucceeded, baov1.OutcomeFailed}))
	}, SpecTimeout(8*time.Minute))

	It("upgrades prod after staging soaked, only inside its windows, pausing at a safe point when one closes, with the operator killed once", func(ctx SpecContext) {
		stagingEnded := staging.get(ctx, Default).Status.History[0].EndedAt.Time
		obs := prod.observe(ctx)
		obs.beginWindow()
		// What prod's status said while it ran, sampled: the holds between windows.
		holds, firstLock := watchHolds(ctx, prod)
		waitKill := killOperatorOnce(ctx, "prod's upgrade started", func(g Gomega) {
			c := prod.get(ctx, g)
			g.Expect(c.Status.OperationLock).NotTo(BeNil())
		}, 40*time.Second)
		prod.waitUpgraded(ctx, "2.4.1", 6*time.Minute)
		obs.endWindow()
		killed := waitKill()
		seen := holds()
		c := prod.get(ctx, Default)
		res := obs.finish(ctx)
		res.report("fleet: prod upgraded inside its windows (8 s every minute)", killed, "holds seen: "+strings.Join(seen, " | "))
		res.expectNoLoss()
		res.expectElections(1, "2.4.1")
		for _, m := range prod.memberList() {
			Expect(res.uids[m]).To(HaveLen(2), "%s is replaced exactly once: pod UIDs %v", m, res.uids[m])
		}
		Expect(seen).NotTo(BeEmpty(), "the upgrade held at least once when a window closed")
		for _, s := range seen {
			Expect(s).To(ContainSubstring("the maintenance window closed (spec.upgrade.windowEnd: Pause): holding until the next opens at"))
		}
		Expect(c.Status.History).To(HaveLen(1), "one entry, written once, the operator's kill notwithstanding")
		e := c.Status.History[0]
		Expect(e.Outcome).To(Equal(baov1.OutcomeSucceeded))
		Expect(e.Elections).To(Equal(int32(1)))
		Expect(e.StartedAt.Time).To(BeTemporally("<", stagingEnded), "planned when its version changed, long before")
		lock := firstLock()
		Expect(lock.IsZero()).To(BeFalse(), "prod's operation lock was seen")
		Expect(lock).To(BeTemporally(">=", stagingEnded.Add(fleetSoak).Add(-time.Second)), "prod started %s after staging ended", lock.Sub(stagingEnded))
		Expect(lock.Second()).To(BeNumerically("<", 8), "prod's upgrade took its lock inside a window (second %d of the minute)", lock.Second())
	}, SpecTimeout(9*time.Minute))

	It("shows every operation in kubectl bao history, the failed one included", func(ctx SpecContext) {
		out := kubectlBao(ctx, "-n", fleetStaging, "history", name)
		GinkgoWriter.Println(out)
		Expect(out).To(ContainSubstring("Version  2.4.0 → 2.4.1  RollingUpdate"))
		Expect(out).To(ContainSubstring("Succeeded"))
		Expect(out).To(ContainSubstring("Failed"))
		Expect(out).To(ContainSubstring("StepTimeout"))
		for _, ns := range []string{fleetDev, fleetProd} {
			var h kubectlbao.HistoryOutput
			Expect(json.Unmarshal([]byte(kubectlBao(ctx, "-n", ns, "history", name, "-o", "json")), &h)).To(Succeed())
			Expect(h.Entries).To(HaveLen(1), ns)
			Expect(h.Entries[0].Outcome).To(Equal(baov1.OutcomeSucceeded), ns)
			Expect(h.Entries[0].LongestStep).NotTo(BeNil(), ns)
		}

		By("kubectl bao report: a support bundle of prod, with nothing secret in it")
		file := filepath.Join(GinkgoT().TempDir(), "prod.tar.gz")
		said := kubectlBao(ctx, "-n", fleetProd, "report", name, "-f", file, "--operator-namespace", operatorNS)
		GinkgoWriter.Println(said)
		files := readBundle(file)
		for _, want := range []string{"README.txt", "status.txt", "history.txt", "timeline.txt", "cluster.yaml", "raft.txt",
			"objects/pod-bao-0.yaml", "objects/statefulset-bao.yaml", "logs/bao-0.log", "logs/bao-1.log", "logs/bao-2.log"} {
			Expect(files).To(HaveKey(want), "the bundle holds %s; it holds %v", want, keysOf(files))
		}
		Expect(files["history.txt"]).To(ContainSubstring("Succeeded"))
		Expect(files["logs/bao-0.log"]).NotTo(BeEmpty(), "the member's recent log")
		var opLog string
		for n, data := range files {
			if strings.HasPrefix(n, "logs/operator-") {
				opLog += data
			}
		}
		Expect(opLog).To(ContainSubstring(fleetProd), "the operator's lines about prod")
		Expect(opLog).NotTo(ContainSubstring(`"namespace":"`+fleetDev+`"`), "and only those")
		for n, data := range files {
			Expect(data).NotTo(MatchRegexp(`hv[sbr]\.[A-Za-z0-9_-]{20,}`), "%s holds an OpenBao token", n)
			Expect(data).NotTo(MatchRegexp(`eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}`), "%s holds a JWT", n)
		}
	}, SpecTimeout(2*time.Minute))
})

// precheckOf is the named precheck of c's planned upgrade.
func precheckOf(c *baov1.OpenBaoCluster, g Gomega, name string) baov1.Precheck {
	g.Expect(c.Status.Upgrade).NotTo(BeNil(), "no upgrade planned: %s", c.Status.Message)
	g.Expect(c.Status.Upgrade.Plan).NotTo(BeNil())
	for _, pc := range c.Status.Upgrade.Plan.Prechecks {
		if pc.Name == name {
			return pc
		}
	}
	g.Expect(name).To(BeEmpty(), "no precheck %s: %+v", name, c.Status.Upgrade.Plan.Prechecks)
	return baov1.Precheck{}
}

// watchHolds samples tc's status every 200 ms until holds is called: the distinct
// waitingFor messages of an upgrade in progress that held because its window
// closed, one per window. firstLock is when the first operation lock seen was
// taken (status.operationLock.acquiredAt).
func watchHolds(ctx context.Context, tc *testCluster) (holds func() []string, firstLock func() time.Time) {
	stop := make(chan struct{})
	done := make(chan []string, 1)
	var mu sync.Mutex
	var lock time.Time
	go func() {
		defer GinkgoRecover()
		seen := map[string]bool{}
		var out []string
		for {
			select {
			case <-stop:
				done <- out
				return
			case <-time.After(200 * time.Millisecond):
			}
			c := &baov1.OpenBaoCluster{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: tc.ns, Name: name}, c); err != nil || c.Status.Upgrade == nil {
				continue
			}
			if l := c.Status.OperationLock; l != nil && l.AcquiredAt != nil {
				mu.Lock()
				if lock.IsZero() {
					lock = l.AcquiredAt.Time
				}
				mu.Unlock()
			}
			w := c.Status.Upgrade.WaitingFor
			if strings.Contains(w, "maintenance window closed") && len(c.Status.Upgrade.CompletedPods) > 0 {
				// The time in it changes with each window: one per window.
				key, _, _ := strings.Cut(w, " (in ")
				if !seen[key] {
					seen[key] = true
					out = append(out, w)
				}
			}
		}
	}()
	holds = func() []string {
		close(stop)
		return <-done
	}
	firstLock = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return lock
	}
	return holds, firstLock
}

// readBundle reads a gzipped tar written by kubectl bao report, by file name below
// its top directory.
func readBundle(file string) map[string]string {
	GinkgoHelper()
	f, err := os.Open(file)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	gz, err := gzip.NewReader(f)
	Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		Expect(err).NotTo(HaveOccurred())
		b, err := io.ReadAll(tr)
		Expect(err).NotTo(HaveOccurred())
		_, rel, _ := strings.Cut(h.Name, "/")
		out[rel] = string(b)
	}
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
