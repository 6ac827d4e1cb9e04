// Package metrics defines baokeeper's Prometheus metrics (prefix baokeeper_) and the
// recorder the reconcilers use. Metrics are registered once on controller-runtime's
// registry by the manager and injected; nothing here is package-level mutable state.
//
//  1. New builds the collectors; Register puts them on a registry.
//  2. operation.RecordUpgrade reports what one upgrade pass changed, from the status
//     before and after it; the adminops reconciler reports the Raft view.
//  3. Labels are the cluster's namespace and name, plus the upgrade's strategy and a
//     reason where they apply.
package metrics

import (
	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"

	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Recorder is what the adminops reconciler reports: the upgrade's bookkeeping
// (operation.Recorder, fed by operation.RecordUpgrade once per pass), the Raft view, and the
// leader transfers of a scaling. Implementations must be safe for concurrent use.
type Recorder interface {
	operation.Recorder
	// Raft reports the failure tolerance and voter count last observed.
	Raft(namespace, name string, failureTolerance, voters int)
	// BreakGlass reports whether break-glass stops the cluster's automation.
	BreakGlass(namespace, name string, active bool)
	// QuorumLost reports whether a majority of the cluster's last voters does not
	// answer at rest (status.quorum.lostSince is set).
	QuorumLost(namespace, name string, lost bool)
	// InputsRefused counts n inputs of the cluster that baokeeper refused because it
	// did not write them, by where they were found (source: Mailbox).
	InputsRefused(namespace, name, source string, n int)
	// Forget deletes every series of a deleted cluster.
	Forget(namespace, name string)
}

// blueGreenPhases are the values of the phase label of baokeeper_bluegreen_phase,
// in order: every phase of the API, a rollback's too (a copy of the list once left
// the rollback out, and the gauge read 0 everywhere during a rollback).
func blueGreenPhases() []string {
	var out []string
	for _, p := range baov1.BlueGreenPhases() {
		out = append(out, string(p))
	}
	return out
}

// Metrics holds the collectors and implements Recorder.
type Metrics struct {
	inProgress       *prometheus.GaugeVec
	podsCompleted    *prometheus.GaugeVec
	podsTotal        *prometheus.GaugeVec
	stepDuration     *prometheus.HistogramVec
	upgradeDuration  *prometheus.HistogramVec
	leaderTransfers  *prometheus.CounterVec
	failures         *prometheus.CounterVec
	failureTolerance *prometheus.GaugeVec
	voters           *prometheus.GaugeVec
	bgPhase          *prometheus.GaugeVec
	promotions       *prometheus.CounterVec
	rollbacks        *prometheus.CounterVec
	breakGlass       *prometheus.GaugeVec
	quorumLost       *prometheus.GaugeVec
	snapshotDuration *prometheus.HistogramVec
	openbaoRequests  *prometheus.CounterVec
	refusedInputs    *prometheus.CounterVec
}

var _ Recorder = (*Metrics)(nil)

// New builds the collectors.
func New() *Metrics {
	cl := []string{"namespace", "name"}
	return &Metrics{
		inProgress: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baokeeper_upgrade_in_progress",
			Help: "1 while a version change of the cluster runs, by strategy (RollingUpdate, BlueGreen)."}, append(cl, "strategy")),
		podsCompleted: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baokeeper_upgrade_pods_completed",
			Help: "Steps of the running upgrade done: members on the target for RollingUpdate, phases passed for BlueGreen."}, cl),
		podsTotal: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baokeeper_upgrade_pods_total",
			Help: "Steps of the running upgrade: members it replaces for RollingUpdate, phases for BlueGreen."}, cl),
		stepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baokeeper_upgrade_step_duration_seconds",
			Help:    "Time of one upgrade step, by strategy: a member of RollingUpdate from the persisted intent to the end of the settle time, one executor step of BlueGreen.",
			Buckets: []float64{5, 10, 20, 30, 60, 120, 300, 600}}, append(cl, "strategy")),
		upgradeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baokeeper_upgrade_duration_seconds",
			Help: "Time of a whole upgrade, from planning to completion, by strategy.", Buckets: []float64{30, 60, 120, 300, 600, 1200, 3600}}, append(cl, "strategy")),
		leaderTransfers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baokeeper_leader_transfers_total",
			Help: "Planned leadership changes (verified step-downs)."}, cl),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baokeeper_upgrade_failures_total",
			Help: "Upgrades that stopped, by strategy and reason."}, append(cl, "strategy", "reason")),
		failureTolerance: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baokeeper_raft_failure_tolerance",
			Help: "Autopilot's failure tolerance as last observed."}, cl),
		voters: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baokeeper_raft_voters",
			Help: "Raft voters as last observed by autopilot."}, cl),
		bgPhase: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baokeeper_bluegreen_phase",
			Help: "1 for the phase the cluster's blue-green upgrade is in, 0 for the others; all 0 when none runs."}, append(cl, "phase")),
		promotions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baokeeper_bluegreen_promotions_total",
			Help: "Blue-green holds released, by how: Requested (baokeeper.dev/promote) or Automatic (autoPromote)."}, append(cl, "how")),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baokeeper_upgrade_rollbacks_total",
			Help: "Upgrades rolled back, by strategy and reason: Requested (baokeeper.dev/rollback) or the failure that rolled one back on its own."}, append(cl, "strategy", "reason")),
		breakGlass: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baokeeper_break_glass_active",
			Help: "1 while break-glass stops every automation of the cluster (status.breakGlass.active)."}, cl),
		quorumLost: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baokeeper_quorum_lost",
			Help: "1 while a majority of the cluster's last Raft voters does not answer at rest (status.quorum.lostSince is set)."}, cl),
		snapshotDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baokeeper_snapshot_duration_seconds",
			Help:    "Time of a pre-upgrade snapshot, from its step's start to its verified receipt.",
			Buckets: []float64{1, 2, 5, 10, 30, 60, 120, 300, 600}}, cl),
		openbaoRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baokeeper_openbao_requests_total",
			Help: "HTTP requests the controller sent to the cluster's OpenBao members, by answer code (0: no answer) and method."},
			append(cl, "code", "method")),
		refusedInputs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baokeeper_refused_inputs_total",
			Help: "Inputs baokeeper refused and never acted on because it did not write them, by where they were found (Mailbox: entries of the executor mailbox)."},
			append(cl, "source")),
	}
}

