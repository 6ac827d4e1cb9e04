package adminops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/metrics"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/statusapply"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/scaling"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
	"github.com/baokeeper/baokeeper/internal/service/workload"
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
	// Metrics records upgrade progress; nil records nothing.
	Metrics metrics.Recorder
	// Rand is the source of break-glass nonces; nil means crypto/rand.
	Rand io.Reader

	// events holds one pass's events until its status write lands; set on the
	// pass's own copy of the Reconciler.
	events *eventBuffer
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
	eventRequestRefused  baov1.Reason = "RequestRefused"
	eventRetry           baov1.Reason = "RetryRequested"
	eventRestartAccepted baov1.Reason = "RestartRequested"
	eventPromoteAccepted baov1.Reason = "PromoteAccepted"
	eventRollbackStarted baov1.Reason = "RollbackStarted"
	eventRollbackRefused baov1.Reason = "RollbackRefused"
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
	}()

	r.handleRequests(c, obs)
	seedCurrentVersion(c, obs)
	snap, err := r.observeRest(ctx, c, obs)
	if err != nil {
		return ctrl.Result{}, err
	}
	stuck = snap
	op := choose(snap)
	if op == nil {
		return ctrl.Result{}, nil
	}
	plan := op.Decide(snap)
	ctrl.LoggerFrom(ctx).V(1).Info("Decided", "operation", op.Name(), "action", string(plan.Kind), "waitingFor", plan.WaitingFor)
	res, err = r.execute(ctx, c, snap, plan)
	if _, isScaling := op.(scaling.Operation); !isScaling && err == nil {
		// A scaling the spec asks for but that cannot be decided yet, or a non-voter
		// that becomes stable: nothing else wakes this loop when it is time.
		if wake := scaling.Wake(snap); wake > 0 && (res.RequeueAfter == 0 || wake < res.RequeueAfter) {
			res.RequeueAfter = wake
		}
	}
	return res, err
}

// recordState exports what this pass changed, once its status is written: the
// upgrade's transitions (operation.RecordUpgrade) and the Raft view.
func (r *Reconciler) recordState(c *baov1.OpenBaoCluster, obs *operation.Cluster, before *baov1.OpenBaoClusterStatus) {
	if r.Metrics == nil {
		return
	}
	operation.RecordUpgrade(r.Metrics, c.Namespace, c.Name, string(c.GetStrategy()), before, &c.Status, obs.Now)
	r.Metrics.BreakGlass(c.Namespace, c.Name, c.Status.BreakGlass != nil && c.Status.BreakGlass.Active)
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
		bg := c.Status.BlueGreen
		switch {
		case req.Kind == upgrade.RequestPromote && bluegreen.AcceptsPromote(bg):
			r.event(c, corev1.EventTypeNormal, eventPromoteAccepted, fmt.Sprintf("Promoting green %s (baokeeper.dev/promote=%s)", bg.Green.StatefulSet, req.Value))
			bg.Promotion = baov1.PromotionRequested
		case req.Kind == upgrade.RequestRollback:
			r.handleRollback(c, obs, req.Value)
		case req.Kind == upgrade.RequestBreakGlassAck:
			r.handleBreakGlassAck(c, now, req.Value)
		case req.Kind == upgrade.RequestRetry && c.Status.Upgrade == nil && c.Status.LastRollback != nil && c.Status.LastRollback.Retry == "":
			lr := c.Status.LastRollback
			r.event(c, corev1.EventTypeNormal, eventRetry, fmt.Sprintf("Allowing the upgrade to %s again after its rollback (%s)", lr.TargetVersion, req.Value))
			lr.Retry = req.Value
		case req.Kind == upgrade.RequestRetry && c.Status.Upgrade != nil && c.Status.Upgrade.Failure != nil:
			r.event(c, corev1.EventTypeNormal, eventRetry, fmt.Sprintf("Retrying the upgrade after %s (%s)", c.Status.Upgrade.Failure.Reason, req.Value))
			upgrade.Retry(c.Status.Upgrade, now)
			if bg != nil {
				bluegreen.Retry(bg, now)
			}
		case req.Kind == upgrade.RequestRestart:
			r.handleRestart(c, now, req.Value)
		case req.Kind == upgrade.RequestRetry && c.Status.Scaling != nil && c.Status.Scaling.Failure != nil:
			r.event(c, corev1.EventTypeNormal, eventRetry, fmt.Sprintf("Retrying the scaling after %s (%s)", c.Status.Scaling.Failure.Reason, req.Value))
			retryScaling(c.Status.Scaling, now)
		default:
			r.event(c, corev1.EventTypeWarning, eventRequestRefused, upgrade.RequestRefusal(req, c))
		}
		upgrade.MarkHandled(&c.Status.Requests, req)
	}
}

