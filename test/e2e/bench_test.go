//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
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
	baoapi "github.com/openbao/openbao/api/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// The upgrade benchmark (`make bench-upgrade`, label "bench", excluded from `make
// test-e2e`) measures every way of changing the version of 3- and 5-member clusters
// under the same writer and leader poller as the rolling-upgrade specs. Each way runs
// as a series on one cluster: before every run the leader is put on ordinal 0, a
// middle ordinal or the highest (in turn, so that drift on the machine spreads over
// the positions), then the cluster moves one patch version up the chain 2.4.0,
// 2.4.1, ..., 2.4.9 (relinked copies of 2.4.0 that report those versions). It prints
// one line per run and a table of medians and ranges per way, size and position;
// docs/benchmarks.md explains the columns and records results.
const (
	// benchPoll is how often the test drives and checks: the reverse-ordinal driver
	// and the "all on target" check react within it.
	benchPoll = 250 * time.Millisecond
	// benchFirstAttempt numbers the step-down Jobs of the test (leader placement and
	// the reverse-ordinal driver), far from the operator's own attempts (1 to
	// rolling.MaxStepDownAttempts) and moveLeaderToMiddle's (101 on).
	benchFirstAttempt = 201
	// benchMaxPlacement bounds the forced elections of one leader placement. A kill
	// lands leadership on the wanted member with a chance of about 1/(N-1); on 5
	// members the rig has needed up to 14.
	benchMaxPlacement = 40
	// benchUpgradeTimeout bounds one upgrade, trigger to all members on the target.
	benchUpgradeTimeout = 8 * time.Minute
	// benchRunsEnv overrides benchRuns, for a quick try: BENCH_FLAGS does not reach
	// the environment, so `BENCH_RUNS=1 make bench-upgrade`.
	benchRunsEnv = "BENCH_RUNS"
	// benchRuns is how many runs each way makes at each leader position.
	benchRuns = 3
)

// benchVersion is the k-th version of the chain: 2.4.0, 2.4.1, ...
// (hack/build-bins.sh builds them for make bench-upgrade, test/rig/images.txt maps
// their images).
func benchVersion(k int) string { return fmt.Sprintf("2.4.%d", k) }

// benchPosition is where the leader is put before a run.
type benchPosition struct {
	name    string
	ordinal func(n int) int
}

var benchPositions = []benchPosition{
	{name: "ordinal 0", ordinal: func(int) int { return 0 }},
	{name: "middle", ordinal: func(n int) int { return n / 2 }},
	{name: "highest", ordinal: func(n int) int { return n - 1 }},
}

// benchAlgorithm is one way of replacing the members.
type benchAlgorithm struct {
	name  string
	short string // in the namespace name
	// external means the test drives the upgrade itself, with the operator scaled
	// to zero so that nothing reverts the StatefulSet.
	external bool
	// setup configures the cluster once, before the series (baokeeper's rows).
	setup func(c *baov1.OpenBaoCluster)
	// runsPerPosition is how many runs the way makes at each position; 0 means
	// benchRuns (or BENCH_RUNS).
	runsPerPosition int
	// trigger starts the upgrade to version to (and, for a driver, carries it out)
	// and returns how many step-down Jobs it ran.
	trigger func(ctx context.Context, s *benchSeries, to string) int
}

var benchAlgorithms = []benchAlgorithm{
	baokeeperWith("baokeeper, settleTime 0s", "bk0", ptrTo(baov1.Duration("0s")), baov1.LeaderHandoffShutdown, 0),
	baokeeperWith(fmt.Sprintf("baokeeper, default configuration (settleTime %s)", baov1.DefaultSettleTime), "bk", nil, baov1.LeaderHandoffShutdown, 1),
	baokeeperWith("baokeeper, settleTime 0s, leaderHandoff StepDown", "bk-stepdown", ptrTo(baov1.Duration("0s")), baov1.LeaderHandoffStepDown, 1),
	{name: "StatefulSet RollingUpdate", short: "sts", external: true, trigger: func(ctx context.Context, s *benchSeries, to string) int {
		s.tc.patchStatefulSet(ctx, fmt.Sprintf(`{"spec":{"updateStrategy":{"type":"RollingUpdate"},"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`,
			workload.ContainerName, upgrade.DefaultImage(to)))
		return 0
	}},
	{name: "reverse ordinal (existing operator)", short: "revord", external: true, trigger: func(ctx context.Context, s *benchSeries, to string) int {
		return s.reverseOrdinalUpgrade(ctx, to)
	}},
}

