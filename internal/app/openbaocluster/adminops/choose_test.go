package adminops

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/quorum"
	"github.com/baokeeper/baokeeper/internal/service/scaling"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// restingSnapshot is a formed 3-member cluster on 2.4.0, every member a healthy
// voter on the current template, nothing running.
func restingSnapshot() *operation.Snapshot {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "bao", Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(3)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "openbao", Image: upgrade.DefaultImage("2.4.0")}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, UpdateRevision: "r1", CurrentRevision: "r1", Replicas: 3}}
	obs := &operation.Cluster{Now: now, Leader: "bao-0", AutopilotKnown: true, AutopilotHealthy: true, FailureTolerance: 1, StatefulSet: sts}
	for i := range 3 {
		obs.Members = append(obs.Members, operation.Member{Name: "bao-" + string(rune('0'+i)), Ordinal: i, PodExists: true, PodReady: true,
			Image: upgrade.DefaultImage("2.4.0"), Revision: "r1", Initialized: true, Version: "2.4.0", InRaft: true, Voter: true, Healthy: true,
			StableSince: now.Add(-time.Hour)})
	}
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao", UID: "u1", Generation: 1},
		Spec:   baov1.OpenBaoClusterSpec{Version: "2.4.0", Replicas: ptr(int32(3))},
		Status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.0"}}
	return &operation.Snapshot{Cluster: obs, Object: c, Jobs: map[string]operation.ObservedJob{}}
}

func withBucket(s *operation.Snapshot) {
	s.Object.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways, S3: &baov1.S3Target{
		Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}
	s.ExecutorImage = "ghcr.io/baokeeper/baokeeper:0.2.0"
}

// withRestore makes the resting cluster one that starts from a snapshot, with its
// one member so far.
func withRestore(s *operation.Snapshot) {
	s.Object.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{
		S3:  baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}},
		Key: "ns/old/x.snap", SHA256: "5f2b9c1e0d3a4b6c7d8e9f00112233445566778899aabbccddeeff0011223344", SourceCluster: "old"}}
	s.Members = s.Members[:1]
	s.StatefulSet.Spec.Replicas = ptr(int32(1))
	s.StatefulSet.Status.Replicas = 1
}

