package metrics

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRecorderExportsWhatItRecords(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New()
	g.Expect(m.Register(reg)).To(Succeed())

	m.UpgradeState("ns", "bao", "RollingUpdate", true, 2, 3)
	m.StepCompleted("ns", "bao", "RollingUpdate", 12*time.Second)
	m.LeaderTransfer("ns", "bao")
	m.UpgradeFailed("ns", "bao", "RollingUpdate", "StepTimeout")
	m.Raft("ns", "bao", 1, 3)
	m.UpgradeCompleted("ns", "bao", "BlueGreen", 90*time.Second)
	m.BlueGreenPhase("ns", "bao", "Sync")
	m.Promotion("ns", "bao", "Requested")
	m.UpgradeRolledBack("ns", "bao", "BlueGreen", "Requested")
	m.SnapshotTaken("ns", "bao", 4*time.Second)
	m.BreakGlass("ns", "bao", true)

	g.Expect(testutil.ToFloat64(m.inProgress.WithLabelValues("ns", "bao", "RollingUpdate"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.podsCompleted.WithLabelValues("ns", "bao"))).To(Equal(2.0))
	g.Expect(testutil.CollectAndCount(m.stepDuration)).To(Equal(1), "one step-duration series, labelled with the strategy")
	g.Expect(testutil.ToFloat64(m.leaderTransfers.WithLabelValues("ns", "bao"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.failures.WithLabelValues("ns", "bao", "RollingUpdate", "StepTimeout"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.voters.WithLabelValues("ns", "bao"))).To(Equal(3.0))
	g.Expect(testutil.ToFloat64(m.bgPhase.WithLabelValues("ns", "bao", "Sync"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.bgPhase.WithLabelValues("ns", "bao", "DeployGreen"))).To(Equal(0.0), "one phase at a time")
	g.Expect(testutil.ToFloat64(m.promotions.WithLabelValues("ns", "bao", "Requested"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.rollbacks.WithLabelValues("ns", "bao", "BlueGreen", "Requested"))).To(Equal(1.0))
	g.Expect(testutil.CollectAndCount(m.snapshotDuration)).To(Equal(1))
	g.Expect(testutil.ToFloat64(m.breakGlass.WithLabelValues("ns", "bao"))).To(Equal(1.0))

	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP baokeeper_upgrade_duration_seconds Time of a whole upgrade, from planning to completion, by strategy.
# TYPE baokeeper_upgrade_duration_seconds histogram
baokeeper_upgrade_duration_seconds_bucket{name="bao",namespace="ns",strategy="BlueGreen",le="30"} 0
baokeeper_upgrade_duration_seconds_bucket{name="bao",namespace="ns",strategy="BlueGreen",le="60"} 0
baokeeper_upgrade_duration_seconds_bucket{name="bao",namespace="ns",strategy="BlueGreen",le="120"} 1
baokeeper_upgrade_duration_seconds_bucket{name="bao",namespace="ns",strategy="BlueGreen",le="300"} 1
baokeeper_upgrade_duration_seconds_bucket{name="bao",namespace="ns",strategy="BlueGreen",le="600"} 1
baokeeper_upgrade_duration_seconds_bucket{name="bao",namespace="ns",strategy="BlueGreen",le="1200"} 1
baokeeper_upgrade_duration_seconds_bucket{name="bao",namespace="ns",strategy="BlueGreen",le="3600"} 1
baokeeper_upgrade_duration_seconds_bucket{name="bao",namespace="ns",strategy="BlueGreen",le="+Inf"} 1
baokeeper_upgrade_duration_seconds_sum{name="bao",namespace="ns",strategy="BlueGreen"} 90
baokeeper_upgrade_duration_seconds_count{name="bao",namespace="ns",strategy="BlueGreen"} 1
`), "baokeeper_upgrade_duration_seconds")
	g.Expect(err).NotTo(HaveOccurred())
}

func TestRegisterTwiceFails(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	g.Expect(New().Register(reg)).To(Succeed())
	g.Expect(New().Register(reg)).NotTo(Succeed(), "a second set of the same metrics is a wiring mistake")
}

func TestForgetDeletesEverySeriesOfOneCluster(t *testing.T) {
	g := NewWithT(t)
	m := New()
	for _, name := range []string{"bao", "other"} {
		m.UpgradeState("ns", name, "RollingUpdate", true, 1, 3)
		m.StepCompleted("ns", name, "RollingUpdate", time.Second)
		m.UpgradeFailed("ns", name, "RollingUpdate", "StepTimeout")
		m.UpgradeRolledBack("ns", name, "BlueGreen", "Requested")
		m.SnapshotTaken("ns", name, time.Second)
		m.Raft("ns", name, 1, 3)
		m.BlueGreenPhase("ns", name, "Sync")
		m.BreakGlass("ns", name, false)
	}
	reg := prometheus.NewRegistry()
	g.Expect(m.Register(reg)).To(Succeed())
	count := func(name string) int {
		mfs, err := reg.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		n := 0
		for _, mf := range mfs {
			for _, s := range mf.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "name" && l.GetValue() == name {
						n++
					}
				}
			}
		}
		return n
	}
	g.Expect(count("bao")).To(BeNumerically(">", 10))
	m.Forget("ns", "bao")
	g.Expect(count("bao")).To(BeZero(), "no series of the deleted cluster")
	g.Expect(count("other")).To(BeNumerically(">", 10), "the other cluster keeps its series")
}
