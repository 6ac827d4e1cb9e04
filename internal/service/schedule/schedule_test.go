package schedule

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestParse(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatalf("the test needs the Europe/Berlin zone: %v", err)
	}
	from := time.Date(2026, 12, 6, 10, 30, 0, 0, time.UTC)
	cases := []struct {
		expr, tz string
		want     time.Time
		wantErr  string
	}{
		{expr: "0 */6 * * *", want: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)},
		{expr: "@daily", want: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)},
		{expr: "0 2 * * *", tz: "Europe/Berlin", want: time.Date(2026, 12, 7, 2, 0, 0, 0, berlin)},
		{expr: "99 * * * *", wantErr: "does not parse"},
		{expr: "every day", wantErr: "does not parse"},
		{expr: "@every 1h", wantErr: "use five cron fields"},
		{expr: "CRON_TZ=UTC 0 * * * *", wantErr: "spec.snapshots.timeZone"},
		{expr: "0 * * * *", tz: "Mars/Olympus", wantErr: "is not an IANA time zone"},
		{expr: "0 * * * *", tz: "Local", wantErr: "is not an IANA time zone"},
	}
	for _, tc := range cases {
		t.Run(tc.expr+"/"+tc.tz, func(t *testing.T) {
			g := NewWithT(t)
			s, err := Parse(tc.expr, tc.tz)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Next(from)).To(BeTemporally("==", tc.want))
		})
	}
}