func TestChoose(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		change func(s *operation.Snapshot)
		want   operation.Operation
		// wantKind is the kind of the chosen operation's plan.
		wantKind operation.Kind
	}{
		{name: "at rest", reason: "nothing asked for, nothing to do: the planner decides and does nothing",
			want: startOperation{}, wantKind: operation.KindNone},
		{name: "version changed", reason: "a new version is planned and persisted before anything is touched",
			change: func(s *operation.Snapshot) { s.Object.Spec.Version = "2.4.1" }, want: startOperation{}, wantKind: operation.KindPersist},
		{name: "break-glass", reason: "nothing moves while break-glass is active, whatever the spec asks",
			change: func(s *operation.Snapshot) {
				s.Object.Spec.Version = "2.4.1"
				s.Object.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true}
			}},
		{name: "refused spec", reason: "a spec baokeeper refuses holds every operation",
			change: func(s *operation.Snapshot) {
				s.Object.Spec.Version = "2.4.1"
				s.Object.Spec.Upgrade.Rolling.StepTimeout = ptr(baov1.Duration("soon"))
			}},
		{name: "majority silent at rest", reason: "issue 39: two of three voters silent with their claims deleted; the quorum watch decides, and enters break-glass",
			change: func(s *operation.Snapshot) {
				loseMajority(s)
				s.VolumeUIDs = map[string]string{"data-bao-0": "uid-0"}
			}, want: quorumOperation(), wantKind: operation.KindBreakGlass},
		{name: "majority silent at rest, data may come back", reason: "their claims are the recorded ones: hold, nothing else runs, not even the scaling",
			change: func(s *operation.Snapshot) {
				loseMajority(s)
				s.Object.Spec.Replicas = ptr(int32(5))
			}, want: quorumOperation(), wantKind: operation.KindWait},
		{name: "majority silent during an upgrade", reason: "the upgrade watches its own quorum (break-glass QuorumLost)",
			change: func(s *operation.Snapshot) {
				loseMajority(s)
				s.Object.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", Strategy: baov1.RollingUpdateStrategy,
					Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}, CompletedPods: []string{"bao-2"},
					LastVoters: []string{"bao-0", "bao-1", "bao-2"}}
			}, want: upgradeOperation{}, wantKind: operation.KindWait},
		{name: "restore pending", reason: "a cluster that starts from a snapshot restores it before anything else: not the scaling to spec.replicas, not a version change",
			change: func(s *operation.Snapshot) {
				withRestore(s)
				s.Object.Spec.Version = "2.4.1"
			}, want: snapshot.RestoreOperation{}, wantKind: operation.KindPersist},
		{name: "restore failed", reason: "a failed restore keeps the cluster as it is: nothing else runs on data that is not the snapshot's",
			change: func(s *operation.Snapshot) {
				withRestore(s)
				s.Object.Status.Restore = &baov1.RestoreStatus{Step: baov1.RestoreStepFailed, Failure: "checksum"}
			}, want: snapshot.RestoreOperation{}, wantKind: operation.KindNone},
		{name: "restore done", reason: "once restored, the scaling grows the cluster to spec.replicas",
			change: func(s *operation.Snapshot) {
				withRestore(s)
				s.Object.Status.Restore = &baov1.RestoreStatus{Step: baov1.RestoreStepDone}
			}, want: scaling.Operation{}, wantKind: operation.KindPersist},
		{name: "restore drill due", reason: "a due drill starts when no operation holds the lock",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Spec.Snapshots.Verify = &baov1.SnapshotVerifySpec{Schedule: "@daily"}
				s.Object.Status.LastSnapshot = &baov1.SnapshotReceipt{Location: "s3://snaps/ns/bao/x.snap", SHA256: "ab", TakenAt: &metav1.Time{Time: s.Now.Add(-time.Hour)}}
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Drills: &baov1.DrillsStatus{Due: &metav1.Time{Time: s.Now}}}
			}, want: snapshot.DrillOperation{}, wantKind: operation.KindPersist},
		{name: "restore drill due, outside every maintenance window", reason: "a scheduled drill is not urgent: it waits for a window (snapshot.Tend says until when)",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Spec.Snapshots.Verify = &baov1.SnapshotVerifySpec{Schedule: "@daily"}
				s.Object.Status.LastSnapshot = &baov1.SnapshotReceipt{Location: "s3://snaps/ns/bao/x.snap", SHA256: "ab", TakenAt: &metav1.Time{Time: s.Now.Add(-time.Hour)}}
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Drills: &baov1.DrillsStatus{Due: &metav1.Time{Time: s.Now},
					WaitingFor: "outside every maintenance window (spec.upgrade.windows): the drill starts when the next opens at 2026-12-04T02:00:00Z"}}
			}, want: startOperation{}, wantKind: operation.KindNone},
		{name: "restore drill running, version changed", reason: "a drill in progress goes on; the upgrade waits for the lock",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Spec.Version = "2.4.1"
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Drills: &baov1.DrillsStatus{Current: &baov1.DrillRun{ID: "d1", Cluster: "bao-drill",
					Snapshot: "s3://snaps/ns/bao/x.snap", Step: baov1.DrillStepCreate}}}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationDrill}
			}, want: snapshot.DrillOperation{}, wantKind: operation.KindApply},
		{name: "in-place restore accepted, version changed", reason: "an accepted in-place restore goes before an upgrade that has not started: it takes the lock first",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Spec.Version = "2.4.1"
				s.Object.Status.InPlaceRestore = &baov1.RestoreStatus{Source: "s3://snaps/ns/bao/x.snap", SHA256: strings.Repeat("a", 64), Step: baov1.RestoreStepRestore}
			}, want: snapshot.InPlaceRestoreOperation{}, wantKind: operation.KindPersist},
		{name: "in-place restore accepted, a snapshot running", reason: "the snapshot that holds the lock finishes first; the restore waits for it",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Status.InPlaceRestore = &baov1.RestoreStatus{Source: "s3://snaps/ns/bao/x.snap", SHA256: strings.Repeat("a", 64), Step: baov1.RestoreStepRestore}
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Current: &baov1.SnapshotRun{ID: "abcd1234", Trigger: baov1.SnapshotScheduled,
					StartedAt: &metav1.Time{Time: s.Now}, Step: baov1.SnapshotRunTake, Attempts: 1}}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationSnapshot}
			}, want: snapshot.RunOperation{}, wantKind: operation.KindCreateJob},
		{name: "in-place restore accepted, a scaling holds the lock", reason: "the scaling finishes first",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Status.InPlaceRestore = &baov1.RestoreStatus{Source: "s3://snaps/ns/bao/x.snap", SHA256: strings.Repeat("a", 64), Step: baov1.RestoreStepRestore}
				s.Object.Status.Scaling = &baov1.ScalingStatus{}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationScaling}
			}, want: scaling.Operation{}, wantKind: operation.KindComplete},
		{name: "rehearsal requested, version changed", reason: "an accepted rehearsal goes before an upgrade that has not started: it takes the lock first",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Spec.Version = "2.4.1"
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Taken: []baov1.SnapshotReceipt{{Location: "s3://snaps/ns/bao/x.snap", SHA256: strings.Repeat("a", 64)}}}
				s.Object.Status.Rehearsal = &baov1.RehearsalStatus{Request: "2.4.1+1", FromVersion: "2.4.0", TargetVersion: "2.4.1", Cluster: "bao-rehearsal", Step: baov1.RehearsalStepCreate}
			}, want: snapshot.RehearsalOperation{}, wantKind: operation.KindPersist},
		{name: "rehearsal requested, a drill running", reason: "the drill that holds the lock finishes first; the rehearsal waits for it",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Status.Rehearsal = &baov1.RehearsalStatus{Request: "2.4.1+1", FromVersion: "2.4.0", TargetVersion: "2.4.1", Cluster: "bao-rehearsal", Step: baov1.RehearsalStepCreate}
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Drills: &baov1.DrillsStatus{Current: &baov1.DrillRun{ID: "d1", Cluster: "bao-drill",
					Snapshot: "s3://snaps/ns/bao/x.snap", Step: baov1.DrillStepCreate}}}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationDrill}
			}, want: snapshot.DrillOperation{}, wantKind: operation.KindApply},
		{name: "rehearsal running, version changed", reason: "a rehearsal that holds the lock goes on; the upgrade waits for it",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Spec.Version = "2.4.1"
				s.Object.Status.Rehearsal = &baov1.RehearsalStatus{ID: "r1", Request: "2.4.1+1", FromVersion: "2.4.0", TargetVersion: "2.4.1", Cluster: "bao-rehearsal",
					Snapshot: "s3://snaps/ns/bao/x.snap", Step: baov1.RehearsalStepCreate}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRehearsal}
			}, want: snapshot.RehearsalOperation{}, wantKind: operation.KindApply},
		{name: "offline upgrade, every member stopped", reason: "the planned outage of an offline upgrade is no loss of quorum: its strategy waits for the members, no break-glass",
			change: func(s *operation.Snapshot) {
				s.Object.Spec.Version = "2.6.0"
				s.Object.Spec.Upgrade.Strategy = baov1.OfflineStrategy
				at := metav1.NewTime(s.Now.Add(-20 * time.Second))
				s.Object.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.OfflineStrategy, FromVersion: "2.4.0", TargetVersion: "2.6.0",
					TargetImage: upgrade.DefaultImage("2.6.0"), LastVoters: []string{"bao-0", "bao-1", "bao-2"}, QuorumLostSince: &at,
					Snapshot: &baov1.SnapshotReceipt{Location: "s3://snaps/ns/bao/x.snap", SHA256: strings.Repeat("a", 64)},
					Offline:  &baov1.OfflineUpgradeStatus{StoppedAt: &at, CommittedIndex: 90}, Plan: &baov1.UpgradePlan{Pods: []string{"bao-0", "bao-1", "bao-2"}}}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationOfflineUpgrade, Holder: operation.HolderUpgradeManager}
				s.StatefulSet.Spec.Template.Spec.Containers[0].Image = upgrade.DefaultImage("2.6.0")
				for i := range s.Members {
					s.Members[i].PodExists, s.Members[i].PodReady, s.Members[i].Healthy = false, false, false
				}
				s.Leader, s.AutopilotKnown, s.AutopilotHealthy = "", false, false
			}, want: upgradeOperation{}, wantKind: operation.KindWait},
		{name: "upgrade not started, scaling asked for", reason: "an upgrade that has not started waits on its prechecks and holds no lock: it yields to the scaling its prechecks wait for (the member count differs)",
			change: func(s *operation.Snapshot) {
				s.Object.Spec.Replicas = ptr(int32(5))
				s.Object.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.0",
					TargetImage: upgrade.DefaultImage("2.4.0"), Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}}
			}, want: scaling.Operation{}, wantKind: operation.KindPersist},
		{name: "restart at its prechecks, a rejoined member not promoted", reason: "found on the rig: a restart requested right after a follower lost its volume waited for ever on AutopilotHealthy, while only a scaling promotes the member that rejoined as a non-voter",
			change: func(s *operation.Snapshot) {
				s.Members[2].Voter = false
				s.Object.Status.Upgrade = &baov1.UpgradeStatus{Kind: baov1.OperationRollout, Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.0",
					TargetImage: upgrade.DefaultImage("2.4.0"), Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}}
			}, want: scaling.Operation{}, wantKind: operation.KindPersist},
		{name: "upgrade started", reason: "an upgrade that has replaced a member decides, before any scaling: the scaling waits for it",
			change: func(s *operation.Snapshot) {
				s.Object.Spec.Replicas = ptr(int32(5))
				s.Object.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
					TargetImage: upgrade.DefaultImage("2.4.1"), Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}, CompletedPods: []string{"bao-2"}}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRollingUpgrade}
			}, want: upgradeOperation{}, wantKind: operation.KindApply},
		{name: "scale up", reason: "a membership change is a scaling, started before any version change",
			change: func(s *operation.Snapshot) {
				s.Object.Spec.Replicas = ptr(int32(5))
				s.Object.Spec.Version = "2.4.1"
			}, want: scaling.Operation{}, wantKind: operation.KindPersist},
		{name: "non-voter at rest", reason: "a member that stays a non-voter is promoted by a scaling at the same size",
			change: func(s *operation.Snapshot) { s.Members[2].Voter = false }, want: scaling.Operation{}, wantKind: operation.KindPersist},
		{name: "scaling held by the lock", reason: "another operation's lock holds a scaling back: the planner runs and does nothing",
			change: func(s *operation.Snapshot) {
				s.Members[2].Voter = false
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRollingUpgrade}
			}, want: startOperation{}, wantKind: operation.KindNone},
		{name: "never started", reason: "a member left on an image that never started is re-created on the template",
			change: func(s *operation.Snapshot) {
				m := &s.Members[1]
				m.Image, m.PodReady, m.NeverStarted, m.Version = upgrade.DefaultImage("2.4.7"), false, true, ""
			}, want: recreateOperation{}, wantKind: operation.KindDelete},
		{name: "snapshot requested", reason: "a requested snapshot takes the free lock before the planner starts a version change",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Spec.Version = "2.4.1"
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Requested: "r1"}
			}, want: snapshot.RunOperation{}, wantKind: operation.KindPersist},
		{name: "snapshot due, upgrade not started", reason: "an upgrade at its prechecks holds no lock: a due scheduled snapshot goes first",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Due: &metav1.Time{Time: s.Now.Add(-time.Minute)}}
				s.Object.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
					TargetImage: upgrade.DefaultImage("2.4.1"), Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}}
			}, want: snapshot.RunOperation{}, wantKind: operation.KindPersist},
		{name: "snapshot due during an upgrade", reason: "the upgrade holds the lock: the snapshot waits for it",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Due: &metav1.Time{Time: s.Now.Add(-time.Minute)}}
				s.Object.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1",
					TargetImage: upgrade.DefaultImage("2.4.1"), Plan: &baov1.UpgradePlan{Pods: []string{"bao-2", "bao-1", "bao-0"}}, CompletedPods: []string{"bao-2"}}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRollingUpgrade}
			}, want: upgradeOperation{}, wantKind: operation.KindApply},
		{name: "snapshot running, scaling asked for", reason: "a snapshot in progress finishes before a scaling starts",
			change: func(s *operation.Snapshot) {
				withBucket(s)
				s.Object.Spec.Replicas = ptr(int32(5))
				s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Current: &baov1.SnapshotRun{ID: "abcd1234", Trigger: baov1.SnapshotScheduled,
					StartedAt: &metav1.Time{Time: s.Now}, Step: baov1.SnapshotRunTake, Attempts: 1}}
				s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationSnapshot}
			}, want: snapshot.RunOperation{}, wantKind: operation.KindCreateJob},
		{name: "template changed", reason: "members off the current template are rolled out",
			change: func(s *operation.Snapshot) {
				s.StatefulSet.Status.UpdateRevision = "r2"
			}, want: startOperation{}, wantKind: operation.KindPersist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := restingSnapshot()
			if tc.change != nil {
				tc.change(s)
			}
			before := s.Object.DeepCopy()
			op := choose(s)
			if tc.want == nil {
				g.Expect(op).To(BeNil(), tc.reason)
				return
			}
			g.Expect(op).To(Equal(tc.want), tc.reason)
			g.Expect(choose(s)).To(Equal(op), "the same snapshot chooses the same operation")
			p := op.Decide(s)
			g.Expect(p.Kind).To(Equal(tc.wantKind), tc.reason)
			g.Expect(op.Decide(s)).To(Equal(p), "the same snapshot gives the same plan")
			g.Expect(s.Object).To(Equal(before), "a decision never changes the snapshot")
		})
	}
}

