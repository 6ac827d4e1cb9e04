package kubectlbao

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testNow is the one clock reading of the table tests.
func testNow() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }

func minutesAgo(m int) *metav1.Time {
	t := metav1.NewTime(testNow().Add(-time.Duration(m) * time.Minute))
	return &t
}

type option func(*baov1.OpenBaoCluster)

// newCluster is a 3-member cluster on 2.4.0 with bao-0 leading, all healthy,
// changed by opts.
func newCluster(opts ...option) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "vault", UID: "uid-1"},
		Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.0"},
		Status: baov1.OpenBaoClusterStatus{
			Phase: baov1.PhaseRunning, Message: "3 of 3 members ready", CurrentVersion: "2.4.0",
			ReadyMembers: 3, Voters: "3/3", Leader: "bao-0",
		},
	}
	withMembers("2.4.0", "bao-0", "bao-0", "bao-1", "bao-2")(c)
	c.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways, S3: &baov1.S3Target{
		Endpoint: "https://s3.example", Bucket: "snaps", Prefix: "prod", CredentialsSecretRef: corev1.LocalObjectReference{Name: "bao-s3"}}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// withMembers sets status.members, every one healthy and Ready on version.
func withMembers(version, leader string, names ...string) option {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Members = nil
		for _, n := range names {
			role := baov1.RaftRoleVoter
			if n == leader {
				role = baov1.RaftRoleLeader
			}
			c.Status.Members = append(c.Status.Members, baov1.MemberStatus{Name: n, Version: version,
				Image: "ghcr.io/openbao/openbao:" + version, Ready: true, RaftRole: role, Healthy: true})
		}
		c.Status.Leader = leader
	}
}

func withSpecVersion(v string) option { return func(c *baov1.OpenBaoCluster) { c.Spec.Version = v } }

func withStrategy(s baov1.UpgradeStrategyType) option {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Strategy = s }
}

func withVoters(v string) option { return func(c *baov1.OpenBaoCluster) { c.Status.Voters = v } }

func withPaused(p bool) option { return func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Paused = p } }

func withPauseAnnotation() option {
	return func(c *baov1.OpenBaoCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[baov1.AnnotationPause] = "true"
	}
}

func withReplicas(n int32) option { return func(c *baov1.OpenBaoCluster) { c.Spec.Replicas = &n } }

func withSnapshotPolicy(p baov1.SnapshotPolicy) option {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.PreUpgradeSnapshot.Policy = p }
}

// withRollingUpgrade is a rolling upgrade to 2.4.1, bao-2 done, bao-1 in progress.
func withRollingUpgrade() option {
	return func(c *baov1.OpenBaoCluster) {
		c.Spec.Version = "2.4.1"
		c.Status.Phase = baov1.PhaseUpgrading
		c.Status.Message = "upgrading 2.4.0 to 2.4.1 (1 of 3 members done): waiting for bao-1 to rejoin Raft as a voter"
		c.Status.Voters, c.Status.ReadyMembers = "2/3", 2
		c.Status.Members[1].Version, c.Status.Members[1].Image = "2.4.1", "ghcr.io/openbao/openbao:2.4.1"
		c.Status.Members[1].Healthy, c.Status.Members[1].Ready = false, false
		c.Status.Members[2].Version, c.Status.Members[2].Image = "2.4.1", "ghcr.io/openbao/openbao:2.4.1"
		c.Status.OperationLock = &baov1.OperationLock{Operation: "RollingUpgrade", Holder: "baokeeper/openbaocluster-upgrade",
			Message: "rolling upgrade from 2.4.0 to 2.4.1", AcquiredAt: minutesAgo(6)}
		c.Status.Upgrade = &baov1.UpgradeStatus{
			Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
			TargetImage: "ghcr.io/openbao/openbao:2.4.1", ID: "1a2b3c4d", StartedAt: minutesAgo(7),
			Plan: &baov1.UpgradePlan{
				Pods: []string{"bao-2", "bao-1", "bao-0"},
				Prechecks: []baov1.Precheck{
					{Name: "MembersReady", Result: baov1.PrecheckPassed, Message: "all 3 members are Ready, initialized and unsealed"},
					{Name: "SnapshotTarget", Result: baov1.PrecheckPassed, Message: "snapshots go to s3://snaps/prod (https://s3.example), which is reachable"},
				},
				SnapshotLocation: "s3://snaps/prod (https://s3.example)",
				UndoPath:         "before the first member is replaced, set spec.version back to 2.4.0",
			},
			Progress:      &baov1.UpgradeProgress{Stage: "ReplaceMember", Completed: 1, Total: 3},
			CurrentStep:   &baov1.UpgradeStep{Action: baov1.StepReplaceMember, Pod: "bao-1", StartedAt: minutesAgo(2), WaitingFor: "waiting for bao-1 to rejoin Raft as a voter"},
			CompletedPods: []string{"bao-2"},
			Snapshot:      receipt(),
		}
		c.Status.LastSnapshot = receipt()
		c.Status.Conditions = []metav1.Condition{
			{Type: "Available", Status: metav1.ConditionTrue, Reason: "QuorumReady", Message: "a majority of members is Ready", LastTransitionTime: *minutesAgo(60)},
			{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading", Message: "upgrading 2.4.0 to 2.4.1", LastTransitionTime: *minutesAgo(7)},
		}
	}
}

func withUpgradeFailure(reason baov1.FailureReason) option {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Upgrade.Failure = &baov1.UpgradeFailure{Reason: reason, Pod: "bao-1", At: minutesAgo(1),
			Message: "bao-1 did not rejoin Raft as a voter within 10m0s; upgraded: bao-2; not started: bao-0"}
	}
}

