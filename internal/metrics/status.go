package metrics

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// clusterPhases are the values of the phase label of baokeeper_cluster_phase, in
// the order of the API's ClusterPhase enum.
func clusterPhases() []baov1.ClusterPhase {
	return []baov1.ClusterPhase{baov1.PhasePending, baov1.PhaseInitializing, baov1.PhaseRunning, baov1.PhaseUpgrading,
		baov1.PhaseScaling, baov1.PhaseDegraded, baov1.PhaseFailed, baov1.PhaseBreakGlass}
}

// StatusCollector reports the state of every OpenBaoCluster from its status at
// scrape time, like kube-state-metrics: what a person sees with kubectl at that
// moment, with no bookkeeping to go stale, and no series left once a cluster is
// deleted. It reads through reader (the manager's cache).
type StatusCollector struct {
	reader  client.Reader
	timeout time.Duration
	log     logr.Logger

	phase, versionInfo, desired, ready, members, leader, healthyVoters *prometheus.Desc
	stepStarted, stepTimeout, failed, snapshotTaken                    *prometheus.Desc
	snapshotFailed, snapshotNext, snapshotDue                          *prometheus.Desc
	drillFailed, drillPassed, drillNext                                *prometheus.Desc
	certStored, certServed                                             *prometheus.Desc
}

var _ prometheus.Collector = (*StatusCollector)(nil)

// NewStatusCollector builds the collector; timeout bounds one List at scrape time.
func NewStatusCollector(reader client.Reader, timeout time.Duration, log logr.Logger) *StatusCollector {
	cl := []string{"namespace", "name"}
	d := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string{}, cl...), extra...), nil)
	}
	return &StatusCollector{
		reader: reader, timeout: timeout, log: log,
		phase:         d("baokeeper_cluster_phase", "1 for the cluster's status.phase, 0 for the other phases.", "phase"),
		versionInfo:   d("baokeeper_cluster_version_info", "1, with status.currentVersion and spec.version as labels.", "current_version", "desired_version"),
		desired:       d("baokeeper_cluster_desired_members", "spec.replicas."),
		ready:         d("baokeeper_cluster_ready_members", "status.readyMembers."),
		members:       d("baokeeper_cluster_members", "Members in status.members reporting each OpenBao version (unknown: none reported).", "version"),
		leader:        d("baokeeper_raft_leader", "Members with Raft role Leader in status.members: 1 is healthy, 0 means no leader."),
		healthyVoters: d("baokeeper_raft_healthy_voters", "Members in status.members that are healthy voters (the leader included)."),
		stepStarted:   d("baokeeper_upgrade_step_started_timestamp_seconds", "Unix time when the running upgrade's current step (rolling) or phase (blue-green) started.", "strategy"),
		stepTimeout:   d("baokeeper_upgrade_step_timeout_seconds", "The running upgrade's step timeout (rolling stepTimeout, blue-green phaseTimeout).", "strategy"),
		failed:        d("baokeeper_upgrade_failed", "1 while the upgrade is stopped by a failure (status.upgrade.failure), with its reason.", "reason"),
		snapshotTaken: d("baokeeper_snapshot_last_taken_timestamp_seconds",
			"Unix time of the newest verified snapshot: status.lastSnapshot.takenAt, or status.snapshots.taken[0].takenAt when newer."),
		snapshotFailed: d("baokeeper_snapshot_last_failure_timestamp_seconds",
			"Unix time when the last scheduled or requested snapshot failed after its attempts (status.snapshots.lastFailure.at)."),
		snapshotNext: d("baokeeper_snapshot_next_scheduled_timestamp_seconds", "Unix time of the next scheduled snapshot (status.snapshots.nextScheduledAt)."),
		snapshotDue: d("baokeeper_snapshot_due_timestamp_seconds",
			"Unix time a scheduled snapshot became due that has not started yet (status.snapshots.due): it waits for the operation lock or for break-glass."),
		drillFailed: d("baokeeper_restore_drill_failed",
			"1 when the last restore drill failed, 0 when it passed or was skipped (status.snapshots.drills.last.outcome); absent before the first drill."),
		drillPassed: d("baokeeper_restore_drill_last_passed_timestamp_seconds", "Unix time when the last restore drill that passed finished (status.snapshots.drills.lastPassedAt)."),
		drillNext:   d("baokeeper_restore_drill_next_scheduled_timestamp_seconds", "Unix time of the next scheduled restore drill (status.snapshots.drills.nextScheduledAt)."),
		certStored: d("baokeeper_certificate_expiry_timestamp_seconds",
			"Unix time when the serving certificate the cluster's TLS Secret holds expires (status.tls.notAfter)."),
		certServed: d("baokeeper_member_certificate_expiry_timestamp_seconds",
			"Unix time when the certificate a member serves expires, as its last health read presented it (status.members[].servedCertificateNotAfter).", "member"),
	}
}

