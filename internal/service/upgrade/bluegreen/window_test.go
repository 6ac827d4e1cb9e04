package bluegreen

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// A maintenance window that closes holds a blue-green upgrade before its next
// step until the point of no return, and never after it.
func TestPauseOf(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	closed := []baov1.MaintenanceWindow{{Start: "0 11 * * *", Duration: "1h"}} // closed at 12:00
	moved := metav1.NewTime(now.Add(-time.Minute))
	cases := []struct {
		name       string
		windows    []baov1.MaintenanceWindow
		end        baov1.WindowEndPolicy
		paused     bool
		annotation bool
		bg         *baov1.BlueGreenStatus
		leader     string
		wantPaused bool
		wantReason string
	}{
		{name: "no windows", bg: &baov1.BlueGreenStatus{Phase: baov1.BlueGreenSync}},
		{name: "closed, before green started", windows: closed, wantPaused: true, wantReason: "the maintenance window closed"},
		{name: "closed, green syncing", windows: closed, bg: &baov1.BlueGreenStatus{Phase: baov1.BlueGreenSync}, wantPaused: true, wantReason: "the maintenance window closed"},
		{name: "closed, windowEnd Finish", windows: closed, end: baov1.WindowEndFinish, bg: &baov1.BlueGreenStatus{Phase: baov1.BlueGreenSync}},
		{name: "closed, the leader moved to green: finishes", windows: closed, bg: &baov1.BlueGreenStatus{Phase: baov1.BlueGreenDemoteBlue, LeaderMovedAt: &moved}},
		{name: "closed, cutover: finishes", windows: closed, bg: &baov1.BlueGreenStatus{Phase: baov1.BlueGreenCutover}},
		{name: "closed, a green member leads: finishes", windows: closed, bg: &baov1.BlueGreenStatus{Phase: baov1.BlueGreenPromoteGreen}, leader: "bao-g-0"},
		{name: "spec.upgrade.paused holds anywhere", paused: true, bg: &baov1.BlueGreenStatus{Phase: baov1.BlueGreenCutover}, wantPaused: true},
		{name: "the pause annotation holds anywhere too, and says so", annotation: true, bg: &baov1.BlueGreenStatus{Phase: baov1.BlueGreenCutover},
			wantPaused: true, wantReason: "paused by the baokeeper.dev/pause annotation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &baov1.OpenBaoCluster{}
			c.Spec.Upgrade.Windows, c.Spec.Upgrade.WindowEnd, c.Spec.Upgrade.Paused = tc.windows, tc.end, tc.paused
			if tc.annotation {
				c.Annotations = map[string]string{baov1.AnnotationPause: "true"}
			}
			cl := &operation.Cluster{Now: now, Leader: tc.leader, Green: []operation.Member{{Name: "bao-g-0"}}}
			paused, reason := pauseOf(&operation.Snapshot{Cluster: cl, Object: c}, &baov1.UpgradeStatus{Kind: baov1.OperationVersion}, tc.bg)
			g.Expect(paused).To(Equal(tc.wantPaused))
			if tc.wantReason == "" {
				g.Expect(reason).To(BeEmpty())
			} else {
				g.Expect(reason).To(ContainSubstring(tc.wantReason))
			}
		})
	}
}
