package kubectlbao

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestParseVoters(t *testing.T) {
	cases := []struct {
		reason, in      string
		want            Voters
		ft              int
		lost            bool
		quorumOfTheWant int
	}{
		{reason: "3 of 3 healthy tolerate one failure", in: "3/3", want: Voters{Known: true, Healthy: 3, Total: 3}, ft: 1, quorumOfTheWant: 2},
		{reason: "2 of 3 healthy tolerate none", in: "2/3", want: Voters{Known: true, Healthy: 2, Total: 3}, ft: 0, quorumOfTheWant: 2},
		{reason: "1 of 3 healthy lost the quorum", in: "1/3", want: Voters{Known: true, Healthy: 1, Total: 3}, ft: 0, lost: true, quorumOfTheWant: 2},
		{reason: "5 of 5 tolerate two", in: "5/5", want: Voters{Known: true, Healthy: 5, Total: 5}, ft: 2, quorumOfTheWant: 3},
		{reason: "4 of 5 tolerate one", in: "4/5", want: Voters{Known: true, Healthy: 4, Total: 5}, ft: 1, quorumOfTheWant: 3},
		{reason: "7 of 7 tolerate three", in: "7/7", want: Voters{Known: true, Healthy: 7, Total: 7}, ft: 3, quorumOfTheWant: 4},
		{reason: "a single voter tolerates none", in: "1/1", want: Voters{Known: true, Healthy: 1, Total: 1}, ft: 0, quorumOfTheWant: 1},
		{reason: "empty: autopilot was not read", in: ""},
		{reason: "garbage is unknown, not zero", in: "three/3"},
		{reason: "more healthy than voters is not a reading", in: "4/3"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			v := ParseVoters(tc.in)
			g.Expect(v).To(Equal(tc.want))
			if !v.Known {
				return
			}
			g.Expect(v.FailureTolerance()).To(Equal(tc.ft))
			g.Expect(v.QuorumLost()).To(Equal(tc.lost))
			g.Expect(v.Quorum()).To(Equal(tc.quorumOfTheWant))
		})
	}
}

func TestObservation(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withBlueGreen(baov1.BlueGreenAwaitPromotion, baov1.PromotionWaiting))
	c.Status.Members = append(c.Status.Members, baov1.MemberStatus{Name: "stray", RaftRole: baov1.RaftRoleVoter})
	obs := Observation(c, testNow())
	g.Expect(obs.Leader).To(Equal("bao-0"))
	g.Expect(obs.AutopilotKnown && obs.AutopilotHealthy).To(BeTrue())
	g.Expect(obs.FailureTolerance).To(Equal(1))
	g.Expect(names(obs.Members)).To(Equal([]string{"bao-0", "bao-1", "bao-2"}), "blue's members are the serving StatefulSet's")
	g.Expect(names(obs.Green)).To(Equal([]string{"bao-1a2b3c4d-0", "bao-1a2b3c4d-1", "bao-1a2b3c4d-2"}))
	g.Expect(names(obs.Extra)).To(Equal([]string{"stray"}), "a server that matches no StatefulSet")
	g.Expect(obs.Green[0].InRaft && !obs.Green[0].Voter).To(BeTrue(), "NonVoter is in Raft without a vote")
	g.Expect(obs.Members[0].Ordinal).To(Equal(0))

	c.Status.Leader = ""
	g.Expect(Observation(c, testNow()).Leader).To(Equal("bao-0"), "the member whose role is Leader when status.leader is empty")
}

func names(ms []operation.Member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestRenderStatusGolden(t *testing.T) {
	cases := []struct {
		reason, file string
		c            *baov1.OpenBaoCluster
	}{
		{reason: "a healthy cluster with nothing running", file: "status-running.golden", c: newCluster()},
		{reason: "a rolling upgrade replacing its second member", file: "status-rolling.golden", c: newCluster(withRollingUpgrade())},
		{reason: "a blue-green upgrade holding for promotion", file: "status-bluegreen-await.golden",
			c: newCluster(withBlueGreen(baov1.BlueGreenAwaitPromotion, baov1.PromotionWaiting))},
		{reason: "break-glass during a rolling upgrade", file: "status-breakglass.golden",
			c: newCluster(withRollingUpgrade(), withVoters("1/3"), withBreakGlass("9f2c4e1a0b3d5c7e9f2c4e1a0b3d5c7e"))},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			var b bytes.Buffer
			if err := RenderStatus(&b, tc.c, testNow()); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, b.String())
		})
	}
}

