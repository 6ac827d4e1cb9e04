package adminops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

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
		if obs.AutopilotLags() || !obs.AutopilotKnown {
			// Without autopilot (no leader), each survivor's committed index is what
			// the quorum watch names the most up-to-date one by.
			h.following(ctx, obs)
		}
		h.replication(ctx, obs)
		if snapshot.CanaryExpected(c) != "" {
			obs.Canary = r.readCanary(ctx, h.bao)
		}
	}
	return obs, nil
}

// readCanary reads the restore canary with the controller's role, for a restore
// whose snapshot holds one and which is being verified.
func (r *Reconciler) readCanary(ctx context.Context, bao openbao.Reader) *operation.CanaryRead {
	cr, ok := bao.(openbao.CanaryReader)
	if !ok {
		return &operation.CanaryRead{Err: "this OpenBao client cannot read the canary"}
	}
	cctx, cancel := context.WithTimeout(ctx, r.healthTimeout())
	defer cancel()
	v, err := cr.Canary(cctx, workload.CanaryPath)
	switch {
	case errors.Is(err, openbao.ErrNotFound):
		return &operation.CanaryRead{}
	case err != nil:
		return &operation.CanaryRead{Err: err.Error()}
	}
	return &operation.CanaryRead{Value: v, Found: true}
}

// readCopyCanary reads the restore canary of the rehearsal's copy, with a client
// of the copy's own (its CA, its controller role); a client that cannot be built
// is a failed read, which the rehearsal waits out within its timeout.
func (r *Reconciler) readCopyCanary(ctx context.Context, child *baov1.OpenBaoCluster) *operation.CanaryRead {
	bao, err := r.client(ctx, child)
	if err != nil {
		return &operation.CanaryRead{Err: err.Error()}
	}
	return r.readCanary(ctx, bao)
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
	// addrs are the API addresses of the members whose health was read.
	addrs map[string]string
}

