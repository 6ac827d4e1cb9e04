package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestStatusCollectorReportsWhatStatusSays(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(baov1.AddToScheme(scheme)).To(Succeed())
	t0 := metav1.NewTime(time.Unix(1_800_000_000, 0))
	t1 := metav1.NewTime(time.Unix(1_900_000_000, 0))
	three := int32(3)
	upgrading := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao"},
		Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.1", Replicas: &three},
		Status: baov1.OpenBaoClusterStatus{
			Phase: baov1.PhaseUpgrading, CurrentVersion: "2.4.0", ReadyMembers: 2, TLS: &baov1.TLSStatus{NotAfter: &t1},
			Members: []baov1.MemberStatus{
				{Name: "bao-0", Version: "2.4.0", RaftRole: baov1.RaftRoleLeader, Healthy: true, ServedCertificateNotAfter: &t1},
				{Name: "bao-1", Version: "2.4.1", RaftRole: baov1.RaftRoleVoter, Healthy: true, ServedCertificateNotAfter: &t0},
				{Name: "bao-2", RaftRole: baov1.RaftRoleNonVoter, Healthy: true},
			},
			Upgrade: &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy,
				CurrentStep: &baov1.UpgradeStep{Action: baov1.StepReplaceMember, Pod: "bao-2", StartedAt: &t0},
				Failure:     &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout}},
		},
	}
	idle := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "vault"},
		Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.0"},
		Status: baov1.OpenBaoClusterStatus{Phase: baov1.PhaseRunning, CurrentVersion: "2.4.0",
			LastSnapshot: &baov1.SnapshotReceipt{TakenAt: &t0},
			Snapshots: &baov1.SnapshotsStatus{NextScheduledAt: &t1, LastFailure: &baov1.SnapshotFailure{At: &t1},
				Drills: &baov1.DrillsStatus{NextScheduledAt: &t1, LastPassedAt: &t0, Last: &baov1.DrillResult{Outcome: baov1.DrillFailed}}}},
	}
	r := fake.NewClientBuilder().WithScheme(scheme).WithObjects(upgrading, idle).Build()
	c := NewStatusCollector(r, time.Second, logr.Discard())

	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(`
# HELP baokeeper_cluster_members Members in status.members reporting each OpenBao version (unknown: none reported).
# TYPE baokeeper_cluster_members gauge
baokeeper_cluster_members{name="bao",namespace="ns",version="2.4.0"} 1
baokeeper_cluster_members{name="bao",namespace="ns",version="2.4.1"} 1
baokeeper_cluster_members{name="bao",namespace="ns",version="unknown"} 1
# HELP baokeeper_cluster_version_info 1, with status.currentVersion and spec.version as labels.
# TYPE baokeeper_cluster_version_info gauge
baokeeper_cluster_version_info{current_version="2.4.0",desired_version="2.4.0",name="vault",namespace="other"} 1
baokeeper_cluster_version_info{current_version="2.4.0",desired_version="2.4.1",name="bao",namespace="ns"} 1
# HELP baokeeper_raft_healthy_voters Members in status.members that are healthy voters (the leader included).
# TYPE baokeeper_raft_healthy_voters gauge
baokeeper_raft_healthy_voters{name="bao",namespace="ns"} 2
baokeeper_raft_healthy_voters{name="vault",namespace="other"} 0
# HELP baokeeper_raft_leader Members with Raft role Leader in status.members: 1 is healthy, 0 means no leader.
# TYPE baokeeper_raft_leader gauge
baokeeper_raft_leader{name="bao",namespace="ns"} 1
baokeeper_raft_leader{name="vault",namespace="other"} 0
# HELP baokeeper_upgrade_failed 1 while the upgrade is stopped by a failure (status.upgrade.failure), with its reason.
# TYPE baokeeper_upgrade_failed gauge
baokeeper_upgrade_failed{name="bao",namespace="ns",reason="StepTimeout"} 1
# HELP baokeeper_upgrade_step_started_timestamp_seconds Unix time when the running upgrade's current step (rolling) or phase (blue-green) started.
# TYPE baokeeper_upgrade_step_started_timestamp_seconds gauge
baokeeper_upgrade_step_started_timestamp_seconds{name="bao",namespace="ns",strategy="RollingUpdate"} 1.8e+09
# HELP baokeeper_upgrade_step_timeout_seconds The running upgrade's step timeout (rolling stepTimeout, blue-green phaseTimeout).
# TYPE baokeeper_upgrade_step_timeout_seconds gauge
baokeeper_upgrade_step_timeout_seconds{name="bao",namespace="ns",strategy="RollingUpdate"} 600
# HELP baokeeper_snapshot_last_taken_timestamp_seconds Unix time of the newest verified snapshot: status.lastSnapshot.takenAt, or status.snapshots.taken[0].takenAt when newer.
# TYPE baokeeper_snapshot_last_taken_timestamp_seconds gauge
baokeeper_snapshot_last_taken_timestamp_seconds{name="vault",namespace="other"} 1.8e+09
# HELP baokeeper_certificate_expiry_timestamp_seconds Unix time when the serving certificate the cluster's TLS Secret holds expires (status.tls.notAfter).
# TYPE baokeeper_certificate_expiry_timestamp_seconds gauge
baokeeper_certificate_expiry_timestamp_seconds{name="bao",namespace="ns"} 1.9e+09
# HELP baokeeper_member_certificate_expiry_timestamp_seconds Unix time when the certificate a member serves expires, as its last health read presented it (status.members[].servedCertificateNotAfter).
# TYPE baokeeper_member_certificate_expiry_timestamp_seconds gauge
baokeeper_member_certificate_expiry_timestamp_seconds{member="bao-0",name="bao",namespace="ns"} 1.9e+09
baokeeper_member_certificate_expiry_timestamp_seconds{member="bao-1",name="bao",namespace="ns"} 1.8e+09
# HELP baokeeper_snapshot_last_failure_timestamp_seconds Unix time when the last scheduled or requested snapshot failed after its attempts (status.snapshots.lastFailure.at).
# TYPE baokeeper_snapshot_last_failure_timestamp_seconds gauge
baokeeper_snapshot_last_failure_timestamp_seconds{name="vault",namespace="other"} 1.9e+09
# HELP baokeeper_snapshot_next_scheduled_timestamp_seconds Unix time of the next scheduled snapshot (status.snapshots.nextScheduledAt).
# TYPE baokeeper_snapshot_next_scheduled_timestamp_seconds gauge
baokeeper_snapshot_next_scheduled_timestamp_seconds{name="vault",namespace="other"} 1.9e+09
# HELP baokeeper_restore_drill_failed 1 when the last restore drill failed, 0 when it passed or was skipped (status.snapshots.drills.last.outcome); absent before the first drill.
# TYPE baokeeper_restore_drill_failed gauge
baokeeper_restore_drill_failed{name="vault",namespace="other"} 1
# HELP baokeeper_restore_drill_last_passed_timestamp_seconds Unix time when the last restore drill that passed finished (status.snapshots.drills.lastPassedAt).
# TYPE baokeeper_restore_drill_last_passed_timestamp_seconds gauge
baokeeper_restore_drill_last_passed_timestamp_seconds{name="vault",namespace="other"} 1.8e+09
# HELP baokeeper_restore_drill_next_scheduled_timestamp_seconds Unix time of the next scheduled restore drill (status.snapshots.drills.nextScheduledAt).
# TYPE baokeeper_restore_drill_next_scheduled_timestamp_seconds gauge
baokeeper_restore_drill_next_scheduled_timestamp_seconds{name="vault",namespace="other"} 1.9e+09
# HELP baokeeper_cluster_desired_members spec.replicas.
# TYPE baokeeper_cluster_desired_members gauge
baokeeper_cluster_desired_members{name="bao",namespace="ns"} 3
baokeeper_cluster_desired_members{name="vault",namespace="other"} 3
`), "baokeeper_cluster_members", "baokeeper_cluster_version_info", "baokeeper_raft_healthy_voters", "baokeeper_raft_leader",
		"baokeeper_upgrade_failed", "baokeeper_upgrade_step_started_timestamp_seconds", "baokeeper_upgrade_step_timeout_seconds",
		"baokeeper_snapshot_last_taken_timestamp_seconds", "baokeeper_cluster_desired_members",
		"baokeeper_snapshot_last_failure_timestamp_seconds", "baokeeper_snapshot_next_scheduled_timestamp_seconds",
		"baokeeper_certificate_expiry_timestamp_seconds", "baokeeper_member_certificate_expiry_timestamp_seconds",
		"baokeeper_restore_drill_failed", "baokeeper_restore_drill_last_passed_timestamp_seconds", "baokeeper_restore_drill_next_scheduled_timestamp_seconds")).To(Succeed())

	// One phase series per phase and cluster.
	g.Expect(testutil.CollectAndCount(c, "baokeeper_cluster_phase")).To(Equal(2 * len(clusterPhases())))

	// A deleted cluster has no series at the next scrape.
	g.Expect(r.Delete(context.Background(), upgrading)).To(Succeed())
	g.Expect(testutil.CollectAndCount(c, "baokeeper_raft_leader")).To(Equal(1))
}

type failingReader struct{ client.Reader }

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("cache not synced")
}

func TestStatusCollectorReportsNothingWhenTheListFails(t *testing.T) {
	c := NewStatusCollector(failingReader{}, time.Second, logr.Discard())
	NewWithT(t).Expect(testutil.CollectAndCount(c)).To(Equal(0), "never a stale value")
}
