//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// The upgrade benchmark (`make bench-upgrade`, label "bench", excluded from `make
// test-e2e`) upgrades fresh 3- and 5-member clusters from 2.4.0 to 2.4.1 three ways,
// under the same writer and leader poller as the rolling-upgrade specs, and prints one
// row per run. docs/benchmarks.md explains the columns and records results.
const (
	benchFrom = "2.4.0"
	benchTo   = "2.4.1"
	// benchPoll is how often the test drives and checks: the reverse-ordinal driver
	// and the "all on target" check react within it.
	benchPoll = 250 * time.Millisecond
	// benchDriverAttempt numbers the step-down Jobs of the reverse-ordinal driver, far
	// from the operator's own attempts (1 to rolling.MaxStepDownAttempts) and
	// moveLeaderToMiddle's (101 on).
	benchDriverAttempt = 201
	// benchMaxPlacement bounds the forced elections that put the leader on the
	// highest ordinal. Each lands there with a chance of about 1/(N-1); on 5 members
	// the rig has needed up to 14.
	benchMaxPlacement = 40
	// benchUpgradeTimeout bounds one upgrade, trigger to all members on the target.
	benchUpgradeTimeout = 8 * time.Minute
)

// benchAlgorithm is one way of replacing the members.
type benchAlgorithm struct {
	name  string
	short string // in the namespace name
	// external means the test drives the upgrade itself, with the operator scaled
	// to zero so that nothing reverts the StatefulSet.
	external bool
	// trigger starts the upgrade (and, for a driver, carries it out) and returns
	// how many step-down Jobs it ran.
	trigger func(ctx context.Context, tc *testCluster, image string) int
}

var benchAlgorithms = []benchAlgorithm{
	{name: "baokeeper", short: "baokeeper", trigger: func(ctx context.Context, tc *testCluster, _ string) int {
		tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = benchTo })
		return 0
	}},
	baokeeperWith(baov1.LeaderHandoffStepDown, "bk-stepdown"),
	baokeeperWith(baov1.LeaderHandoffShutdown, "bk-shutdown"),
	{name: "StatefulSet RollingUpdate", short: "sts", external: true, trigger: func(ctx context.Context, tc *testCluster, _ string) int {
		tc.patchStatefulSet(ctx, fmt.Sprintf(`{"spec":{"updateStrategy":{"type":"RollingUpdate"},"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`,
			workload.ContainerName, upgrade.DefaultImage(benchTo)))
		return 0
	}},
	{name: "reverse ordinal (existing operator)", short: "revord", external: true, trigger: func(ctx context.Context, tc *testCluster, image string) int {
		return tc.reverseOrdinalUpgrade(ctx, image)
	}},
}

// baokeeperWith is baokeeper with settleTime 0s and the given leader hand-off.
func baokeeperWith(handoff baov1.LeaderHandoff, short string) benchAlgorithm {
	return benchAlgorithm{name: "baokeeper, settleTime 0s, leaderHandoff " + string(handoff), short: short,
		trigger: func(ctx context.Context, tc *testCluster, _ string) int {
			tc.update(ctx, func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.Rolling.SettleTime = ptrTo(baov1.Duration("0s"))
				c.Spec.Upgrade.Rolling.LeaderHandoff = handoff
				c.Spec.Version = benchTo
			})
			return 0
		}}
}

// benchRow is the outcome of one run.
type benchRow struct {
	algorithm string
	members   int32
	done      bool // every figure below was measured

	elections  int
	longestGap time.Duration
	failed     int64
	acked      int
	lost       int
	total      time.Duration // trigger -> all members on the target
	intrinsic  time.Duration // sum over members of old pod deleted -> new pod Ready
	overhead   time.Duration // mean over members of (previous Ready or trigger) -> pod deleted
	// controller is the operator's own overhead between members (baokeeper rows).
	controller overheads
	detail     string
	// blueGreen rows have no per-member replacement: their members are new pods.
	blueGreen bool
}

// benchSizes are the cluster sizes the benchmark measures.
var benchSizes = []int32{3, 5}