// baokeeperWith is baokeeper with the given settle time (nil: the default) and
// leader hand-off, runs runs at each position (0: benchRuns).
func baokeeperWith(label, short string, settle *baov1.Duration, handoff baov1.LeaderHandoff, runs int) benchAlgorithm {
	return benchAlgorithm{name: label, short: short, runsPerPosition: runs,
		setup: func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Rolling.SettleTime = settle
			c.Spec.Upgrade.Rolling.LeaderHandoff = handoff
		},
		trigger: func(ctx context.Context, s *benchSeries, to string) int {
			s.tc.update(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = to })
			return 0
		}}
}

// runs is how many runs a way makes at each position: benchRuns (or BENCH_RUNS),
// or fewer when the way asks for fewer.
func (a benchAlgorithm) runs() int {
	n := benchRuns
	if v, err := strconv.Atoi(os.Getenv(benchRunsEnv)); err == nil && v > 0 {
		n = v
	}
	if a.runsPerPosition > 0 {
		return min(a.runsPerPosition, n)
	}
	return n
}

// benchRow is the outcome of one run.
type benchRow struct {
	algorithm string
	members   int32
	position  string
	from, to  string
	done      bool // every figure below was measured

	elections  int
	longestGap time.Duration
	failed     int64
	acked      int
	lost       int
	total      time.Duration // trigger -> all members on the target
	intrinsic  time.Duration // sum over members of old pod deleted -> new pod Ready
	overhead   time.Duration // mean over members of (previous Ready or trigger) -> pod deleted
	// settle is the settle time the operator waits inside the change window:
	// settleTime × (members − 1); the last member's settle time ends after the
	// finish line.
	settle time.Duration
	// controller is the operator's own overhead between members (baokeeper rows).
	controller overheads
	// requestRate is the operator's OpenBao requests per second to this cluster over
	// the run (baokeeper rows; -1 when not measured).
	requestRate float64
	// statusDone is the trigger to status.currentVersion on the target, which comes
	// after the finish line (baokeeper rows; zero for the baselines).
	statusDone time.Duration
	detail     string
	// steps are the operator's steps of the run by kind, from the persisted intent
	// to the verified result (opTrace); phases the blue-green phases' durations.
	steps  map[baov1.StepAction][]time.Duration
	phases string
	// blueGreen rows have no per-member replacement: their members are new pods.
	blueGreen bool
}

// benchSizes are the cluster sizes the benchmark measures.
var benchSizes = []int32{3, 5}

// benchNamespace is the namespace of algo's series on n members.
func benchNamespace(algo benchAlgorithm, n int32) string {
	return fmt.Sprintf("bench-%s-%d", algo.short, n)
}

// benchBlueGreenNamespace is the namespace of the blue-green series on n members.
func benchBlueGreenNamespace(n int32) string { return fmt.Sprintf("bench-bg-%d", n) }

var _ = Describe("Upgrade benchmark", Label("bench"), Ordered, ContinueOnFailure, func() {
	var rows []*benchRow
	loadStart := loadAverage()

	AfterAll(func() {
		t := benchTable(rows)
		AddReportEntry("upgrade benchmark", t)
		// Plain stdout as well, so the table ends up in `make bench-upgrade` output
		// however Ginkgo is asked to report.
		fmt.Fprintf(os.Stdout, "\n==== upgrade benchmark, one patch version per run from %s (%d CPUs, load average at the start %s, at the end %s) ====\n%s\n",
			benchVersion(0), runtime.NumCPU(), loadStart, loadAverage(), t)
		steps := stepTable(rows)
		AddReportEntry("upgrade benchmark steps", steps)
		fmt.Fprintf(os.Stdout, "\n==== the operator's steps, from the persisted intent to the verified result (status read every %s) ====\n%s\n", opTraceEvery, steps)
	})
	record := func(r *benchRow) { rows = append(rows, r) }

	for _, n := range benchSizes {
		for _, algo := range benchAlgorithms {
			It(fmt.Sprintf("measures %s on %d members", algo.name, n), func(ctx SpecContext) {
				runBenchSeries(ctx, algo, n, record)
			}, SpecTimeout(90*time.Minute))
		}
		It(fmt.Sprintf("measures baokeeper blue-green on %d members", n), func(ctx SpecContext) {
			runBlueGreenSeries(ctx, n, record)
		}, SpecTimeout(60*time.Minute))
	}
})