// handleRestart acts on a new baokeeper.dev/restart value. Accepted, its token goes
// to status.restart, which the workload loop sets on the member pod template: the
// rollout then restarts every member, followers first, the leader last. During an
// upgrade or a scaling it is queued: the template changes now, members replaced by
// the operation in progress come back on it, and the rollout restarts the rest once
// the operation ends. While break-glass is active it is refused: nothing of the
// cluster changes until a person acknowledged.
func (r *Reconciler) handleRestart(c *baov1.OpenBaoCluster, now time.Time, value string) {
	d := upgrade.DecideRestart(c, value)
	if !d.Accept {
		r.event(c, corev1.EventTypeWarning, eventRequestRefused, d.Message)
		return
	}
	t := metav1.NewTime(now)
	c.Status.Restart = &baov1.RestartRecord{Token: value, RequestedAt: &t}
	r.event(c, corev1.EventTypeNormal, eventRestartAccepted, d.Message)
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

// handleRollback acts on a new baokeeper.dev/rollback value: a blue-green upgrade
// before the point of no return (failed or not) turns into its rollback; anything
// else is refused with an event that says why, and nothing changes.
func (r *Reconciler) handleRollback(c *baov1.OpenBaoCluster, obs *operation.Cluster, value string) {
	bg := c.Status.BlueGreen
	if bg == nil {
		// No blue-green upgrade: the words of a rolling upgrade, or of none.
		r.event(c, corev1.EventTypeWarning, eventRollbackRefused, upgrade.RequestRefusal(upgrade.Request{Kind: upgrade.RequestRollback, Value: value}, c))
		return
	}
	v := bluegreen.AcceptsRollback(bg, obs)
	if !v.OK {
		msg := fmt.Sprintf("baokeeper.dev/rollback=%s refused: %s", value, v.Why)
		if v.PastPointOfNoReturn {
			if s := c.Status.LastSnapshot; s != nil {
				msg += fmt.Sprintf(" (the snapshot is %s, of %s on %s, Raft index %d)", s.Location, s.FromMember, s.Version, s.RaftIndex)
			} else {
				msg += " (no pre-upgrade snapshot was taken: spec.upgrade.preUpgradeSnapshot.policy is Never)"
			}
		}
		r.event(c, corev1.EventTypeWarning, eventRollbackRefused, msg+"; nothing was done")
		return
	}
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
	if c.Status.CurrentVersion != "" || c.Status.Upgrade != nil || int32(len(obs.Members)) != c.GetReplicas() {
		return
	}
	v := ""
	for _, m := range obs.Members {
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
	if c.Spec.Upgrade.Paused {
		set(baov1.ConditionUpgradePaused, true, baov1.ReasonPausedBySpec, "spec.upgrade.paused is true: upgrades hold at the next safe point")
	} else {
		set(baov1.ConditionUpgradePaused, false, baov1.ReasonNotPaused, "spec.upgrade.paused is false")
	}
	if c.Status.BreakGlass != nil && c.Status.BreakGlass.Active {
		set(baov1.ConditionBreakGlass, true, baov1.Reason(c.Status.BreakGlass.Reason), c.Status.BreakGlass.Message)
	} else {
		set(baov1.ConditionBreakGlass, false, baov1.ReasonNotActive, "Automation is running")
	}
	if lr := c.Status.LastRollback; lr != nil {
		set(baov1.ConditionRolledBack, true, baov1.ReasonRolledBack, rolledBackMessage(c, lr))
	} else {
		set(baov1.ConditionRolledBack, false, baov1.ReasonNoRollback, "No upgrade was rolled back since the last one started")
	}
}

// observe reads the member pods and each Ready member's health once. During a
// blue-green upgrade Members are blue's (status.blueGreen.blue) and Green green's,
// whichever serves; otherwise Members are the serving StatefulSet's.
func (r *Reconciler) observe(ctx context.Context, c *baov1.OpenBaoCluster) (*operation.Cluster, error) {
	obs := &operation.Cluster{Now: r.Clock.Now()}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(workload.MemberLabels(c))); err != nil {
		return nil, fmt.Errorf("failed to list pods of %s/%s: %w", c.Namespace, c.Name, err)
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	members, replicas := c.ServingStatefulSet(), c.GetReplicas()
	bg := c.Status.BlueGreen
	if bg != nil {
		members, replicas = bg.Blue.StatefulSet, bg.Blue.Replicas
	}
	var err error
	if obs.StatefulSet, err = r.getStatefulSet(ctx, c, members); err != nil {
		return nil, err
	}
	h := &healthReader{r: r, c: c}
	obs.Members, err = h.members(ctx, workload.NamesFor(c).ForStatefulSet(members), max(replicas, obs.Replicas()), byName)
	if err != nil {
		return nil, err
	}
	if bg != nil && bg.Green.StatefulSet != "" {
		if obs.GreenStatefulSet, err = r.getStatefulSet(ctx, c, bg.Green.StatefulSet); err != nil {
			return nil, err
		}
		if obs.GreenStatefulSet != nil {
			if obs.Green, err = h.members(ctx, workload.NamesFor(c).ForStatefulSet(bg.Green.StatefulSet), bg.Green.Replicas, byName); err != nil {
				return nil, err
			}
		}
	}
	if h.bao != nil {
		r.observeAutopilot(ctx, h.bao, obs)
	}
	return obs, nil
}

func (r *Reconciler) getStatefulSet(ctx context.Context, c *baov1.OpenBaoCluster, name string) (*appsv1.StatefulSet, error) {
	sts := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, sts); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get StatefulSet %s/%s: %w", c.Namespace, name, err)
	}
	return sts, nil
}