func TestRenderStatus(t *testing.T) {
	cases := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		want   []string
		not    []string
	}{
		{reason: "the failure tolerance is derived from status.voters", c: newCluster(),
			want: []string{"Failure tolerance:  1 (healthy voters minus the majority)", "Voters:             3 healthy of 3 (a majority is 2)", "Upgrade:              none in progress"}},
		{reason: "scheduled snapshots: the schedule, what a due one waits for, the last pruning and the receipts", c: newCluster(func(c *baov1.OpenBaoCluster) {
			count := int32(7)
			c.Spec.Snapshots = baov1.SnapshotsSpec{Schedule: "0 */6 * * *", Retention: &baov1.SnapshotRetention{Count: &count}}
			c.Status.Snapshots = &baov1.SnapshotsStatus{Schedule: "0 */6 * * * (UTC)", NextScheduledAt: minutesAgo(-30), Due: minutesAgo(5),
				WaitingFor: "the scheduled snapshot due at 2026-12-01T10:00:00Z waits for operation RollingUpgrade (rolling upgrade from 2.4.0 to 2.4.1) to release the cluster",
				LastPrune:  &baov1.PruneRecord{At: minutesAgo(60), Listed: 9, Deleted: 2, Kept: 7},
				Taken:      []baov1.SnapshotReceipt{{Trigger: baov1.SnapshotScheduled, TakenAt: minutesAgo(61), Location: "s3://snaps/prod/vault/bao/scheduled-2.4.0-x-1.snap", SizeBytes: 2048}}}
		}),
			want: []string{"Schedule:      0 */6 * * * (UTC), next", "Retention:     the newest 7", "waits for operation RollingUpgrade",
				"Last pruning:  ", "9 listed, 2 deleted, 7 kept", "Taken 1:       Scheduled", "scheduled-2.4.0-x-1.snap"}},
		{reason: "a lost quorum says so", c: newCluster(withVoters("1/3")),
			want: []string{"QUORUM LOST, 1 healthy voters of the 2 a majority needs"}},
		{reason: "without a Raft view the tolerance is unknown, not 0", c: newCluster(withVoters("")),
			want: []string{"Failure tolerance:  unknown"}, not: []string{"Failure tolerance:  0"}},
		{reason: "the plan marks done, in progress and the leader", c: newCluster(withRollingUpgrade()),
			want: []string{"1. bao-2 (done)  2. bao-1 (in progress)  3. bao-0 (leader)", "Waiting for:      waiting for bao-1 to rejoin Raft as a voter",
				"Progress:         ReplaceMember, 1 of 3 done", "s3://snaps/prod/vault/bao/2.4.0-to-2.4.1-20261201T095300Z-1.snap", "1.5 MiB (1572864 bytes)"}},
		{reason: "the lock shows what waits behind it", c: newCluster(withRollingUpgrade(), func(c *baov1.OpenBaoCluster) {
			c.Status.OperationLock.Waiting = []string{"Snapshot: requested (baokeeper.dev/snapshot=r1)"}
		}),
			want: []string{"Operation lock:", "Waiting 1:  Snapshot: requested (baokeeper.dev/snapshot=r1)"}},
		{reason: "restore drills show the schedule and the last verdict", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots.Verify = &baov1.SnapshotVerifySpec{Schedule: "0 3 * * 0"}
			c.Status.Snapshots = &baov1.SnapshotsStatus{Drills: &baov1.DrillsStatus{NextScheduledAt: minutesAgo(-60),
				Last: &baov1.DrillResult{Outcome: baov1.DrillFailed, FinishedAt: minutesAgo(5), Message: "the object has sha256 00, not 5f as its receipt says"}}}
		}),
			want: []string{"Restore drills:  0 3 * * 0, next", "Last drill:      Failed", "not 5f as its receipt says"}},
		{reason: "a failure says how to retry", c: newCluster(withRollingUpgrade(), withUpgradeFailure(baov1.FailureStepTimeout)),
			want: []string{"Failure:          StepTimeout on bao-1", "kubectl bao retry bao -n vault"}},
		{reason: "the hold for promotion names the command", c: newCluster(withBlueGreen(baov1.BlueGreenAwaitPromotion, baov1.PromotionWaiting)),
			want: []string{"Waiting: green is in sync and waits for you: kubectl bao promote bao -n vault", "AwaitPromotion since", "(phase 4 of 10)",
				"not yet: kubectl bao rollback bao -n vault keeps blue"}},
		{reason: "past the point of no return the way back is a restore", c: newCluster(withBlueGreen(baov1.BlueGreenCutover, baov1.PromotionRequested),
			func(c *baov1.OpenBaoCluster) { c.Status.BlueGreen.LeaderMovedAt = minutesAgo(1) }),
			want: []string{"passed at", "docs/restore.md", "(phase 8 of 10)"}},
		{reason: "break-glass shows the nonce, the steps and the acknowledgement", c: newCluster(withBreakGlass("abc123")),
			want: []string{"ACTIVE since", "Nonce:            abc123", "1. Read what baokeeper saw", "kubectl bao break-glass ack bao -n vault --nonce abc123",
				"docs/runbooks/break-glass-quorum-lost.md"}},
		{reason: "an acknowledged break-glass names who", c: newCluster(withBreakGlass("abc123"), func(c *baov1.OpenBaoCluster) {
			c.Status.BreakGlass.Active, c.Status.BreakGlass.AcknowledgedBy, c.Status.BreakGlass.AcknowledgedAt = false, "kubectl-bao/alice", minutesAgo(1)
		}), want: []string{"not active (the last one, QuorumLost, was acknowledged at 2026-12-01T09:59:00Z (60s ago) by kubectl-bao/alice)"}, not: []string{"Nonce:"}},
		{reason: "paused says how to resume", c: newCluster(withPaused(true)), want: []string{"kubectl bao resume bao -n vault"}},
		{reason: "an offline upgrade says when every member stopped and how long none answered", c: newCluster(withRollingUpgrade(), func(c *baov1.OpenBaoCluster) {
			c.Status.Upgrade.Strategy = baov1.OfflineStrategy
			c.Status.Upgrade.Offline = &baov1.OfflineUpgradeStatus{StoppedAt: minutesAgo(2), LeaderBefore: "bao-0", CommittedIndex: 812, ServingAt: minutesAgo(1)}
		}), want: []string{"Stopped:          every member,", "(leader bao-0 at committed index 812)", "no member answered for 1m0s"}},
		{reason: "a requested rehearsal shows its verdict and until when it counts", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Status.Rehearsal = &baov1.RehearsalStatus{Request: "2.4.1+1", FromVersion: "2.4.0", TargetVersion: "2.4.1", Cluster: "bao-rehearsal", Step: baov1.RehearsalStepDone,
				Result: &baov1.DrillResult{Outcome: baov1.DrillPassed, Message: "upgraded", FinishedAt: minutesAgo(10)}}
		}), want: []string{"Rehearsal", "Requested:  baokeeper.dev/rehearse=2.4.1+1", "Upgrade:    2.4.0 to 2.4.1", "Verdict:    Passed: upgraded", "Counts:     for an upgrade from 2.4.0 to 2.4.1 until"}},
		{reason: "the served certificate against the stored one: a member on an older one is named", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Status.TLS = &baov1.TLSStatus{CertificateSHA256: "aaaaaaaaaaaaaaaa", NotAfter: minutesAgo(-60 * 24 * 90)}
			c.Status.Members[0].ServedCertificateSHA256 = "aaaaaaaaaaaaaaaa"
			c.Status.Members[1].ServedCertificateSHA256 = "aaaaaaaaaaaaaaaa"
			c.Status.Members[2].ServedCertificateSHA256, c.Status.Members[2].ServedCertificateNotAfter = "bbbbbbbbbbbbbbbb", minutesAgo(-60*24*5)
		}), want: []string{"Stored:             aaaaaaaaaaaa, expires", "Served by:          bao-0, bao-1",
			"Older, served by:   bao-2 (bbbbbbbbbbbb, expires", "the rollout restarts them onto the stored one"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			var b bytes.Buffer
			g.Expect(RenderStatus(&b, tc.c, testNow())).To(Succeed())
			out := squash(b.String())
			for _, w := range tc.want {
				g.Expect(out).To(ContainSubstring(squash(w)))
			}
			for _, n := range tc.not {
				g.Expect(out).NotTo(ContainSubstring(squash(n)))
			}
			g.Expect(strings.Contains(b.String(), "\t")).To(BeFalse(), "tabs are expanded")
		})
	}
}

