package openbaocluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/openbao/openbaofake"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// scalingOrdinals bounds the ordinals the scaling world answers sys/health for.
const scalingOrdinals = 8

// Autopilot's last index of a member: the leader's index grows by 10 every step; a
// member that just joined is far behind; a dead voter stopped at deadIndex.
const (
	scalingStartIndex = 10000
	joiningIndex      = 1
	deadIndex         = 5000
)

// disruption is one disruptive write of the adminops reconciler, as the scaling
// world's client saw it succeed: "replicas 4" (the StatefulSet's replicas changed to
// 4), "<step> <member>" (an executor Job created: promote, removepeer or stepdown),
// "delete volume <member>" (its data volume claim deleted), "delete pod <pod>".
type disruption struct {
	pass int
	what string
}

// execJob is an executor Job the reconciler created.
type execJob struct {
	name, step, member string
	// steps counts the world steps it has been seen in.
	steps    int
	finished bool
}

// scalingWorld simulates everything around the adminops reconciler of one cluster
// while it changes the cluster's membership:
//
//   - the StatefulSet controller (OrderedReady): each step it reads the StatefulSet;
//     a pod whose ordinal is at or above spec.replicas is deleted, the highest first,
//     one a step; below it, the lowest missing pod is created once every lower one is
//     Ready, with its volume claim data-<pod> (created if missing, kept after the pod
//     goes; a claim that is being deleted holds the pod back);
//   - the kubelet: a new pod is Ready one step after its creation;
//   - OpenBao: a Ready pod that is not in the Raft configuration joins it as a
//     non-voter (retry_join_as_non_voter), healthy and caught up one step later;
//     sys/health and autopilot state follow; a server without a Ready pod is
//     reported left and unhealthy, with the index it stopped at; the first
//     autopilot read after an election lists the other servers as left with index 0;
//   - the Job controller and the executor: an executor Job runs for one step, then
//     completes and acts: promote makes its member a voter, demote a non-voter,
//     removepeer takes it out of the Raft configuration, stepdown moves leadership to
//     another Ready voter (see successor);
//   - the PVC protection controller: a claim being deleted goes once no pod uses it.
//
// It checks at every step what must never happen (violations): a pod whose ordinal
// falls off the StatefulSet while its member is still in Raft; fewer healthy voters
// (with a Ready pod) than a majority of the Raft voters; a removepeer or demote Job
// for the leader; a pod created on the volume claim of a member removed from Raft (its data
// must never rejoin); an executor Job created when its outcome is already visible (a
// crash may repeat an action only while its outcome is not).
//
// It reuses the upgrade world's API client, cluster, fake OpenBao and clock, its pods
// and leader, its record of what each pass wrote (note, history) and its crash point,
// and its StatefulSet-controller and kubelet helpers (createPod, setReady).
type scalingWorld struct {
	*upgradeWorld

	// raft is the Raft configuration: each server and whether it votes.
	raft map[string]bool
	// stepN counts world steps; createdAt and joinedAt say at which step a pod was
	// created and a member joined Raft as a non-voter.
	stepN               int
	createdAt, joinedAt map[string]int
	// removed are the members removed from Raft whose volume claim, if it exists,
	// holds their data.
	removed map[string]bool
	// execJobs are the executor Jobs the reconciler created, in order.
	execJobs []*execJob
	// started is set when a pass reads a scaling operation in status; done, in the
	// upgrade world, when a pass then reads none and the operation lock free.
	started bool
	// loopPasses is the number of passes until done; incomplete says why a run
	// stopped before.
	loopPasses int
	incomplete string

	disruptions []disruption
	violations  []string
	// fellOff are the members already reported for leaving the StatefulSet while in Raft.
	fellOff map[string]bool
	// highestSuccessor makes a step-down hand leadership to the highest ordinal Ready
	// voter instead of the lowest.
	highestSuccessor bool

	// lost is true while a majority of the voters is lost (loseMajority): no leader,
	// autopilot cannot be read, and no new member can join. peers is the member whose
	// Raft directory holds peers.json (the recovery's Job ran); when its pod starts
	// again it leads alone.
	lost  bool
	peers string
	// wantVoters, when set, is how many voters a run must end with: a pass that reads
	// no scaling is done only then (a recovery grows back through more than one).
	wantVoters int
}

