package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
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

// A cluster's leader transfers are exported from its first observation, at 0: the
// dashboard's increase() then sees the step to 1 even when the process that counted it
// is replaced a scrape later (found when the rig's operator was killed right after an
// upgrade and the panel had no series for it).
func TestLeaderTransfersStartAtZeroOnceAClusterIsObserved(t *testing.T) {
	g := NewWithT(t)
	m := New()
	g.Expect(testutil.CollectAndCount(m.leaderTransfers)).To(Equal(0))
	m.Raft("ns", "bao", 1, 3)
	g.Expect(testutil.CollectAndCount(m.leaderTransfers)).To(Equal(1))
	g.Expect(testutil.ToFloat64(m.leaderTransfers.WithLabelValues("ns", "bao"))).To(Equal(0.0))
	m.LeaderTransfer("ns", "bao")
	m.Raft("ns", "bao", 1, 3)
	g.Expect(testutil.ToFloat64(m.leaderTransfers.WithLabelValues("ns", "bao"))).To(Equal(1.0), "observing again keeps the count")
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
		m.InputsRefused("ns", name, "Mailbox", 2)
		m.openbaoRequests.WithLabelValues("ns", name, "200", "get").Inc()
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

func TestInstrumentOpenBaoCountsEachRequestOfItsCluster(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/sys/health" {
			w.WriteHeader(http.StatusTooManyRequests) // a standby's answer
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	m := New()
	a := &http.Client{Transport: m.InstrumentOpenBao("ns", "a")(http.DefaultTransport)}
	b := &http.Client{Transport: m.InstrumentOpenBao("ns", "b")(http.DefaultTransport)}
	for _, c := range []struct {
		client *http.Client
		path   string
	}{{a, "/v1/sys/leader"}, {a, "/v1/sys/leader"}, {a, "/v1/sys/health"}, {b, "/v1/sys/leader"}} {
		resp, err := c.client.Get(srv.URL + c.path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.Body.Close()).To(Succeed())
	}
	g.Expect(testutil.ToFloat64(m.openbaoRequests.WithLabelValues("ns", "a", "200", "get"))).To(Equal(2.0))
	g.Expect(testutil.ToFloat64(m.openbaoRequests.WithLabelValues("ns", "a", "429", "get"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.openbaoRequests.WithLabelValues("ns", "b", "200", "get"))).To(Equal(1.0))
	g.Expect(testutil.CollectAndCount(m.openbaoRequests)).To(Equal(3), "one series per cluster, code and method")
}

// During a rollback the phase gauge names the rollback's phase: every phase of the
// API is a value of the label (docs/metrics.md: "1 for the blue-green phase the
// upgrade is in").
func TestBlueGreenPhaseCoversEveryPhase(t *testing.T) {
	g := NewWithT(t)
	m := New()
	for _, p := range baov1.BlueGreenPhases() {
		m.BlueGreenPhase("ns", "bao", string(p))
		g.Expect(testutil.ToFloat64(m.bgPhase.WithLabelValues("ns", "bao", string(p)))).To(Equal(1.0), "phase %s", p)
	}
	g.Expect(testutil.CollectAndCount(m.bgPhase)).To(Equal(14), "one series per phase of the API's enum")
}