// Describe implements prometheus.Collector.
func (s *StatusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.phase, s.versionInfo, s.desired, s.ready, s.members, s.leader, s.healthyVoters,
		s.stepStarted, s.stepTimeout, s.failed, s.snapshotTaken, s.snapshotFailed, s.snapshotNext, s.snapshotDue, s.drillFailed, s.drillPassed, s.drillNext, s.certStored, s.certServed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one List from the cache per scrape. A
// failed List reports nothing (a scrape without these series, and a log line), never
// stale values.
func (s *StatusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	list := &baov1.OpenBaoClusterList{}
	if err := s.reader.List(ctx, list); err != nil {
		s.log.Error(err, "Failed to list OpenBaoClusters for the status metrics; this scrape has none")
		return
	}
	for i := range list.Items {
		for _, m := range s.metricsOf(&list.Items[i]) {
			ch <- m
		}
	}
}

// metricsOf are the state series of one cluster.
func (s *StatusCollector) metricsOf(c *baov1.OpenBaoCluster) []prometheus.Metric {
	ns, name := c.Namespace, c.Name
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{ns, name}, extra...)...))
	}
	st := &c.Status
	for _, p := range clusterPhases() {
		gauge(s.phase, boolValue(st.Phase == p), string(p))
	}
	gauge(s.versionInfo, 1, st.CurrentVersion, c.Spec.Version)
	gauge(s.desired, float64(c.GetReplicas()))
	gauge(s.ready, float64(st.ReadyMembers))
	versions := map[string]int{}
	leaders, healthy := 0, 0
	for _, m := range st.Members {
		v := m.Version
		if v == "" {
			v = "unknown"
		}
		versions[v]++
		if m.RaftRole == baov1.RaftRoleLeader {
			leaders++
		}
		if m.Healthy && (m.RaftRole == baov1.RaftRoleLeader || m.RaftRole == baov1.RaftRoleVoter) {
			healthy++
		}
	}
	for v, n := range versions {
		gauge(s.members, float64(n), v)
	}
	gauge(s.leader, float64(leaders))
	gauge(s.healthyVoters, float64(healthy))
	if t := st.TLS; t != nil && t.NotAfter != nil {
		gauge(s.certStored, float64(t.NotAfter.Unix()))
	}
	if ss := st.Snapshots; ss != nil {
		if f := ss.LastFailure; f != nil && f.At != nil {
			gauge(s.snapshotFailed, float64(f.At.Unix()))
		}
		if ss.NextScheduledAt != nil {
			gauge(s.snapshotNext, float64(ss.NextScheduledAt.Unix()))
		}
		if ss.Due != nil {
			gauge(s.snapshotDue, float64(ss.Due.Unix()))
		}
		if d := ss.Drills; d != nil {
			if d.Last != nil {
				gauge(s.drillFailed, boolValue(d.Last.Outcome == baov1.DrillFailed))
			}
			if d.LastPassedAt != nil {
				gauge(s.drillPassed, float64(d.LastPassedAt.Unix()))
			}
			if d.NextScheduledAt != nil {
				gauge(s.drillNext, float64(d.NextScheduledAt.Unix()))
			}
		}
	}
	for _, m := range st.Members {
		if m.ServedCertificateNotAfter != nil {
			gauge(s.certServed, float64(m.ServedCertificateNotAfter.Unix()), m.Name)
		}
	}
	if up := st.Upgrade; up != nil {
		strategy := string(up.Strategy)
		if strategy == "" {
			strategy = string(c.GetStrategy())
		}
		var started *time.Time
		timeout := c.GetStepTimeout()
		if bg := st.BlueGreen; bg != nil && up.Strategy == baov1.BlueGreenStrategy {
			timeout = c.GetPhaseTimeout()
			if bg.PhaseStartedAt != nil {
				started = &bg.PhaseStartedAt.Time
			}
		} else if step := up.CurrentStep; step != nil && step.StartedAt != nil {
			started = &step.StartedAt.Time
		}
		if started != nil {
			gauge(s.stepStarted, float64(started.Unix()), strategy)
		}
		gauge(s.stepTimeout, timeout.Seconds(), strategy)
		if f := up.Failure; f != nil {
			gauge(s.failed, 1, string(f.Reason))
		}
	}
	if at := newestSnapshot(st); !at.IsZero() {
		gauge(s.snapshotTaken, float64(at.Unix()))
	}
	return out
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// newestSnapshot is when the newest verified snapshot of any trigger was taken:
// status.lastSnapshot (the last upgrade's) or the newest receipt of
// status.snapshots.taken; zero when none.
func newestSnapshot(st *baov1.OpenBaoClusterStatus) time.Time {
	if r := st.NewestSnapshot(); r != nil && r.TakenAt != nil {
		return r.TakenAt.Time
	}
	return time.Time{}
}
