package schedule

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestParseWindows(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 30, 0, 0, time.UTC)
	cases := []struct {
		name    string
		ws      []baov1.MaintenanceWindow
		wantErr string
	}{
		{name: "none"},
		{name: "a daily window", ws: []baov1.MaintenanceWindow{{Start: "0 2 * * *", Duration: "4h"}}},
		{name: "a descriptor in a time zone", ws: []baov1.MaintenanceWindow{{Start: "@weekly", Duration: "168h", TimeZone: "Europe/Berlin"}}},
		{name: "a start that does not parse", ws: []baov1.MaintenanceWindow{{Start: "0 2 * *", Duration: "4h"}},
			wantErr: `spec.upgrade.windows[0].start "0 2 * *" does not parse`},
		{name: "the second window is named", ws: []baov1.MaintenanceWindow{{Start: "0 2 * * *", Duration: "4h"}, {Start: "0 25 * * *", Duration: "1h"}},
			wantErr: "spec.upgrade.windows[1].start"},
		{name: "a zero duration", ws: []baov1.MaintenanceWindow{{Start: "0 2 * * *", Duration: "0s"}},
			wantErr: "spec.upgrade.windows[0].duration \"0s\" must be a positive duration"},
		{name: "a unit-less duration", ws: []baov1.MaintenanceWindow{{Start: "0 2 * * *", Duration: "4"}},
			wantErr: "must be a positive duration with a unit"},
		{name: "an unknown time zone", ws: []baov1.MaintenanceWindow{{Start: "0 2 * * *", Duration: "4h", TimeZone: "Mars/Olympus"}},
			wantErr: `spec.upgrade.windows[0].timeZone "Mars/Olympus" is not an IANA time zone`},
		{name: "a start that never comes", ws: []baov1.MaintenanceWindow{{Start: "0 2 30 2 *", Duration: "4h"}},
			wantErr: "never comes"},
		{name: "@every is refused", ws: []baov1.MaintenanceWindow{{Start: "@every 1h", Duration: "4h"}},
			wantErr: "the time zone goes in spec.upgrade.windows[0].timeZone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ws, err := ParseWindows(tc.ws, now)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ws).To(HaveLen(len(tc.ws)))
		})
	}
}

func TestStateAt(t *testing.T) {
	day := func(h, m int) time.Time { return time.Date(2026, 12, 6, h, m, 0, 0, time.UTC) } // a Sunday
	nightly := baov1.MaintenanceWindow{Start: "0 2 * * *", Duration: "4h"}
	cases := []struct {
		name string
		ws   []baov1.MaintenanceWindow
		now  time.Time
		want WindowState
	}{
		{name: "no windows", now: day(10, 0)},
		{name: "before the night's window", ws: []baov1.MaintenanceWindow{nightly}, now: day(1, 0),
			want: WindowState{OpensAt: day(2, 0), ClosesAt: day(6, 0)}},
		{name: "as it opens", ws: []baov1.MaintenanceWindow{nightly}, now: day(2, 0),
			want: WindowState{Open: true, OpensAt: day(2, 0), ClosesAt: day(6, 0)}},
		{name: "inside it", ws: []baov1.MaintenanceWindow{nightly}, now: day(5, 59),
			want: WindowState{Open: true, OpensAt: day(2, 0), ClosesAt: day(6, 0)}},
		{name: "as it closes: the next night's", ws: []baov1.MaintenanceWindow{nightly}, now: day(6, 0),
			want: WindowState{OpensAt: day(2, 0).AddDate(0, 0, 1), ClosesAt: day(6, 0).AddDate(0, 0, 1)}},
		{name: "the earliest of two windows opens next", now: day(7, 0),
			ws:   []baov1.MaintenanceWindow{nightly, {Start: "0 12 * * *", Duration: "1h"}},
			want: WindowState{OpensAt: day(12, 0), ClosesAt: day(13, 0)}},
		{name: "adjoining windows are one", now: day(3, 0),
			ws:   []baov1.MaintenanceWindow{nightly, {Start: "0 6 * * *", Duration: "2h"}},
			want: WindowState{Open: true, OpensAt: day(2, 0), ClosesAt: day(8, 0)}},
		{name: "overlapping windows: open until the later close", now: day(5, 0),
			ws:   []baov1.MaintenanceWindow{nightly, {Start: "0 4 * * *", Duration: "3h"}},
			want: WindowState{Open: true, OpensAt: day(2, 0), ClosesAt: day(7, 0)}},
		{name: "a window read in its time zone", now: day(1, 30),
			ws:   []baov1.MaintenanceWindow{{Start: "0 2 * * *", Duration: "1h", TimeZone: "Europe/Berlin"}}, // 01:00 UTC in winter
			want: WindowState{Open: true, OpensAt: day(1, 0), ClosesAt: day(2, 0)}},
		{name: "a weekly window on Saturday, seen on Sunday", now: day(10, 0),
			ws:   []baov1.MaintenanceWindow{{Start: "0 2 * * 6", Duration: "4h"}},
			want: WindowState{OpensAt: time.Date(2026, 12, 12, 2, 0, 0, 0, time.UTC), ClosesAt: time.Date(2026, 12, 12, 6, 0, 0, 0, time.UTC)}},
		{name: "a start every minute, open an hour: open, followed for a month at most", now: day(10, 0),
			ws:   []baov1.MaintenanceWindow{{Start: "* * * * *", Duration: "1h"}},
			want: WindowState{Open: true, OpensAt: day(9, 1), ClosesAt: day(10, 0).Add(extendLimit + time.Hour)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ws, err := ParseWindows(tc.ws, tc.now)
			g.Expect(err).NotTo(HaveOccurred())
			got := StateAt(ws, tc.now)
			g.Expect(got.Open).To(Equal(tc.want.Open))
			g.Expect(got.OpensAt).To(BeTemporally("==", tc.want.OpensAt))
			if tc.name == "a start every minute, open an hour: open, followed for a month at most" {
				g.Expect(got.ClosesAt).To(BeTemporally(">", tc.now.Add(extendLimit)))
				g.Expect(got.ClosesAt).To(BeTemporally("<=", tc.want.ClosesAt))
				return
			}
			g.Expect(got.ClosesAt).To(BeTemporally("==", tc.want.ClosesAt))
		})
	}
}