// benchSeries is one way's runs on one cluster.
type benchSeries struct {
	tc      *testCluster
	algo    benchAlgorithm
	image   string // the operator's, for the test's step-down Jobs
	attempt int32  // the last step-down Job attempt number used
	// requests reads the operator's request counter of the cluster (nil: the
	// operator is scaled to zero).
	requests func(ctx context.Context) float64
}

func (s *benchSeries) nextAttempt() int32 {
	s.attempt++
	return s.attempt
}

// runBenchSeries brings up a cluster of n members on the first version of the chain
// and runs algo on it at each leader position in turn, recording one row per run.
func runBenchSeries(ctx context.Context, algo benchAlgorithm, n int32, record func(*benchRow)) {
	GinkgoHelper()
	namespace := benchNamespace(algo, n)
	DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, namespace) }, NodeTimeout(3*time.Minute))
	tc := newTestCluster(ctx, namespace, n)
	s := &benchSeries{tc: tc, algo: algo, image: operatorImage(ctx), attempt: benchFirstAttempt - 1}
	if algo.setup != nil {
		tc.update(ctx, algo.setup)
	}
	if algo.external {
		By("scaling the operator to zero, so that nothing reverts what the test does")
		scaleOperator(ctx, 0)
		// Cleanups run last-in first-out: the namespace goes before the operator
		// comes back, so it never sees the half-done StatefulSet.
		DeferCleanup(func(ctx SpecContext) { scaleOperator(ctx, 1) }, NodeTimeout(3*time.Minute))
		DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, namespace) }, NodeTimeout(3*time.Minute))
	} else {
		s.requests = operatorRequestCounter(ctx, namespace)
	}
	k := 0
	for r := 0; r < algo.runs(); r++ {
		for _, pos := range benchPositions {
			row := &benchRow{algorithm: algo.name, members: n, position: pos.name, from: benchVersion(k), to: benchVersion(k + 1), requestRate: -1}
			k++
			record(row)
			s.run(ctx, pos, row)
		}
	}
}

