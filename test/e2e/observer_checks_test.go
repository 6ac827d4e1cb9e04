//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The observer's strict checks, as pure functions over what it recorded, so that
// each can be shown to fail on a record that breaks it (observer_logic_test.go).

const (
	// defaultGapBound is the longest time without an acknowledged write that a
	// change window may hold when the spec plans at most one election per gap: an
	// election (about 1 s on the rig), then the standbys learning who leads (an
	// OpenBao standby looks for a new active node every 2.5 s, leaderCheckInterval
	// in its vault/ha.go, and forwards nothing meanwhile), with room for a busy rig.
	// Hand-offs of 2.7-2.9 s were seen whenever the writer's requests went through a
	// standby that had just missed a check (3 s, the earlier bound, failed one CI
	// run). A spec that injects a fault states its own bound and why (allowGap).
	defaultGapBound = 4 * time.Second
	// floorShare is the share of the writer's rate before the change that the
	// change window must hold, outside the gaps its elections explain, unless the
	// spec states its own share and why (allowFloorShare).
	floorShare = 0.5
	// baselineSpan is how long the writer runs before a change starts; its rate then
	// is the rate the window is held to.
	baselineSpan = 2 * time.Second
	// downGrace is how long after a member's new pod is Ready its sys/leader may
	// still fail (OpenBao answers once unsealed, shortly after Ready).
	downGrace = 5 * time.Second
	// pollErrorAllowance is how many sys/leader failures of a member outside its
	// own restarts a window may hold (a poll that timed out on a busy rig); more
	// than that, or more than pollErrorShare of its polls, fails the spec.
	pollErrorAllowance = 5
	pollErrorShare     = 0.01
)

// baselineRate is the writer's rate in acknowledged writes per second over the
// baselineSpan before start.
func baselineRate(acks []ack, start time.Time) float64 {
	from := start.Add(-baselineSpan)
	n := 0
	for _, a := range acks {
		if a.at.After(from) && !a.at.After(start) {
			n++
		}
	}
	return float64(n) / baselineSpan.Seconds()
}

// windowGaps returns the gaps between consecutive acknowledged writes that overlap
// [start, end] (the first from the last write before start, the last to end when
// no write follows), longest first.
func windowGaps(acks []ack, start, end time.Time) []time.Duration {
	var gaps []time.Duration
	prev := start
	closed := false
	for _, a := range acks {
		if !a.at.After(start) {
			prev = a.at
			continue
		}
		gaps = append(gaps, a.at.Sub(prev))
		prev = a.at
		if a.at.After(end) {
			closed = true
			break
		}
	}
	if !closed {
		gaps = append(gaps, end.Sub(prev))
	}
	slices.SortFunc(gaps, func(a, b time.Duration) int { return int(b - a) })
	return gaps
}

// longestGapSpan returns where the longest gap windowGaps measures lies: from the
// acknowledgement before it (or the window's start) to the one that ends it (or the
// window's end), so that a report can say which step of the change it fell on.
func longestGapSpan(acks []ack, start, end time.Time) (from, to time.Time) {
	prev := start
	for _, a := range acks {
		if !a.at.After(start) {
			prev = a.at
			continue
		}
		if a.at.Sub(prev) > to.Sub(from) {
			from, to = prev, a.at
		}
		prev = a.at
		if a.at.After(end) {
			return from, to
		}
	}
	if end.Sub(prev) > to.Sub(from) {
		from, to = prev, end
	}
	return from, to
}

// livenessFloor is the fewest acknowledged writes a window must hold: share of the
// rate before it, over the window less the elections longest gaps (each election
// explains one gap), never fewer than windowFloorMin.
func livenessFloor(acks []ack, start, end time.Time, elections int, share float64) (floor int, rate float64, excused time.Duration) {
	rate = baselineRate(acks, start)
	gaps := windowGaps(acks, start, end)
	for i := 0; i < elections && i < len(gaps); i++ {
		excused += gaps[i]
	}
	busy := end.Sub(start) - excused
	if busy < 0 {
		busy = 0
	}
	return max(windowFloorMin, int(share*rate*busy.Seconds())), rate, excused
}