func newScalingWorld(k client.Client, c *baov1.OpenBaoCluster, leader int32) *scalingWorld {
	u := &upgradeWorld{
		k: k, cluster: c, bao: &openbaofake.Fake{},
		clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		pods:  map[string]*corev1.Pod{}, index: scalingStartIndex, lastIndex: map[string]uint64{},
		pass: -1, crashAt: -1, writes: map[int][]string{},
	}
	w := &scalingWorld{upgradeWorld: u, raft: map[string]bool{}, createdAt: map[string]int{}, joinedAt: map[string]int{},
		removed: map[string]bool{}, fellOff: map[string]bool{}}
	w.leader = w.member(leader)
	return w
}

func (w *scalingWorld) member(i int32) string { return workload.NamesFor(w.cluster).Member(i) }

// ordinalOf is the ordinal at the end of a member name.
func ordinalOf(name string) int32 {
	n, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	Expect(err).NotTo(HaveOccurred(), name)
	return int32(n)
}

func volumeOf(member string) string { return "data-" + member }

func (w *scalingWorld) violate(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf("step %d (after pass %d): ", w.stepN, w.pass)+fmt.Sprintf(format, args...))
}

func (w *scalingWorld) disrupt(what string) {
	w.note(what)
	w.disruptions = append(w.disruptions, disruption{pass: w.pass, what: what})
}

// whats lists the disruptions, in order.
func (w *scalingWorld) whats() []string {
	var out []string
	for _, d := range w.disruptions {
		out = append(out, d.what)
	}
	return out
}

func (w *scalingWorld) stsKey() client.ObjectKey {
	return client.ObjectKey{Namespace: w.cluster.Namespace, Name: workload.NamesFor(w.cluster).StatefulSet()}
}

// operatorClient is the reconciler's client: the API server's, reporting the
// reconciler's disruptive writes to the world, and failing the status write of pass
// crashAt.
func (w *scalingWorld) operatorClient(base client.WithWatch) client.Client {
	return interceptor.NewClient(base, withStatusCrash(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if oc, ok := obj.(*baov1.OpenBaoCluster); ok && err == nil {
				if oc.Status.Scaling != nil {
					w.started = true
				}
				w.done = w.started && oc.Status.Scaling == nil && oc.Status.OperationLock == nil && (w.wantVoters == 0 || w.voters() == w.wantVoters)
			}
			return err
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			if err != nil {
				return err
			}
			switch o := obj.(type) {
			case *corev1.PersistentVolumeClaim:
				w.disrupt("delete volume " + strings.TrimPrefix(o.Name, "data-"))
			case *corev1.Pod:
				w.disrupt("delete pod " + o.Name)
				w.podDeleted(o)
			case *batchv1.Job:
				w.note("deleted Job " + withoutOperation(o))
			}
			return nil
		},
		Patch: w.mailbox.patches(w.cluster, func(job *batchv1.Job) { w.jobCreated(job) }),
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if job, ok := obj.(*batchv1.Job); ok && !isServingExecutor(obj) {
				switch {
				case err == nil:
					w.jobCreated(job)
				case apierrors.IsAlreadyExists(err):
					w.note("found Job " + withoutOperation(job))
				}
			}
			return err
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			before := &appsv1.StatefulSet{}
			Expect(c.Get(ctx, w.stsKey(), before)).To(Succeed())
			if err := c.Apply(ctx, obj, opts...); err != nil {
				return err
			}
			after := &appsv1.StatefulSet{}
			Expect(c.Get(ctx, w.stsKey(), after)).To(Succeed())
			if *after.Spec.Replicas != *before.Spec.Replicas {
				w.disrupt(fmt.Sprintf("replicas %d", *after.Spec.Replicas))
			} else {
				w.note(fmt.Sprintf("applied the StatefulSet (replicas stay %d)", *after.Spec.Replicas))
			}
			return nil
		},
	}, w.statusCrash))
}

