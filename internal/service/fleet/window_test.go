package fleet

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// nightly opens at 02:00 UTC for 4 hours; now is 12:00.
func windowed(end baov1.WindowEndPolicy, ws ...baov1.MaintenanceWindow) *baov1.OpenBaoCluster {
	c := prod()
	c.Spec.Upgrade.Windows = ws
	c.Spec.Upgrade.WindowEnd = end
	return c
}

var nightly = baov1.MaintenanceWindow{Start: "0 2 * * *", Duration: "4h"}

func TestWindowPrecheck(t *testing.T) {
	cases := []struct {
		name     string
		c        *baov1.OpenBaoCluster
		ok       bool
		want     baov1.PrecheckResult
		contains string
		wake     time.Duration
	}{
		{name: "no windows: no precheck", c: windowed("")},
		{name: "outside: pending until it opens", c: windowed("", nightly), ok: true, want: baov1.PrecheckPending,
			contains: "outside every maintenance window (spec.upgrade.windows): waits until the next opens at 2026-12-07T02:00:00Z (in 14h0m0s)", wake: maxWake},
		{name: "outside, opening soon: wakes as it opens", c: windowed("", baov1.MaintenanceWindow{Start: "2 12 * * *", Duration: "1h"}), ok: true,
			want: baov1.PrecheckPending, wake: 2 * time.Minute},
		{name: "inside: passes and says until when", c: windowed("", baov1.MaintenanceWindow{Start: "0 11 * * *", Duration: "2h"}), ok: true,
			want: baov1.PrecheckPassed, contains: "inside a maintenance window until 2026-12-06T13:00:00Z"},
		{name: "a window that does not parse: none (CheckSpec refuses the spec)", c: windowed("", baov1.MaintenanceWindow{Start: "nope", Duration: "1h"})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pc, wake, ok := WindowPrecheck(tc.c, now)
			g.Expect(ok).To(Equal(tc.ok))
			if !tc.ok {
				return
			}
			g.Expect(pc.Name).To(Equal(PrecheckWindow))
			g.Expect(pc.Result).To(Equal(tc.want))
			g.Expect(pc.Message).To(ContainSubstring(tc.contains))
			g.Expect(wake).To(Equal(tc.wake))
		})
	}
}

func TestHold(t *testing.T) {
	inside := baov1.MaintenanceWindow{Start: "0 11 * * *", Duration: "2h"}
	version := &baov1.UpgradeStatus{Kind: baov1.OperationVersion}
	rollout := &baov1.UpgradeStatus{Kind: baov1.OperationRollout}
	snap := func(c *baov1.OpenBaoCluster, restart bool) *operation.Snapshot {
		cl := &operation.Cluster{Now: now, Members: []operation.Member{{Name: "bao-0", PodExists: true, Revision: "r1", Template: map[string]string{baov1.TemplateAnnotationRestart: "a"}}}}
		sts := &appsv1.StatefulSet{}
		sts.Status.UpdateRevision = "r1"
		sts.Spec.Template.Annotations = map[string]string{baov1.TemplateAnnotationRestart: "a"}
		if restart {
			sts.Status.UpdateRevision = "r2"
			sts.Spec.Template.Annotations[baov1.TemplateAnnotationRestart] = "b"
		}
		cl.StatefulSet = sts
		return &operation.Snapshot{Cluster: cl, Object: c}
	}
	paused := windowed("", inside)
	paused.Spec.Upgrade.Paused = true
	cases := []struct {
		name     string
		s        *operation.Snapshot
		up       *baov1.UpgradeStatus
		contains string
	}{
		{name: "spec.upgrade.paused, inside a window", s: snap(paused, false), up: version, contains: "paused by spec.upgrade.paused"},
		{name: "the pause annotation", s: snap(func() *baov1.OpenBaoCluster {
			c := windowed("", inside)
			c.Annotations = map[string]string{baov1.AnnotationPause: "true"}
			return c
		}(), false), up: version, contains: "paused by the baokeeper.dev/pause annotation"},
		{name: "the pause annotation with another value pauses nothing", s: snap(func() *baov1.OpenBaoCluster {
			c := windowed("", inside)
			c.Annotations = map[string]string{baov1.AnnotationPause: "false"}
			return c
		}(), false), up: version},
		{name: "no windows", s: snap(windowed(""), false), up: version},
		{name: "inside a window", s: snap(windowed("", inside), false), up: version},
		{name: "the window closed: holds until the next", s: snap(windowed("", nightly), false), up: version,
			contains: "the maintenance window closed (spec.upgrade.windowEnd: Pause): holding until the next opens at 2026-12-07T02:00:00Z"},
		{name: "the window closed, windowEnd Finish: goes on", s: snap(windowed(baov1.WindowEndFinish, nightly), false), up: version},
		{name: "a rollout holds too", s: snap(windowed(baov1.WindowEndPause, nightly), false), up: rollout, contains: "the maintenance window closed"},
		{name: "a restart asked for now does not", s: snap(windowed(baov1.WindowEndPause, nightly), true), up: rollout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Hold(tc.s, tc.up)
			if tc.contains == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(ContainSubstring(tc.contains))
		})
	}
}

func TestWindowStatus(t *testing.T) {
	g := NewWithT(t)
	g.Expect(WindowStatus(windowed(""), now)).To(BeNil())
	w := WindowStatus(windowed("", nightly), now)
	g.Expect(w.Open).To(BeFalse())
	g.Expect(w.OpensAt.Time).To(BeTemporally("==", time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)))
	g.Expect(w.ClosesAt.Time).To(BeTemporally("==", time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)))
}