// benchNamespace is the namespace of algo's run on n members.
func benchNamespace(algo benchAlgorithm, n int32) string {
	return fmt.Sprintf("bench-%s-%d", algo.short, n)
}

// benchBlueGreenNamespace is the namespace of the blue-green run on n members.
func benchBlueGreenNamespace(n int32) string { return fmt.Sprintf("bench-bg-%d", n) }

var _ = Describe("Upgrade benchmark", Label("bench"), Ordered, ContinueOnFailure, func() {
	var rows []*benchRow

	AfterAll(func() {
		t := benchTable(rows)
		AddReportEntry("upgrade benchmark", t)
		// Plain stdout as well, so the table ends up in `make bench-upgrade` output
		// however Ginkgo is asked to report.
		fmt.Fprintf(os.Stdout, "\n==== upgrade benchmark %s -> %s (%d CPUs, load average at the end %s) ====\n%s\n",
			benchFrom, benchTo, runtime.NumCPU(), loadAverage(), t)
	})

	for _, n := range benchSizes {
		for _, algo := range benchAlgorithms {
			It(fmt.Sprintf("measures %s on %d members", algo.name, n), func(ctx SpecContext) {
				row := &benchRow{algorithm: algo.name, members: n}
				rows = append(rows, row)
				runBench(ctx, algo, n, row)
			}, SpecTimeout(25*time.Minute))
		}
		It(fmt.Sprintf("measures baokeeper blue-green on %d members", n), func(ctx SpecContext) {
			row := &benchRow{algorithm: "baokeeper blue-green (autoPromote, minSyncDuration 0s)", members: n, blueGreen: true}
			rows = append(rows, row)
			runBlueGreenBench(ctx, n, row)
		}, SpecTimeout(25*time.Minute))
	}
})

// runBlueGreenBench brings up a cluster of n members on 2.4.0 with the leader on the
// highest ordinal and upgrades it blue-green to 2.4.1 (autoPromote, no sync wait, no
// hook) under the observer. The finish line is status.currentVersion on the target
// with blue gone: green's members are new pods, so the per-member columns of the
// rolling rows do not apply.
func runBlueGreenBench(ctx context.Context, n int32, row *benchRow) {
	GinkgoHelper()
	namespace := benchBlueGreenNamespace(n)
	DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, namespace) }, NodeTimeout(3*time.Minute))
	tc := newTestCluster(ctx, namespace, n)
	tc.update(ctx, func(c *baov1.OpenBaoCluster) {
		c.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy
		c.Spec.Upgrade.BlueGreen.AutoPromote = true
		c.Spec.Upgrade.BlueGreen.MinSyncDuration = ptrTo(baov1.Duration("0s"))
	})
	By("putting the leader on the highest ordinal, " + tc.memberList()[n-1])
	kills := tc.placeLeaderLast(ctx)
	tc.waitPodsReady(ctx)
	blue := tc.memberList()

	obs := tc.observe(ctx)
	load := loadAverage()
	start := time.Now()
	obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = benchTo })
	green := tc.waitGreenNamed(ctx, int(n))
	tc.setMembers(append(blue, green...)...)
	tc.waitUpgraded(ctx, benchTo, benchUpgradeTimeout)
	doneAt := time.Now()
	tc.setMembers(green...)
	obs.endWindowAt(doneAt)
	res := obs.finish(ctx)
	row.elections = res.elections
	row.longestGap, row.failed, row.acked, row.lost = res.longest, res.failed, res.inWindow, res.lost+res.sampleBad
	row.total = doneAt.Sub(start)
	row.done = true
	row.detail = fmt.Sprintf("baokeeper blue-green, %d members: load average at the trigger %s, leader placed on %s after %d forced election(s), "+
		"window %s, acked in window %d (floor %d), longest gap in window %s, failed attempts %d, lost %d (sample through each member bad %d), elections %d (terms: %s), leaders %v on %v; "+
		"status.currentVersion %s at +%s (polled every %s)",
		n, load, blue[n-1], kills, secs(res.window), res.inWindow, res.floor, secs2(res.longest), res.failed, res.lost, res.sampleBad,
		res.elections, res.termsString(), res.leaders, res.versions, benchTo, secs(row.total), pollEvery)
	AddReportEntry(fmt.Sprintf("bench bluegreen %d", n), row.detail)
	res.expectNoLoss()
	res.expectElections(1, benchTo)
	Expect(green).To(ContainElement(res.leaders[1]), "the new leader is a green member")
}