// jobCreated records a new executor Job, and checks that its outcome is not visible
// yet: a Job for what is already done is an action a crash added.
func (w *scalingWorld) jobCreated(job *batchv1.Job) {
	step, member := job.Labels[executorjob.LabelStep], job.Labels[executorjob.LabelMember]
	voter, in := w.raft[member]
	switch step {
	case executorjob.StepPromote:
		if in && voter {
			w.violate("pass %d created the promote Job %s for %s, already a voter", w.pass, job.Name, member)
		}
	case executorjob.StepDemote:
		if !in || !voter {
			w.violate("pass %d created the demote Job %s for %s, which is no voter", w.pass, job.Name, member)
		}
	case executorjob.StepRemovePeer:
		if !in {
			w.violate("pass %d created the removepeer Job %s for %s, already out of Raft", w.pass, job.Name, member)
		}
	case executorjob.StepStepDown:
		if w.leader != member {
			w.violate("pass %d created the stepdown Job %s for %s, which does not lead (%s does)", w.pass, job.Name, member, w.leader)
		}
	case executorjob.StepWritePeers:
		if !w.lost {
			w.violate("pass %d created the writepeers Job %s with no majority lost", w.pass, job.Name)
		}
		if pod := w.pods[member]; pod == nil || job.Spec.Template.Spec.NodeName != pod.Spec.NodeName {
			w.violate("pass %d created the writepeers Job %s away from %s's pod", w.pass, job.Name, member)
		}
	default:
		w.violate("pass %d created the Job %s of an unexpected step %q", w.pass, job.Name, step)
	}
	w.note("created Job " + withoutOperation(job))
	w.disrupt(step + " " + member)
	w.execJobs = append(w.execJobs, &execJob{name: job.Name, step: step, member: member})
}

// podDeleted is the kubelet stopping a pod the reconciler deleted: it is gone from
// the world, and from the leader's seat if it led. Deleting the pod of a member that
// is in the Raft configuration is never a scaling's to do (a voter's or a
// non-voter's pod goes down only through an upgrade's or a rollout's gates).
func (w *scalingWorld) podDeleted(pod *corev1.Pod) {
	if cur := w.pods[pod.Name]; cur == nil || cur.UID != pod.UID {
		w.violate("pass %d deleted pod %s (uid %s), which is not the member's current pod", w.pass, pod.Name, pod.UID)
		return
	}
	if _, in := w.raft[pod.Name]; in && w.checked() && (!w.lost || pod.Name != w.peers) {
		// The one exception: the survivor of a lost majority, restarted onto the
		// peers.json the recovery wrote.
		w.violate("pass %d deleted the pod of %s, a member in the Raft configuration", w.pass, pod.Name)
	}
	delete(w.pods, pod.Name)
	if pod.Name == w.leader {
		next := w.lowestReadyVoter(pod.Name)
		w.leaders = append(w.leaders, leaderChange{pass: w.pass, from: pod.Name, to: next})
		w.leader, w.election = next, true
	}
	w.checkMajority("pod " + pod.Name + " deleted")
}

// addVolume creates the volume claim of a member, as the StatefulSet controller
// does from its claim template.
func (w *scalingWorld) addVolume(ctx context.Context, member string) {
	GinkgoHelper()
	Expect(w.k.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.cluster.Namespace, Name: volumeOf(member), Labels: workload.CommonLabels(w.cluster)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})).To(Succeed())
}

// step is one step of the world between two passes: a second passes, Jobs run and
// act, the StatefulSet controller and the kubelet move the pods, members join Raft,
// claims being deleted go, and OpenBao's answers follow.
func (w *scalingWorld) step(ctx context.Context) {
	GinkgoHelper()
	w.clock.Step(time.Second)
	w.index += 10
	w.stepN++
	w.runExecJobs(ctx)
	w.statefulSetController(ctx)
	w.kubelet(ctx)
	w.volumeProtection(ctx)
	w.checkMajority("at the end of the step")
	w.publishScaling()
}

// checked says whether the invariants hold yet: not while the cluster forms.
func (w *scalingWorld) checked() bool { return w.pass >= 0 }

func (w *scalingWorld) ready(name string) bool {
	p := w.pods[name]
	return p != nil && podReady(p)
}

// checkMajority checks that a majority of the Raft voters is healthy (not while a
// majority is lost on purpose).
func (w *scalingWorld) checkMajority(what string) {
	if !w.checked() || w.lost {
		return
	}
	voters, healthy := 0, 0
	var down []string
	for name, voter := range w.raft {
		if !voter {
			continue
		}
		voters++
		if w.ready(name) {
			healthy++
		} else {
			down = append(down, name)
		}
	}
	if healthy < voters/2+1 {
		slices.Sort(down)
		w.violate("%s: %d of %d voters healthy, below a majority (down: %v)", what, healthy, voters, down)
	}
}

