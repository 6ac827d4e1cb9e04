package adminops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/metrics"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/statusapply"
	"github.com/baokeeper/baokeeper/internal/service/control"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/history"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/quorum"
	"github.com/baokeeper/baokeeper/internal/service/scaling"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
)

// ClientFactory returns the controller's read-only OpenBao client for one cluster.
type ClientFactory interface {
	ForCluster(c *baov1.OpenBaoCluster, caPEM []byte) (openbao.Reader, error)
}

// Reconciler reconciles operations on OpenBaoClusters.
type Reconciler struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// APIReader reads objects baokeeper does not label (a user-provided TLS Secret).
	APIReader client.Reader
	// Recorder emits events at transitions.
	Recorder events.EventRecorder
	// Clock is read once per pass.
	Clock clock.PassiveClock
	// OpenBao builds read-only OpenBao clients.
	OpenBao ClientFactory
	// HealthTimeout bounds one member's sys/health read.
	HealthTimeout time.Duration
	// ExecutorImage is the image of executor Jobs unless spec.upgrade.executor.image is set.
	ExecutorImage string
	// ControllerServiceAccount is the operator's own service account, which the
	// controller role of every cluster binds (a restore rewrites that role).
	ControllerServiceAccount types.NamespacedName
	// Metrics records upgrade progress; nil records nothing.
	Metrics metrics.Recorder
	// Rand is the source of break-glass nonces; nil means crypto/rand.
	Rand io.Reader
	// StepJobs runs each membership step (step-down, promote, demote, remove-peer)
	// as an executor Job of its own, as baokeeper did before the executor mailbox;
	// false asks each operation's serving executor through the mailbox (mailbox.go).
	StepJobs bool
	// Namespaces are the namespaces the operator watches (--watch-namespaces);
	// empty: all but ExcludedNamespaces. The order of upgrades across clusters reads
	// no other.
	Namespaces []string
	// ExcludedNamespaces are left to another installation (--exclude-namespaces).
	ExcludedNamespaces []string

	// events holds one pass's events until its status write lands; set on the
	// pass's own copy of the Reconciler.
	events *eventBuffer
	// executors is what the pass observed of its executors (nil with StepJobs);
	// set on the pass's own copy.
	executors *executorView
}

// eventBuffer holds the events of one pass until its status write landed. A pass
// whose write is discarded (a Conflict) runs again and decides the same transition
// again: emitted at once, its event would show twice (on the rig, BreakGlassAckRefused,
// "The client Service selects green", UpgradeCompleted and "left Raft" did).
type eventBuffer struct {
	pending []func()
}

func (b *eventBuffer) add(f func()) { b.pending = append(b.pending, f) }

// flush emits the held events in order.
func (b *eventBuffer) flush() {
	for _, f := range b.pending {
		f()
	}
	b.pending = nil
}

// Event reasons of this reconciler.
const (
	eventRequestRefused                 = control.EventRequestRefused
	eventRetry             baov1.Reason = "RetryRequested"
	eventRestartAccepted   baov1.Reason = "RestartRequested"
	eventSnapshotAccepted  baov1.Reason = "SnapshotRequested"
	eventRestoreAccepted   baov1.Reason = "RestoreRequested"
	eventRehearsalAccepted baov1.Reason = "RehearsalRequested"
	eventActionFailed      baov1.Reason = "ActionFailed"
	eventPromoteAccepted   baov1.Reason = "PromoteAccepted"
	eventRollbackStarted   baov1.Reason = "RollbackStarted"
)

