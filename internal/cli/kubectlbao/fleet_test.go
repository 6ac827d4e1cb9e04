package kubectlbao

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

var fleetNow = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func mt(d time.Duration) *metav1.Time { t := metav1.NewTime(fleetNow.Add(d)); return &t }

// fleetClusters are dev (upgraded, its last operation a success), staging
// (failed), prod (waiting for staging, outside its window).
func fleetClusters() []baov1.OpenBaoCluster {
	dev := baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "dev", Name: "bao"}, Spec: baov1.OpenBaoClusterSpec{Version: "2.4.1"},
		Status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.1", Phase: baov1.PhaseRunning, History: []baov1.HistoryEntry{{
			Kind: baov1.HistoryVersion, Outcome: baov1.OutcomeSucceeded, ID: "u1", Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
			StartedAt: mt(-3 * time.Hour), EndedAt: mt(-3*time.Hour + 42*time.Second), Elections: 1,
			LongestStep: &baov1.StepRecord{Action: "ShutdownLeader", Member: "bao-1", Seconds: 7},
			Snapshot:    &baov1.SnapshotReceipt{Location: "s3://snaps/dev/bao/u1.snap", SHA256: "0123456789abcdef0123", RaftIndex: 1234},
		}}}}
	staging := baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "staging", Name: "bao"}, Spec: baov1.OpenBaoClusterSpec{Version: "2.4.1"},
		Status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Phase: baov1.PhaseUpgrading,
			Upgrade: &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", Failure: &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout}},
			History: []baov1.HistoryEntry{{Kind: baov1.HistoryVersion, Outcome: baov1.OutcomeFailed, FromVersion: "2.4.0", TargetVersion: "2.4.1",
				StartedAt: mt(-time.Hour), EndedAt: mt(-50 * time.Minute), Reason: "StepTimeout", Message: "bao-2 did not become Ready within 10m0s"}}}}
	prod := baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "bao"}, Spec: baov1.OpenBaoClusterSpec{Version: "2.4.1",
		Upgrade: baov1.UpgradeSpec{Windows: []baov1.MaintenanceWindow{{Start: "0 2 * * 6", Duration: "4h"}}, After: []baov1.UpgradeOrder{{Name: "bao", Namespace: "staging", Soak: baov1.DurationOf(24 * time.Hour)}}}},
		Status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0", Phase: baov1.PhaseRunning,
			Window: &baov1.WindowStatus{OpensAt: mt(6*24*time.Hour - 10*time.Hour), ClosesAt: mt(6*24*time.Hour - 6*time.Hour)},
			Upgrade: &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", Plan: &baov1.UpgradePlan{Prechecks: []baov1.Precheck{
				{Name: "UpgradeOrder", Result: baov1.PrecheckFailed, Message: "staging/bao's upgrade to 2.4.1 failed (StepTimeout: bao-2 did not become Ready within 10m0s)"},
				{Name: "MaintenanceWindow", Result: baov1.PrecheckPending, Message: "outside every maintenance window"},
			}}}}}
	return []baov1.OpenBaoCluster{prod, staging, dev}
}

func TestFleetRows(t *testing.T) {
	g := NewWithT(t)
	rows := FleetRows(fleetClusters(), fleetNow)
	g.Expect(rows).To(HaveLen(3))
	g.Expect([]string{rows[0].Namespace, rows[1].Namespace, rows[2].Namespace}).To(Equal([]string{"dev", "prod", "staging"}), "sorted")
	g.Expect(rows[0].WaitsFor).To(BeEmpty())
	g.Expect(rows[0].Last).To(Equal("Version 2.4.0 → 2.4.1: Succeeded"))
	g.Expect(rows[1].WaitsFor).To(Equal("UpgradeOrder: staging/bao's upgrade to 2.4.1 failed (StepTimeout: bao-2 did not become Ready within 10m0s)"),
		"prod says it waits for staging, with staging's reason")
	g.Expect(rows[1].NextWindow).To(Equal("2026-12-12T02:00:00Z"))
	g.Expect(rows[2].WaitsFor).To(Equal("retry: failed (StepTimeout)"))

	var b bytes.Buffer
	g.Expect(RenderFleet(&b, "every namespace", rows, fleetNow)).To(Succeed())
	golden(t, "fleet.golden", b.String())
}

func TestRenderHistory(t *testing.T) {
	g := NewWithT(t)
	cs := fleetClusters()
	var b bytes.Buffer
	g.Expect(RenderHistory(&b, &cs[2], fleetNow)).To(Succeed())
	golden(t, "history-dev.golden", b.String())

	b.Reset()
	g.Expect(RenderHistory(&b, &cs[1], fleetNow)).To(Succeed())
	g.Expect(b.String()).To(ContainSubstring("Failed"))
	g.Expect(b.String()).To(ContainSubstring("StepTimeout: bao-2 did not become Ready within 10m0s"))

	b.Reset()
	empty := cs[0].DeepCopy()
	empty.Status.History = nil
	g.Expect(RenderHistory(&b, empty, fleetNow)).To(Succeed())
	g.Expect(b.String()).To(ContainSubstring("No operation of openbaocluster prod/bao has ended yet (status.history keeps the last 10)."))
	g.Expect(b.String()).To(ContainSubstring("In progress: an upgrade from 2.4.0 to 2.4.1"))
}

func TestRenderStatusFleetSections(t *testing.T) {
	g := NewWithT(t)
	cs := fleetClusters()
	var b bytes.Buffer
	g.Expect(RenderStatus(&b, &cs[0], fleetNow)).To(Succeed())
	out := b.String()
	g.Expect(out).To(ContainSubstring("Maintenance windows"))
	g.Expect(out).To(ContainSubstring("0 2 * * 6 for 4h (UTC)"))
	g.Expect(out).To(ContainSubstring("closed; the next opens"))
	g.Expect(out).To(ContainSubstring("Upgrades after"))
	g.Expect(out).To(ContainSubstring("staging/bao"))
	g.Expect(out).To(ContainSubstring("Failed: staging/bao's upgrade to 2.4.1 failed"))
}