// runExecJobs is the Job controller and the executor: a Job completes at its second
// step and acts on Raft.
func (w *scalingWorld) runExecJobs(ctx context.Context) {
	GinkgoHelper()
	for _, j := range w.execJobs {
		if j.finished {
			continue
		}
		if j.steps++; j.steps < 2 {
			continue
		}
		j.finished = true
		finishStep(ctx, w.k, w.cluster, j.name, w.clock.Now(), w.execute(j))
	}
}

// execute is what an executor Job does; it returns why it failed, or "".
func (w *scalingWorld) execute(j *execJob) string {
	voter, in := w.raft[j.member]
	switch j.step {
	case executorjob.StepPromote:
		if !in {
			return j.member + " is not in the Raft configuration"
		}
		if !voter {
			w.raft[j.member] = true
			w.checkMajority("promote " + j.member)
		}
	case executorjob.StepDemote:
		if j.member == w.leader {
			w.violate("the demote Job %s ran while %s led", j.name, j.member)
			return j.member + " leads"
		}
		if in && voter {
			w.raft[j.member] = false
			w.checkMajority("demote " + j.member)
		}
	case executorjob.StepRemovePeer:
		if j.member == w.leader {
			w.violate("the removepeer Job %s ran while %s led", j.name, j.member)
			return j.member + " leads"
		}
		if in {
			delete(w.raft, j.member)
			w.removed[j.member] = true
			w.checkMajority("remove-peer " + j.member)
		}
	case executorjob.StepWritePeers:
		if w.pods[j.member] == nil {
			return j.member + "'s volume is not mounted on its node"
		}
		w.peers = j.member
	case executorjob.StepStepDown:
		if j.member == w.leader {
			next := w.successor(j.member)
			if next == "" {
				return "no other voter can lead"
			}
			w.leaders = append(w.leaders, leaderChange{pass: w.pass, from: w.leader, to: next})
			w.leader, w.election = next, true
		}
	}
	return ""
}

// lowestReadyVoter is the voter of the lowest ordinal with a Ready pod, other than
// except.
func (w *scalingWorld) lowestReadyVoter(except string) string {
	for i := range int32(scalingOrdinals) {
		name := w.member(i)
		if name != except && w.raft[name] && w.ready(name) {
			return name
		}
	}
	return ""
}

// successor is the voter a step-down hands leadership to: the lowest ordinal Ready
// voter, or with highestSuccessor the highest (Raft picks the most up-to-date voter,
// and for a scale-down that is the worst one: a member about to leave).
func (w *scalingWorld) successor(leader string) string {
	if !w.highestSuccessor {
		return w.lowestReadyVoter(leader)
	}
	for i := int32(scalingOrdinals) - 1; i >= 0; i-- {
		name := w.member(i)
		if name != leader && w.raft[name] && w.ready(name) {
			return name
		}
	}
	return ""
}

// statefulSetController moves one pod a step toward the StatefulSet's replicas and
// reports its status.
func (w *scalingWorld) statefulSetController(ctx context.Context) {
	GinkgoHelper()
	sts := &appsv1.StatefulSet{}
	Expect(w.k.Get(ctx, w.stsKey(), sts)).To(Succeed())
	replicas := *sts.Spec.Replicas
	var names []string
	for name := range w.pods {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return int(ordinalOf(b) - ordinalOf(a)) })
	victim := ""
	for _, name := range names {
		if ordinalOf(name) < replicas {
			continue
		}
		if _, in := w.raft[name]; in && w.checked() && !w.fellOff[name] {
			w.fellOff[name] = true
			w.violate("%s falls off the StatefulSet (replicas %d) while still in Raft", name, replicas)
		}
		if victim == "" {
			victim = name
		}
	}
	switch {
	case victim != "":
		Expect(client.IgnoreNotFound(w.k.Delete(ctx, w.pods[victim], client.GracePeriodSeconds(0)))).To(Succeed())
		delete(w.pods, victim)
		if victim == w.leader {
			next := w.lowestReadyVoter(victim)
			w.leaders = append(w.leaders, leaderChange{pass: w.pass, from: victim, to: next})
			w.leader, w.election = next, true
		}
		w.checkMajority("pod " + victim + " went")
	default:
		for i := range replicas {
			name := w.member(i)
			if p := w.pods[name]; p != nil {
				if !podReady(p) {
					break // OrderedReady: the next pod waits for this one
				}
				continue
			}
			if w.ensureVolume(ctx, name) {
				w.pods[name] = w.createPod(ctx, name)
				w.createdAt[name] = w.stepN
			}
			break
		}
	}
	ready := int32(0)
	for _, p := range w.pods {
		if podReady(p) {
			ready++
		}
	}
	st := appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: int32(len(w.pods)), ReadyReplicas: ready,
		AvailableReplicas: ready, CurrentReplicas: int32(len(w.pods)), UpdatedReplicas: int32(len(w.pods)),
		CurrentRevision: sts.Status.CurrentRevision, UpdateRevision: sts.Status.UpdateRevision, CollisionCount: sts.Status.CollisionCount}
	if !equalStatefulSetStatus(sts.Status, st) {
		sts.Status = st
		Expect(w.k.Status().Update(ctx, sts)).To(Succeed())
	}
}