// Reconcile runs one pass; see the package documentation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pass := *r
	pass.events = &eventBuffer{}
	return pass.reconcile(ctx, req)
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	c := &baov1.OpenBaoCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) && r.Metrics != nil {
			// Deleted: none of its series may linger on the dashboards.
			r.Metrics.Forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("OpenBaoCluster", klog.KObj(c)))
	before := c.Status.DeepCopy()
	obs, err := r.observe(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	var stuck *operation.Snapshot
	defer func() {
		// The conditions follow the status this pass leaves, so that break-glass
		// entered, or a rollback completed, shows in the same write.
		history.Track(before, &c.Status, c.HistoryLimitOf(), obs.Now)
		setConditions(c, obs.Now)
		if _, err := statusapply.Apply(ctx, r.Client, statusapply.Upgrade(), c, before); err != nil {
			if apierrors.IsConflict(err) && reterr == nil {
				// The pass decided on a read that a later write overtook: nothing of it
				// landed. The overtaking write is usually the workload reconciler's
				// (member status), which this controller's event filter does not pass
				// on, so look again soon: the cache has that write within milliseconds.
				ctrl.LoggerFrom(ctx).V(1).Info("Discarding the pass: its read was overtaken", "error", err.Error())
				res = ctrl.Result{RequeueAfter: conflictRequeue}
				return
			}
			reterr = errors.Join(reterr, err)
			return
		}
		r.events.flush()
		r.recordState(c, obs, before)
		if stuck != nil {
			reterr = errors.Join(reterr, r.deleteStuckJobs(ctx, c, stuck))
		}
		reterr = errors.Join(reterr, r.dropRefused(ctx, c, r.executors))
		if err := r.tendExecutors(ctx, c, r.executors); err != nil {
			if !apierrors.IsConflict(err) {
				r.eventNow(c, corev1.EventTypeWarning, eventActionFailed, fmt.Sprintf("could not tend the executors of %s: %v; baokeeper retries with backoff", c.Name, err))
			}
			reterr = errors.Join(reterr, err)
		}
	}()

	r.handleRequests(c, obs)
	history.Observe(&c.Status, obs.Term)
	c.Status.Window = fleet.WindowStatus(c, obs.Now)
	seedCurrentVersion(c, obs)
	snapshot.Tend(c, obs.Now)
	snap, err := r.observeRest(ctx, c, obs)
	if err != nil {
		return ctrl.Result{}, err
	}
	stuck = snap
	r.reportRefused(c, obs.Now)
	// What the quorum watch remembers: the voters of a readable autopilot, and since
	// when a majority of them is silent at rest.
	verdict := quorum.Verdict{}
	if quorumWatched(snap) {
		verdict = quorum.Watch(c.Status.Quorum, obs, snap.VolumeUIDs)
	}
	c.Status.Quorum = quorum.Record(c.Status.Quorum, obs, snap.VolumeUIDs, verdict)
	op := choose(snap)
	if op == nil {
		return ctrl.Result{RequeueAfter: snapshot.Wake(&c.Status, obs.Now)}, nil
	}
	plan := op.Decide(snap)
	ctrl.LoggerFrom(ctx).V(1).Info("Decided", "operation", op.Name(), "action", string(plan.Kind), "waitingFor", plan.WaitingFor)
	res, err = r.execute(ctx, c, snap, plan)
	if err != nil && !apierrors.IsConflict(err) {
		// Said where a person looks (kubectl describe, kubectl bao timeline), not only
		// in the operator's log: a step that cannot be taken (a permission the
		// operator lacks, a quota, an admission webhook) is retried with backoff.
		r.event(c, corev1.EventTypeWarning, eventActionFailed, fmt.Sprintf("%s could not %s: %v; baokeeper retries with backoff",
			op.Name(), actionWords(plan), err))
	}
	if l := c.Status.OperationLock; l != nil {
		l.Waiting = waiters(snap, &c.Status)
	}
	if _, isScaling := op.(scaling.Operation); !isScaling && err == nil {
		// A scaling the spec asks for but that cannot be decided yet, or a non-voter
		// that becomes stable: nothing else wakes this loop when it is time.
		if wake := scaling.Wake(snap); wake > 0 && (res.RequeueAfter == 0 || wake < res.RequeueAfter) {
			res.RequeueAfter = wake
		}
	}
	// The next scheduled snapshot: nothing else wakes an idle cluster then.
	if wake := snapshot.Wake(&c.Status, obs.Now); err == nil && wake > 0 && (res.RequeueAfter == 0 || wake < res.RequeueAfter) {
		res.RequeueAfter = wake
	}
	return res, err
}

// actionWords names a plan's action for an event: "create Job bao-restore-...-1",
// "delete pod bao-1", "apply PodTemplate".
func actionWords(p operation.Plan) string {
	switch {
	case p.Kind == operation.KindCreateJob && p.Job != nil:
		return "create Job " + p.Job.Name
	case p.Member != "":
		return fmt.Sprintf("%s %s %s", strings.ToLower(string(p.Kind)), p.Object, p.Member)
	case p.Object != "":
		return fmt.Sprintf("%s %s", strings.ToLower(string(p.Kind)), p.Object)
	}
	return strings.ToLower(string(p.Kind))
}