// TestSnapshotTargetCheck: the snapshot target is checked by a Job in the cluster's
// namespace, last, and only while it is the one precheck left: the upgrade starts on
// its success alone.
func TestSnapshotTargetCheck(t *testing.T) {
	withTarget := func(s *operation.Snapshot) {
		s.Object.Spec.Version = "2.4.1"
		s.Object.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways, S3: &baov1.S3Target{
			Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}
		s.ExecutorImage = "ghcr.io/baokeeper/baokeeper:0.2.0"
	}
	planned := func() *operation.Snapshot {
		s := restingSnapshot()
		withTarget(s)
		p := choose(s).Decide(s)
		s.Object.Status = *p.Status
		return s
	}
	cases := []struct {
		name       string
		reason     string
		change     func(s *operation.Snapshot)
		wantKind   operation.Kind
		wantResult baov1.PrecheckResult
		wantMsg    string
	}{
		{name: "others pass, no Job yet", reason: "the check Job is created; the upgrade does not start on a Pending precheck",
			wantKind: operation.KindCreateJob, wantResult: baov1.PrecheckPending, wantMsg: "checking from namespace ns"},
		{name: "another precheck fails", reason: "a cluster that waits for something else runs no check Job",
			change:   func(s *operation.Snapshot) { s.Members[1].PodReady = false },
			wantKind: operation.KindWait, wantResult: baov1.PrecheckPending, wantMsg: "once every other precheck passes"},
		{name: "the check runs", reason: "the upgrade waits for it, touching nothing",
			change: func(s *operation.Snapshot) {
				s.Jobs[snapshot.CheckJobName(s.Object)] = operation.ObservedJob{Job: operation.Job{Phase: operation.JobRunning}}
			}, wantKind: operation.KindWait, wantResult: baov1.PrecheckPending},
		{name: "the check failed", reason: "the upgrade is held with the Job's words",
			change: func(s *operation.Snapshot) {
				s.Jobs[snapshot.CheckJobName(s.Object)] = operation.ObservedJob{Job: operation.Job{Phase: operation.JobFailed}, Termination: "bucket snaps does not exist"}
			}, wantKind: operation.KindWait, wantResult: baov1.PrecheckFailed, wantMsg: "is not usable: bucket snaps does not exist"},
		{name: "the check passed", reason: "the upgrade starts: the lock and the snapshot's intent are persisted",
			change: func(s *operation.Snapshot) {
				s.Jobs[snapshot.CheckJobName(s.Object)] = operation.ObservedJob{Job: operation.Job{Phase: operation.JobSucceeded}}
			}, wantKind: operation.KindPersist, wantResult: baov1.PrecheckPassed, wantMsg: "which is reachable from namespace ns"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := planned()
			g.Expect(s.Object.Status.Upgrade).NotTo(BeNil())
			if tc.change != nil {
				tc.change(s)
			}
			g.Expect(choose(s)).To(Equal(upgradeOperation{}))
			p := choose(s).Decide(s)
			g.Expect(p.Kind).To(Equal(tc.wantKind), tc.reason)
			var pc *baov1.Precheck
			for i, x := range p.Status.Upgrade.Plan.Prechecks {
				if x.Name == upgrade.PrecheckSnapshotTarget {
					pc = &p.Status.Upgrade.Plan.Prechecks[i]
				}
			}
			g.Expect(pc).NotTo(BeNil())
			g.Expect(pc.Result).To(Equal(tc.wantResult), tc.reason)
			g.Expect(pc.Message).To(ContainSubstring(tc.wantMsg), tc.reason)
			if tc.wantKind == operation.KindCreateJob {
				g.Expect(p.Job.Name).To(Equal(snapshot.CheckJobName(s.Object)))
				g.Expect(p.Job.Namespace).To(Equal("ns"))
				g.Expect(p.Action.Job).To(Equal(operation.JobCheckTarget))
			}
			if tc.wantKind == operation.KindPersist {
				g.Expect(p.Status.OperationLock).NotTo(BeNil(), "started: the lock is taken in the same write as the first intent")
			}
		})
	}
}