func equalStatefulSetStatus(a, b appsv1.StatefulSetStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.Replicas == b.Replicas && a.ReadyReplicas == b.ReadyReplicas &&
		a.AvailableReplicas == b.AvailableReplicas && a.CurrentReplicas == b.CurrentReplicas && a.UpdatedReplicas == b.UpdatedReplicas
}

// ensureVolume makes sure the volume claim of a pod about to be created exists, and
// says whether the pod can be created: not while its claim is being deleted.
func (w *scalingWorld) ensureVolume(ctx context.Context, member string) bool {
	GinkgoHelper()
	pvc := &corev1.PersistentVolumeClaim{}
	err := w.k.Get(ctx, client.ObjectKey{Namespace: w.cluster.Namespace, Name: volumeOf(member)}, pvc)
	switch {
	case apierrors.IsNotFound(err):
		w.addVolume(ctx, member)
		delete(w.removed, member)
		return true
	case err != nil:
		Fail(fmt.Sprintf("reading the volume claim of %s: %v", member, err))
	case pvc.DeletionTimestamp != nil:
		return false
	case w.removed[member] && w.checked():
		w.violate("%s is created on the volume claim %s of a member removed from Raft: its old data rejoins", member, pvc.Name)
	}
	return true
}

// kubelet makes pods Ready one step after their creation; OpenBao on a new member
// joins Raft as a non-voter.
func (w *scalingWorld) kubelet(ctx context.Context) {
	GinkgoHelper()
	for i := range int32(scalingOrdinals) {
		name := w.member(i)
		p := w.pods[name]
		if p == nil || podReady(p) || w.createdAt[name] >= w.stepN {
			continue
		}
		if w.lost && name != w.peers {
			// No leader to join: OpenBao on a new member keeps trying, never Ready.
			continue
		}
		w.setReady(ctx, p, true)
		if w.lost {
			// The survivor starts on peers.json: the only voter, and the leader.
			w.raft = map[string]bool{name: true}
			w.leaders = append(w.leaders, leaderChange{pass: w.pass, to: name})
			w.leader, w.lost, w.election = name, false, true
			w.bao.SetError(openbaofake.MethodAutopilotState, nil)
			continue
		}
		if _, in := w.raft[name]; !in {
			w.raft[name], w.joinedAt[name] = false, w.stepN
		}
	}
}

// loseMajority deletes the volume claims and pods of members at once (a zone lost
// with its local disks): the remaining voters are fewer than a majority, so there is
// no leader and autopilot cannot be read until a recovery.
func (w *scalingWorld) loseMajority(ctx context.Context, members []string) {
	GinkgoHelper()
	for _, m := range members {
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(w.k.Get(ctx, client.ObjectKey{Namespace: w.cluster.Namespace, Name: volumeOf(m)}, pvc)).To(Succeed())
		Expect(w.k.Delete(ctx, pvc)).To(Succeed())
		Expect(client.IgnoreNotFound(w.k.Delete(ctx, w.pods[m], client.GracePeriodSeconds(0)))).To(Succeed())
		delete(w.pods, m)
	}
	w.lost, w.leader = true, ""
	w.bao.SetError(openbaofake.MethodAutopilotState, errors.New("no leader"))
}

// volumeProtection is the PVC protection controller: a claim being deleted goes
// once no pod uses it.
func (w *scalingWorld) volumeProtection(ctx context.Context) {
	GinkgoHelper()
	pvcs := &corev1.PersistentVolumeClaimList{}
	Expect(w.k.List(ctx, pvcs, client.InNamespace(w.cluster.Namespace))).To(Succeed())
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if pvc.DeletionTimestamp == nil || w.pods[strings.TrimPrefix(pvc.Name, "data-")] != nil || len(pvc.Finalizers) == 0 {
			continue
		}
		pvc.Finalizers = nil
		Expect(client.IgnoreNotFound(w.k.Update(ctx, pvc))).To(Succeed())
	}
}

