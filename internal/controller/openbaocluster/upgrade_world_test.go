package openbaocluster_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/app/openbaocluster/adminops"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/openbao/openbaofake"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// errOperatorCrashed is what the crashing client returns for the status write of the
// pass at which the simulated operator dies.
var errOperatorCrashed = errors.New("simulated crash: the operator died before writing status")

// Notes of what a pass wrote.
const (
	noteStatus = "wrote status"
	noteCrash  = "crashed before writing status"
)

// worldAction is one disruptive write the upgrade reconciler made, as the crashing
// client saw it succeed.
type worldAction struct {
	// pass is the index of the pass that made it.
	pass int
	// kind is "delete pod" or "create Job".
	kind string
	// name is the pod or Job name; member is the member it concerns.
	name, member string
	// uid is the deleted pod's UID.
	uid types.UID
	// leader is the Raft leader of the simulated world when the write was made.
	leader string
	// stopRecorded says, for a pod deleted in an offline upgrade, whether the
	// cluster's persisted status recorded the stop (status.upgrade.offline.stoppedAt)
	// when the pod was deleted.
	stopRecorded bool
}

// leaderChange is an election of the simulated world.
type leaderChange struct {
	pass     int
	from, to string
}

// upgradeWorld simulates everything around the upgrade reconciler of one cluster:
//
//   - the StatefulSet controller and the kubelet: a member pod the reconciler deleted
//     comes back from the template's current image at the next step, and is Ready one
//     step later;
//   - the Job controller and the executor: a step-down Job runs for one step, then
//     completes and moves leadership to a Ready member, an upgraded one if any;
//   - OpenBao: sys/health and autopilot state follow the pods, and the first autopilot
//     read after an election lists the other servers as left with index 0, as
//     OpenBao's does;
//   - failures: a member the test marks failed stays not Ready, and unhealthy in
//     autopilot, until the mark is cleared.
//
// The reconciler's writes reach it the way a watch would: its client reports every
// pod deletion and Job creation (nothing else writes in these specs' API server). The
// world keeps what it wrote itself and records what happened, for the assertions.
//
// It is driven by the test between two passes of the reconciler, so that a run is a
// deterministic sequence: pass, world step, pass, world step, and so on.
type upgradeWorld struct {
	k client.Client
	// mailbox turns the operator's requests to its executor into the step Jobs
	// they stand for.
	mailbox       stepMailbox
	cluster       *baov1.OpenBaoCluster
	names         []string
	addrs         []string
	target        string
	targetVersion string
	// rollout is set for a run that changes the pod template, not the version;
	// started once status.upgrade was seen.
	rollout, started bool
	bao              *openbaofake.Fake
	clock            *clocktesting.FakeClock

	// pods are the member pods by name, nil while deleted and not yet re-created.
	pods      map[string]*corev1.Pod
	leader    string
	index     uint64
	lastIndex map[string]uint64
	// election is true while autopilot answers with the read taken right after an
	// election.
	election bool
	// jobSteps counts the world steps each Job has been seen in.
	jobSteps map[string]int
	// failed members stay not Ready (their node is gone) until cleared.
	failed map[string]bool

	// pass is the index of the pass running now (-1 while setting up); crashAt is the
	// pass whose status write fails (-1 for none). done is set when a pass reads a
	// cluster whose upgrade completed.
	pass, crashAt int
	done          bool
	// original is the UID of each member's pod when the upgrade was requested.
	original map[string]types.UID
	// offline is an offline upgrade: every member may be down at once, and the
	// members elect a leader once a majority is back.
	offline bool
	actions []worldAction
	// writes says, per pass, what the pass wrote.
	writes   map[int][]string
	leaders  []leaderChange
	maxDown  int
	downNote string
	// serveLog records each serving executor Job the reconciler created or deleted,
	// and the one the run ended (serveExited).
	serveLog    []serveEvent
	serveExited bool
}

// serveEvent is one moment of a serving executor Job's life: created, exited or
// deleted, in pass.
type serveEvent struct {
	pass       int
	what, name string
}

// served says whether name is a serving executor Job the reconciler created.
func (w *upgradeWorld) served(name string) bool {
	return slices.ContainsFunc(w.serveLog, func(e serveEvent) bool { return e.what == "created" && e.name == name })
}