func TestWaiters(t *testing.T) {
	cases := []struct {
		name   string
		change func(s *operation.Snapshot)
		want   []string
	}{
		{name: "no lock, nothing waits", change: func(s *operation.Snapshot) {
			s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Requested: "r1"}
		}},
		{name: "a requested snapshot, a due drill and a scaling wait for an upgrade", change: func(s *operation.Snapshot) {
			s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRollingUpgrade}
			s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Requested: "r1",
				Drills: &baov1.DrillsStatus{Due: &metav1.Time{Time: time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)}}}
			s.Object.Spec.Replicas = ptr(int32(5))
		}, want: []string{"Snapshot: requested (baokeeper.dev/snapshot=r1)", "RestoreDrill: scheduled, due since 2026-12-06T03:00:00Z", "Scaling: from 3 to 5 members"}},
		{name: "an upgrade that has not started waits for a drill; the drill does not wait for itself", change: func(s *operation.Snapshot) {
			s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationDrill}
			s.Object.Status.Snapshots = &baov1.SnapshotsStatus{Drills: &baov1.DrillsStatus{Current: &baov1.DrillRun{ID: "d"}}}
			s.Object.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1"}
		}, want: []string{"RollingUpgrade: from 2.4.0 to 2.4.1, waiting on its prechecks"}},
		{name: "an accepted in-place restore waits for a scaling", change: func(s *operation.Snapshot) {
			s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationScaling}
			s.Object.Status.InPlaceRestore = &baov1.RestoreStatus{Source: "s3://snaps/ns/bao/x.snap", Request: "aa-1", Step: baov1.RestoreStepRestore}
		}, want: []string{"Restore: in place, of s3://snaps/ns/bao/x.snap (baokeeper.dev/restore=aa-1)"}},
		{name: "an accepted rehearsal waits for a snapshot", change: func(s *operation.Snapshot) {
			s.Object.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationSnapshot}
			s.Object.Status.Rehearsal = &baov1.RehearsalStatus{Request: "2.4.1+1", FromVersion: "2.4.0", TargetVersion: "2.4.1", Step: baov1.RehearsalStepCreate}
		}, want: []string{"Rehearsal: of the upgrade from 2.4.0 to 2.4.1, on a copy (baokeeper.dev/rehearse=2.4.1+1)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := restingSnapshot()
			tc.change(s)
			g.Expect(waiters(s, &s.Object.Status)).To(Equal(tc.want))
		})
	}
}

// loseMajority makes bao-1 and bao-2 silent and autopilot unreadable, with the three
// voters recorded by an earlier pass (claims uid-0..2, all still there).
func loseMajority(s *operation.Snapshot) {
	s.AutopilotKnown, s.Leader = false, ""
	for i := 1; i < 3; i++ {
		s.Members[i].PodReady, s.Members[i].Initialized, s.Members[i].Version = false, false, ""
	}
	s.Object.Status.Quorum = &baov1.QuorumStatus{LastLeader: "bao-0", LastVoters: []baov1.QuorumVoter{
		{Name: "bao-0", VolumeClaimUID: "uid-0"}, {Name: "bao-1", VolumeClaimUID: "uid-1"}, {Name: "bao-2", VolumeClaimUID: "uid-2"}}}
	s.VolumeUIDs = map[string]string{"data-bao-0": "uid-0", "data-bao-1": "uid-1", "data-bao-2": "uid-2"}
}

func quorumOperation() operation.Operation { return quorum.Operation{} }