// publishScaling makes OpenBao's answers follow the pods and the Raft configuration.
func (w *scalingWorld) publishScaling() {
	var names []string
	for i := range int32(scalingOrdinals) {
		names = append(names, w.member(i))
	}
	w.publishRaft(func(string) string { return restartFrom }, names)
}

// publishRaft sets autopilot state from the Raft configuration (a voter without a
// Ready pod is unhealthy and left; a non-voter is healthy and caught up one step
// after it joined; right after an election the others are left with index 0), and
// the sys/health answer of each member in members: its version when its pod is
// Ready, connection refused otherwise.
func (w *scalingWorld) publishRaft(versionOf func(member string) string, members []string) {
	st := openbao.AutopilotState{Leader: w.leader, Servers: map[string]openbao.AutopilotServer{}}
	all := true
	voters, healthy := 0, 0
	for name, voter := range w.raft {
		ready := w.ready(name)
		srv := openbao.AutopilotServer{ID: name, Name: name, NodeStatus: "alive", Version: versionOf(name)}
		if voter {
			if ready {
				w.lastIndex[name] = w.index
			}
			srv.Status, srv.NodeType, srv.Healthy, srv.LastIndex = openbao.AutopilotStatusVoter, "voter", ready, w.lastIndex[name]
			if name == w.leader {
				srv.Status = openbao.AutopilotStatusLeader
			}
			st.Voters = append(st.Voters, name)
			voters++
			if ready {
				healthy++
			}
		} else {
			caughtUp := ready && w.stepN > w.joinedAt[name]
			srv.Status, srv.NodeType, srv.Healthy, srv.LastIndex = openbao.AutopilotStatusNonVoter, "non-voter", caughtUp, joiningIndex
			if caughtUp {
				// Healthy since the step after it joined (autopilot's stable_since): a
				// member that joins at rest is promoted once it was for PromoteAfter.
				srv.LastIndex = w.index
				srv.StableSince = w.clock.Now().Add(-time.Duration(w.stepN-w.joinedAt[name]-1) * time.Second)
			}
			st.NonVoters = append(st.NonVoters, name)
		}
		if !ready {
			// No heartbeat: OpenBao tells autopilot the node left.
			srv.NodeStatus = "left"
		}
		if w.election && name != w.leader {
			srv.NodeStatus, srv.LastIndex = "left", 0
		}
		all = all && srv.Healthy
		st.Servers[name] = srv
	}
	slices.Sort(st.Voters)
	slices.Sort(st.NonVoters)
	st.Healthy = all && !w.election
	st.FailureTolerance = max(0, healthy-(voters/2+1))
	w.election = false
	w.bao.SetAutopilotState(st)

	n := workload.NamesFor(w.cluster)
	for _, name := range members {
		addr := fmt.Sprintf("https://%s.%s.%s.svc:%d", name, n.HeadlessService(), w.cluster.Namespace, workload.APIPort)
		if w.ready(name) {
			w.bao.SetHealthError(addr, nil)
			w.bao.SetHealth(addr, openbao.Health{Initialized: true, Standby: name != w.leader, Version: versionOf(name)})
			w.bao.SetReplication(addr, openbao.Replication{AppendEntries: 1}) // the leader reaches it
		} else {
			w.bao.SetHealthError(addr, errors.New("connection refused"))
		}
	}
}

// voters counts the voters of the Raft configuration.
func (w *scalingWorld) voters() int {
	n := 0
	for _, v := range w.raft {
		if v {
			n++
		}
	}
	return n
}

// raftMembers lists the Raft configuration, "name (voter|non-voter)", sorted.
func (w *scalingWorld) raftMembers() []string {
	var out []string
	for name, voter := range w.raft {
		kind := "non-voter"
		if voter {
			kind = "voter"
		}
		out = append(out, name+" ("+kind+")")
	}
	slices.Sort(out)
	return out
}

// withoutRepeats drops consecutive repeats: an action whose outcome a crash hid is
// taken again.
func withoutRepeats(in []string) []string {
	var out []string
	for _, s := range in {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}