// following reads sys/leader from every responsive member and from the leader, at
// once within one deadline, for operation.Cluster.Follows: only in passes where
// autopilot calls the cluster unhealthy, which after an election lasts until
// autopilot has heard from every standby (docs/design/autopilot-tail.md).
func (h *healthReader) following(ctx context.Context, obs *operation.Cluster) {
	lctx, cancel := context.WithTimeout(ctx, h.r.healthTimeout())
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, set := range [][]operation.Member{obs.Members, obs.Green} {
		for i := range set {
			m := &set[i]
			addr, ok := h.addrs[m.Name]
			if !ok || !m.Responsive() {
				continue
			}
			wg.Go(func() {
				l, err := h.bao.MemberLeader(lctx, addr)
				if err != nil {
					ctrl.LoggerFrom(ctx).V(4).Info("Reading a member's sys/leader failed", "Pod", m.Name, "reason", err.Error())
					return
				}
				m.LeaderAddress, m.AppliedIndex, m.CommittedIndex = l.LeaderAddress, l.RaftAppliedIndex, l.RaftCommittedIndex
				if m.Name == obs.Leader && l.IsSelf {
					mu.Lock()
					obs.LeaderAddress, obs.LeaderCommitted = l.LeaderAddress, l.RaftCommittedIndex
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
}

// replication reads, at once within one deadline, the Raft replication each member
// that turned Ready lately received, from its own metrics
// (operation.Cluster.NeedsReplicationRead): the proof that the leader's Raft reaches
// it, which gates the next disruptive step.
func (h *healthReader) replication(ctx context.Context, obs *operation.Cluster) {
	rctx, cancel := context.WithTimeout(ctx, h.r.healthTimeout())
	defer cancel()
	var wg sync.WaitGroup
	for _, set := range [][]operation.Member{obs.Members, obs.Green} {
		for i := range set {
			m := &set[i]
			addr, ok := h.addrs[m.Name]
			if !ok || !obs.NeedsReplicationRead(m) {
				continue
			}
			wg.Go(func() {
				rep, err := h.bao.MemberReplication(rctx, addr)
				var count uint64
				if err != nil {
					ctrl.LoggerFrom(ctx).V(4).Info("Reading a member's Raft metrics failed", "Pod", m.Name, "reason", err.Error())
				} else {
					count = rep.AppendEntries
				}
				m.Replication = operation.ReplicationOf(count, err)
			})
		}
	}
	wg.Wait()
}

// members observes ordinals 0 to n-1 of one StatefulSet. The Ready members' health
// is read at once, within one deadline: a member that does not answer costs the
// pass one timeout, not one per member.
func (h *healthReader) members(ctx context.Context, n workload.Names, count int32, byName map[string]*corev1.Pod) ([]operation.Member, error) {
	out := make([]operation.Member, 0, count)
	var ready []int
	for i := range count {
		name := n.Member(i)
		m := operation.Member{Name: name, Ordinal: int(i)}
		if pod := byName[name]; pod != nil {
			m.PodExists = true
			m.UID = string(pod.UID)
			m.Node = pod.Spec.NodeName
			m.PodTerminating = !pod.DeletionTimestamp.IsZero()
			m.PodReady = podReady(pod)
			if m.PodReady {
				m.ReadySince = readySince(pod)
			}
			m.Image = workload.ContainerImage(&pod.Spec)
			m.Revision = pod.Labels[appsv1.ControllerRevisionHashLabelKey]
			m.Template = templateAnnotations(pod.Annotations)
			m.Problem = podProblem(pod)
			m.NeverStarted = neverStarted(pod)
		}
		if m.PodReady {
			ready = append(ready, len(out))
		}
		out = append(out, m)
	}
	if len(ready) == 0 {
		return out, nil
	}
	if h.bao == nil {
		var err error
		if h.bao, err = h.r.client(ctx, h.c); err != nil {
			return nil, err
		}
	}
	hctx, cancel := context.WithTimeout(ctx, h.r.healthTimeout())
	defer cancel()
	if h.addrs == nil {
		h.addrs = map[string]string{}
	}
	for _, idx := range ready {
		h.addrs[out[idx].Name] = fmt.Sprintf("https://%s:%d", n.MemberHost(int32(out[idx].Ordinal), h.c.Namespace), workload.APIPort)
	}
	var wg sync.WaitGroup
	for _, idx := range ready {
		wg.Add(1)
		go func(m *operation.Member) {
			defer wg.Done()
			st, err := h.bao.Health(hctx, h.addrs[m.Name])
			if err != nil {
				ctrl.LoggerFrom(ctx).V(4).Info("Reading member health failed", "Pod", m.Name, "reason", err.Error())
				return
			}
			m.Initialized, m.Sealed, m.Version = st.Initialized, st.Sealed, st.Version
			m.ClockOffset = operation.ClockOffset(st.ServerTime, st.AskedAt, st.AnsweredAt)
		}(&out[idx])
	}
	wg.Wait()
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
	for _, k := range []string{baov1.TemplateAnnotationConfig, baov1.TemplateAnnotationRestart} {
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
	applyAutopilot(obs, st)
}

// applyAutopilot fills obs's Raft view from autopilot state st. Autopilot stamps
// stable_since with the leader's wall clock; it is moved onto baokeeper's by the
// leader's clock offset (read from its sys/health), so that a leader whose clock runs
// minutes ahead does not keep a rejoined member from being promoted for those
// minutes, nor one whose clock runs behind promote it early.
func applyAutopilot(obs *operation.Cluster, st *openbao.AutopilotState) {
	obs.AutopilotKnown, obs.AutopilotHealthy, obs.FailureTolerance, obs.Leader = true, st.Healthy, st.FailureTolerance, st.Leader
	if openbao.JustAfterElection(st) {
		obs.AutopilotKnown = false
	}
	if l, ok := st.Servers[st.Leader]; ok {
		obs.LeaderIndex = l.LastIndex
	}
	var leaderClock time.Duration
	if l := obs.Member(st.Leader); l != nil {
		leaderClock = l.ClockOffset
	}
	fill := func(m *operation.Member, s openbao.AutopilotServer) {
		m.InRaft = true
		m.Voter = s.Status == openbao.AutopilotStatusVoter || s.Status == openbao.AutopilotStatusLeader
		m.Healthy = s.Healthy
		m.LastIndex = s.LastIndex
		m.LastContact = s.LastContact
		m.StableSince = s.StableSince
		if !s.StableSince.IsZero() {
			m.StableSince = s.StableSince.Add(-leaderClock)
		}
	}
	for _, s := range st.Servers {
		obs.Term = max(obs.Term, s.LastTerm)
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

// readySince is when the pod's Ready condition last changed; zero when it does not say.
func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// observeRestoreSource reads the cluster a bootstrap snapshot was taken from and the
// executor ServiceAccount of its name, from the API server: an account nobody
// labelled is not in the cache, and must not read as missing.
func (r *Reconciler) observeRestoreSource(ctx context.Context, c *baov1.OpenBaoCluster) (*operation.RestoreSource, error) {
	out := &operation.RestoreSource{}
	name := c.BootstrapSourceCluster()
	src := &baov1.OpenBaoCluster{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, src); {
	case err == nil:
		out.Cluster = src
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to get the restore's source cluster %s/%s: %w", c.Namespace, name, err)
	}
	sa, _ := snapshot.SourceIdentity(c)
	acct := &corev1.ServiceAccount{}
	switch err := r.APIReader.Get(ctx, sa, acct); {
	case err == nil:
		out.AccountExists = true
		if ref := metav1.GetControllerOf(acct); ref != nil {
			out.AccountController = ref.DeepCopy()
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to get ServiceAccount %s for the restore's rebind: %w", sa, err)
	}
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	if !p.DeletionTimestamp.IsZero() {
		return false
	}
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// observeRest completes the pass's one observation (observe read the members, the
// StatefulSets and the Raft view): the executor Jobs of the cluster with what their
// pods say, the volume claims, the client Service's selection and, only when this
// pass evaluates the prechecks of an upgrade that takes a snapshot, whether the
// snapshot target is reachable. Nothing is read after this: every decision of the
// pass is made over the snapshot.
func (r *Reconciler) observeRest(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (*operation.Snapshot, error) {
	s := &operation.Snapshot{Cluster: obs, Object: c, ExecutorImage: r.executorImage(c), OperatorExecutorImage: r.ExecutorImage,
		Jobs:              map[string]operation.ObservedJob{},
		ControllerSubject: workload.ServiceAccountSubject(r.ControllerServiceAccount.Namespace, r.ControllerServiceAccount.Name)}
	if rs := c.Status.Restore; rs != nil && rs.Step == baov1.RestoreStepRebind && c.Spec.Bootstrap != nil && c.BootstrapSourceCluster() != c.Name {
		src, err := r.observeRestoreSource(ctx, c)
		if err != nil {
			return nil, err
		}
		s.RestoreSource = src
	}
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
	if !r.StepJobs {
		v, err := r.observeExecutors(ctx, c, jobs.Items, s)
		if err != nil {
			return nil, err
		}
		r.executors = v
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, pvcs, client.InNamespace(c.Namespace), own); err != nil {
		return nil, fmt.Errorf("failed to list the volume claims of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for _, pvc := range pvcs.Items {
		if pvc.DeletionTimestamp.IsZero() {
			s.Volumes = append(s.Volumes, pvc.Name)
			if s.VolumeUIDs == nil {
				s.VolumeUIDs = map[string]string{}
			}
			s.VolumeUIDs[pvc.Name] = string(pvc.UID)
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
	if c.Spec.Snapshots.Verify != nil || snapshot.DrillRunning(&c.Status) {
		if s.Drill, err = r.childCluster(ctx, c, snapshot.LabelDrillOf); err != nil {
			return nil, err
		}
	}
	if len(c.Spec.Upgrade.After) > 0 {
		// The order of upgrades across clusters: the other clusters as the cache
		// holds them, in the namespaces this operator watches and no other.
		all := &baov1.OpenBaoClusterList{}
		if err := r.Client.List(ctx, all); err != nil {
			return nil, fmt.Errorf("failed to list the OpenBaoClusters that %s/%s's spec.upgrade.after names: %w", c.Namespace, c.Name, err)
		}
		s.Fleet = operation.Fleet{Clusters: all.Items, Watched: r.Namespaces, Excluded: r.ExcludedNamespaces}
	}
	if snapshot.ActiveRehearsal(&c.Status) != nil {
		if s.Rehearsal, err = r.childCluster(ctx, c, snapshot.LabelRehearsalOf); err != nil {
			return nil, err
		}
		if snapshot.RehearsalCanaryWanted(c, s.Rehearsal) != "" {
			s.RehearsalCanary = r.readCopyCanary(ctx, s.Rehearsal)
		}
	}
	return s, nil
}

// childCluster is the cluster's drill or rehearsal copy: the OpenBaoCluster it
// controls that carries label with its name; nil when there is none.
func (r *Reconciler) childCluster(ctx context.Context, c *baov1.OpenBaoCluster, label string) (*baov1.OpenBaoCluster, error) {
	list := &baov1.OpenBaoClusterList{}
	if err := r.Client.List(ctx, list, client.InNamespace(c.Namespace), client.MatchingLabels{label: c.Name}); err != nil {
		return nil, fmt.Errorf("failed to list the clusters labelled %s=%s: %w", label, c.Name, err)
	}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], c) {
			return &list.Items[i], nil
		}
	}
	return nil, nil
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