// runBench brings up a cluster of n members on 2.4.0, puts the leader on the highest
// ordinal, upgrades it to 2.4.1 with algo under the observer and fills row.
func runBench(ctx context.Context, algo benchAlgorithm, n int32, row *benchRow) {
	GinkgoHelper()
	namespace := benchNamespace(algo, n)
	DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, namespace) }, NodeTimeout(3*time.Minute))
	tc := newTestCluster(ctx, namespace, n)
	image := operatorImage(ctx)
	settle := tc.get(ctx, Default).Spec.Upgrade.Rolling.SettleTime

	By("putting the leader on the highest ordinal, " + tc.memberList()[n-1])
	kills := tc.placeLeaderLast(ctx)
	tc.waitPodsReady(ctx)

	if algo.external {
		By("scaling the operator to zero, so that nothing reverts what the test does")
		scaleOperator(ctx, 0)
		// Cleanups run last-in first-out: the namespace goes before the operator
		// comes back, so it never sees the half-done StatefulSet.
		DeferCleanup(func(ctx SpecContext) { scaleOperator(ctx, 1) }, NodeTimeout(3*time.Minute))
		DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, namespace) }, NodeTimeout(3*time.Minute))
		Expect(tc.settledLeader(ctx)).To(Equal(tc.memberList()[n-1]), "the leader moved while the operator scaled down")
	}

	obs := tc.observe(ctx)
	Expect(obs.leaderLog()).To(Equal([]string{tc.memberList()[n-1]}), "the leader moved before the upgrade")
	By(fmt.Sprintf("upgrading %s -> %s: %s", benchFrom, benchTo, algo.name))
	load := loadAverage()
	start := time.Now()
	// The change window is the same for every algorithm: from the trigger to the
	// finish line (a driver's trigger carries the whole upgrade out).
	obs.beginWindow()
	stepDowns := algo.trigger(ctx, tc, image)
	doneAt := tc.waitAllOn(ctx, obs, benchTo, benchUpgradeTimeout-time.Since(start))
	obs.endWindowAt(doneAt)
	var extra []string
	if !algo.external {
		tc.waitUpgraded(ctx, benchTo, 2*time.Minute)
		extra = append(extra, fmt.Sprintf("status.currentVersion %s at +%s (polled every %s)", benchTo, secs(time.Since(start)), pollEvery))
		stepDowns = tc.stepDownJobs(ctx)
		row.controller = tc.controllerOverhead(ctx, start)
		extra = append(extra, "controller overhead (a member done → the next member's first action, from the operator's event times): "+row.controller.String())
	}
	res := obs.finish(ctx)
	Expect(res.watchErr).NotTo(HaveOccurred())
	Expect(res.unreadable).To(BeZero(), "every acknowledged write is read back: %v", res.problems)

	row.fill(tc, res, start, doneAt)
	head := fmt.Sprintf("%s, %d members: load average at the trigger %s, settleTime %s, leader placed on %s after %d forced election(s), step-down Jobs during the upgrade %d, "+
		"window %s, acked in window %d (floor %d), longest gap in window %s, lost %d (sample through each member bad %d), elections %d (terms: %s), leaders %v on %v",
		algo.name, n, load, settleString(settle), tc.memberList()[n-1], kills, stepDowns,
		secs(res.window), res.inWindow, res.floor, secs2(res.longest), res.lost, res.sampleBad, res.elections, res.termsString(), res.leaders, res.versions)
	row.detail = strings.Join(append([]string{head}, extra...), "; ") + "\n" + row.detail
	AddReportEntry(fmt.Sprintf("bench %s %d", algo.short, n), row.detail)
	Expect(row.done).To(BeTrue(), "the pod timeline is incomplete:\n%s", row.detail)
	if !algo.external {
		// baokeeper's promises; the baselines are measured only.
		res.expectNoLoss()
		res.expectElections(1, benchTo)
	}
}