// status.voters shows healthy voters against the members that should vote (1/3 for
// one voter and two non-voters); the quorum is judged on status.raft's real counts.
func TestVotersOfCountsTheConfiguration(t *testing.T) {
	g := NewWithT(t)
	st := &baov1.OpenBaoClusterStatus{Voters: "1/3", Raft: &baov1.RaftStatus{Voters: 1, HealthyVoters: 1, NonVoters: 2}}
	v := VotersOf(st)
	g.Expect(v.QuorumLost()).To(BeFalse(), "one healthy voter of one is a majority: two non-voters are not lost voters")
	g.Expect(v.FailureTolerance()).To(Equal(0))
	g.Expect(VotersOf(&baov1.OpenBaoClusterStatus{Voters: "1/3"}).QuorumLost()).To(BeTrue(), "a status written before status.raft counted voters")
}

func TestStatusShowsAMajorityLost(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{}
	c.Name, c.Namespace = "bao", "ns"
	c.Status.Phase = baov1.PhaseBreakGlass
	c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassMajorityLost, Nonce: "n1",
		Message: "Quorum lost: 2 of 3 voters do not answer", Survivor: "bao-0", Loss: "committed index 812; nothing acknowledged is lost",
		Members: []baov1.BreakGlassMember{
			{Name: "bao-0", Role: baov1.RaftRoleUnknown, Version: "2.4.0", Healthy: true, CommittedIndex: 812},
			{Name: "bao-1", Role: baov1.RaftRoleUnknown, Lost: "its volume claim data-bao-1 is deleted"},
		}}
	var b bytes.Buffer
	g.Expect(RenderStatus(&b, c, time.Now())).To(Succeed())
	got := squash(b.String())
	for _, want := range []string{
		"Reason: MajorityLost", "Survivor: bao-0", "Loss: committed index 812; nothing acknowledged is lost",
		"NAME ROLE VERSION HEALTHY COMMITTED DATA LOST", "bao-0 Unknown 2.4.0 yes 812 -",
		"bao-1 Unknown - no - its volume claim data-bao-1 is deleted",
		"Runbook: docs/runbooks/break-glass-majority-lost.md",
	} {
		g.Expect(got).To(ContainSubstring(want))
	}
}