// recordState exports what this pass changed, once its status is written: the
// upgrade's transitions (operation.RecordUpgrade) and the Raft view.
func (r *Reconciler) recordState(c *baov1.OpenBaoCluster, obs *operation.Cluster, before *baov1.OpenBaoClusterStatus) {
	if r.Metrics == nil {
		return
	}
	operation.RecordUpgrade(r.Metrics, c.Namespace, c.Name, string(c.GetStrategy()), before, &c.Status, obs.Now)
	r.Metrics.BreakGlass(c.Namespace, c.Name, c.Status.BreakGlass != nil && c.Status.BreakGlass.Active)
	r.Metrics.QuorumLost(c.Namespace, c.Name, c.Status.Quorum != nil && c.Status.Quorum.LostSince != nil)
	if obs.AutopilotKnown {
		voters := 0
		for _, m := range obs.Members {
			if m.Voter {
				voters++
			}
		}
		r.Metrics.Raft(c.Namespace, c.Name, obs.FailureTolerance, voters)
	}
}

// handleRequests acts on new control annotations. Without an upgrade machine yet,
// retry clears a recorded failure; the others are refused with an event because they
// do not fit the current state.
func (r *Reconciler) handleRequests(c *baov1.OpenBaoCluster, obs *operation.Cluster) {
	now := obs.Now
	reqs, errs := upgrade.PendingRequests(c.Annotations, c.Status.Requests)
	for _, e := range errs {
		r.event(c, corev1.EventTypeWarning, eventRequestRefused, e.Error()+"; nothing was done, and this value is not reported again")
		upgrade.MarkInvalidHandled(&c.Status.Requests, e)
	}
	for _, req := range reqs {
		v := control.Judge(req.Kind, req.Value, c, obs)
		if !v.Accept {
			// What the operator refuses, kubectl bao refuses with the same words
			// (control.Judge, and its agreement test).
			r.event(c, corev1.EventTypeWarning, v.Event, v.Message)
			upgrade.MarkHandled(&c.Status.Requests, req)
			continue
		}
		bg := c.Status.BlueGreen
		switch req.Kind {
		case upgrade.RequestPromote:
			r.event(c, corev1.EventTypeNormal, eventPromoteAccepted, fmt.Sprintf("Promoting green %s (baokeeper.dev/promote=%s)", bg.Green.StatefulSet, req.Value))
			bg.Promotion = baov1.PromotionRequested
		case upgrade.RequestRollback:
			r.startRollback(c, obs, req.Value)
		case upgrade.RequestBreakGlassAck:
			r.acknowledgeBreakGlass(c, now)
		case upgrade.RequestRecoverQuorum:
			// The request carries the nonce: accepting it acknowledges break-glass, and
			// the recovery is the one operation of the passes that follow.
			r.event(c, corev1.EventTypeNormal, quorum.EventQuorumRecoveryRequested, v.Message)
			r.acknowledgeBreakGlass(c, now)
			c.Status.QuorumRecovery = quorum.AcceptRecovery(c, obs, req.Value)
		case upgrade.RequestRestart:
			t := metav1.NewTime(now)
			c.Status.Restart = &baov1.RestartRecord{Token: req.Value, RequestedAt: &t}
			r.event(c, corev1.EventTypeNormal, eventRestartAccepted, v.Message)
		case upgrade.RequestSnapshot:
			snapshot.Request(&c.Status, req.Value)
			r.event(c, corev1.EventTypeNormal, eventSnapshotAccepted, v.Message)
		case upgrade.RequestRestore:
			snapshot.RequestInPlace(&c.Status, req.Value, now)
			r.event(c, corev1.EventTypeNormal, eventRestoreAccepted, v.Message)
		case upgrade.RequestRehearse:
			snapshot.RequestRehearsal(c, &c.Status, req.Value)
			r.event(c, corev1.EventTypeNormal, eventRehearsalAccepted, v.Message)
		case upgrade.RequestRetry:
			switch v.Retry {
			case control.RetryRollback:
				lr := c.Status.LastRollback
				r.event(c, corev1.EventTypeNormal, eventRetry, fmt.Sprintf("Allowing the upgrade to %s again after its rollback (%s)", lr.TargetVersion, req.Value))
				lr.Retry = req.Value
			case control.RetryUpgrade:
				r.event(c, corev1.EventTypeNormal, eventRetry, fmt.Sprintf("Retrying the upgrade after %s (%s)", c.Status.Upgrade.Failure.Reason, req.Value))
				upgrade.Retry(c.Status.Upgrade, now)
				if bg != nil {
					bluegreen.Retry(bg, now)
				}
			case control.RetryScaling:
				r.event(c, corev1.EventTypeNormal, eventRetry, fmt.Sprintf("Retrying the scaling after %s (%s)", c.Status.Scaling.Failure.Reason, req.Value))
				retryScaling(c.Status.Scaling, now)
			case control.RetryRehearsal:
				r.event(c, corev1.EventTypeNormal, eventRetry, fmt.Sprintf("Rehearsing the upgrade to %s again after a failed rehearsal (%s)", c.Status.Upgrade.TargetVersion, req.Value))
				c.Status.Upgrade.Rehearsal = nil
			}
		}
		upgrade.MarkHandled(&c.Status.Requests, req)
	}
}