// fill computes the row from what the observer saw, with start the trigger and
// doneAt the moment every member was on the target.
func (r *benchRow) fill(tc *testCluster, res upgradeResult, start, doneAt time.Time) {
	r.elections = res.elections
	r.longestGap, r.failed, r.acked, r.lost = res.longest, res.failed, res.inWindow, res.lost+res.sampleBad
	r.total = doneAt.Sub(start)

	type step struct {
		member         string
		replaced       int
		deleted, ready time.Time
	}
	var steps []step
	complete := true
	for _, m := range tc.memberList() {
		uids := res.uids[m]
		if len(uids) < 2 {
			complete = false
			continue
		}
		s := step{member: m, replaced: len(uids) - 1, deleted: res.deletedAt[uids[0]], ready: res.readyAt[uids[len(uids)-1]]}
		if s.deleted.IsZero() || s.ready.IsZero() {
			complete = false
		}
		steps = append(steps, s)
	}
	slices.SortFunc(steps, func(a, b step) int { return a.deleted.Compare(b.deleted) })

	var b strings.Builder
	prev := start
	var overheadSum time.Duration
	for _, s := range steps {
		intrinsic, overhead := s.ready.Sub(s.deleted), s.deleted.Sub(prev)
		r.intrinsic += intrinsic
		overheadSum += overhead
		fmt.Fprintf(&b, "  %-6s deleted +%-7s Ready +%-7s intrinsic %-7s overhead before it %-7s", s.member,
			secs(s.deleted.Sub(start)), secs(s.ready.Sub(start)), secs(intrinsic), secs(overhead))
		if s.replaced != 1 {
			fmt.Fprintf(&b, " (replaced %d times)", s.replaced)
		}
		b.WriteString("\n")
		prev = s.ready
	}
	fmt.Fprintf(&b, "  all on %s at +%s (tail after the last Ready %s)", benchTo, secs(r.total), secs(doneAt.Sub(prev)))
	r.detail = b.String()
	if complete && len(steps) == len(tc.memberList()) {
		r.overhead = overheadSum / time.Duration(len(steps))
		r.done = true
	}
}

// benchTable renders the rows as a Markdown table.
func benchTable(rows []*benchRow) string {
	var b strings.Builder
	b.WriteString("| algorithm | members | elections | longest write gap | failed write attempts | acked in window | lost writes | total | Σ intrinsic | overhead / member | total − Σ intrinsic | controller overhead median / max |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		if !r.done {
			fmt.Fprintf(&b, "| %s | %d | did not complete (see the spec's output) |  |  |  |  |  |  |  |  |  |\n", r.algorithm, r.members)
			continue
		}
		if r.blueGreen {
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %d | %d | %d | %s | n/a | n/a | n/a | n/a |\n", r.algorithm, r.members, r.elections,
				secs2(r.longestGap), r.failed, r.acked, r.lost, secs(r.total))
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %d | %d | %d | %s | %s | %s | %s | %s |\n", r.algorithm, r.members, r.elections,
			secs2(r.longestGap), r.failed, r.acked, r.lost, secs(r.total), secs(r.intrinsic), secs(r.overhead), secs(r.total-r.intrinsic), r.controller.cell())
	}
	return b.String()
}

