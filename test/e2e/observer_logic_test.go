//go:build e2e

package e2e

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// The observer's counting, without a rig: `go test -tags e2e -run TestObserver
// ./test/e2e/` runs these alone (the suite itself, TestE2E, needs the rig's network
// namespace).

func TestObserverWindowStats(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	acks := func(ms ...int) []ack {
		var out []ack
		for _, m := range ms {
			out = append(out, ack{at: at(m)})
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		acks       []ack
		start, end int
		in         int
		longest    time.Duration
	}{
		{"steady writes", acks(0, 100, 200, 300, 400, 500, 600), 150, 450, 3, 100 * time.Millisecond},
		{"the gap that opens before the window counts", acks(0, 900, 1000), 100, 1000, 2, 900 * time.Millisecond},
		{"the gap that closes after the window counts", acks(0, 100, 1500), 50, 1000, 1, 1400 * time.Millisecond},
		{"nothing acknowledged inside the window", acks(0, 2000), 500, 1500, 0, 2000 * time.Millisecond},
		{"the writer stopped before the window ended", acks(0, 100), 50, 1000, 1, 900 * time.Millisecond},
		{"no write at all", nil, 0, 1000, 0, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, longest := windowStats(tc.acks, at(tc.start), at(tc.end))
			if in != tc.in || longest != tc.longest {
				t.Errorf("windowStats = %d in window, longest gap %s; want %d, %s", in, longest, tc.in, tc.longest)
			}
			if from, to := longestGapSpan(tc.acks, at(tc.start), at(tc.end)); to.Sub(from) != tc.longest {
				t.Errorf("longestGapSpan = %s to %s (%s); want a span of %s", from.Format(clock), to.Format(clock), to.Sub(from), tc.longest)
			}
		})
	}
}

func TestObserverCombineTerms(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	term := func(leader string, active, seen int) leaderTerm {
		return leaderTerm{leader: leader, active: at(active), firstSeen: at(seen), version: "2.4.1"}
	}
	leaders := func(ts []leaderTerm) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.leader)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		self    []leaderTerm
		namedBy map[string]time.Time
		want    []string
		hearsay []bool
	}{
		{"one change of leader", []leaderTerm{term("bao-2", -60, 0), term("bao-0", 20, 21)},
			map[string]time.Time{"bao-2": at(0), "bao-0": at(21)}, []string{"bao-2", "bao-0"}, []bool{false, false}},
		{"a re-election of the same member is a term of its own", []leaderTerm{term("bao-1", -60, 0), term("bao-1", 10, 11)},
			map[string]time.Time{"bao-1": at(0)}, []string{"bao-1", "bao-1"}, []bool{false, false}},
		{"a leader only standbys named is a term", []leaderTerm{term("bao-2", -60, 0), term("bao-0", 20, 22)},
			map[string]time.Time{"bao-2": at(0), "bao-1": at(15), "bao-0": at(21)}, []string{"bao-2", "bao-1", "bao-0"}, []bool{false, true, false}},
		{"ordered by first sight", []leaderTerm{term("bao-0", 20, 21), term("bao-2", -60, 0)},
			nil, []string{"bao-2", "bao-0"}, []bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := combineTerms(tc.self, tc.namedBy)
			var hearsay []bool
			for _, t := range got {
				hearsay = append(hearsay, t.hearsay)
			}
			if !slices.Equal(leaders(got), tc.want) || !slices.Equal(hearsay, tc.hearsay) {
				t.Errorf("combineTerms = %v (hearsay %v), want %v (hearsay %v)", leaders(got), hearsay, tc.want, tc.hearsay)
			}
		})
	}
}

func TestObserverSample(t *testing.T) {
	var acks []ack
	for i := range 1000 {
		acks = append(acks, ack{key: string(rune('a' + i%26)), value: time.Duration(i).String()})
	}
	s := sampleOf(acks, 50)
	if len(s) != 50 || s[0] != acks[0] || s[49] != acks[999] {
		t.Errorf("sampleOf(1000 acks, 50) = %d acks, first %v, last %v", len(s), s[0], s[len(s)-1])
	}
	if got := sampleOf(acks[:10], 50); len(got) != 10 {
		t.Errorf("sampleOf(10 acks, 50) = %d acks, want all 10", len(got))
	}
}