// run puts the leader on pos, upgrades the cluster from row.from to row.to under the
// observer and fills row.
func (s *benchSeries) run(ctx context.Context, pos benchPosition, row *benchRow) {
	GinkgoHelper()
	tc := s.tc
	n := len(tc.memberList())
	target := tc.memberList()[pos.ordinal(n)]
	By(fmt.Sprintf("putting the leader on %s (%s)", target, pos.name))
	kills, placeJobs := tc.placeLeaderOn(ctx, target, s)
	tc.waitPodsReady(ctx)
	Expect(tc.settledLeader(ctx)).To(Equal(target), "the leader moved after its placement")
	settle := time.Duration(0)
	if !s.algo.external {
		// Inside the window: after every member but the last, whose settle time runs
		// after the finish line (before status.currentVersion).
		settle = tc.get(ctx, Default).GetSettleTime() * time.Duration(n-1)
	}
	row.settle = settle

	obs := tc.observe(ctx)
	Expect(obs.leaderLog()).To(Equal([]string{target}), "the leader moved before the upgrade")
	By(fmt.Sprintf("upgrading %s -> %s: %s, leader on %s", row.from, row.to, s.algo.name, pos.name))
	load := loadAverage()
	var before float64
	if s.requests != nil {
		before = s.requests(ctx)
	}
	trace := tc.traceOperation(ctx)
	start := time.Now()
	// The change window is the same for every algorithm: from the trigger to the
	// finish line (a driver's trigger carries the whole upgrade out).
	obs.beginWindow()
	stepDowns := s.algo.trigger(ctx, s, row.to)
	doneAt, line := tc.waitAllOn(ctx, obs, row.to, benchUpgradeTimeout-time.Since(start))
	obs.endWindowAt(doneAt)
	extra := []string{line.since(start)}
	if !s.algo.external {
		tc.waitUpgraded(ctx, row.to, 2*time.Minute)
		statusAt := time.Since(start)
		row.statusDone = statusAt
		if s.requests != nil {
			row.requestRate = (s.requests(ctx) - before) / statusAt.Seconds()
		}
		extra = append(extra, fmt.Sprintf("status.currentVersion %s at +%s (polled every %s), operator's OpenBao requests %.1f/s",
			row.to, secs(statusAt), pollEvery, row.requestRate))
		trace.finish(time.Now())
		row.steps = trace.stepLatencies()
		extra = append(extra, "steps (persisted intent to verified result): "+trace.stepList())
		stepDowns = tc.stepDownJobsSince(ctx, start)
		row.controller = tc.controllerOverhead(ctx, start, row.to)
		extra = append(extra, "controller overhead (a member done → the next member's first action, from the operator's event times): "+row.controller.String())
	}
	trace.finish(time.Now())
	res := obs.finish(ctx)
	Expect(res.watchErr).NotTo(HaveOccurred())
	Expect(res.unreadable).To(BeZero(), "every acknowledged write is read back: %v", res.problems)

	row.fill(tc, res, start, doneAt)
	if n := len(res.terms); n > 0 && !res.terms[n-1].hearsay {
		extra = append(extra, fmt.Sprintf("the last term active at +%s", secs(res.terms[n-1].active.Sub(start))))
	}
	head := fmt.Sprintf("%s, %d members, %s -> %s: load average at the trigger %s, settle %s in the window, leader placed on %s (%s) after %d forced election(s) and %d step-down(s), step-down Jobs during the upgrade %d, "+
		"window %s, acked in window %d (floor %d), longest gap in window %s, lost %d (sample through each member bad %d), elections %d (terms: %s), leaders %v on %v",
		s.algo.name, n, row.from, row.to, load, secs(settle), target, pos.name, kills, placeJobs, stepDowns,
		secs(res.window), res.inWindow, res.floor, secs2(res.longest), res.lost, res.sampleBad, res.elections, res.termsString(), res.leaders, res.versions)
	row.detail = strings.Join(append([]string{head}, extra...), "; ") + "\n" + row.detail
	AddReportEntry(fmt.Sprintf("bench %s %d %s %s", s.algo.short, n, pos.name, row.to), row.detail)
	fmt.Fprintf(GinkgoWriter, "%s\n", row.detail)
	Expect(row.done).To(BeTrue(), "the pod timeline is incomplete:\n%s", row.detail)
	if !s.algo.external {
		// baokeeper's promises; the baselines are measured only.
		res.expectNoLoss()
		res.expectElections(1, row.to)
	}
}

