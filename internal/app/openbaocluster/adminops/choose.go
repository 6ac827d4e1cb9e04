package adminops

import (
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/history"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/quorum"
	"github.com/baokeeper/baokeeper/internal/service/scaling"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/offline"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/rolling"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// choose picks the one operation that decides this pass, from the snapshot alone:
//
//  1. break-glass active, or a spec baokeeper refuses: none (nothing disruptive
//     starts or goes on until a person acknowledged, or the spec is fixed);
//     then a recovery from a lost majority that a person asked for
//     (baokeeper.dev/recover-quorum, quorum.RecoverOperation);
//     then the quorum watch, while a majority of the voters does not answer and
//     no upgrade or restore watches its own (quorum.Operation);
//     then the restore of a cluster that starts from a snapshot, until it
//     succeeded (nothing else runs on data the restore replaces; a failed restore
//     keeps the cluster so); then a snapshot or drill that runs (see 5); then an
//     accepted in-place restore (baokeeper.dev/restore), then an accepted
//     rehearsal (baokeeper.dev/rehearse), once no other operation holds the lock:
//     an upgrade that has not started waits for either, and a request made
//     during an upgrade is refused;
//  2. an upgrade or rollout in progress: its guard (target changes, prechecks, the
//     lock, the quorum watch), then its snapshot phase or its strategy; one that has
//     not started (it waits on its prechecks and holds no lock) yields to a scaling
//     the membership needs, such as promoting a member that rejoined after losing
//     its volume: its AutopilotHealthy and MembersReady prechecks would otherwise
//     wait for a promotion that only that scaling performs (found on the rig: a
//     restart requested right after a volume loss waited for ever);
//  3. a scaling in progress, or one the membership needs: scaling (a cluster is
//     scaled before it is upgraded, never both at once);
//  4. members left on an image that never started: their re-creation;
//  5. a scheduled or requested snapshot that is due, when no operation holds the
//     lock (one that runs goes on before anything else but break-glass and a
//     refused spec; an upgrade that has not started yet holds no lock and lets a
//     due snapshot go first); then a restore drill that is due (one that runs goes
//     on, like a snapshot);
//  6. otherwise the planner, which starts a version change or a rollout when the
//     spec asks for one, and does nothing when it does not.
//
// Pure: the same snapshot chooses the same operation (choose_test.go).
func choose(s *operation.Snapshot) operation.Operation {
	st := &s.Object.Status
	switch {
	case st.BreakGlass != nil && st.BreakGlass.Active:
		return nil
	case upgrade.CheckSpec(s.Object) != nil:
		return nil
	case quorum.RecoveryRunning(st):
		// A person asked to recover a lost majority from its survivor (with the
		// break-glass nonce): nothing else could pass its gates without a leader.
		return quorum.RecoverOperation{}
	case quorumWatched(s) && quorum.Lost(s):
		// A majority of the voters stopped answering at rest: nothing else could pass
		// its gates without a leader; the watch says what it knows and when it stops
		// (an upgrade, a restore in place and a restore from a snapshot watch their
		// own quorum).
		return quorum.Operation{}
	case snapshot.RestorePending(s.Object):
		return snapshot.RestoreOperation{}
	case snapshot.Running(st):
		return snapshot.RunOperation{}
	case snapshot.DrillRunning(st):
		return snapshot.DrillOperation{}
	case snapshot.InPlaceRunning(st) && (st.OperationLock == nil || st.OperationLock.Operation == operation.OperationRestore):
		return snapshot.InPlaceRestoreOperation{}
	case snapshot.RehearsalRunning(st) && (st.OperationLock == nil || st.OperationLock.Operation == operation.OperationRehearsal):
		return snapshot.RehearsalOperation{}
	case st.Upgrade != nil && notStarted(st) && snapshot.Pending(st) && st.OperationLock == nil:
		return snapshot.RunOperation{}
	case st.Upgrade != nil && !(notStarted(st) && scaling.ShouldStart(s)):
		return upgradeOperation{}
	case st.Scaling != nil || scaling.ShouldStart(s):
		return scaling.Operation{}
	case len(staleNeverStarted(s)) > 0:
		return recreateOperation{}
	case snapshot.Pending(st) && st.OperationLock == nil:
		return snapshot.RunOperation{}
	case snapshot.DrillPending(st) && st.OperationLock == nil && st.Snapshots.Drills.WaitingFor == "":
		// A due drill outside every maintenance window waits (snapshot.Tend says so).
		return snapshot.DrillOperation{}
	}
	return startOperation{}
}

// quorumWatched reports whether the quorum watch at rest judges this pass: not
// while an upgrade, a restore in place or the restore of a new cluster runs (each
// watches its own quorum, and takes members down on purpose).
func quorumWatched(s *operation.Snapshot) bool {
	st := &s.Object.Status
	return st.Upgrade == nil && !snapshot.RestorePending(s.Object) && !snapshot.InPlaceRunning(st) && !quorum.RecoveryRunning(st)
}

// waiters lists, in words, what waits for the operation that holds the lock in st
// (the status a pass leaves): a due or requested snapshot, a due restore drill, an
// upgrade or rollout that has not started, a scaling the spec asks for. nil when no
// operation holds the lock. Pure.
func waiters(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus) []string {
	l := st.OperationLock
	if l == nil {
		return nil
	}
	var out []string
	if ss := st.Snapshots; snapshot.Pending(st) && l.Operation != operation.OperationSnapshot {
		if ss.Requested != "" {
			out = append(out, fmt.Sprintf("%s: requested (%s=%s)", operation.OperationSnapshot, baov1.AnnotationSnapshot, ss.Requested))
		} else {
			out = append(out, fmt.Sprintf("%s: scheduled, due since %s", operation.OperationSnapshot, ss.Due.UTC().Format(time.RFC3339)))
		}
	}
	if r := st.InPlaceRestore; snapshot.InPlaceRunning(st) && r.ID == "" {
		out = append(out, fmt.Sprintf("%s: in place, of %s (%s=%s)", operation.OperationRestore, r.Source, baov1.AnnotationRestore, r.Request))
	}
	if r := st.Rehearsal; snapshot.RehearsalRunning(st) && r.ID == "" {
		out = append(out, fmt.Sprintf("%s: of the upgrade from %s to %s, on a copy (%s=%s)", operation.OperationRehearsal, r.FromVersion, r.TargetVersion, baov1.AnnotationRehearse, r.Request))
	}
	if snapshot.DrillPending(st) && l.Operation != operation.OperationDrill {
		out = append(out, fmt.Sprintf("%s: scheduled, due since %s", operation.OperationDrill, st.Snapshots.Drills.Due.UTC().Format(time.RFC3339)))
	}
	if up := st.Upgrade; up != nil && notStarted(st) {
		lock := upgrade.LockOf(up)
		if up.Kind == baov1.OperationRollout {
			lock = operation.OperationRollout
		}
		if lock != "" && lock != l.Operation {
			out = append(out, fmt.Sprintf("%s: from %s to %s, waiting on its prechecks", lock, up.FromVersion, up.TargetVersion))
		}
	}
	if l.Operation != operation.OperationScaling && st.Scaling == nil && s.StatefulSet != nil && s.StatefulSet.Spec.Replicas != nil &&
		*s.StatefulSet.Spec.Replicas != s.Object.GetReplicas() {
		out = append(out, fmt.Sprintf("%s: from %d to %d members", operation.OperationScaling, *s.StatefulSet.Spec.Replicas, s.Object.GetReplicas()))
	}
	return out
}

// upgradeOperation is an upgrade or rollout in progress: the steps every strategy
// shares, then the one that decides (the snapshot phase, blue-green or rolling).
type upgradeOperation struct{}

func (upgradeOperation) Name() string { return "Upgrade" }

// Decide runs, in order, what guards every step of an upgrade, each of which may
// end the pass: a changed target (cancel, or defer the new one), the prechecks of an
// upgrade that has not started, the operation lock (in the same status write as the
// first intent, before any Job or change), and the quorum watch (break-glass). Then
// the phase that decides: nothing of the cluster changes, not even the pod
// template, before the pre-upgrade snapshot's receipt is recorded.
func (upgradeOperation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	up := st.Upgrade
	lock := upgrade.LockOf(up)
	if lock == "" {
		// The API's enum admits no other strategy; an object stored by a future
		// release is left alone rather than guessed at.
		return operation.Nothing()
	}
	blueGreen := up.Strategy == baov1.BlueGreenStrategy
	rt := upgrade.DecideRetarget(up, s.Cluster, c.Spec.Version, upgrade.ResolveImage(c.Spec.Image, c.Spec.Version))
	if blueGreen && rt.Cancel && st.BlueGreen != nil {
		// Green may exist: the upgrade finishes first (a rollback is the way back).
		rt = upgrade.Retarget{Message: fmt.Sprintf("spec.version changed to %s during the blue-green upgrade to %s after green was started: "+
			"the upgrade finishes to %s first, then %s is planned", trimV(c.Spec.Version), up.TargetVersion, up.TargetVersion, trimV(c.Spec.Version))}
	}
	var events []operation.Event
	switch {
	case rt.Cancel:
		return cancel(s, st, rt)
	case rt.Message != "" && up.DeferredVersion != trimV(c.Spec.Version):
		// Said once per new value, in an event and in status (the phase message
		// carries it until the upgrade ends).
		up.DeferredVersion = trimV(c.Spec.Version)
		events = append(events, operation.Warning(upgrade.EventVersionDeferred, rt.Message))
	case rt.Message == "":
		up.DeferredVersion = ""
	}
	wait := func() operation.Plan {
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: openbaoPollInterval}, Events: events}
	}
	if notStarted(st) {
		// Not started yet: the prechecks are evaluated again until they all pass.
		// Autopilot health has no watch: look again while the upgrade waits.
		var check *batchv1.Job
		var wake time.Duration
		up.Plan.Prechecks, check, wake = prechecks(s, st, up.Strategy, up.Kind, up.FromVersion, up.TargetVersion)
		if check != nil {
			// The snapshot target's check, the last precheck: it reads a bucket and
			// changes nothing, so it needs no intent of its own.
			return operation.Plan{Status: st, Job: check, Events: events,
				Action: operation.Action{Kind: operation.KindCreateJob, Job: operation.JobCheckTarget, RequeueAfter: openbaoPollInterval}}
		}
		if first := upgrade.FirstUnpassedPrecheck(up.Plan.Prechecks); first != nil {
			if first.Name == snapshot.PrecheckRehearsal && first.Result == baov1.PrecheckPending {
				// Every other precheck passed: the rehearsal's next step, on the copy
				// (nothing of this cluster changes before it passed).
				p := snapshot.Rehearse(s, st)
				p.Events = append(events, p.Events...)
				return p
			}
			up.WaitingFor = fmt.Sprintf("waits for precheck %s: %s", first.Name, first.Message)
			if (first.Name == fleet.PrecheckWindow || first.Name == fleet.PrecheckOrder) && wake > 0 {
				// Nothing else can start it before the window opens or the soak ends
				// (a change of the clusters it is ordered after wakes it sooner).
				return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: wake}, Events: events}
			}
			return wait()
		}
	}
	// The precheck above saw the lock free (or ours).
	if err := operation.Acquire(st, lock, operation.HolderUpgradeManager,
		fmt.Sprintf("%s upgrade from %s to %s", strategyWord(up.Strategy), up.FromVersion, up.TargetVersion), s.Now); err != nil {
		return wait()
	}
	if !offline.Stopping(st) {
		// An offline upgrade's stop is the plan: no quorum is the point of it,
		// bounded by its step timeout, not break-glass.
		if p, stop := watchQuorum(s, st); stop {
			return p.Say(events...)
		}
	}
	var phase operation.Operation = rolling.Operation{}
	switch {
	case snapshot.Needed(c.Spec.Upgrade.PreUpgradeSnapshot, up):
		phase = snapshot.Operation{}
	case blueGreen:
		phase = bluegreen.Operation{}
	case up.Strategy == baov1.OfflineStrategy:
		phase = offline.Operation{}
	}
	p := phase.Decide(s.With(st))
	p.Events = append(events, p.Events...)
	if p.Kind == operation.KindHold && !c.UpgradePaused() {
		// Held by a window that closed: look again as the next opens. Every
		// holdRequeue would miss a short window whose period is a multiple of it
		// (found on the rig: 8 s every minute, looked at on the 8th second each time).
		if _, wake := fleet.WindowHold(c, s.Now); wake > 0 {
			p.RequeueAfter = wake
		}
	}
	return p
}