// threeGaps takes the writes out of three 2.5 s spans of the window: each gap is
// within the bound, together they are 75 % of it.
func threeGaps(acks []ack) []ack {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var out []ack
	for _, a := range acks {
		off := a.at.Sub(t0)
		if (off > 500*time.Millisecond && off < 3*time.Second) || (off > 3500*time.Millisecond && off < 6*time.Second) ||
			(off > 6500*time.Millisecond && off < 9*time.Second) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// atShare keeps every write before start and an evenly spread share of those after.
func atShare(acks []ack, start time.Time, share float64) []ack {
	var out []ack
	n := 0
	for _, a := range acks {
		if a.at.Before(start) {
			out = append(out, a)
			continue
		}
		if int(float64(n+1)*share) > int(float64(n)*share) {
			out = append(out, a)
		}
		n++
	}
	return out
}

// TestObserverStrictChecks breaks each strict check once on a record that otherwise
// passes, and shows that it fails, naming what broke.
func TestObserverStrictChecks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	// steady writes every 40 ms (25/s) from -2 s to 12 s, with an election gap.
	steady := func(gapFrom, gapTo int) []ack {
		var out []ack
		for m := -2000; m <= 12000; m += 40 {
			if m > gapFrom && m < gapTo {
				continue
			}
			out = append(out, ack{at: ms(m)})
		}
		return out
	}
	good := func() observation {
		return observation{acks: steady(4000, 5200), start: ms(0), end: ms(10000), elections: 1, gapBound: defaultGapBound, floorShare: floorShare,
			firstTermSeen: ms(-1500), polls: map[string]int{"bao-0": 120, "bao-1": 120, "bao-2": 120},
			failures: []pollFailure{{member: "bao-2", at: ms(3000), err: "connection refused"}},
			down:     map[string][][2]time.Time{"bao-2": {{ms(2500), ms(4000)}}}}
	}
	for _, tc := range []struct {
		name   string
		break_ func(o *observation)
		want   string
	}{
		{name: "a clean record passes", break_: func(*observation) {}},
		{name: "the term before the change seen only after it started",
			break_: func(o *observation) { o.firstTermSeen = ms(200) }, want: "term before the change was not observed"},
		{name: "the term before the change never seen",
			break_: func(o *observation) { o.firstTermSeen = time.Time{} }, want: "term before the change was not observed"},
		{name: "a gap longer than the bound",
			break_: func(o *observation) { o.acks = steady(4000, 9000) }, want: "the longest time without an acknowledged write was 5s, more than the 4s"},
		{name: "a spec's own bound admits it",
			break_: func(o *observation) { o.acks, o.gapBound = steady(4000, 9000), 6*time.Second }},
		{name: "a writer at a third of its rate, with no long gap",
			break_: func(o *observation) {
				var thin []ack
				for i, a := range o.acks {
					if a.at.Before(o.start) || i%3 == 0 {
						thin = append(thin, a)
					}
				}
				o.acks = thin
			}, want: "the writer was starved"},
		{name: "a writer at 40 % of its rate, with no long gap",
			break_: func(o *observation) { o.acks = atShare(o.acks, o.start, 0.4) }, want: "the writer was starved"},
		{name: "the same writer, where the spec holds its window to 35 % (allowFloorShare)",
			break_: func(o *observation) { o.acks, o.floorShare = atShare(o.acks, o.start, 0.4), 0.35 }},
		{name: "a writer at 30 %, where the spec holds its window to 35 %",
			break_: func(o *observation) { o.acks, o.floorShare = atShare(o.acks, o.start, 0.3), 0.35 }, want: "expected (35% of the 24.5/s before the change"},
		{name: "gaps within the bound that no election explains starve the window",
			break_: func(o *observation) { o.acks, o.elections = threeGaps(steady(0, 0)), 0 }, want: "the writer was starved"},
		{name: "the same gaps, each explained by an election counted (and checked by expectElections)",
			break_: func(o *observation) { o.acks, o.elections = threeGaps(steady(0, 0)), 3 }},
		{name: "sys/leader failures outside a member's restart",
			break_: func(o *observation) {
				for i := range 8 {
					o.failures = append(o.failures, pollFailure{member: "bao-0", at: ms(6000 + 100*i), err: "context deadline exceeded"})
				}
			}, want: "bao-0: 8 sys/leader reads failed outside its restarts"},
		{name: "failures while the member restarts are explained",
			break_: func(o *observation) {
				for i := range 8 {
					o.failures = append(o.failures, pollFailure{member: "bao-2", at: ms(2600 + 100*i), err: "connection refused"})
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good()
			tc.break_(&o)
			got := strictProblems(o)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("strictProblems = %q, want none", got)
			case tc.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }):
				t.Errorf("strictProblems = %q, want one containing %q", got, tc.want)
			}
		})
	}
}