// loadAverage is the machine's 1, 5 and 15 minute load average, from /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func secs(d time.Duration) string  { return fmt.Sprintf("%.1fs", d.Seconds()) }
func secs2(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func settleString(d *baov1.Duration) string {
	if d == nil {
		return "default"
	}
	return string(*d)
}

// waitAllOn waits until every member runs on a replaced pod that is Ready, reports
// version, initialized and unsealed, and autopilot is healthy with every member a
// voter: the same finish line for every algorithm. It returns when that first held
// (the start of the check that passed).
func (tc *testCluster) waitAllOn(ctx context.Context, obs *upgradeObserver, version string, timeout time.Duration) time.Time {
	GinkgoHelper()
	var at time.Time
	Eventually(func(g Gomega) {
		checked := time.Now()
		g.Expect(obs.replacedAndReady(tc)).To(BeEmpty(), "members not yet replaced and Ready")
		for _, m := range tc.memberList() {
			h, err := tc.client(m, "").Sys().HealthWithContext(ctx)
			g.Expect(err).NotTo(HaveOccurred(), m)
			g.Expect(h.Initialized && !h.Sealed).To(BeTrue(), "%s initialized and unsealed", m)
			g.Expect(h.Version).To(Equal(version), m)
		}
		st, err := tc.autopilot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Healthy).To(BeTrue(), "autopilot healthy")
		g.Expect(st.Voters).To(ConsistOf(tc.memberList()))
		at = checked
	}, timeout, benchPoll).Should(Succeed())
	return at
}

// replacedAndReady lists the members whose pod has not been replaced yet, or whose
// newest pod is not Ready or is being deleted.
func (o *upgradeObserver) replacedAndReady(tc *testCluster) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, m := range tc.memberList() {
		uids := o.uids[m]
		if len(uids) < 2 {
			out = append(out, m)
			continue
		}
		last := uids[len(uids)-1]
		if _, ok := o.readyAt[last]; !ok {
			out = append(out, m)
		} else if _, gone := o.deletedAt[last]; gone {
			out = append(out, m)
		}
	}
	return out
}

// activeMember returns the member whose own sys/leader says it is the active node,
// or "" when none does.
func (tc *testCluster) activeMember(ctx context.Context) string {
	for _, m := range tc.memberList() {
		l, err := tc.client(m, "").Sys().LeaderWithContext(ctx)
		if err == nil && l.IsSelf {
			return m
		}
	}
	return ""
}

// stepDown runs the operator's step-down Job (executor identity, operator image) on
// member, waits until it succeeded and another member is active, and deletes it. It
// returns the Job's name.
func (tc *testCluster) stepDown(ctx context.Context, member string, attempt int32, image string) string {
	GinkgoHelper()
	job := executorjob.StepDownJob(tc.get(ctx, Default), member, attempt, image)
	Expect(k8s.Create(ctx, job)).To(Succeed())
	Eventually(func(g Gomega) {
		got := &batchv1.Job{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), got)).To(Succeed())
		phase, _, msg := executorjob.JobPhaseOf(got)
		if phase == upgrade.JobFailed {
			StopTrying(fmt.Sprintf("step-down Job %s failed: %s", job.Name, msg)).Now()
		}
		g.Expect(phase).To(Equal(upgrade.JobSucceeded), "step-down Job %s", job.Name)
	}, 2*time.Minute, benchPoll).Should(Succeed())
	Eventually(func() string { return tc.activeMember(ctx) }, time.Minute, benchPoll).
		ShouldNot(BeElementOf("", member), "another member becomes active after %s steps down", member)
	Expect(k8s.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	return job.Name
}

// placeLeaderLast forces elections until the highest ordinal leads, and returns how
// many it took. A step-down cannot do it: OpenBao's step-down, like a leader's
// graceful shutdown, is a Raft leadership transfer (hashicorp/raft pickServer), which
// hands leadership to the first up-to-date voter in configuration order, that is
// join order: bao-0, or bao-1 when bao-0 steps down. A leader killed with SIGKILL
// leaves an election that the randomized election timeouts decide, which the
// highest ordinal wins about once in N-1. The killed container restarts in the same
// pod and rejoins before the next try.
func (tc *testCluster) placeLeaderLast(ctx context.Context) int {
	GinkgoHelper()
	top := tc.memberList()[len(tc.memberList())-1]
	for kills := 0; ; kills++ {
		leader := tc.settledLeader(ctx)
		if leader == top {
			return kills
		}
		Expect(kills).To(BeNumerically("<", benchMaxPlacement), "leadership did not land on %s", top)
		pids := memberPIDs(tc.ns, leader)
		Expect(pids).NotTo(BeEmpty(), "no OpenBao process of %s/%s", tc.ns, leader)
		for _, pid := range pids {
			Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
		}
		Eventually(func() string { return tc.activeMember(ctx) }, 2*time.Minute, benchPoll).
			ShouldNot(BeElementOf("", leader), "another member is elected after %s is killed", leader)
	}
}