// rolledBackMessage says what was rolled back, why, and what to do while spec.version
// still names the rolled-back target.
func rolledBackMessage(c *baov1.OpenBaoCluster, lr *baov1.RollbackRecord) string {
	msg := fmt.Sprintf("The upgrade from %s to %s was rolled back: %s", lr.FromVersion, lr.TargetVersion, lr.Reason)
	if lr.Retry == "" && upgrade.SameVersion(trimV(c.Spec.Version), lr.TargetVersion) {
		msg += fmt.Sprintf(". spec.version still says %s and nothing starts on its own: set spec.version to %s to settle, "+
			"or set %s to a new value to try %s again", lr.TargetVersion, lr.FromVersion, baov1.AnnotationRetry, lr.TargetVersion)
	}
	return msg
}

// startRollback turns a blue-green upgrade before the point of no return (failed or
// not) into its rollback; control.Judge accepted the request.
func (r *Reconciler) startRollback(c *baov1.OpenBaoCluster, obs *operation.Cluster, value string) {
	bg := c.Status.BlueGreen
	why := operation.RollbackRequested + baov1.AnnotationRollback + "=" + value
	if up := c.Status.Upgrade; up != nil && up.Failure != nil {
		why += fmt.Sprintf(" after %s: %s", up.Failure.Reason, up.Failure.Message)
		up.Failure = nil
	}
	bluegreen.StartRollback(bg, why, obs.Now)
	r.event(c, corev1.EventTypeNormal, eventRollbackStarted, fmt.Sprintf("Rolling back the upgrade to %s: %s", bg.Green.Version, why))
}

// conflictRequeue is how soon a pass whose status write met a Conflict runs again.
// Measured on the rig: a 1 s requeue here cost every second member of a rolling
// upgrade about a second (docs/design/leader-handoff.md).
const conflictRequeue = 100 * time.Millisecond

// event announces a transition this pass decided; it is emitted once the pass's
// status write landed, so a discarded pass announces nothing.
func (r *Reconciler) event(c *baov1.OpenBaoCluster, typ string, reason baov1.Reason, msg string) {
	if r.Recorder == nil {
		return
	}
	if r.events == nil {
		r.Recorder.Eventf(c, nil, typ, string(reason), "Request", "%s", msg)
		return
	}
	rec := r.Recorder
	r.events.add(func() { rec.Eventf(c, nil, typ, string(reason), "Request", "%s", msg) })
}

// emit announces an operation's event once the pass's status write landed.
func (r *Reconciler) emit(c *baov1.OpenBaoCluster, ev operation.Event) {
	r.event(c, eventType(ev), ev.Reason, ev.Message)
}

// emitNow announces an operation's event at once (see eventNow).
func (r *Reconciler) emitNow(c *baov1.OpenBaoCluster, ev operation.Event) {
	r.eventNow(c, eventType(ev), ev.Reason, ev.Message)
}