// notStarted reports whether an upgrade has changed nothing yet (its prechecks are
// still evaluated).
func notStarted(st *baov1.OpenBaoClusterStatus) bool {
	up := st.Upgrade
	switch up.Strategy {
	case baov1.BlueGreenStrategy:
		return st.BlueGreen == nil && up.Snapshot == nil
	case baov1.OfflineStrategy:
		return up.Offline == nil && up.Snapshot == nil
	}
	return up.CurrentStep == nil && len(up.CompletedPods) == 0 && up.Snapshot == nil
}

// watchQuorum is the break-glass trigger of an upgrade of either strategy: a
// majority of voters unhealthy or missing, which no step plans. It records the
// voters while autopilot can be read; once a loss lasted QuorumLossGrace it enters
// break-glass. stop reports that the pass must do nothing else.
func watchQuorum(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus) (operation.Plan, bool) {
	up := st.Upgrade
	planned := ""
	if step := up.CurrentStep; step != nil && step.Action == baov1.StepReplaceMember {
		planned = step.Pod
	}
	var since *metav1.Time
	since, up.QuorumLostSince = up.QuorumLostSince, nil
	w := operation.WatchQuorum(s.Cluster, up.LastVoters, timeOf(since), planned, QuorumLossGrace, openbaoPollInterval)
	up.LastVoters = w.LastVoters
	if w.LostSince != nil {
		t := metav1.NewTime(*w.LostSince)
		up.QuorumLostSince = &t
	}
	switch {
	case w.BreakGlass:
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindBreakGlass, BreakGlass: baov1.BreakGlassQuorumLost, Message: w.Message}}, true
	case w.Hold:
		up.WaitingFor = w.WaitingFor
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: w.RequeueAfter}}, true
	}
	return operation.Plan{}, false
}

