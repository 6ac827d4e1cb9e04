package upgrade

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func healthy(n int) *operation.Cluster {
	c := &operation.Cluster{Leader: "bao-0", AutopilotKnown: true, AutopilotHealthy: true, FailureTolerance: (n - 1) / 2}
	for i := range n {
		c.Members = append(c.Members, operation.Member{Name: fmt.Sprintf("bao-%d", i), Ordinal: i, PodExists: true, PodReady: true, Initialized: true, Version: "2.4.0", Voter: true, Healthy: true})
	}
	return c
}

func TestPrechecks(t *testing.T) {
	never := baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotNever}
	cases := []struct {
		name     string
		reason   string
		mutate   func(*PrecheckInput)
		wantFail string
		// wantUnpassed is a precheck that is Pending (none failed).
		wantUnpassed string
		wantMsg      string
	}{
		{name: "all pass", reason: "a healthy 3-member cluster may start", mutate: func(*PrecheckInput) {}},
		{name: "member sealed", reason: "every member must be unsealed", mutate: func(in *PrecheckInput) { in.Cluster.Members[1].Sealed = true },
			wantFail: PrecheckMembersReady, wantMsg: "bao-1"},
		{name: "member missing", reason: "fewer members than spec.replicas is not a starting point", mutate: func(in *PrecheckInput) { in.Replicas = 5 },
			wantFail: PrecheckMembersReady, wantMsg: "missing"},
		{name: "no failure tolerance", reason: "3+ members need tolerance 1 before a member goes down", mutate: func(in *PrecheckInput) { in.Cluster.FailureTolerance = 0 },
			wantFail: PrecheckAutopilotHealthy, wantMsg: "at least 1 is needed"},
		{name: "a member's clock ahead", reason: "a leader whose clock runs minutes ahead issues certificates its peers take as not valid yet (seen on the rig: the hand-off was undone by a second election): hold before anything goes down, naming the clock",
			mutate: func(in *PrecheckInput) { in.Cluster.Members[2].ClockOffset = 10 * time.Minute }, wantFail: PrecheckMemberClocks,
			wantMsg: "bao-2 (its clock is 10m0s ahead of baokeeper's: OpenBao checks certificate and token lifetimes against it; fix the time synchronization of its node)"},
		{name: "a member's clock behind", reason: "a member whose clock runs minutes behind refuses the cluster's young certificates once restarted (seen on the rig: it never rejoined)",
			mutate: func(in *PrecheckInput) { in.Cluster.Members[1].ClockOffset = -10 * time.Minute }, wantFail: PrecheckMemberClocks, wantMsg: "bao-1 (its clock is 10m0s behind"},
		{name: "autopilot unknown", reason: "no decision without a trustworthy autopilot read", mutate: func(in *PrecheckInput) { in.Cluster.AutopilotKnown = false },
			wantFail: PrecheckAutopilotHealthy, wantMsg: "could not be read"},
		{name: "single member", reason: "bug: a 1-member upgrade changed the template, then waited forever on the quorum budget holding the lock; refuse before anything changes",
			mutate:   func(in *PrecheckInput) { in.Cluster, in.Replicas = healthy(1), 1; in.Cluster.FailureTolerance = 0 },
			wantFail: PrecheckRedundancy, wantMsg: "scale to 3 members first (spec.replicas: 3)"},
		{name: "single member blue-green", reason: "blue-green never takes blue's voter down before green votes: one member can change version",
			mutate: func(in *PrecheckInput) {
				in.Cluster, in.Replicas, in.Strategy = healthy(1), 1, baov1.BlueGreenStrategy
				in.Cluster.FailureTolerance = 0
			}},
		{name: "across the 2.6 forwarding boundary", reason: "members before 2.6 and from 2.6 on cannot forward requests to each other (openbao#3899)",
			mutate:   func(in *PrecheckInput) { in.From, in.To = "2.5.5", "2.6.1" },
			wantFail: PrecheckCompatibility, wantMsg: "2.5.5 and 2.6.1 cannot run in one cluster"},
		{name: "across the 2.6 forwarding boundary, blue-green", reason: "blue and green run side by side too",
			mutate:   func(in *PrecheckInput) { in.From, in.To, in.Strategy = "2.5.0", "2.6.0", baov1.BlueGreenStrategy },
			wantFail: PrecheckCompatibility, wantMsg: "request-forwarding service"},
		{name: "no leader", reason: "exactly one leader must be known", mutate: func(in *PrecheckInput) { in.Cluster.Leader = "" },
			wantFail: PrecheckOneLeader},
		{name: "policy refused", reason: "the version and image policy is a precheck too", mutate: func(in *PrecheckInput) {
			in.Policy = Decision{Allowed: false, Message: "spec.image tag 2.4.2 does not match"}
		}, wantFail: PrecheckPolicy, wantMsg: "spec.image tag"},
		{name: "snapshot target missing", reason: "policy Always without a target cannot take the snapshot", mutate: func(in *PrecheckInput) {
			in.Snapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways}
		}, wantFail: PrecheckSnapshotTarget, wantMsg: "add spec.upgrade.preUpgradeSnapshot.s3"},
		{name: "another operation holds the lock", reason: "a restore in progress blocks the start", mutate: func(in *PrecheckInput) {
			in.LockHeldBy = &baov1.OperationLock{Operation: "Restore", Message: "restoring snapshot s3://b/k"}
		}, wantFail: PrecheckOperationLock, wantMsg: "operation Restore holds the cluster (restoring snapshot s3://b/k)"},
		{name: "a rollout takes no snapshot", reason: "a restart on the same version changes no data: no target is needed, none is reached", mutate: func(in *PrecheckInput) {
			in.Snapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways}
			in.Kind, in.To = baov1.OperationRollout, in.From
		}},
		{name: "a rollout of one member", reason: "restarting the only voter costs the whole cluster: refused, saying what to do", mutate: func(in *PrecheckInput) {
			in.Cluster, in.Replicas, in.Kind = healthy(1), 1, baov1.OperationRollout
			in.Cluster.FailureTolerance = 0
		}, wantFail: PrecheckRedundancy, wantMsg: "cannot restart a member without taking down its only voter"},
		{name: "unhealthy and non-voting members are named", reason: "the precheck says which members it waits for", mutate: func(in *PrecheckInput) {
			in.Cluster.AutopilotHealthy, in.Cluster.FailureTolerance = false, 0
			in.Cluster.Members[1].InRaft, in.Cluster.Members[1].Healthy = true, false
			in.Cluster.Members[2].InRaft, in.Cluster.Members[2].Voter = true, false
		}, wantFail: PrecheckAutopilotHealthy, wantMsg: "not healthy: bao-1; non-voters (promoted once healthy for 30s): bao-2"},
		{name: "snapshot target set", reason: "a configured target that its check Job reached passes", mutate: func(in *PrecheckInput) {
			in.Snapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways, S3: &baov1.S3Target{Endpoint: "https://s3", Bucket: "b"}}
			in.SnapshotTarget = &baov1.Precheck{Result: baov1.PrecheckPassed, Message: "reachable"}
		}},
		{name: "snapshot target not checked yet", reason: "a target is Pending until its check Job says, and an upgrade does not start on a Pending precheck",
			mutate: func(in *PrecheckInput) {
				in.Snapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways, S3: &baov1.S3Target{Endpoint: "https://s3", Bucket: "b"}}
			}, wantUnpassed: PrecheckSnapshotTarget, wantMsg: "an executor Job checks that it is reachable from the cluster's namespace once every other precheck passes"},
		{name: "snapshot target unreachable", reason: "a target that cannot be reached blocks the start, saying why", mutate: func(in *PrecheckInput) {
			in.Snapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotIfOlderThan, S3: &baov1.S3Target{Endpoint: "https://s3", Bucket: "b"}}
			in.SnapshotTarget = &baov1.Precheck{Result: baov1.PrecheckFailed, Message: "the snapshot target s3://b/ (https://s3) is not usable: bucket b does not exist"}
		}, wantFail: PrecheckSnapshotTarget, wantMsg: "s3://b/ (https://s3) is not usable: bucket b does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			in := PrecheckInput{Cluster: healthy(3), Replicas: 3, Policy: Decision{Allowed: true}, Snapshot: never, From: "2.4.0", To: "2.4.1"}
			tc.mutate(&in)
			pcs := Prechecks(in)
			g.Expect(pcs).To(HaveLen(9), "every precheck is always reported")
			failed := FirstFailedPrecheck(pcs)
			if tc.wantUnpassed != "" {
				g.Expect(failed).To(BeNil(), tc.reason)
				unpassed := FirstUnpassedPrecheck(pcs)
				g.Expect(unpassed).NotTo(BeNil(), tc.reason)
				g.Expect(unpassed.Name).To(Equal(tc.wantUnpassed), tc.reason)
				g.Expect(unpassed.Result).To(Equal(baov1.PrecheckPending), tc.reason)
				g.Expect(unpassed.Message).To(ContainSubstring(tc.wantMsg), tc.reason)
				return
			}
			if tc.wantFail == "" {
				g.Expect(failed).To(BeNil(), tc.reason)
				g.Expect(FirstUnpassedPrecheck(pcs)).To(BeNil(), tc.reason)
				return
			}
			g.Expect(failed).NotTo(BeNil(), tc.reason)
			g.Expect(failed.Name).To(Equal(tc.wantFail), tc.reason)
			g.Expect(failed.Message).To(ContainSubstring(tc.wantMsg), tc.reason)
		})
	}
}