// runBlueGreenSeries brings up a cluster of n members and upgrades it blue-green
// (autoPromote, no sync wait, no hook) once with the leader at each position, under
// the observer. The finish line is status.currentVersion on the target with blue
// gone: green's members are new pods, so the per-member columns of the rolling rows
// do not apply.
func runBlueGreenSeries(ctx context.Context, n int32, record func(*benchRow)) {
	GinkgoHelper()
	namespace := benchBlueGreenNamespace(n)
	DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, namespace) }, NodeTimeout(3*time.Minute))
	tc := newTestCluster(ctx, namespace, n)
	tc.update(ctx, func(c *baov1.OpenBaoCluster) {
		c.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy
		c.Spec.Upgrade.BlueGreen.AutoPromote = true
		c.Spec.Upgrade.BlueGreen.MinSyncDuration = ptrTo(baov1.Duration("0s"))
	})
	s := &benchSeries{tc: tc, image: operatorImage(ctx), attempt: benchFirstAttempt - 1, requests: operatorRequestCounter(ctx, namespace)}
	for k, pos := range benchPositions {
		row := &benchRow{algorithm: "baokeeper blue-green (autoPromote, minSyncDuration 0s)", members: n, position: pos.name,
			from: benchVersion(k), to: benchVersion(k + 1), blueGreen: true, requestRate: -1}
		record(row)
		blue := tc.memberList()
		target := blue[pos.ordinal(int(n))]
		By(fmt.Sprintf("putting the leader on %s (%s)", target, pos.name))
		kills, placeJobs := tc.placeLeaderOn(ctx, target, s)
		tc.waitPodsReady(ctx)

		obs := tc.observe(ctx)
		load := loadAverage()
		before := s.requests(ctx)
		trace := tc.traceOperation(ctx)
		start := time.Now()
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = row.to })
		green := tc.waitGreenNamed(ctx, int(n))
		tc.setMembers(append(blue, green...)...)
		tc.waitUpgraded(ctx, row.to, benchUpgradeTimeout)
		doneAt := time.Now()
		trace.finish(doneAt)
		row.steps, row.phases = trace.stepLatencies(), trace.phaseDurations()
		row.requestRate = (s.requests(ctx) - before) / doneAt.Sub(start).Seconds()
		tc.setMembers(green...)
		obs.endWindowAt(doneAt)
		res := obs.finish(ctx)
		row.elections = res.elections
		row.longestGap, row.failed, row.acked, row.lost = res.longest, res.failed, res.inWindow, res.lost+res.sampleBad
		row.total = doneAt.Sub(start)
		row.statusDone = row.total
		row.done = true
		row.detail = fmt.Sprintf("baokeeper blue-green, %d members, %s -> %s: load average at the trigger %s, leader placed on %s (%s) after %d forced election(s) and %d step-down(s), "+
			"window %s, acked in window %d (floor %d), longest gap in window %s, failed attempts %d, lost %d (sample through each member bad %d), elections %d (terms: %s), leaders %v on %v; "+
			"status.currentVersion %s at +%s (polled every %s), operator's OpenBao requests %.1f/s; phases %s; steps (persisted intent to verified result) %s",
			n, row.from, row.to, load, target, pos.name, kills, placeJobs, secs(res.window), res.inWindow, res.floor, secs2(res.longest), res.failed, res.lost, res.sampleBad,
			res.elections, res.termsString(), res.leaders, res.versions, row.to, secs(row.total), pollEvery, row.requestRate, row.phases, trace.stepList())
		AddReportEntry(fmt.Sprintf("bench bluegreen %d %s", n, pos.name), row.detail)
		fmt.Fprintf(GinkgoWriter, "%s\n", row.detail)
		res.expectNoLoss()
		res.expectElections(1, row.to)
		Expect(green).To(ContainElement(res.leaders[1]), "the new leader is a green member")
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
	fmt.Fprintf(&b, "  all on %s at +%s (tail after the last Ready %s)", r.to, secs(r.total), secs(doneAt.Sub(prev)))
	r.detail = b.String()
	if complete && len(steps) == len(tc.memberList()) {
		r.overhead = overheadSum / time.Duration(len(steps))
		r.done = true
	}
}

