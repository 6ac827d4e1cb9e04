//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// The concurrency benchmark (`make bench-scale`, label "scale", excluded from `make
// test-e2e`): several 3-member clusters upgrade at once under one operator, each
// under its own observer, against one of them upgrading alone. It prints each
// upgrade's time and the operator's CPU time per upgrade in flight.
const (
	// concurrentEnv overrides concurrentClusters: BENCH_CONCURRENT=3.
	concurrentEnv = "BENCH_CONCURRENT"
	// concurrentClusters is how many clusters upgrade at once. Each member is an
	// OpenBao process of 130 to 150 MiB resident on the rig, and each observer
	// writes every 20 ms and polls every member every 100 ms: four 3-member
	// clusters fit the rig's machine (2 CPUs, 24 GiB) with room to spare in memory,
	// CPU being what they share.
	concurrentClusters = 4
)

// concurrentNamespace is the namespace of the i-th cluster of the concurrency
// benchmark.
func concurrentNamespace(i int) string { return fmt.Sprintf("scale-concurrent-%d", i) }

// concurrentCount is how many clusters the benchmark upgrades at once.
func concurrentCount() int {
	if v, err := strconv.Atoi(os.Getenv(concurrentEnv)); err == nil && v >= 2 {
		return v
	}
	return concurrentClusters
}

var _ = Describe("Concurrent upgrades", Label("scale"), Ordered, func() {
	var (
		clusters []*testCluster
		report   strings.Builder
		lone     concurrentResult
	)
	k := concurrentCount()

	BeforeAll(func(ctx SpecContext) {
		fmt.Fprintf(&report, "\n==== %d clusters of 3 members upgrading at once (settleTime 0s; %d CPUs) ====\n", k, runtime.NumCPU())
		for i := range k {
			namespace := concurrentNamespace(i)
			DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, namespace) }, NodeTimeout(3*time.Minute))
			tc := newTestCluster(ctx, namespace, 3)
			tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Rolling.SettleTime = ptrTo(baov1.Duration("0s")) })
			clusters = append(clusters, tc)
		}
	}, NodeTimeout(20*time.Minute))

	AfterAll(func() {
		AddReportEntry("concurrent upgrades", report.String())
		fmt.Fprint(os.Stdout, report.String()+"\n")
	})

	It("upgrades one cluster alone", func(ctx SpecContext) {
		res := upgradeAtOnce(ctx, clusters[:1], map[int]string{0: benchVersion(1)})
		lone = res[0]
		fmt.Fprintf(&report, "alone: %s -> %s in %s (load average at the trigger %s), operator CPU %s\n",
			benchVersion(0), benchVersion(1), secs(lone.took), lone.load, secs2(lone.cpu))
	}, SpecTimeout(10*time.Minute))

	It(fmt.Sprintf("upgrades %d clusters at once, each with one election and no lost write", k), func(ctx SpecContext) {
		targets := map[int]string{0: benchVersion(2)}
		for i := 1; i < k; i++ {
			targets[i] = benchVersion(1)
		}
		res := upgradeAtOnce(ctx, clusters, targets)
		var longest time.Duration
		for i, r := range res {
			fmt.Fprintf(&report, "at once: %s -> %s in %s (%.2f× alone)\n", clusters[i].ns, targets[i], secs(r.took), r.took.Seconds()/lone.took.Seconds())
			longest = max(longest, r.took)
		}
		fmt.Fprintf(&report, "at once: all %d done in %s (load average at the trigger %s); operator CPU %s in all, %s per upgrade in flight (alone %s)\n",
			k, secs(longest), res[0].load, secs2(res[0].cpu), secs2(res[0].cpu/time.Duration(k)), secs2(lone.cpu))
	}, SpecTimeout(20*time.Minute))
})

// concurrentResult is one cluster's upgrade in upgradeAtOnce.
type concurrentResult struct {
	took time.Duration // trigger -> status.currentVersion on the target
	// cpu is the operator's CPU time over the whole batch, load the machine's load
	// average at the trigger (the same for every cluster of a batch).
	cpu  time.Duration
	load string
}

// upgradeAtOnce starts an observer on every cluster, triggers every upgrade within
// a few milliseconds, waits for them all, and checks each upgrade's promises: no
// acknowledged write lost and one election onto the target.
func upgradeAtOnce(ctx context.Context, clusters []*testCluster, targets map[int]string) []concurrentResult {
	GinkgoHelper()
	obs := make([]*upgradeObserver, len(clusters))
	for i, tc := range clusters {
		obs[i] = tc.observe(ctx)
	}
	load := loadAverage()
	cpuBefore := operatorCPU(ctx)
	start := time.Now()
	for i := range clusters {
		obs[i].applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = targets[i] })
	}
	out := make([]concurrentResult, len(clusters))
	var wg sync.WaitGroup
	for i, tc := range clusters {
		wg.Go(func() {
			defer GinkgoRecover()
			Eventually(func(g Gomega) {
				c := tc.get(ctx, g)
				g.Expect(c.Status.Upgrade).To(BeNil(), "%s", c.Status.Message)
				g.Expect(c.Status.CurrentVersion).To(Equal(targets[i]))
			}, 10*time.Minute, 100*time.Millisecond).Should(Succeed())
			obs[i].endWindow()
			out[i].took = time.Since(start)
		})
	}
	wg.Wait()
	cpu := operatorCPU(ctx) - cpuBefore
	for i := range out {
		out[i].cpu, out[i].load = cpu, load
	}
	for i, o := range obs {
		res := o.finish(ctx)
		AddReportEntry(fmt.Sprintf("concurrent %s", clusters[i].ns), fmt.Sprintf("took %s, elections %d (terms %s), acked in window %d, lost %d",
			secs(out[i].took), res.elections, res.termsString(), res.inWindow, res.lost+res.sampleBad))
		res.expectNoLoss()
		res.expectElections(1, targets[i])
	}
	return out
}

// operatorCPU is the CPU time (user and system) the suite's operator process has
// used, from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s, Linux's
// USER_HZ).
func operatorCPU(ctx context.Context) time.Duration {
	GinkgoHelper()
	pods, err := cs.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{LabelSelector: operatorPodsLabel})
	Expect(err).NotTo(HaveOccurred())
	var pids []int
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			pids = append(pids, operatorPIDs(p.Name)...)
		}
	}
	Expect(pids).To(HaveLen(1), "one operator process")
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "stat"))
	Expect(err).NotTo(HaveOccurred())
	// The command (field 2) is in parentheses and may hold spaces: count from after it.
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
	utime, err := strconv.ParseInt(f[11], 10, 64)
	Expect(err).NotTo(HaveOccurred())
	stime, err := strconv.ParseInt(f[12], 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