func TestObserverDownIntervals(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	uids := []types.UID{"a", "b"}
	got := downIntervals(uids, map[types.UID]time.Time{"a": s(10)}, map[types.UID]time.Time{"a": s(-5), "b": s(20)}, s(0))
	want := [][2]time.Time{{s(10), s(20).Add(downGrace)}}
	if !slices.Equal(got, want) {
		t.Errorf("a replaced pod: downIntervals = %v, want %v", got, want)
	}
	got = downIntervals([]types.UID{"c"}, nil, map[types.UID]time.Time{"c": s(8)}, s(0))
	want = [][2]time.Time{{s(0), s(8).Add(downGrace)}}
	if !slices.Equal(got, want) {
		t.Errorf("a member that joins: downIntervals = %v, want %v", got, want)
	}
}

func TestObserverOperationTrace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	bg := func(phase baov1.BlueGreenPhase, action baov1.StepAction, pod string, attempts int32) *baov1.OpenBaoCluster {
		c := &baov1.OpenBaoCluster{}
		c.Status.BlueGreen = &baov1.BlueGreenStatus{Phase: phase}
		if action != "" {
			c.Status.BlueGreen.CurrentStep = &baov1.UpgradeStep{Action: action, Pod: pod, Attempts: attempts}
		}
		return c
	}
	tr := &opTrace{stop: func() {}, done: make(chan struct{})}
	close(tr.done)
	tr.observe(bg(baov1.BlueGreenDeployGreen, "", "", 0), nil, at(0))
	tr.observe(bg(baov1.BlueGreenPromoteGreen, baov1.StepPromoteMember, "g-0", 1), nil, at(1000))
	tr.observe(bg(baov1.BlueGreenPromoteGreen, baov1.StepPromoteMember, "g-0", 2), nil, at(1100)) // a retry: the same step
	tr.observe(nil, errors.New("timeout"), at(1200))
	tr.observe(bg(baov1.BlueGreenPromoteGreen, baov1.StepPromoteMember, "g-1", 1), nil, at(3000))
	tr.observe(bg(baov1.BlueGreenDemoteBlue, "", "", 0), nil, at(4500))
	tr.observe(bg(baov1.BlueGreenDemoteBlue, baov1.StepDemoteMember, "b-1", 1), nil, at(5000))
	tr.finish(at(6000))
	tr.finish(at(9000)) // only the first call counts

	if got, want := tr.stepList(), "PromoteMember g-0 2.0s, PromoteMember g-1 1.5s, DemoteMember b-1 1.0s"; got != want {
		t.Errorf("stepList = %q, want %q", got, want)
	}
	if got, want := tr.phaseDurations(), "DeployGreen 1.0s, PromoteGreen 3.5s, DemoteBlue 1.5s"; got != want {
		t.Errorf("phaseDurations = %q, want %q", got, want)
	}
	lat := tr.stepLatencies()
	if got := lat[baov1.StepPromoteMember]; len(got) != 2 || got[0] != 1500*time.Millisecond || got[1] != 2*time.Second {
		t.Errorf("promotion latencies = %v, want [1.5s 2s], sorted", got)
	}
	if tr.errs != 1 {
		t.Errorf("failed reads = %d, want 1", tr.errs)
	}
}
