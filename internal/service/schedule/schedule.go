// Package schedule reads the cron schedules of a cluster's spec (scheduled
// snapshots) in their time zone. Pure, and a leaf: the spec checks and the
// operations that run on a schedule both use it.
package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a cron schedule read in its time zone.
type Schedule struct {
	spec cron.Schedule
}

// Parse reads a cron expression of five fields, or a descriptor such as
// @daily, in the IANA time zone tz (empty: UTC). The error names the field and says
// how to write it.
func Parse(expr, tz string) (*Schedule, error) {
	return ParseField("spec.snapshots.schedule", expr, tz)
}

// ParseField is Parse for the schedule in field (spec.snapshots.verify.schedule),
// which its errors name; the time zone is spec.snapshots.timeZone.
func ParseField(field, expr, tz string) (*Schedule, error) {
	return ParseIn(field, "spec.snapshots.timeZone", expr, tz)
}

// ParseIn is Parse for the schedule in field read in the time zone of tzField,
// which its errors name.
func ParseIn(field, tzField, expr, tz string) (*Schedule, error) {
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil || strings.EqualFold(tz, "local") {
			return nil, fmt.Errorf("%s %q is not an IANA time zone; use a name such as Europe/Berlin or America/New_York, or leave it empty for UTC", tzField, tz)
		}
		loc = l
	}
	if strings.HasPrefix(strings.TrimSpace(expr), "@every") || strings.Contains(expr, "TZ=") {
		return nil, fmt.Errorf("%s %q: use five cron fields or @hourly, @daily, @weekly, @monthly; the time zone goes in %s", field, expr, tzField)
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("%s %q does not parse (%w): write five fields, minute hour day-of-month month day-of-week, for example \"0 */6 * * *\" for every 6 hours", field, expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%s %q: use five cron fields or @hourly, @daily, @weekly, @monthly", field, expr)
	}
	spec.Location = loc
	return &Schedule{spec: spec}, nil
}

// Next is the first scheduled time after t.
func (s *Schedule) Next(t time.Time) time.Time { return s.spec.Next(t) }

// Key is what status.snapshots.schedule records of the spec: a change of
// the expression or the time zone computes the next time again.
func Key(expr, tz string) string {
	if expr == "" {
		return ""
	}
	if tz == "" {
		tz = "UTC"
	}
	return expr + " (" + tz + ")"
}