// benchTable renders the rows as a Markdown table: one line per way, size and leader
// position, in the order they ran, with the median of the runs and, in brackets,
// their range.
func benchTable(rows []*benchRow) string {
	type key struct {
		algorithm string
		members   int32
		position  string
	}
	var order []key
	groups := map[key][]*benchRow{}
	for _, r := range rows {
		k := key{r.algorithm, r.members, r.position}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var b strings.Builder
	b.WriteString("| way | members | leader on | runs | elections | longest write gap | failed write attempts | lost writes | total | to status.currentVersion | Σ intrinsic | settle | total − Σ intrinsic − settle | controller overhead median / max | OpenBao requests/s |\n")
	b.WriteString("| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range order {
		var done []*benchRow
		for _, r := range groups[k] {
			if r.done {
				done = append(done, r)
			}
		}
		runs := fmt.Sprintf("%d", len(done))
		if len(done) < len(groups[k]) {
			runs = fmt.Sprintf("%d of %d", len(done), len(groups[k]))
		}
		if len(done) == 0 {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | did not complete (see the spec's output) | | | | | | | | | | |\n", k.algorithm, k.members, k.position, runs)
			continue
		}
		d := func(f func(*benchRow) time.Duration) []time.Duration {
			out := make([]time.Duration, len(done))
			for i, r := range done {
				out[i] = f(r)
			}
			return out
		}
		var elections []string
		var lost int
		var failed []time.Duration
		var controller overheads
		var rates []float64
		for _, r := range done {
			elections = append(elections, strconv.Itoa(r.elections))
			lost += r.lost
			failed = append(failed, time.Duration(r.failed))
			controller = append(controller, r.controller...)
			if r.requestRate >= 0 {
				rates = append(rates, r.requestRate)
			}
		}
		rate := "n/a"
		if len(rates) > 0 {
			slices.Sort(rates)
			rate = fmt.Sprintf("%.1f [%.1f–%.1f]", rates[len(rates)/2], rates[0], rates[len(rates)-1])
			if len(rates) == 1 {
				rate = fmt.Sprintf("%.1f", rates[0])
			}
		}
		failedCell := medianRange(failed, func(x time.Duration) string { return strconv.FormatInt(int64(x), 10) })
		gap := medianRange(d(func(r *benchRow) time.Duration { return r.longestGap }), secs2)
		total := medianRange(d(func(r *benchRow) time.Duration { return r.total }), secs)
		status := "n/a"
		if done[0].statusDone > 0 {
			status = medianRange(d(func(r *benchRow) time.Duration { return r.statusDone }), secs)
		}
		if done[0].blueGreen {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d | %s | %s | n/a | n/a | n/a | n/a | %s |\n", k.algorithm, k.members, k.position, runs,
				strings.Join(elections, ", "), gap, failedCell, lost, total, status, rate)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", k.algorithm, k.members, k.position, runs,
			strings.Join(elections, ", "), gap, failedCell, lost, total, status,
			medianRange(d(func(r *benchRow) time.Duration { return r.intrinsic }), secs),
			secs(done[0].settle),
			medianRange(d(func(r *benchRow) time.Duration { return r.total - r.intrinsic - r.settle }), secs),
			controller.cell(), rate)
	}
	return b.String()
}

// stepTable is the latency of each kind of step per way and cluster size, over every
// run: from the read of the status that first showed the step's intent to the read
// that showed the next (opTrace).
func stepTable(rows []*benchRow) string {
	type key struct {
		algorithm string
		members   int32
		action    baov1.StepAction
	}
	var order []key
	lat := map[key][]time.Duration{}
	for _, r := range rows {
		for _, a := range slices.Sorted(maps.Keys(r.steps)) {
			k := key{r.algorithm, r.members, a}
			if _, seen := lat[k]; !seen {
				order = append(order, k)
			}
			lat[k] = append(lat[k], r.steps[a]...)
		}
	}
	var b strings.Builder
	b.WriteString("| way | members | step | count | median | max |\n| --- | ---: | --- | ---: | ---: | ---: |\n")
	for _, k := range order {
		xs := slices.Sorted(slices.Values(lat[k]))
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %s | %s |\n", k.algorithm, k.members, k.action, len(xs), secs(median(xs)), secs(xs[len(xs)-1]))
	}
	return b.String()
}

// medianRange is "median [min–max]" of xs (the median of an even count is the mean
// of the middle two), or the one value when there is one.
func medianRange(xs []time.Duration, format func(time.Duration) string) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 1 {
		return format(s[0])
	}
	return fmt.Sprintf("%s [%s–%s]", format(median(s)), format(s[0]), format(s[len(s)-1]))
}

// median of sorted values; the mean of the middle two for an even count.
func median(sorted []time.Duration) time.Duration {
	m := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		m = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return m
}

// operatorRequestCounter returns a reader of the operator's
// baokeeper_openbao_requests_total for the cluster of namespace (summed over code
// and method), scraped with a service account granted baokeeper-metrics-reader.
func operatorRequestCounter(ctx context.Context, namespace string) func(context.Context) float64 {
	GinkgoHelper()
	const sa = "bench-scraper"
	Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}})).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-bench-scraper-" + namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "baokeeper-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: namespace}},
	}
	Expect(k8s.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { _ = k8s.Delete(ctx, binding) })
	return func(ctx context.Context) float64 {
		GinkgoHelper()
		var sum float64
		Eventually(func(g Gomega) {
			code, body := scrape(ctx, apiToken(ctx, namespace, sa))
			g.Expect(code).To(Equal(http.StatusOK), body)
			sum = 0
			for _, line := range strings.Split(body, "\n") {
				if !strings.HasPrefix(line, "baokeeper_openbao_requests_total{") || !strings.Contains(line, `namespace="`+namespace+`"`) {
					continue
				}
				f := strings.Fields(line)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				g.Expect(err).NotTo(HaveOccurred(), line)
				sum += v
			}
		}, 30*time.Second, time.Second).Should(Succeed())
		return sum
	}
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