// healthReader reads each Ready member's sys/health with one OpenBao client, built
// on first use.
type healthReader struct {
	r   *Reconciler
	c   *baov1.OpenBaoCluster
	bao openbao.Reader
}

// members observes ordinals 0 to n-1 of one StatefulSet.
func (h *healthReader) members(ctx context.Context, n workload.Names, count int32, byName map[string]*corev1.Pod) ([]operation.Member, error) {
	var out []operation.Member
	for i := range count {
		name := n.Member(i)
		m := operation.Member{Name: name, Ordinal: int(i)}
		if pod := byName[name]; pod != nil {
			m.PodExists = true
			m.PodTerminating = !pod.DeletionTimestamp.IsZero()
			m.PodReady = podReady(pod)
			m.Image = workload.ContainerImage(&pod.Spec)
			m.Revision = pod.Labels[appsv1.ControllerRevisionHashLabelKey]
			m.Template = templateAnnotations(pod.Annotations)
			m.Problem = podProblem(pod)
			m.NeverStarted = neverStarted(pod)
		}
		if m.PodReady {
			if h.bao == nil {
				var err error
				if h.bao, err = h.r.client(ctx, h.c); err != nil {
					return nil, err
				}
			}
			hctx, cancel := context.WithTimeout(ctx, h.r.healthTimeout())
			st, err := h.bao.Health(hctx, fmt.Sprintf("https://%s:%d", n.MemberHost(i, h.c.Namespace), workload.APIPort))
			cancel()
			if err == nil {
				m.Initialized, m.Sealed, m.Version = st.Initialized, st.Sealed, st.Version
			} else {
				ctrl.LoggerFrom(ctx).V(4).Info("Reading member health failed", "Pod", name, "reason", err.Error())
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// podProblem is what a pod that does not run says about it: the scheduler's reason
// and message, or the first waiting container's.
func podProblem(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			if w.Message == "" {
				return fmt.Sprintf("%s (container %s)", w.Reason, cs.Name)
			}
			return fmt.Sprintf("%s (container %s): %s", w.Reason, cs.Name, w.Message)
		}
	}
	return ""
}

// neverStarted reports whether a pod's OpenBao container never ran: never scheduled,
// or its image never pulled, with no restart and no earlier termination.
func neverStarted(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != workload.ContainerName {
			continue
		}
		w := cs.State.Waiting
		return w != nil && upgrade.NeverStartedReason(w.Reason, cs.RestartCount, cs.LastTerminationState.Terminated != nil)
	}
	return false
}

// templateAnnotations keeps the baokeeper.dev annotations of a member's pod, which
// say which of them changed when the pod is off the current template.
func templateAnnotations(a map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{baov1.TemplateAnnotationConfig, baov1.TemplateAnnotationCertificate, baov1.TemplateAnnotationRestart} {
		if v, ok := a[k]; ok {
			out[k] = v
		}
	}
	return out
}

// observeAutopilot fills the Raft view of each member from autopilot state. Right
// after an election autopilot briefly lists other servers as "left" with index 0;
// such a read is marked untrustworthy (invariant 9) and nothing disruptive follows it.
func (r *Reconciler) observeAutopilot(ctx context.Context, bao openbao.Reader, obs *operation.Cluster) {
	actx, cancel := context.WithTimeout(ctx, r.healthTimeout())
	defer cancel()
	st, err := bao.AutopilotState(actx)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Reading autopilot state failed", "reason", err.Error())
		return
	}
	obs.AutopilotKnown, obs.AutopilotHealthy, obs.FailureTolerance, obs.Leader = true, st.Healthy, st.FailureTolerance, st.Leader
	if openbao.JustAfterElection(st) {
		obs.AutopilotKnown = false
	}
	if l, ok := st.Servers[st.Leader]; ok {
		obs.LeaderIndex = l.LastIndex
	}
	fill := func(m *operation.Member, s openbao.AutopilotServer) {
		m.InRaft = true
		m.Voter = s.Status == openbao.AutopilotStatusVoter || s.Status == openbao.AutopilotStatusLeader
		m.Healthy = s.Healthy
		m.LastIndex = s.LastIndex
		m.StableSince = s.StableSince
	}
	for _, set := range [][]operation.Member{obs.Members, obs.Green} {
		for i := range set {
			if s, ok := st.Servers[set[i].Name]; ok {
				fill(&set[i], s)
			}
		}
	}
	for id, s := range st.Servers {
		if obs.Member(id) == nil {
			m := operation.Member{Name: id, Ordinal: -1}
			fill(&m, s)
			obs.Extra = append(obs.Extra, m)
		}
	}
	slices.SortFunc(obs.Extra, func(a, b operation.Member) int { return strings.Compare(a.Name, b.Name) })
}