func eventType(ev operation.Event) string {
	if ev.Warning {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// eventNow announces an action that happened in the world exactly once, whatever
// becomes of the pass's status write: the creation of an executor Job (a pass that
// runs again finds the Job and creates nothing).
func (r *Reconciler) eventNow(c *baov1.OpenBaoCluster, typ string, reason baov1.Reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(c, nil, typ, string(reason), "Request", "%s", msg)
	}
}

// seedCurrentVersion sets status.currentVersion the first time every member is Ready
// and reports the same version. Afterwards only a completed upgrade changes it.
func seedCurrentVersion(c *baov1.OpenBaoCluster, obs *operation.Cluster) {
	members := obs.Members
	if n := int(c.InitialReplicas()); c.Spec.Bootstrap != nil && len(members) > n {
		// A cluster that starts from a snapshot starts with one member; the others
		// observed (spec.replicas) join after the restore, through the scaling that
		// this version allows.
		members = members[:n]
	}
	if c.Status.CurrentVersion != "" || c.Status.Upgrade != nil || int32(len(members)) != c.InitialReplicas() {
		return
	}
	v := ""
	for _, m := range members {
		if !m.PodReady || m.Version == "" || (v != "" && !upgrade.SameVersion(m.Version, v)) {
			return
		}
		v = m.Version
	}
	c.Status.CurrentVersion = v
}

func setConditions(c *baov1.OpenBaoCluster, now time.Time) {
	set := func(t baov1.ConditionType, ok bool, reason baov1.Reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: string(t), Status: status, Reason: string(reason),
			Message: msg, ObservedGeneration: c.Generation, LastTransitionTime: metav1.NewTime(now)})
	}
	switch {
	case c.Spec.Upgrade.Paused:
		set(baov1.ConditionUpgradePaused, true, baov1.ReasonPausedBySpec, fmt.Sprintf("paused by %s: upgrades hold at the next safe point", c.PausedBy()))
	case c.PausedByAnnotation():
		set(baov1.ConditionUpgradePaused, true, baov1.ReasonPausedByAnnotation,
			fmt.Sprintf("paused by the %s annotation: upgrades hold at the next safe point; remove it to resume (kubectl bao resume --annotation)", baov1.AnnotationPause))
	default:
		set(baov1.ConditionUpgradePaused, false, baov1.ReasonNotPaused, "spec.upgrade.paused is false and no "+baov1.AnnotationPause+" annotation is set")
	}
	if c.Status.BreakGlass != nil && c.Status.BreakGlass.Active {
		set(baov1.ConditionBreakGlass, true, baov1.Reason(c.Status.BreakGlass.Reason), c.Status.BreakGlass.Message)
	} else {
		set(baov1.ConditionBreakGlass, false, baov1.ReasonNotActive, "Automation is running")
	}
	ok, reason, msg := refusedCondition(c, now)
	set(baov1.ConditionInputRefused, ok, reason, msg)
	if c.Spec.Bootstrap != nil {
		r := c.Status.Restore
		switch {
		case r == nil:
			set(baov1.ConditionRestored, false, baov1.ReasonRestoring, "The restore of spec.bootstrap.fromSnapshot starts once the first member initialized")
		case r.Step == baov1.RestoreStepDone:
			set(baov1.ConditionRestored, true, baov1.ReasonSnapshotRestored, fmt.Sprintf("Restored %s (Raft index %d)", r.Source, r.RaftIndex))
		case r.Step == baov1.RestoreStepFailed:
			set(baov1.ConditionRestored, false, baov1.ReasonRestoreFailed, r.Failure)
		default:
			set(baov1.ConditionRestored, false, baov1.ReasonRestoring, fmt.Sprintf("Restoring %s: step %s, %s", r.Source, r.Step, r.WaitingFor))
		}
	}
	if r := c.Status.InPlaceRestore; r != nil && c.Restored() {
		switch r.Step {
		case baov1.RestoreStepDone:
			set(baov1.ConditionRestored, true, baov1.ReasonSnapshotRestored, fmt.Sprintf("Restored %s in place (applied at Raft index %d)", r.Source, r.AppliedIndex))
		case baov1.RestoreStepFailed:
			set(baov1.ConditionRestored, false, baov1.ReasonRestoreFailed, r.Failure)
		default:
			set(baov1.ConditionRestored, false, baov1.ReasonRestoring, fmt.Sprintf("Restoring %s in place: step %s, %s", r.Source, r.Step, r.WaitingFor))
		}
	}
	if lr := c.Status.LastRollback; lr != nil {
		set(baov1.ConditionRolledBack, true, baov1.ReasonRolledBack, rolledBackMessage(c, lr))
	} else {
		set(baov1.ConditionRolledBack, false, baov1.ReasonNoRollback, "No upgrade was rolled back since the last one started")
	}
}

// retryScaling clears a scaling failure and restarts the step's clock and budget of
// Job attempts, like retry does for an upgrade.
func retryScaling(s *baov1.ScalingStatus, now time.Time) {
	s.Failure = nil
	if st := s.CurrentStep; st != nil {
		t := metav1.NewTime(now)
		st.StartedAt, st.WaitingFor = &t, ""
		operation.GrantAttempts(st)
	}
	s.WaitingFor = "retrying"
}