func receipt() *baov1.SnapshotReceipt {
	return &baov1.SnapshotReceipt{Location: "s3://snaps/prod/vault/bao/2.4.0-to-2.4.1-20261201T095300Z-1.snap", TakenAt: minutesAgo(6),
		SizeBytes: 1572864, SHA256: "5f2b9c0e6a1d4e7f8a9b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7", RaftIndex: 4242, FromMember: "bao-0", Version: "2.4.0"}
}

// withBlueGreen is a blue-green upgrade to 2.4.1 in phase, green bao-1a2b3c4d.
func withBlueGreen(phase baov1.BlueGreenPhase, promotion baov1.PromotionState) option {
	return func(c *baov1.OpenBaoCluster) {
		c.Spec.Version = "2.4.1"
		c.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy
		c.Status.Phase = baov1.PhaseUpgrading
		c.Status.Message = "blue-green upgrade from 2.4.0 to 2.4.1, phase " + string(phase)
		for i := range 3 {
			name := "bao-1a2b3c4d-" + string(rune('0'+i))
			c.Status.Members = append(c.Status.Members, baov1.MemberStatus{Name: name, Version: "2.4.1",
				Image: "ghcr.io/openbao/openbao:2.4.1", Ready: true, RaftRole: baov1.RaftRoleNonVoter, Healthy: true})
		}
		c.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.BlueGreenStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
			TargetImage: "ghcr.io/openbao/openbao:2.4.1", ID: "1a2b3c4d", StartedAt: minutesAgo(12),
			WaitingFor: "green (bao-1a2b3c4d, 3 members on 2.4.1) is in sync and waits for promotion",
			Progress:   &baov1.UpgradeProgress{Stage: string(phase), Completed: 3, Total: 10}}
		c.Status.BlueGreen = &baov1.BlueGreenStatus{Phase: phase, Promotion: promotion, PhaseStartedAt: minutesAgo(3), SyncedSince: minutesAgo(5),
			Blue:  baov1.MemberSet{StatefulSet: "bao", Version: "2.4.0", Image: "ghcr.io/openbao/openbao:2.4.0", Replicas: 3},
			Green: baov1.MemberSet{StatefulSet: "bao-1a2b3c4d", Version: "2.4.1", Image: "ghcr.io/openbao/openbao:2.4.1", Replicas: 3}}
	}
}

func withLeader(name string) option {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Leader = name
		for i := range c.Status.Members {
			m := &c.Status.Members[i]
			switch {
			case m.Name == name:
				m.RaftRole = baov1.RaftRoleLeader
			case m.RaftRole == baov1.RaftRoleLeader:
				m.RaftRole = baov1.RaftRoleVoter
			}
		}
	}
}

// withMajorityLost is break-glass MajorityLost of a 3-member cluster: bao-0 (the
// last leader, committed index 90) and bao-2 (80) survive, bao-1's data is gone.
func withMajorityLost(nonce string) option {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Phase = baov1.PhaseBreakGlass
		c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassMajorityLost, Nonce: nonce, EnteredAt: minutesAgo(2),
			Survivor: "bao-0", Loss: "nothing acknowledged is lost",
			Members: []baov1.BreakGlassMember{{Name: "bao-0", CommittedIndex: 90}, {Name: "bao-1", Lost: "its volume claim data-bao-1 is deleted"},
				{Name: "bao-2", CommittedIndex: 80}}}
	}
}

func withBreakGlass(nonce string) option {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Phase = baov1.PhaseBreakGlass
		c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost, Nonce: nonce, EnteredAt: minutesAgo(4),
			Message: "a majority of the voters last read from autopilot did not answer for 10s: bao-1, bao-2",
			Leader:  "bao-0",
			Members: []baov1.BreakGlassMember{{Name: "bao-0", Role: baov1.RaftRoleLeader, Version: "2.4.0", Healthy: true},
				{Name: "bao-1", Role: baov1.RaftRoleVoter, Version: "2.4.1"}, {Name: "bao-2", Role: baov1.RaftRoleVoter, Version: "2.4.1"}},
			RecoverySteps: []string{"Read what baokeeper saw: kubectl get openbaocluster bao -n vault -o jsonpath='{.status.breakGlass}'",
				"Then let baokeeper go on: kubectl annotate openbaocluster bao -n vault baokeeper.dev/break-glass-ack=" + nonce + " --overwrite --field-manager=<your name>"}}
	}
}

// squash collapses runs of white space, so that assertions on text do not depend
// on the alignment of its columns.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden file %s (run go test ./internal/cli/kubectlbao/ -run %s -update): %v", path, t.Name(), err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (run with -update to accept it):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