func newUpgradeWorld(k client.Client, c *baov1.OpenBaoCluster, leader int32, targetVersion string) *upgradeWorld {
	w := &upgradeWorld{
		k: k, cluster: c, targetVersion: targetVersion, target: upgrade.ResolveImage("", targetVersion), bao: &openbaofake.Fake{},
		clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		pods:  map[string]*corev1.Pod{}, index: 100, lastIndex: map[string]uint64{}, jobSteps: map[string]int{}, failed: map[string]bool{},
		pass: -1, crashAt: -1, original: map[string]types.UID{}, writes: map[int][]string{},
	}
	n := workload.NamesFor(c)
	for i := range c.GetReplicas() {
		w.names = append(w.names, n.Member(i))
		w.addrs = append(w.addrs, fmt.Sprintf("https://%s:%d", n.MemberHost(i, c.Namespace), workload.APIPort))
	}
	w.leader = w.names[leader]
	return w
}

// ForCluster hands the upgrade reconciler this world's OpenBao.
func (w *upgradeWorld) ForCluster(*baov1.OpenBaoCluster, []byte) (openbao.Reader, error) {
	return w.bao, nil
}

// reconciler is a new upgrade reconciler: nothing carries over from one pass to the
// next but what the API server and OpenBao hold.
func (w *upgradeWorld) reconciler(c client.Client) *adminops.Reconciler {
	return &adminops.Reconciler{
		Client: c, APIReader: c, Recorder: &events.FakeRecorder{}, Clock: w.clock, OpenBao: w,
		ExecutorImage: "ghcr.io/baokeeper/baokeeper:test",
	}
}

// operatorClient is the upgrade reconciler's client: the API server's, reporting every
// pod deletion and Job creation to the world, and failing the status write of pass
// crashAt.
func (w *upgradeWorld) operatorClient(base client.WithWatch) client.Client {
	return interceptor.NewClient(base, withStatusCrash(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if oc, ok := obj.(*baov1.OpenBaoCluster); ok && err == nil {
				w.done = oc.Status.CurrentVersion == w.targetVersion && oc.Status.Upgrade == nil
				if w.rollout {
					// A rollout changes no version: it is done once it ran and ended.
					w.started = w.started || oc.Status.Upgrade != nil
					w.done = w.started && oc.Status.Upgrade == nil
				}
			}
			return err
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			if pod, ok := obj.(*corev1.Pod); ok && err == nil {
				w.podDeleted(pod)
				if w.offline {
					persisted := &baov1.OpenBaoCluster{}
					Expect(c.Get(ctx, client.ObjectKeyFromObject(w.cluster), persisted)).To(Succeed())
					up := persisted.Status.Upgrade
					w.actions[len(w.actions)-1].stopRecorded = up != nil && up.Offline != nil && up.Offline.StoppedAt != nil
				}
			}
			if _, ok := obj.(*batchv1.Job); ok && err == nil && w.served(obj.GetName()) {
				w.serveLog = append(w.serveLog, serveEvent{pass: w.pass, what: "deleted", name: obj.GetName()})
			}
			return err
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if isServingExecutor(obj) && err == nil {
				w.serveLog = append(w.serveLog, serveEvent{pass: w.pass, what: "created", name: obj.GetName()})
			}
			if job, ok := obj.(*batchv1.Job); ok && !isServingExecutor(obj) {
				switch {
				case err == nil:
					w.stepAsked(job, "created Job ")
				case apierrors.IsAlreadyExists(err):
					w.note("found Job " + withoutOperation(job))
				}
			}
			return err
		},
		Patch: w.mailbox.patches(w.cluster, func(job *batchv1.Job) { w.stepAsked(job, "asked the executor for ") }),
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			err := c.Apply(ctx, obj, opts...)
			if err == nil {
				w.note("applied the pod template")
			}
			return err
		},
	}, w.statusCrash))
}

func (w *upgradeWorld) note(s string) { w.writes[w.pass] = append(w.writes[w.pass], s) }

// stepAsked records a step Job created, or asked of the executor (how says which).
func (w *upgradeWorld) stepAsked(job *batchv1.Job, how string) {
	w.note(how + withoutOperation(job))
	w.actions = append(w.actions, worldAction{pass: w.pass, kind: "create Job", name: job.Name,
		member: job.Labels[executorjob.LabelMember], leader: w.leader})
}

