package kubectlbao

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TimelineEntry is one event of a cluster, for kubectl bao timeline.
type TimelineEntry struct {
	// Time is when the event first happened.
	Time metav1.Time `json:"time"`
	// Last is when it last happened, when it repeated (Count > 1).
	Last *metav1.Time `json:"last,omitempty"`
	// Count is how often it happened.
	Count int32 `json:"count"`
	// Type is Normal or Warning.
	Type string `json:"type"`
	// Reason is the event's CamelCase reason.
	Reason string `json:"reason"`
	// Message is the event's message.
	Message string `json:"message"`
	// Reporter is the controller that emitted it.
	Reporter string `json:"reporter,omitempty"`
}

// Timeline orders a cluster's events oldest first, whichever API wrote them: the
// events.k8s.io API (eventTime, series) that the operator uses, or the core one
// (firstTimestamp, lastTimestamp, count). Events at the same time keep the order of
// their names, so the result never depends on the list's order.
func Timeline(events []corev1.Event) []TimelineEntry {
	out := make([]TimelineEntry, 0, len(events))
	type keyed struct {
		entry TimelineEntry
		name  string
	}
	ks := make([]keyed, 0, len(events))
	for _, e := range events {
		first, last, count := eventTimes(e)
		en := TimelineEntry{Time: first, Count: count, Type: e.Type, Reason: e.Reason, Message: e.Message, Reporter: reporter(e)}
		if count > 1 && last.After(first.Time) {
			l := last
			en.Last = &l
		}
		ks = append(ks, keyed{entry: en, name: e.Name})
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if c := a.entry.Time.Compare(b.entry.Time.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	for _, k := range ks {
		out = append(out, k.entry)
	}
	return out
}

// eventTimes is when an event first and last happened, and how often.
func eventTimes(e corev1.Event) (first, last metav1.Time, count int32) {
	switch {
	case !e.EventTime.IsZero():
		first = metav1.NewTime(e.EventTime.Time)
	case !e.FirstTimestamp.IsZero():
		first = e.FirstTimestamp
	default:
		first = e.CreationTimestamp
	}
	last, count = first, max(e.Count, 1)
	if s := e.Series; s != nil {
		count = max(s.Count, 1)
		if !s.LastObservedTime.IsZero() {
			last = metav1.NewTime(s.LastObservedTime.Time)
		}
	} else if !e.LastTimestamp.IsZero() {
		last = e.LastTimestamp
	}
	return first, last, count
}

func reporter(e corev1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.Source.Component
}

// RenderTimeline writes the timeline as a table, times in UTC with their age.
func RenderTimeline(w io.Writer, cluster string, entries []TimelineEntry, now time.Time) error {
	d := newDescriber(w)
	if len(entries) == 0 {
		d.line(0, "No events recorded for openbaocluster %s (the API server keeps events for an hour by default).", cluster)
		return d.flush()
	}
	d.line(0, "Events of openbaocluster %s, oldest first:", cluster)
	rows := make([][]string, 0, len(entries))
	for _, e := range entries {
		at := e.Time.UTC().Format(time.RFC3339)
		ageCol := ago(e.Time.Time, now)
		if e.Count > 1 {
			ageCol += fmt.Sprintf(", x%d", e.Count)
			if e.Last != nil {
				ageCol += ", last " + ago(e.Last.Time, now)
			}
		}
		rows = append(rows, []string{at, ageCol, e.Type, e.Reason, e.Message})
	}
	d.table(0, []string{"TIME", "AGE", "TYPE", "REASON", "MESSAGE"}, rows)
	return d.flush()
}
