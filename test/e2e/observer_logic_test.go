//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"
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
		})
	}
}

func TestObserverWindowFloor(t *testing.T) {
	for d, want := range map[time.Duration]int{time.Second: 20, 4 * time.Second: 20, 25 * time.Second: 125, 100 * time.Second: 500} {
		if got := windowFloor(d); got != want {
			t.Errorf("windowFloor(%s) = %d, want %d", d, got, want)
		}
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