// InstrumentOpenBao wraps the transport of the controller's OpenBao client of one
// cluster so that each request counts in baokeeper_openbao_requests_total: the
// request rate an upgrade's polling costs OpenBao is on the dashboard, not guessed.
func (m *Metrics) InstrumentOpenBao(namespace, name string) func(http.RoundTripper) http.RoundTripper {
	counter := m.openbaoRequests.MustCurryWith(prometheus.Labels{"namespace": namespace, "name": name})
	return func(rt http.RoundTripper) http.RoundTripper {
		return promhttp.InstrumentRoundTripperCounter(counter, rt)
	}
}

// Register puts every collector on reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.inProgress, m.podsCompleted, m.podsTotal, m.stepDuration, m.upgradeDuration,
		m.leaderTransfers, m.failures, m.failureTolerance, m.voters, m.bgPhase, m.promotions, m.rollbacks, m.breakGlass, m.quorumLost, m.snapshotDuration, m.openbaoRequests, m.refusedInputs} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Forget deletes every series of a cluster: it was deleted.
func (m *Metrics) Forget(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "name": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{m.inProgress, m.podsCompleted, m.podsTotal,
		m.stepDuration, m.upgradeDuration, m.leaderTransfers, m.failures, m.failureTolerance, m.voters, m.bgPhase,
		m.promotions, m.rollbacks, m.breakGlass, m.quorumLost, m.snapshotDuration, m.openbaoRequests, m.refusedInputs} {
		v.DeletePartialMatch(l)
	}
}

// InputsRefused implements Recorder.
func (m *Metrics) InputsRefused(namespace, name, source string, n int) {
	m.refusedInputs.WithLabelValues(namespace, name, source).Add(float64(n))
}

// UpgradeState implements Recorder.
func (m *Metrics) UpgradeState(namespace, name, strategy string, inProgress bool, completed, total int) {
	v := 0.0
	if inProgress {
		v = 1
	}
	m.inProgress.WithLabelValues(namespace, name, strategy).Set(v)
	m.podsCompleted.WithLabelValues(namespace, name).Set(float64(completed))
	m.podsTotal.WithLabelValues(namespace, name).Set(float64(total))
}

// StepCompleted implements Recorder.
func (m *Metrics) StepCompleted(namespace, name, strategy string, d time.Duration) {
	m.stepDuration.WithLabelValues(namespace, name, strategy).Observe(d.Seconds())
}

// UpgradeCompleted implements Recorder.
func (m *Metrics) UpgradeCompleted(namespace, name, strategy string, d time.Duration) {
	m.upgradeDuration.WithLabelValues(namespace, name, strategy).Observe(d.Seconds())
}

// LeaderTransfer implements Recorder.
func (m *Metrics) LeaderTransfer(namespace, name string) {
	m.leaderTransfers.WithLabelValues(namespace, name).Inc()
}

// UpgradeFailed implements Recorder.
func (m *Metrics) UpgradeFailed(namespace, name, strategy, reason string) {
	m.failures.WithLabelValues(namespace, name, strategy, reason).Inc()
}

// Raft implements Recorder.
//
// It also starts the cluster's leader-transfer counter at 0: a transfer counted by a
// process that is replaced a scrape later (an operator restart right after an upgrade)
// still shows in increase() as a step from 0, where a series born at 1 shows nothing.
func (m *Metrics) Raft(namespace, name string, failureTolerance, voters int) {
	m.leaderTransfers.WithLabelValues(namespace, name)
	m.failureTolerance.WithLabelValues(namespace, name).Set(float64(failureTolerance))
	m.voters.WithLabelValues(namespace, name).Set(float64(voters))
}

// BlueGreenPhase implements Recorder.
func (m *Metrics) BlueGreenPhase(namespace, name, phase string) {
	for _, p := range blueGreenPhases() {
		v := 0.0
		if p == phase {
			v = 1
		}
		m.bgPhase.WithLabelValues(namespace, name, p).Set(v)
	}
}

// Promotion implements Recorder.
func (m *Metrics) Promotion(namespace, name, how string) {
	m.promotions.WithLabelValues(namespace, name, how).Inc()
}

// UpgradeRolledBack implements Recorder.
func (m *Metrics) UpgradeRolledBack(namespace, name, strategy, reason string) {
	m.rollbacks.WithLabelValues(namespace, name, strategy, reason).Inc()
}

// SnapshotTaken implements Recorder.
func (m *Metrics) SnapshotTaken(namespace, name string, d time.Duration) {
	m.snapshotDuration.WithLabelValues(namespace, name).Observe(d.Seconds())
}

// QuorumLost implements Recorder.
func (m *Metrics) QuorumLost(namespace, name string, lost bool) {
	v := 0.0
	if lost {
		v = 1
	}
	m.quorumLost.WithLabelValues(namespace, name).Set(v)
}

// BreakGlass implements Recorder.
func (m *Metrics) BreakGlass(namespace, name string, active bool) {
	v := 0.0
	if active {
		v = 1
	}
	m.breakGlass.WithLabelValues(namespace, name).Set(v)
}