// memberPIDs finds the OpenBao server processes of a member: the rig runs containers
// as host processes, with the pod's name as HOSTNAME and, from the StatefulSet, its
// namespace as POD_NAMESPACE.
func memberPIDs(namespace, pod string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join(p, "exe"))
		if err != nil || filepath.Dir(exe) != filepath.Join(root, "bin") || !strings.HasPrefix(filepath.Base(exe), "bao-") {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		vars := strings.Split(string(env), "\x00")
		if !slices.Contains(vars, "HOSTNAME="+pod) || !slices.Contains(vars, "POD_NAMESPACE="+namespace) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// waitPodsReady waits until every member's pod is Ready.
func (tc *testCluster) waitPodsReady(ctx context.Context) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, m := range tc.memberList() {
			p, err := cs.CoreV1().Pods(tc.ns).Get(ctx, m, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(isReady(p)).To(BeTrue(), "%s Ready", m)
		}
	}, 2*time.Minute, benchPoll).Should(Succeed())
}

// stepDownJobs counts the step-down Jobs of the namespace.
func (tc *testCluster) stepDownJobs(ctx context.Context) int {
	GinkgoHelper()
	jobs := &batchv1.JobList{}
	Expect(k8s.List(ctx, jobs, client.InNamespace(tc.ns), client.MatchingLabels{executorjob.LabelStep: executorjob.StepStepDown})).To(Succeed())
	return len(jobs.Items)
}

func (tc *testCluster) patchStatefulSet(ctx context.Context, patch string) {
	GinkgoHelper()
	sts := workload.NamesFor(tc.get(ctx, Default)).StatefulSet()
	_, err := cs.AppsV1().StatefulSets(tc.ns).Patch(ctx, sts, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "baokeeper-bench"})
	Expect(err).NotTo(HaveOccurred())
}