// pollFailure is one failed sys/leader read.
type pollFailure struct {
	member string
	at     time.Time
	err    string
}

// downIntervals are the spans in which member m may not answer: from its pod's
// deletion (or, for a member whose first pod is not Ready yet when the observation
// starts, from the start) until its next pod is Ready plus downGrace.
func downIntervals(uids []types.UID, deletedAt, readyAt map[types.UID]time.Time, observed time.Time) [][2]time.Time {
	var out [][2]time.Time
	if len(uids) > 0 {
		if r, ok := readyAt[uids[0]]; !ok || r.After(observed) {
			end := r.Add(downGrace)
			if !ok {
				end = time.Time{} // never Ready: open-ended
			}
			out = append(out, [2]time.Time{observed, end})
		}
	}
	for i, u := range uids {
		d, ok := deletedAt[u]
		if !ok {
			continue
		}
		end := time.Time{}
		if i+1 < len(uids) {
			if r, ok := readyAt[uids[i+1]]; ok {
				end = r.Add(downGrace)
			}
		}
		out = append(out, [2]time.Time{d, end})
	}
	return out
}

// unexplainedPollFailures returns the failures of each member outside its down
// intervals, and the members whose count exceeds what a window may hold.
func unexplainedPollFailures(failures []pollFailure, polls map[string]int, down map[string][][2]time.Time) (byMember map[string][]pollFailure, over []string) {
	byMember = map[string][]pollFailure{}
	for _, f := range failures {
		explained := false
		for _, iv := range down[f.member] {
			if !f.at.Before(iv[0]) && (iv[1].IsZero() || !f.at.After(iv[1])) {
				explained = true
				break
			}
		}
		if !explained {
			byMember[f.member] = append(byMember[f.member], f)
		}
	}
	for m, fs := range byMember {
		if len(fs) > max(pollErrorAllowance, int(pollErrorShare*float64(polls[m]+len(fs)))) {
			over = append(over, fmt.Sprintf("%s: %d sys/leader reads failed outside its restarts (first at %s: %s)", m, len(fs), fs[0].at.Format(clock), fs[0].err))
		}
	}
	slices.Sort(over)
	return byMember, over
}

// observation is what the strict checks judge: the record of one change window.
type observation struct {
	acks       []ack
	start, end time.Time
	// elections is how many elections the observer counted; each explains one gap.
	elections int
	// gapBound is the longest gap the spec allows (defaultGapBound unless it said).
	gapBound time.Duration
	// floorShare is the share of the rate before the change that the window must
	// hold (the floorShare constant unless the spec said).
	floorShare float64
	// firstTermSeen is when the term before the change was first seen; zero: never.
	firstTermSeen time.Time
	failures      []pollFailure
	polls         map[string]int
	down          map[string][][2]time.Time
}

// strictProblems returns, in words, each strict check the observation breaks: the
// term before the change seen before it started, the longest write gap within its
// bound, the liveness floor, and sys/leader failures only while a member restarts.
func strictProblems(o observation) []string {
	var out []string
	if o.firstTermSeen.IsZero() || o.firstTermSeen.After(o.start) {
		out = append(out, "the leadership term before the change was not observed before the change started: an election at its start would go uncounted")
	}
	gaps := windowGaps(o.acks, o.start, o.end)
	if len(gaps) > 0 && gaps[0] > o.gapBound {
		out = append(out, fmt.Sprintf("the longest time without an acknowledged write was %s, more than the %s the spec allows", gaps[0].Round(time.Millisecond), o.gapBound))
	}
	in, _ := windowStats(o.acks, o.start, o.end)
	floor, rate, excused := livenessFloor(o.acks, o.start, o.end, o.elections, o.floorShare)
	if in < floor {
		out = append(out, fmt.Sprintf("the writer was starved: %d writes acknowledged in a window of %s, at least %d expected (%.0f%% of the %.1f/s before the change, outside %s of election gaps)",
			in, o.end.Sub(o.start).Round(100*time.Millisecond), floor, o.floorShare*100, rate, excused.Round(time.Millisecond)))
	}
	_, over := unexplainedPollFailures(o.failures, o.polls, o.down)
	out = append(out, over...)
	return out
}