// cancel drops an upgrade that touched no member: first the pod template is set
// back to the image every member runs (so no pod restarts on the abandoned target),
// then, in a later pass, status.upgrade is cleared. A new spec.version is planned by
// the pass after that, like any other.
func cancel(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, rt upgrade.Retarget) operation.Plan {
	if s.StatefulSet != nil && workload.ContainerImage(&s.StatefulSet.Spec.Template.Spec) != rt.FromImage {
		st.Upgrade.WaitingFor = "cancelling: setting the pod template back to " + rt.FromImage
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindApply, Object: operation.ObjectPodTemplate, Image: rt.FromImage}}
	}
	history.End(st, baov1.OutcomeCancelled, "SpecChanged", rt.Message, s.Now)
	st.Upgrade = nil
	for _, op := range []string{operation.OperationRollingUpgrade, operation.OperationBlueGreenUpgrade, operation.OperationRollout} {
		operation.Release(st, op)
	}
	return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist},
		Events: []operation.Event{operation.Normal(upgrade.EventCancelled, rt.Message)}}
}

// recreateOperation deletes, while no operation runs, the pod of a member that
// never started on an image or template that is no longer the StatefulSet's: a
// target image that could not be pulled, left behind by a cancelled upgrade (the
// template is back on what the cluster ran). Such a member serves nothing, and its
// data was never opened on that image; with OnDelete nothing else would re-create
// it, and every later operation would wait for it to become Ready. It comes back on
// the current template. One member per pass.
type recreateOperation struct{}