// reverseOrdinalUpgrade is the rolling algorithm of the existing OpenBao operator
// (dc-tec/openbao-operator, internal/upgrade/rolling), driven by the test: set the
// template image (the StatefulSet stays OnDelete), then from the highest ordinal
// down: step the member down first if it is the leader, wait until another member is
// active, delete its pod, and wait for the new pod Ready and its sys/health
// initialized, unsealed and on the target version. Like that operator it does not
// wait for Raft voter status, autopilot health or replication lag between members.
// It polls every benchPoll, where an operator would wait for a requeue. It returns
// how many step-down Jobs it ran.
func (tc *testCluster) reverseOrdinalUpgrade(ctx context.Context, image string) int {
	GinkgoHelper()
	tc.patchStatefulSet(ctx, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`,
		workload.ContainerName, upgrade.DefaultImage(benchTo)))
	stepDowns := 0
	for i := len(tc.memberList()) - 1; i >= 0; i-- {
		m := tc.memberList()[i]
		var leader string
		Eventually(func() string { leader = tc.activeMember(ctx); return leader }, time.Minute, benchPoll).ShouldNot(BeEmpty(), "no active member")
		if leader == m {
			tc.stepDown(ctx, m, int32(benchDriverAttempt+stepDowns), image)
			stepDowns++
		}
		old, err := cs.CoreV1().Pods(tc.ns).Get(ctx, m, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		err = cs.CoreV1().Pods(tc.ns).Delete(ctx, m, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}})
		Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "delete pod %s: %v", m, err)
		Eventually(func(g Gomega) {
			p, err := cs.CoreV1().Pods(tc.ns).Get(ctx, m, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.UID).NotTo(Equal(old.UID))
			g.Expect(isReady(p)).To(BeTrue(), "%s Ready", m)
			h, err := tc.client(m, "").Sys().HealthWithContext(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.Initialized && !h.Sealed).To(BeTrue(), "%s initialized and unsealed", m)
			g.Expect(h.Version).To(Equal(benchTo), m)
		}, 5*time.Minute, benchPoll).Should(Succeed())
	}
	return stepDowns
}

// scaleOperator sets the operator Deployment's replicas. At zero it waits until no
// operator pod is left; at one until the Deployment is rolled out and a running pod
// holds the leader-election Lease.
func scaleOperator(ctx context.Context, replicas int32) {
	GinkgoHelper()
	Eventually(func() error {
		s, err := cs.AppsV1().Deployments(operatorNS).GetScale(ctx, "baokeeper", metav1.GetOptions{})
		if err != nil || s.Spec.Replicas == replicas {
			return err
		}
		s.Spec.Replicas = replicas
		_, err = cs.AppsV1().Deployments(operatorNS).UpdateScale(ctx, "baokeeper", s, metav1.UpdateOptions{})
		return err
	}, 30*time.Second, pollEvery).Should(Succeed())
	if replicas == 0 {
		Eventually(func(g Gomega) {
			pods, err := cs.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{LabelSelector: operatorPodsLabel})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(BeEmpty(), "operator pods left")
		}, 2*time.Minute, benchPoll).Should(Succeed())
		return
	}
	kubectl(ctx, "-n", operatorNS, "rollout", "status", "deployment/baokeeper", "--timeout=120s")
	Eventually(func(g Gomega) {
		pods, err := cs.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{LabelSelector: operatorPodsLabel})
		g.Expect(err).NotTo(HaveOccurred())
		l, err := cs.CoordinationV1().Leases(operatorNS).Get(ctx, operatorLease, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		holder := ptrValue(l.Spec.HolderIdentity)
		g.Expect(slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool {
			return p.DeletionTimestamp == nil && strings.HasPrefix(holder, p.Name+"_")
		})).To(BeTrue(), "Lease held by %q, not by a running operator pod", holder)
	}, 2*time.Minute, benchPoll).Should(Succeed())
}

// overheads are the operator's gaps between members: from the event that a member
// is done ("<member> upgraded to <version>", emitted in the pass where its gates and
// settle time passed) to the next member's first action (its pod's deletion, or the
// leader's step-down Job), both timed by the operator (events.k8s.io eventTime, to
// the microsecond).
type overheads []time.Duration

func (o overheads) sorted() overheads {
	s := slices.Clone(o)
	slices.Sort(s)
	return s
}

func (o overheads) cell() string {
	if len(o) == 0 {
		return "n/a"
	}
	s := o.sorted()
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%s / %s", secs2(median), secs2(s[len(s)-1]))
}

func (o overheads) String() string {
	parts := make([]string, len(o))
	for i, d := range o {
		parts[i] = secs2(d)
	}
	return "[" + strings.Join(parts, " ") + "] median / max " + o.cell()
}

// controllerOverhead reads the cluster's events since start and returns, for every
// member after the first, the time from the previous member's completion to this
// member's first action.
func (tc *testCluster) controllerOverhead(ctx context.Context, start time.Time) overheads {
	GinkgoHelper()
	evs, err := cs.EventsV1().Events(tc.ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	type ev struct {
		at   time.Time
		note string
	}
	var list []ev
	for _, e := range evs.Items {
		if e.Regarding.Kind != "OpenBaoCluster" || e.EventTime.Time.Before(start.Add(-time.Second)) {
			continue
		}
		list = append(list, ev{e.EventTime.Time, e.Note})
	}
	slices.SortFunc(list, func(a, b ev) int { return a.at.Compare(b.at) })
	var out overheads
	var doneAt time.Time
	for _, e := range list {
		switch {
		case strings.Contains(e.note, " upgraded to "+benchTo):
			doneAt = e.at
		case !doneAt.IsZero() && (strings.HasPrefix(e.note, "Replacing ") || strings.Contains(e.note, "to step down")):
			out = append(out, e.at.Sub(doneAt))
			doneAt = time.Time{}
		}
	}
	return out
}
