package schedule

import (
	"fmt"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Window is one maintenance window of spec.upgrade.windows, parsed: it opens at
// each time its schedule names and stays open for its duration.
type Window struct {
	start    *Schedule
	duration time.Duration
}

// horizon bounds how far ahead a window is looked for: a start that never comes
// within it (30 February) is a spec error, said by ParseWindows.
const horizon = 5 * 366 * 24 * time.Hour

// extendLimit bounds how far chained windows are followed to find when they close.
const extendLimit = 31 * 24 * time.Hour

// ParseWindows reads spec.upgrade.windows. The error names the window (by its
// index) and says what to write; now is used only to find a start that never comes.
func ParseWindows(ws []baov1.MaintenanceWindow, now time.Time) ([]Window, error) {
	out := make([]Window, 0, len(ws))
	for i, w := range ws {
		field := fmt.Sprintf("spec.upgrade.windows[%d]", i)
		s, err := ParseIn(field+".start", field+".timeZone", w.Start, w.TimeZone)
		if err != nil {
			return nil, err
		}
		d, err := time.ParseDuration(string(w.Duration))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s.duration %q must be a positive duration with a unit, for example 4h", field, w.Duration)
		}
		if next := s.Next(now); next.IsZero() || next.Sub(now) > horizon {
			return nil, fmt.Errorf("%s.start %q never comes (no such date within five years): write a start that recurs, for example \"0 2 * * 6\" for Saturdays at 02:00", field, w.Start)
		}
		out = append(out, Window{start: s, duration: d})
	}
	return out, nil
}

// WindowState is where now stands against the windows: inside one (Open, until
// ClosesAt) or before the next (OpensAt to ClosesAt). Overlapping or adjoining
// windows count as one.
type WindowState struct {
	Open     bool
	OpensAt  time.Time
	ClosesAt time.Time
}

// StateAt is the state of the windows at now; the zero state (not open, no times)
// when there are none.
func StateAt(ws []Window, now time.Time) WindowState {
	var st WindowState
	for _, w := range ws {
		opens, closes := w.around(now)
		if opens.IsZero() {
			continue
		}
		open := !opens.After(now)
		switch {
		case open && (!st.Open || closes.After(st.ClosesAt)):
			if !st.Open || opens.Before(st.OpensAt) {
				st.OpensAt = opens
			}
			st.Open, st.ClosesAt = true, closes
		case open:
			if opens.Before(st.OpensAt) {
				st.OpensAt = opens
			}
		case !st.Open && (st.OpensAt.IsZero() || opens.Before(st.OpensAt)):
			st.OpensAt, st.ClosesAt = opens, closes
		}
	}
	if st.Open {
		// A window that opens before (or as) this one closes extends it; windows
		// that chain for ever (a start every minute, open for an hour) are followed
		// for a month.
		limit := now.Add(extendLimit)
		for extended := true; extended && !st.ClosesAt.After(limit); {
			extended = false
			for _, w := range ws {
				opens, closes := w.around(st.ClosesAt.Add(-time.Nanosecond))
				if !opens.IsZero() && !opens.After(st.ClosesAt) && closes.After(st.ClosesAt) {
					st.ClosesAt, extended = closes, true
				}
			}
		}
	}
	return st
}

// around is the window that contains t (opens ≤ t < closes) or else the next one;
// zero times when none comes. Among the starts whose window contains t, the one
// that closes last.
func (w Window) around(t time.Time) (opens, closes time.Time) {
	s := w.start.Next(t.Add(-w.duration))
	if s.IsZero() {
		return time.Time{}, time.Time{}
	}
	opens, closes = s, s.Add(w.duration)
	if s.After(t) {
		return opens, closes
	}
	// Later starts within the duration keep it open longer.
	for n := w.start.Next(s); !n.IsZero() && !n.After(t); n = w.start.Next(n) {
		closes = n.Add(w.duration)
	}
	return opens, closes
}