func (r *Reconciler) client(ctx context.Context, c *baov1.OpenBaoCluster) (openbao.Reader, error) {
	name, rd := c.Spec.TLS.SecretName, client.Reader(r.APIReader)
	if name == "" {
		name, rd = workload.NamesFor(c).TLSSecret(), r.Client
	}
	s := &corev1.Secret{}
	if err := rd.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("failed to read the cluster CA from Secret %s/%s: %w", c.Namespace, name, err)
	}
	return r.OpenBao.ForCluster(c, s.Data[workload.CACertKey])
}

func (r *Reconciler) healthTimeout() time.Duration {
	if r.HealthTimeout > 0 {
		return r.HealthTimeout
	}
	return 5 * time.Second
}

func podReady(p *corev1.Pod) bool {
	if !p.DeletionTimestamp.IsZero() {
		return false
	}
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
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

// observeRest completes the pass's one observation (observe read the members, the
// StatefulSets and the Raft view): the executor Jobs of the cluster with what their
// pods say, the volume claims, the client Service's selection and, only when this
// pass evaluates the prechecks of an upgrade that takes a snapshot, whether the
// snapshot target is reachable. Nothing is read after this: every decision of the
// pass is made over the snapshot.
func (r *Reconciler) observeRest(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (*operation.Snapshot, error) {
	s := &operation.Snapshot{Cluster: obs, Object: c, ExecutorImage: r.executorImage(c), Jobs: map[string]operation.ObservedJob{}}
	own := client.MatchingLabels{workload.LabelCluster: c.Name}
	jobs := &batchv1.JobList{}
	if err := r.Client.List(ctx, jobs, client.InNamespace(c.Namespace), own); err != nil {
		return nil, fmt.Errorf("failed to list the executor Jobs of %s/%s: %w", c.Namespace, c.Name, err)
	}
	if len(jobs.Items) > 0 {
		pods := &corev1.PodList{}
		if err := r.Client.List(ctx, pods, client.InNamespace(c.Namespace), own, client.HasLabels{batchv1.JobNameLabel}); err != nil {
			return nil, fmt.Errorf("failed to list the executor pods of %s/%s: %w", c.Namespace, c.Name, err)
		}
		byJob := map[string][]*corev1.Pod{}
		for i := range pods.Items {
			p := &pods.Items[i]
			byJob[p.Labels[batchv1.JobNameLabel]] = append(byJob[p.Labels[batchv1.JobNameLabel]], p)
		}
		for i := range jobs.Items {
			s.Jobs[jobs.Items[i].Name] = observeJob(&jobs.Items[i], byJob[jobs.Items[i].Name], obs.Now)
		}
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, pvcs, client.InNamespace(c.Namespace), own); err != nil {
		return nil, fmt.Errorf("failed to list the volume claims of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for _, pvc := range pvcs.Items {
		if pvc.DeletionTimestamp.IsZero() {
			s.Volumes = append(s.Volumes, pvc.Name)
		}
	}
	slices.Sort(s.Volumes)
	svc := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).ClientService()}, svc)
	switch {
	case err == nil:
		s.ClientSelects = svc.Spec.Selector[workload.LabelInstance]
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to get the client Service of %s/%s: %w", c.Namespace, c.Name, err)
	}
	if needsSnapshotTarget(s) {
		s.SnapshotTarget = r.snapshotTargetErr(ctx, c)
	}
	return s, nil
}