// describePass says what pass i wrote.
func (w *upgradeWorld) describePass(i int) string {
	if len(w.writes[i]) == 0 {
		return "nothing"
	}
	return strings.Join(w.writes[i], ", ")
}

// history lists what every pass wrote.
func (w *upgradeWorld) history() string {
	var b strings.Builder
	for i := range len(w.writes) {
		fmt.Fprintf(&b, "\n  pass %d: %s", i, w.describePass(i))
	}
	return b.String()
}

// podDeleted records a deletion, and how many members are down at that moment.
func (w *upgradeWorld) podDeleted(pod *corev1.Pod) {
	w.note("deleted pod " + pod.Name)
	w.actions = append(w.actions, worldAction{pass: w.pass, kind: "delete pod", name: pod.Name, member: pod.Name, uid: pod.UID, leader: w.leader})
	if cur := w.pods[pod.Name]; cur != nil && cur.UID == pod.UID {
		w.pods[pod.Name] = nil
	}
	if pod.Name == w.leader && len(w.names) > 1 {
		// A leader's graceful shutdown hands leadership to another voter (a
		// one-member cluster leads again when it is back).
		w.elect()
	}
	var down []string
	for _, name := range w.names {
		if p := w.pods[name]; p == nil || !podReady(p) {
			down = append(down, name)
		}
	}
	if len(down) > w.maxDown {
		w.maxDown, w.downNote = len(down), fmt.Sprintf("pass %d deleted %s while %v were down", w.pass, pod.Name, down)
	}
}

// step is one step of the world between two passes: a second passes, deleted pods
// come back on the template's image, new pods become Ready (failed ones not Ready),
// step-down Jobs run and complete, and OpenBao's answers follow.
func (w *upgradeWorld) step(ctx context.Context) {
	GinkgoHelper()
	w.clock.Step(time.Second)
	w.index += 10
	w.observeStatefulSet(ctx)
	for _, name := range w.names {
		ready := !w.failed[name]
		switch p := w.pods[name]; {
		case p == nil:
			w.pods[name] = w.createPod(ctx, name)
		case podReady(p) != ready:
			w.setReady(ctx, p, ready)
		}
	}
	w.runJobs(ctx)
	if w.offline && w.leader == "" {
		// The members of an offline upgrade elect a leader once a majority is Ready.
		var ready []string
		for _, name := range w.names {
			if p := w.pods[name]; p != nil && podReady(p) {
				ready = append(ready, name)
			}
		}
		if len(ready) > len(w.names)/2 {
			w.leaders = append(w.leaders, leaderChange{pass: w.pass, from: "", to: ready[0]})
			w.leader, w.election = ready[0], true
		}
	}
	w.publish()
}

// observeStatefulSet is the StatefulSet controller seeing the latest spec: its
// status catches up with the generation, and the update revision names the template
// (the first 10 hex digits of its hash, as the controller's revision names do). Until
// this step runs after a template change, the reconciler sees a StatefulSet that is
// not current.
func (w *upgradeWorld) observeStatefulSet(ctx context.Context) {
	GinkgoHelper()
	sts := &appsv1.StatefulSet{}
	Expect(w.k.Get(ctx, client.ObjectKey{Namespace: w.cluster.Namespace, Name: workload.NamesFor(w.cluster).StatefulSet()}, sts)).To(Succeed())
	rev := templateRevision(sts)
	if sts.Status.ObservedGeneration == sts.Generation && sts.Status.UpdateRevision == rev {
		return
	}
	sts.Status.ObservedGeneration, sts.Status.UpdateRevision = sts.Generation, rev
	Expect(w.k.Status().Update(ctx, sts)).To(Succeed())
}

// templateRevision names a StatefulSet's pod template, as controller-revision-hash does.
func templateRevision(sts *appsv1.StatefulSet) string {
	b, err := json.Marshal(sts.Spec.Template)
	Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(b)
	return sts.Name + "-" + hex.EncodeToString(sum[:5])
}