func (recreateOperation) Name() string { return "RecreateNeverStarted" }

func (recreateOperation) Decide(s *operation.Snapshot) operation.Plan {
	stale := staleNeverStarted(s)
	if len(stale) == 0 {
		return operation.Nothing()
	}
	m := stale[0]
	image := workload.ContainerImage(&s.StatefulSet.Spec.Template.Spec)
	return operation.Plan{Poll: upgrade.Poll, Action: operation.Action{Kind: operation.KindDelete, Object: operation.ObjectPod, Member: m.Name},
		Events: []operation.Event{operation.Normal(upgrade.EventStep,
			fmt.Sprintf("Re-creating %s on %s: its pod never started on %s (%s)", m.Name, image, m.Image, orNothing(m.Problem)))}}
}

func staleNeverStarted(s *operation.Snapshot) []operation.Member {
	if s.StatefulSet == nil {
		return nil
	}
	return s.StaleNeverStarted(workload.ContainerImage(&s.StatefulSet.Spec.Template.Spec))
}

func orNothing(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// prechecks evaluates the prechecks of an upgrade or rollout over the snapshot.
// The snapshot target is checked last, by an executor Job in the cluster's
// namespace, and only once every other precheck passed (a cluster that waits for
// something else runs no Job); check is that Job when it has to be created.
//
// The order across clusters (UpgradeOrder, version and image changes only) and the
// maintenance window (MaintenanceWindow) come first, so that what an upgrade waits
// for names them before any member's health; wake is how long until either may
// pass (a window that opens, a soak that ends), 0 when neither waits.
func prechecks(s *operation.Snapshot, st *baov1.OpenBaoClusterStatus, strategy baov1.UpgradeStrategyType, k baov1.OperationKind, from, to string) (pcs []baov1.Precheck, check *batchv1.Job, wake time.Duration) {
	c := s.Object
	lock := upgrade.LockOfStrategy(strategy)
	if k == baov1.OperationRollout {
		lock = operation.OperationRollout
	}
	if k != baov1.OperationRollout {
		if pc, w, ok := fleet.OrderPrecheck(c, to, s.Fleet, s.Now); ok {
			pcs = append(pcs, pc)
			if pc.Result != baov1.PrecheckPassed {
				wake = w
			}
		}
	}
	if fleet.WindowApplies(k, s.RestartRequested()) {
		if pc, w, ok := fleet.WindowPrecheck(c, s.Now); ok {
			pcs = append(pcs, pc)
			if pc.Result != baov1.PrecheckPassed && (wake == 0 || w < wake) {
				wake = w
			}
		}
	}
	pcs = append(pcs, upgrade.Prechecks(upgrade.PrecheckInput{
		Cluster:    s.Cluster,
		Strategy:   strategy,
		Kind:       k,
		From:       from,
		To:         to,
		Replicas:   c.GetReplicas(),
		Policy:     upgrade.EvaluateVersion(upgrade.VersionRequest{Desired: c.Spec.Version, Image: c.Spec.Image, CurrentVersion: st.CurrentVersion}),
		Snapshot:   c.Spec.Upgrade.PreUpgradeSnapshot,
		LockHeldBy: operation.HeldByOther(st, lock),
		Copy:       c.Labels[snapshot.LabelRehearsalOf] != "",
	})...)
	if st.Upgrade != nil && k != baov1.OperationRollout && snapshot.RehearsalRequired(c, st.Upgrade) {
		// The last precheck: the rehearsal starts once every other one passed.
		withSt := *c
		withSt.Status = *st
		pcs = append(pcs, snapshot.RehearsalPrecheck(&withSt, st.Upgrade, s.Now))
	}
	first := upgrade.FirstUnpassedPrecheck(pcs)
	if first == nil || first.Name != upgrade.PrecheckSnapshotTarget || first.Result != baov1.PrecheckPending {
		return pcs, nil, wake
	}
	var prev *baov1.Precheck
	if up := st.Upgrade; up != nil && up.Plan != nil {
		if i := slices.IndexFunc(up.Plan.Prechecks, func(p baov1.Precheck) bool { return p.Name == upgrade.PrecheckSnapshotTarget }); i >= 0 {
			prev = &up.Plan.Prechecks[i]
		}
	}
	tc := snapshot.CheckTarget(c, s.Jobs, prev, s.ExecutorImage)
	tc.Precheck.Name = first.Name
	*first = tc.Precheck
	return pcs, tc.Create, wake
}

func strategyWord(s baov1.UpgradeStrategyType) string {
	switch s {
	case baov1.BlueGreenStrategy:
		return "blue-green"
	case baov1.OfflineStrategy:
		return "offline"
	}
	return "rolling"
}

func trimV(v string) string {
	if len(v) > 0 && v[0] == 'v' {
		return v[1:]
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// names of the members an operation plans, in order, among the observed members.
func onlyOff(order, off []string) []string {
	var out []string
	for _, p := range order {
		if slices.Contains(off, p) {
			out = append(out, p)
		}
	}
	return out
}