// observeJob is one executor Job as read, with what its pods say: why a running
// Job's pod cannot start (an image that cannot be pulled or run, a Secret that is
// gone, after executorjob.PodStartGrace), and the termination message of a finished
// one.
func observeJob(job *batchv1.Job, pods []*corev1.Pod, now time.Time) operation.ObservedJob {
	phase, finished, msg := executorjob.JobPhaseOf(job)
	o := operation.ObservedJob{Job: operation.Job{Phase: phase, FinishedAt: finished, Message: msg}, Operation: job.Labels[executorjob.LabelOperation]}
	for _, p := range pods {
		switch {
		case phase == operation.JobRunning && job.DeletionTimestamp == nil:
			if stuck := executorjob.StuckPod(p, now, executorjob.PodStartGrace); stuck != "" {
				o.Stuck = stuck
			}
		case phase == operation.JobSucceeded || phase == operation.JobFailed:
			if m := executorjob.TerminationMessage(p); m != "" {
				o.Termination = m
			}
		}
	}
	return o
}

// snapshotTargetTimeout bounds the reachability precheck of the snapshot target.
const snapshotTargetTimeout = 5 * time.Second

// snapshotTargetErr checks, before an upgrade starts, that the snapshot target is
// reachable with its credentials.
func (r *Reconciler) snapshotTargetErr(ctx context.Context, c *baov1.OpenBaoCluster) error {
	spec := c.Spec.Upgrade.PreUpgradeSnapshot
	s := &corev1.Secret{}
	ref := client.ObjectKey{Namespace: c.Namespace, Name: spec.S3.CredentialsSecretRef.Name}
	if err := r.APIReader.Get(ctx, ref, s); err != nil {
		return fmt.Errorf("failed to read the credentials Secret %s named by spec.upgrade.preUpgradeSnapshot.s3.credentialsSecretRef: %w", ref, err)
	}
	store, err := snapshot.NewStore(snapshot.S3Config{
		Endpoint: spec.S3.Endpoint, Bucket: spec.S3.Bucket, Region: spec.S3.Region, PathStyle: spec.S3.ForcePathStyle,
		AccessKeyID: string(s.Data[snapshot.EnvAccessKeyID]), SecretAccessKey: string(s.Data[snapshot.EnvSecretAccessKey]),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotTargetTimeout)
	defer cancel()
	return store.Reachable(ctx)
}