// createPod is the StatefulSet controller: the pod comes from the current template,
// labelled with its revision.
func (w *upgradeWorld) createPod(ctx context.Context, name string) *corev1.Pod {
	GinkgoHelper()
	sts := &appsv1.StatefulSet{}
	Expect(w.k.Get(ctx, client.ObjectKey{Namespace: w.cluster.Namespace, Name: workload.NamesFor(w.cluster).StatefulSet()}, sts)).To(Succeed())
	labels := maps.Clone(sts.Spec.Template.Labels)
	labels[appsv1.ControllerRevisionHashLabelKey] = templateRevision(sts)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.cluster.Namespace, Name: name, Labels: labels, Annotations: sts.Spec.Template.Annotations},
		Spec:       *sts.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}})
	Expect(w.k.Create(ctx, pod)).To(Succeed())
	return pod
}

// setReady is the kubelet: the pod runs and passes its readiness probe, or fails it.
func (w *upgradeWorld) setReady(ctx context.Context, pod *corev1.Pod, ready bool) {
	GinkgoHelper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(w.clock.Now())}}
	Expect(w.k.Status().Update(ctx, pod)).To(Succeed())
}

// runJobs is the Job controller and the executor: a step-down Job runs for one world
// step, then completes, and leadership moves off its member if that member leads.
func (w *upgradeWorld) runJobs(ctx context.Context) {
	GinkgoHelper()
	_, serving := w.servingExecutor(ctx)
	for _, a := range w.jobs() {
		if !serving && !w.isJob(ctx, a.name) {
			// A request in the mailbox waits for a serving executor to answer it.
			continue
		}
		if w.jobSteps[a.name]++; w.jobSteps[a.name] != 2 {
			continue
		}
		finishStep(ctx, w.k, w.cluster, a.name, w.clock.Now(), "")
		if a.member == w.leader {
			w.elect()
		}
	}
}

// servingExecutor names the cluster's serving executor Job, and says whether it runs
// (exists, is not being deleted, and neither completed nor failed).
func (w *upgradeWorld) servingExecutor(ctx context.Context) (name string, running bool) {
	GinkgoHelper()
	jobs := &batchv1.JobList{}
	Expect(w.k.List(ctx, jobs, client.InNamespace(w.cluster.Namespace), client.MatchingLabels{executorjob.LabelStep: executorjob.StepServe})).To(Succeed())
	for _, j := range jobs.Items {
		finished := slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
			return (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue
		})
		if j.DeletionTimestamp == nil && !finished {
			return j.Name, true
		}
		name = j.Name
	}
	return name, false
}