// waitAllOn waits until every member runs on a replaced pod that is Ready, reports
// version, initialized and unsealed, and autopilot is healthy with every member a
// voter: the same finish line for every algorithm. It returns when that first held
// (the start of the check that passed), and since when each of the three parts had
// held by then.
func (tc *testCluster) waitAllOn(ctx context.Context, obs *upgradeObserver, version string, timeout time.Duration) (time.Time, finishLine) {
	GinkgoHelper()
	var at time.Time
	var fl finishLine
	holds := func(since *time.Time, ok bool, now time.Time) bool {
		switch {
		case !ok:
			*since = time.Time{}
		case since.IsZero():
			*since = now
		}
		return ok
	}
	Eventually(func(g Gomega) {
		checked := time.Now()
		pending := obs.replacedAndReady(tc)
		pods := holds(&fl.pods, len(pending) == 0, checked)
		var bad []string
		for _, m := range tc.memberList() {
			h, err := tc.client(m, "").Sys().HealthWithContext(ctx)
			switch {
			case err != nil:
				bad = append(bad, fmt.Sprintf("%s: %v", m, err))
			case !h.Initialized || h.Sealed || h.Version != version:
				bad = append(bad, fmt.Sprintf("%s: initialized %t sealed %t version %s", m, h.Initialized, h.Sealed, h.Version))
			}
		}
		versions := holds(&fl.versions, len(bad) == 0, checked)
		st, err := tc.autopilot(ctx)
		pilot := holds(&fl.autopilot, err == nil && st.Healthy && sameMembers(st.Voters, tc.memberList()), checked)
		if err == nil && !st.Healthy {
			fl.unhealthyAt, fl.unhealthy = checked, unhealthyServers(st)
		}
		g.Expect(pods).To(BeTrue(), "members not yet replaced and Ready: %v", pending)
		g.Expect(versions).To(BeTrue(), "members not on %s: %v", version, bad)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pilot).To(BeTrue(), "autopilot healthy %t, voters %v", st.Healthy, st.Voters)
		at = checked
	}, timeout, benchPoll).Should(Succeed())
	return at, fl
}

// finishLine is since when each part of waitAllOn's finish line held, and what
// autopilot said at its last check that found a server unhealthy.
type finishLine struct {
	pods, versions, autopilot time.Time
	unhealthyAt               time.Time
	unhealthy                 string
}

func (f finishLine) since(start time.Time) string {
	s := fmt.Sprintf("finish line: pods replaced and Ready +%s, every member on the target +%s, autopilot healthy with every member a voter +%s",
		secs(f.pods.Sub(start)), secs(f.versions.Sub(start)), secs(f.autopilot.Sub(start)))
	if !f.unhealthyAt.IsZero() {
		s += fmt.Sprintf(" (last seen unhealthy +%s: %s)", secs(f.unhealthyAt.Sub(start)), f.unhealthy)
	}
	return s
}