// isJob says whether a step runs as a Job of its own (not a request in the mailbox).
func (w *upgradeWorld) isJob(ctx context.Context, name string) bool {
	GinkgoHelper()
	err := w.k.Get(ctx, client.ObjectKey{Namespace: w.cluster.Namespace, Name: name}, &batchv1.Job{})
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// elect moves leadership off the leader: to the first Ready member on the target
// image, or else to the first other Ready member.
func (w *upgradeWorld) elect() {
	GinkgoHelper()
	var next string
	for _, name := range w.names {
		p := w.pods[name]
		if name == w.leader || p == nil || !podReady(p) {
			continue
		}
		if workload.ContainerImage(&p.Spec) == w.target {
			next = name
			break
		}
		if next == "" {
			next = name
		}
	}
	if next == "" && w.offline {
		// Every member stops in an offline upgrade: no leader until two are back.
		w.leaders = append(w.leaders, leaderChange{pass: w.pass, from: w.leader, to: ""})
		w.leader, w.election = "", true
		return
	}
	Expect(next).NotTo(BeEmpty(), "no member can take over from %s", w.leader)
	w.leaders = append(w.leaders, leaderChange{pass: w.pass, from: w.leader, to: next})
	w.leader, w.election = next, true
}

// worldFirstTerm is the Raft term of a simulated world before its first election.
const worldFirstTerm = 7

// elections counts the leaders the world elected.
func (w *upgradeWorld) elections() int {
	n := 0
	for _, l := range w.leaders {
		if l.to != "" {
			n++
		}
	}
	return n
}

// publish makes OpenBao's answers follow the pods: Ready members answer sys/health
// with the version of their image and are healthy voters in autopilot.
func (w *upgradeWorld) publish() {
	st := openbao.AutopilotState{Leader: w.leader, Voters: slices.Clone(w.names), Servers: map[string]openbao.AutopilotServer{}}
	// The Raft term: one more for every leader elected.
	term := uint64(worldFirstTerm)
	for _, l := range w.leaders {
		if l.to != "" {
			term++
		}
	}
	healthy := 0
	for i, name := range w.names {
		p := w.pods[name]
		ready := p != nil && podReady(p)
		version := ""
		if p != nil {
			img := workload.ContainerImage(&p.Spec)
			version = img[strings.LastIndex(img, ":")+1:]
		}
		if ready {
			healthy++
			w.lastIndex[name] = w.index
			w.bao.SetHealthError(w.addrs[i], nil)
			w.bao.SetHealth(w.addrs[i], openbao.Health{Initialized: true, Standby: name != w.leader, Version: version})
			w.bao.SetReplication(w.addrs[i], openbao.Replication{AppendEntries: 1}) // the leader reaches it
		} else {
			w.bao.SetHealthError(w.addrs[i], errors.New("connection refused"))
		}
		srv := openbao.AutopilotServer{ID: name, Name: name, NodeStatus: "alive", Status: openbao.AutopilotStatusVoter,
			NodeType: "voter", Version: version, LastIndex: w.lastIndex[name], LastTerm: term, Healthy: ready}
		if name == w.leader {
			srv.Status = openbao.AutopilotStatusLeader
		} else if w.election {
			srv.NodeStatus, srv.LastIndex = "left", 0
		}
		st.Servers[name] = srv
	}
	st.Healthy = healthy == len(w.names) && !w.election
	st.FailureTolerance = max(0, healthy-(len(w.names)/2+1))
	w.election = false
	w.bao.SetAutopilotState(st)
}

// deletions returns the pod deletions of the reconciler, in order.
func (w *upgradeWorld) deletions() []worldAction {
	var out []worldAction
	for _, a := range w.actions {
		if a.kind == "delete pod" {
			out = append(out, a)
		}
	}
	return out
}

// jobs returns the step-down Jobs the reconciler created, in order.
func (w *upgradeWorld) jobs() []worldAction {
	var out []worldAction
	for _, a := range w.actions {
		if a.kind == "create Job" {
			out = append(out, a)
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// withoutOperation is a Job's name with its operation ID (which differs between runs:
// it hashes the cluster's UID and start time) replaced by <op>, so that runs compare.
func withoutOperation(job *batchv1.Job) string {
	if id := job.Labels[executorjob.LabelOperation]; id != "" {
		return strings.ReplaceAll(job.Name, id, "<op>")
	}
	return job.Name
}

// statusCrash fails the status write of pass crashAt (the operator died before it)
// and notes every status write.
func (w *upgradeWorld) statusCrash(sub string) error {
	if sub != "status" {
		return nil
	}
	if w.pass == w.crashAt {
		w.note(noteCrash)
		return errOperatorCrashed
	}
	w.note(noteStatus)
	return nil
}

// withStatusCrash adds to f the status writes of a crashing operator: crash(sub)
// decides, for each write to a subresource, whether it fails (the operator died
// before it) or goes through.
func withStatusCrash(f interceptor.Funcs, crash func(sub string) error) interceptor.Funcs {
	f.SubResourceApply = func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
		if err := crash(sub); err != nil {
			return err
		}
		return c.SubResource(sub).Apply(ctx, obj, opts...)
	}
	f.SubResourcePatch = func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		if err := crash(sub); err != nil {
			return err
		}
		return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
	}
	f.SubResourceUpdate = func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if err := crash(sub); err != nil {
			return err
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}
	return f
}

// eachCrash runs crashed(crashAt) once per pass (of the first passes) of a reference
// run that wrote status (writes, per pass), workers at a time; a pass that wrote no
// status loses nothing when the operator dies after it, so its run would be the
// reference run.
func eachCrash(passes int, writes map[int][]string, workers int, crashed func(crashAt int)) {
	GinkgoHelper()
	var wg sync.WaitGroup
	slots := make(chan struct{}, workers)
	for crashAt := range passes {
		if !slices.Contains(writes[crashAt], noteStatus) {
			continue
		}
		wg.Go(func() {
			defer GinkgoRecover()
			slots <- struct{}{}
			defer func() { <-slots }()
			crashed(crashAt)
		})
	}
	wg.Wait()
}