// unhealthyServers says which servers autopilot's state calls unhealthy, with the
// figures its health check compares: the server's last Raft term against the
// leader's, its last contact and its last index.
func unhealthyServers(st *baoapi.AutopilotState) string {
	var leaderTerm uint64
	for _, srv := range st.Servers {
		if srv.Status == openbao.AutopilotStatusLeader {
			leaderTerm = srv.LastTerm
		}
	}
	var out []string
	for name, srv := range st.Servers {
		if srv.Healthy {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s term %d (leader's %d) contact %s index %d", name, srv.Status, srv.LastTerm, leaderTerm, srv.LastContact, srv.LastIndex))
	}
	if len(out) == 0 {
		return fmt.Sprintf("cluster unhealthy, no server listed (%d servers)", len(st.Servers))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func sameMembers(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
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
		if phase == operation.JobFailed {
			StopTrying(fmt.Sprintf("step-down Job %s failed: %s", job.Name, msg)).Now()
		}
		g.Expect(phase).To(Equal(operation.JobSucceeded), "step-down Job %s", job.Name)
	}, 2*time.Minute, benchPoll).Should(Succeed())
	Eventually(func() string { return tc.activeMember(ctx) }, time.Minute, benchPoll).
		ShouldNot(BeElementOf("", member), "another member becomes active after %s steps down", member)
	Expect(k8s.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	return job.Name
}

// placeLeaderLast puts the leader on the highest ordinal with forced elections
// only, and returns how many it took.
func (tc *testCluster) placeLeaderLast(ctx context.Context) int {
	GinkgoHelper()
	kills, _ := tc.placeLeaderOn(ctx, tc.memberList()[len(tc.memberList())-1], nil)
	return kills
}

// placeLeaderOn moves leadership to target and returns how many forced elections
// and step-downs it took. OpenBao's step-down, like a leader's graceful shutdown, is
// a Raft leadership transfer (hashicorp/raft pickServer), which hands leadership to
// the first up-to-date voter in configuration order, that is join order (ordinal
// order): bao-0, or bao-1 when bao-0 steps down. So when target is that voter and
// jobs is not nil, the leader is stepped down with jobs' Job (the operator's own,
// executor identity). Otherwise the leader is killed with SIGKILL, which leaves an
// election that the randomized election timeouts decide, and target wins it about
// once in N-1; the killed container restarts in the same pod and rejoins before the
// next try.
func (tc *testCluster) placeLeaderOn(ctx context.Context, target string, jobs *benchSeries) (kills, stepDowns int) {
	GinkgoHelper()
	for {
		leader := tc.settledLeader(ctx)
		if leader == target {
			return kills, stepDowns
		}
		Expect(kills+stepDowns).To(BeNumerically("<", benchMaxPlacement), "leadership did not land on %s", target)
		order := slices.DeleteFunc(tc.memberList(), func(m string) bool { return m == leader })
		if jobs != nil && order[0] == target {
			tc.stepDown(ctx, leader, jobs.nextAttempt(), jobs.image)
			stepDowns++
			continue
		}
		pids := memberPIDs(tc.ns, leader)
		Expect(pids).NotTo(BeEmpty(), "no OpenBao process of %s/%s", tc.ns, leader)
		for _, pid := range pids {
			Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
		}
		kills++
		Eventually(func() string { return tc.activeMember(ctx) }, 2*time.Minute, benchPoll).
			ShouldNot(BeElementOf("", leader), "another member is elected after %s is killed", leader)
		tc.waitPodsReady(ctx)
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

// stepDownJobsSince counts the operator's step-downs in the namespace asked since t
// (the test's own Jobs are deleted once done).
func (tc *testCluster) stepDownJobsSince(ctx context.Context, t time.Time) int {
	GinkgoHelper()
	n := 0
	for _, s := range tc.executorSteps(ctx, executorjob.StepStepDown) {
		if !s.at.Before(t.Truncate(time.Second)) {
			n++
		}
	}
	return n
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
func (s *benchSeries) reverseOrdinalUpgrade(ctx context.Context, to string) int {
	GinkgoHelper()
	tc := s.tc
	tc.patchStatefulSet(ctx, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`,
		workload.ContainerName, upgrade.DefaultImage(to)))
	stepDowns := 0
	for i := len(tc.memberList()) - 1; i >= 0; i-- {
		m := tc.memberList()[i]
		var leader string
		Eventually(func() string { leader = tc.activeMember(ctx); return leader }, time.Minute, benchPoll).ShouldNot(BeEmpty(), "no active member")
		if leader == m {
			tc.stepDown(ctx, m, s.nextAttempt(), s.image)
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
			g.Expect(h.Version).To(Equal(to), m)
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
func (tc *testCluster) controllerOverhead(ctx context.Context, start time.Time, to string) overheads {
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
		case strings.Contains(e.note, " upgraded to "+to):
			doneAt = e.at
		case !doneAt.IsZero() && (strings.HasPrefix(e.note, "Replacing ") || strings.Contains(e.note, "to step down")):
			out = append(out, e.at.Sub(doneAt))
			doneAt = time.Time{}
		}
	}
	return out
}
