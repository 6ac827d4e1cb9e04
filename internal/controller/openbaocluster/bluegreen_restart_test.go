package openbaocluster_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao/openbaofake"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// These specs drive the adminops reconciler pass by pass through a whole blue-green
// upgrade of 3 members against a real API server, and kill the operator after any
// pass that recorded an intent or acted (a pass that only rewrote a message loses
// nothing), with the crash model of the other restart specs: the pass
// took its action (created green's StatefulSet or an executor Job, switched the
// client Service, deleted blue) and died before its status write. The world
// (blueGreenWorld) checks its invariants at every step; after each run green must be
// the whole cluster, with one election, and the disruptive actions those of the
// reference run, an action repeated only while its outcome was not yet visible.
var _ = Describe("Blue-green upgrades across operator restarts", Ordered, ContinueOnFailure, func() {
	var k client.WithWatch
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())

	BeforeAll(func() { k = isolatedAPIServer() })

	It("upgrades 3 members with one election onto green, whichever pass the operator dies after", func() {
		want := []string{
			"create green",
			"promote <green>-0", "promote <green>-1", "promote <green>-2",
			"demote bao-0", "demote bao-2",
			"stepdown bao-1",
			"switch the client Service to <green>",
			"removepeer bao-0", "removepeer bao-2", "removepeer bao-1",
			"delete StatefulSet bao",
			"delete volume bao-0", "delete volume bao-1", "delete volume bao-2",
		}
		crashes := crashAfterEveryIntent("blue-green", "bg",
			func(ns string, crashAt int) *blueGreenWorld { return runBlueGreen(ctx, k, ns, crashAt) },
			func(w *blueGreenWorld, crashAt int) { expectBlueGreen(ctx, w, crashAt, want) })
		Expect(crashes).To(BeNumerically(">=", 30), "the crash points cover every intent and action of the upgrade")
	})

	It("rolls back from DemoteBlue to blue alone, with no election, whichever pass the operator dies after", func() {
		want := []string{
			"create green",
			"promote <green>-0", "promote <green>-1", "promote <green>-2",
			"demote bao-0",
			// The rollback, requested once bao-0 is a non-voter:
			"promote bao-0",
			"demote <green>-0", "demote <green>-1", "demote <green>-2",
			"removepeer <green>-0", "removepeer <green>-1", "removepeer <green>-2",
			"delete StatefulSet <green>",
			"delete volume <green>-0", "delete volume <green>-1", "delete volume <green>-2",
		}
		afterFirstDemotion := func(w *blueGreenWorld, c *baov1.OpenBaoCluster) bool {
			bg := c.Status.BlueGreen
			voter, in := w.raft["bao-0"]
			return bg != nil && bg.Phase == baov1.BlueGreenDemoteBlue && in && !voter
		}
		crashes := crashAfterEveryIntent("rollback", "rb",
			func(ns string, crashAt int) *blueGreenWorld {
				return runBlueGreenWith(ctx, k, ns, crashAt, afterFirstDemotion)
			},
			func(w *blueGreenWorld, crashAt int) { expectRolledBack(ctx, w, crashAt, want) })
		Expect(crashes).To(BeNumerically(">=", 30), "the crash points cover every intent and action of the upgrade and its rollback")
	})
})

// crashAfterEveryIntent runs a reference run (no crash), checks it, then one run per
// pass that recorded an intent or acted, crashing after it, and checks each. A
// crash loses what the pass wrote: only those passes can change what follows;
// losing a message changes nothing. It returns how many crash runs it made.
func crashAfterEveryIntent(what, prefix string, run func(ns string, crashAt int) *blueGreenWorld, expect func(w *blueGreenWorld, crashAt int)) int {
	GinkgoHelper()
	ref := run(prefix+"ref", -1)
	expect(ref, -1)
	passes := ref.loopPasses
	GinkgoWriter.Printf("%s reference run: %d passes, actions %v%s\n", what, passes, ref.whats(), ref.history())
	var wg sync.WaitGroup
	slots := make(chan struct{}, scalingWorkers)
	crashes := 0
	for crashAt := range passes {
		if !slices.Contains(ref.writes[crashAt], noteIntent) && !slices.ContainsFunc(ref.disruptions, func(d disruption) bool { return d.pass == crashAt }) {
			continue
		}
		crashes++
		wg.Go(func() {
			defer GinkgoRecover()
			slots <- struct{}{}
			defer func() { <-slots }()
			w := run(fmt.Sprintf("%sk%d", prefix, crashAt), crashAt)
			GinkgoWriter.Printf("%s: crash after pass %2d (%s): %d passes, actions %v\n", what, crashAt, ref.describePass(crashAt), w.loopPasses, w.whats())
			expect(w, crashAt)
		})
	}
	wg.Wait()
	return crashes
}

// noteIntent marks a pass whose status write changed the upgrade's intent.
const noteIntent = "recorded an intent"

// intentOf is what a crash could lose of a cluster's status beyond messages: the
// phase, the step and its attempts, promotion, sync and leadership marks, the serving
// StatefulSet, the version and whether an upgrade runs.
func intentOf(c *baov1.OpenBaoCluster) string {
	st := c.Status
	key := fmt.Sprintf("%s|%s|%t|%t", st.StatefulSet, st.CurrentVersion, st.Upgrade == nil, st.OperationLock == nil)
	if up := st.Upgrade; up != nil && up.Failure != nil {
		key += "|failed " + string(up.Failure.Reason)
	}
	if bg := st.BlueGreen; bg != nil {
		key += fmt.Sprintf("|%s|%s|%d|%t|%t", bg.Phase, bg.Promotion, bg.JobFailures, bg.SyncedSince != nil, bg.LeaderMovedAt != nil)
		if s := bg.CurrentStep; s != nil {
			key += fmt.Sprintf("|%s %s %d/%d", s.Action, s.Pod, s.Attempts, s.MaxAttempts)
		}
	}
	return key
}

// blueGreenWorld simulates everything around the adminops reconciler during a
// blue-green upgrade:
//
//   - the StatefulSet controller (OrderedReady): the lowest missing pod of each
//     StatefulSet is created, with a volume claim, once every lower one is Ready;
//     the pods of a deleted StatefulSet go one step later (the garbage collector);
//   - the kubelet: a new pod is Ready one step after its creation;
//   - OpenBao: a Ready pod that is not in the Raft configuration joins as a
//     non-voter, healthy and caught up one step later; each member reports the
//     version of its image; autopilot state follows the Raft configuration, and the
//     first read after an election lists the other servers as left with index 0;
//   - the executor: a Job completes at its second step and acts as in the scaling
//     world; a step-down hands leadership to the lowest-ordinal green voter;
//   - the PVC protection controller: a claim being deleted goes once no pod uses it.
//
// It checks at every step: a majority of the voters healthy; no Job for what is
// already done; no promotion of a blue member (blue is never promoted again); no
// demotion or removal of the leader.
type blueGreenWorld struct {
	*scalingWorld
	// green is green's StatefulSet, once created.
	green string
	// rollbackWhen, when set, asks for a rollback (baokeeper.dev/rollback) before
	// the first pass whose stored status and world it holds for.
	rollbackWhen func(c *baov1.OpenBaoCluster) bool
	// rollbackAsked and rollingBack: the request was made; the stored status is in
	// a rollback phase.
	rollbackAsked, rollingBack bool
}

func (w *blueGreenWorld) greenName(s string) string {
	if w.green == "" {
		return s
	}
	return strings.ReplaceAll(s, w.green, "<green>")
}

// runBlueGreen creates a cluster of 3 Ready voting members on restartFrom with
// bao-1 leading, seeds currentVersion with a first pass, asks for restartTo under
// BlueGreen with autoPromote and runs passes of a new adminops reconciler, each
// followed by a world step, until the upgrade completed; then a few more.
func runBlueGreen(ctx context.Context, k client.WithWatch, ns string, crashAt int) *blueGreenWorld {
	GinkgoHelper()
	return runBlueGreenWith(ctx, k, ns, crashAt, nil)
}

// runBlueGreenWith is runBlueGreen, asking for a rollback once rollbackWhen holds;
// the run ends when the upgrade completed or was rolled back.
func runBlueGreenWith(ctx context.Context, k client.WithWatch, ns string, crashAt int, rollbackWhen func(w *blueGreenWorld, c *baov1.OpenBaoCluster) bool) *blueGreenWorld {
	GinkgoHelper()
	c := createRestartCluster(ctx, k, ns, 3)
	u := &upgradeWorld{
		k: k, cluster: c, bao: &openbaofake.Fake{}, targetVersion: restartTo,
		clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		pods:  map[string]*corev1.Pod{}, index: scalingStartIndex, lastIndex: map[string]uint64{},
		pass: -1, crashAt: -1, writes: map[int][]string{},
	}
	w := &blueGreenWorld{scalingWorld: &scalingWorld{upgradeWorld: u, raft: map[string]bool{}, createdAt: map[string]int{},
		joinedAt: map[string]int{}, removed: map[string]bool{}, fellOff: map[string]bool{}}}
	if rollbackWhen != nil {
		w.rollbackWhen = func(c *baov1.OpenBaoCluster) bool { return rollbackWhen(w, c) }
	}
	w.leader = "bao-1"
	for i := range 3 {
		w.raft[fmt.Sprintf("bao-%d", i)] = true
	}
	w.bao.SetError(openbaofake.MethodAutopilotState, errors.New("autopilot state is not ready"))
	for range 7 {
		w.bgStep(ctx)
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}
	_, err := w.reconciler(k).Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
	Expect(c.Status.CurrentVersion).To(Equal(restartFrom), "the first pass seeds currentVersion")
	w.bao.SetError(openbaofake.MethodAutopilotState, nil)
	w.bgStep(ctx)

	c.Spec.Version = restartTo
	c.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy
	c.Spec.Upgrade.BlueGreen.AutoPromote = true
	c.Spec.Upgrade.BlueGreen.MinSyncDuration = baov1.DurationOf(2 * time.Second)
	Expect(k.Update(ctx, c)).To(Succeed())
	w.crashAt = crashAt
	for w.pass = 0; !w.done; w.pass++ {
		if w.pass == scalingMaxPasses {
			Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
			w.incomplete = fmt.Sprintf("the upgrade did not complete in %d passes: %s", scalingMaxPasses, c.Status.Message)
			if up := c.Status.Upgrade; up != nil {
				w.incomplete += "; waiting for: " + up.WaitingFor
			}
			break
		}
		if len(w.violations) > 0 {
			w.incomplete = "stopped at the first broken invariant"
			break
		}
		w.writes[w.pass] = nil
		Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
		if w.rollbackWhen != nil && !w.rollbackAsked && w.rollbackWhen(c) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[baov1.AnnotationRollback] = "1"
			Expect(k.Update(ctx, c)).To(Succeed())
			w.rollbackAsked = true
			w.note("asked for a rollback")
		}
		before := intentOf(c)
		_, err := w.reconciler(w.bgClient(k)).Reconcile(ctx, req)
		if w.pass == w.crashAt {
			Expect(err).To(MatchError(errOperatorCrashed), "%s: pass %d", ns, w.pass)
		} else {
			Expect(err).NotTo(HaveOccurred(), "%s: pass %d", ns, w.pass)
		}
		Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
		if intentOf(c) != before {
			w.note(noteIntent)
		}
		w.bgStep(ctx)
	}
	w.loopPasses = w.pass
	if w.incomplete == "" {
		for range scalingAfterPasses {
			w.writes[w.pass] = nil
			_, err := w.reconciler(w.bgClient(k)).Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred(), "%s: pass %d, after the upgrade completed", ns, w.pass)
			w.bgStep(ctx)
			w.pass++
		}
	}
	return w
}

// bgClient is the reconciler's client: the API server's, reporting the
// reconciler's disruptive writes to the world, and failing the status write of pass
// crashAt.
func (w *blueGreenWorld) bgClient(base client.WithWatch) client.Client {
	ns := w.cluster.Namespace
	return interceptor.NewClient(base, withStatusCrash(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if oc, ok := obj.(*baov1.OpenBaoCluster); ok && err == nil {
				if oc.Status.Upgrade != nil {
					w.started = true
				}
				w.rollingBack = oc.Status.BlueGreen != nil && bluegreen.IsRollback(oc.Status.BlueGreen.Phase)
				w.done = w.started && oc.Status.Upgrade == nil && (oc.Status.CurrentVersion == restartTo || oc.Status.LastRollback != nil)
			}
			return err
		},
		Patch: w.mailbox.patches(w.cluster, func(job *batchv1.Job) { w.bgJobCreated(job) }),
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			if isServingExecutor(obj) {
				return err
			}
			switch o := obj.(type) {
			case *batchv1.Job:
				switch {
				case err == nil:
					w.bgJobCreated(o)
				case apierrors.IsAlreadyExists(err):
					w.note("found Job " + w.greenName(withoutOperation(o)))
				}
			case *appsv1.StatefulSet:
				if err == nil {
					w.green = o.Name
					w.disrupt("create green")
				} else if apierrors.IsAlreadyExists(err) {
					w.note("found green's StatefulSet")
				}
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
				w.disrupt("delete volume " + w.greenName(strings.TrimPrefix(o.Name, "data-")))
			case *appsv1.StatefulSet:
				w.disrupt("delete StatefulSet " + w.greenName(o.Name))
			case *corev1.Pod:
				w.violate("pass %d deleted pod %s: a blue-green upgrade deletes no pod itself", w.pass, o.Name)
			case *batchv1.Job:
				w.note("deleted Job " + withoutOperation(o))
			}
			return nil
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			before := &corev1.Service{}
			_ = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bao"}, before)
			if err := c.Apply(ctx, obj, opts...); err != nil {
				return err
			}
			after := &corev1.Service{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bao"}, after); err == nil &&
				after.Spec.Selector[workload.LabelInstance] != before.Spec.Selector[workload.LabelInstance] {
				if w.leader == "" || !strings.HasPrefix(w.leader, w.green+"-") {
					w.violate("pass %d switched the client Service to green while %s leads", w.pass, w.leader)
				}
				w.disrupt("switch the client Service to " + w.greenName(after.Spec.Selector[workload.LabelInstance]))
			} else {
				w.note("applied an object")
			}
			return nil
		},
	}, w.statusCrash))
}

// bgJobCreated records a new executor Job and checks it: its outcome must not be
// visible yet, a promotion is of a green member, and a demotion or removal is never
// of the leader.
func (w *blueGreenWorld) bgJobCreated(job *batchv1.Job) {
	step, member := job.Labels[executorjob.LabelStep], job.Labels[executorjob.LabelMember]
	voter, in := w.raft[member]
	green := w.green != "" && strings.HasPrefix(member, w.green+"-")
	switch step {
	case executorjob.StepPromote:
		if !green && !w.rollingBack {
			w.violate("pass %d created the promote Job %s for blue member %s outside a rollback", w.pass, job.Name, member)
		}
		if green && w.rollingBack {
			w.violate("pass %d created the promote Job %s for green member %s during a rollback", w.pass, job.Name, member)
		}
		if in && voter {
			w.violate("pass %d created the promote Job %s for %s, already a voter", w.pass, job.Name, member)
		}
	case executorjob.StepDemote:
		if !in || !voter || member == w.leader {
			w.violate("pass %d created the demote Job %s for %s (voter %t, leader %s)", w.pass, job.Name, member, voter, w.leader)
		}
	case executorjob.StepRemovePeer:
		if !in || member == w.leader {
			w.violate("pass %d created the removepeer Job %s for %s (in Raft %t, leader %s)", w.pass, job.Name, member, in, w.leader)
		}
	case executorjob.StepStepDown:
		if w.leader != member {
			w.violate("pass %d created the stepdown Job %s for %s, which does not lead (%s does)", w.pass, job.Name, member, w.leader)
		}
	default:
		w.violate("pass %d created the Job %s of an unexpected step %q", w.pass, job.Name, step)
	}
	w.note("created Job " + w.greenName(withoutOperation(job)))
	w.disrupt(step + " " + w.greenName(member))
	w.execJobs = append(w.execJobs, &execJob{name: job.Name, step: step, member: member})
}

// bgStep is one step of the world between two passes.
func (w *blueGreenWorld) bgStep(ctx context.Context) {
	GinkgoHelper()
	w.clock.Step(time.Second)
	w.index += 10
	w.stepN++
	w.bgRunJobs(ctx)
	w.bgStatefulSets(ctx)
	w.bgKubelet(ctx)
	w.volumeProtection(ctx)
	w.checkMajority("at the end of the step")
	w.bgPublish()
}

// bgRunJobs completes each executor Job at its second step, acting on Raft.
func (w *blueGreenWorld) bgRunJobs(ctx context.Context) {
	GinkgoHelper()
	for _, j := range w.execJobs {
		if j.finished {
			continue
		}
		if j.steps++; j.steps < 2 {
			continue
		}
		j.finished = true
		if j.step == executorjob.StepStepDown && j.member == w.leader {
			next := ""
			for _, name := range w.sortedRaft() {
				if name != w.leader && w.raft[name] && w.ready(name) {
					next = name
					break
				}
			}
			Expect(next).NotTo(BeEmpty(), "no voter can take over from %s", w.leader)
			w.leaders = append(w.leaders, leaderChange{pass: w.pass, from: w.leader, to: next})
			w.leader, w.election = next, true
		} else if j.step != executorjob.StepStepDown {
			Expect(w.execute(j)).To(BeEmpty(), "executor Job %s", j.name)
		}
		finishStep(ctx, w.k, w.cluster, j.name, w.clock.Now(), "")
	}
}

// sortedRaft lists the Raft servers, green's first (by name), so that a step-down
// picks a green voter when one can lead.
func (w *blueGreenWorld) sortedRaft() []string {
	var out []string
	for name := range w.raft {
		out = append(out, name)
	}
	slices.SortFunc(out, func(a, b string) int {
		ga, gb := w.green != "" && strings.HasPrefix(a, w.green), w.green != "" && strings.HasPrefix(b, w.green)
		if ga != gb {
			if ga {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// bgStatefulSets is the StatefulSet controller and the garbage collector.
func (w *blueGreenWorld) bgStatefulSets(ctx context.Context) {
	GinkgoHelper()
	list := &appsv1.StatefulSetList{}
	Expect(w.k.List(ctx, list, client.InNamespace(w.cluster.Namespace))).To(Succeed())
	exists := map[string]bool{}
	for i := range list.Items {
		sts := &list.Items[i]
		exists[sts.Name] = true
		for o := range *sts.Spec.Replicas {
			name := fmt.Sprintf("%s-%d", sts.Name, o)
			if p := w.pods[name]; p != nil || (w.removed[name] && w.checked()) {
				if p != nil && !podReady(p) {
					break // OrderedReady: the next pod waits for this one
				}
				continue
			}
			if _, err := w.volumeOf(ctx, name); apierrors.IsNotFound(err) {
				w.addVolume(ctx, name)
			}
			w.pods[name] = w.createPodOf(ctx, sts, name)
			w.createdAt[name] = w.stepN
			break
		}
		if sts.Status.ObservedGeneration != sts.Generation {
			sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: *sts.Spec.Replicas, CurrentRevision: sts.Name + "-rev1"}
			Expect(w.k.Status().Update(ctx, sts)).To(Succeed())
		}
	}
	for name, p := range w.pods {
		if owner := p.Labels[workload.LabelInstance]; !exists[owner] {
			Expect(client.IgnoreNotFound(w.k.Delete(ctx, p, client.GracePeriodSeconds(0)))).To(Succeed())
			delete(w.pods, name)
			if _, in := w.raft[name]; in && w.checked() {
				w.violate("%s's pod went with its StatefulSet while it is still in Raft", name)
			}
		}
	}
}

func (w *blueGreenWorld) volumeOf(ctx context.Context, member string) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	return pvc, w.k.Get(ctx, client.ObjectKey{Namespace: w.cluster.Namespace, Name: volumeOf(member)}, pvc)
}

func (w *blueGreenWorld) createPodOf(ctx context.Context, sts *appsv1.StatefulSet, name string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.cluster.Namespace, Name: name, Labels: sts.Spec.Template.Labels},
		Spec:       *sts.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: volumeOf(name)}}})
	Expect(w.k.Create(ctx, pod)).To(Succeed())
	return pod
}

// bgKubelet makes pods Ready one step after their creation; a new member joins Raft
// as a non-voter.
func (w *blueGreenWorld) bgKubelet(ctx context.Context) {
	GinkgoHelper()
	for name, p := range w.pods {
		if podReady(p) || w.createdAt[name] >= w.stepN {
			continue
		}
		w.setReady(ctx, p, true)
		if _, in := w.raft[name]; !in && w.checked() {
			w.raft[name], w.joinedAt[name] = false, w.stepN
		}
	}
}

// bgPublish makes OpenBao's answers follow the pods and the Raft configuration; each
// member reports the version of its image.
func (w *blueGreenWorld) bgPublish() {
	versionOf := func(name string) string {
		if p := w.pods[name]; p != nil {
			img := workload.ContainerImage(&p.Spec)
			return img[strings.LastIndex(img, ":")+1:]
		}
		return restartFrom
	}
	w.publishRaft(versionOf, slices.Collect(maps.Keys(w.pods)))
}

// expectBlueGreen asserts what must hold after every run, crash or not.
func expectBlueGreen(ctx context.Context, w *blueGreenWorld, crashAt int, want []string) {
	GinkgoHelper()
	name := w.cluster.Namespace
	Expect(w.violations).To(BeEmpty(), "%s: invariants broken; actions %v; passes:%s", name, w.whats(), w.history())
	Expect(w.incomplete).To(BeEmpty(), "%s: passes:%s", name, w.history())
	for _, d := range w.disruptions {
		Expect(d.pass).To(BeNumerically("<", w.loopPasses), "%s: pass %d, after the upgrade completed, did %s", name, d.pass, d.what)
	}
	c := &baov1.OpenBaoCluster{}
	Expect(w.k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	Expect(c.Status.Upgrade).To(BeNil(), name)
	Expect(c.Status.BlueGreen).To(BeNil(), name)
	Expect(c.Status.OperationLock).To(BeNil(), "%s: the operation lock", name)
	Expect(c.Status.CurrentVersion).To(Equal(restartTo), name)
	Expect(c.Status.StatefulSet).To(Equal(w.green), "%s: green serves", name)
	Expect(c.Status.History).To(HaveLen(1), "%s: one history entry, written once whichever pass the operator died after", name)
	Expect(c.Status.History[0].Outcome).To(Equal(baov1.OutcomeSucceeded), name)
	Expect(c.Status.History[0].Strategy).To(Equal(baov1.BlueGreenStrategy), name)
	Expect(c.Status.History[0].LongestStep).NotTo(BeNil(), "%s: blue-green's steps are counted", name)

	var voters []string
	for i := range 3 {
		voters = append(voters, w.green+"-"+strconv.Itoa(i)+" (voter)")
	}
	Expect(w.raftMembers()).To(Equal(voters), "%s: the Raft configuration is exactly green's members", name)
	Expect(w.leaders).To(HaveLen(1), "%s: one election", name)
	Expect(w.leaders[0].to).To(HavePrefix(w.green+"-"), "%s: onto a green member", name)

	sets := &appsv1.StatefulSetList{}
	Expect(w.k.List(ctx, sets, client.InNamespace(name))).To(Succeed())
	Expect(sets.Items).To(HaveLen(1), "%s: blue's StatefulSet is gone", name)
	Expect(sets.Items[0].Name).To(Equal(w.green))
	pvcs := &corev1.PersistentVolumeClaimList{}
	Expect(w.k.List(ctx, pvcs, client.InNamespace(name))).To(Succeed())
	for _, pvc := range pvcs.Items {
		Expect(pvc.Name).To(HavePrefix("data-"+w.green+"-"), "%s: only green's volume claims are left", name)
	}
	svc := &corev1.Service{}
	Expect(w.k.Get(ctx, client.ObjectKey{Namespace: name, Name: "bao"}, svc)).To(Succeed())
	Expect(svc.Spec.Selector).To(HaveKeyWithValue(workload.LabelInstance, w.green), "%s: the client Service selects green", name)
	Expect(upgrade.SameVersion(c.Status.CurrentVersion, restartTo)).To(BeTrue())

	if crashAt < 0 {
		Expect(w.whats()).To(Equal(want), "%s: disruptive actions, in order", name)
	} else {
		Expect(withoutRepeats(w.whats())).To(Equal(want), "%s: disruptive actions, in order, an action at most repeated; got %v", name, w.whats())
	}
}

// expectRolledBack asserts what must hold after a rolled-back run, crash or not:
// blue alone, every member a voter, no election, green and its volumes gone, and
// the rollback recorded with currentVersion unchanged.
func expectRolledBack(ctx context.Context, w *blueGreenWorld, crashAt int, want []string) {
	GinkgoHelper()
	name := w.cluster.Namespace
	Expect(w.violations).To(BeEmpty(), "%s: invariants broken; actions %v; passes:%s", name, w.whats(), w.history())
	Expect(w.incomplete).To(BeEmpty(), "%s: passes:%s", name, w.history())
	Expect(w.rollbackAsked).To(BeTrue(), "%s: the rollback was asked for", name)
	for _, d := range w.disruptions {
		Expect(d.pass).To(BeNumerically("<", w.loopPasses), "%s: pass %d, after the rollback completed, did %s", name, d.pass, d.what)
	}
	c := &baov1.OpenBaoCluster{}
	Expect(w.k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	Expect(c.Status.Upgrade).To(BeNil(), name)
	Expect(c.Status.BlueGreen).To(BeNil(), name)
	Expect(c.Status.OperationLock).To(BeNil(), "%s: the operation lock", name)
	Expect(c.Status.CurrentVersion).To(Equal(restartFrom), "%s: currentVersion unchanged", name)
	Expect(c.Status.LastRollback).NotTo(BeNil(), name)
	Expect(c.Status.LastRollback.TargetVersion).To(Equal(restartTo))
	Expect(c.Status.LastRollback.Reason).To(ContainSubstring("baokeeper.dev/rollback=1"))
	Expect(c.Status.History).To(HaveLen(1), "%s: one history entry, written once whichever pass the operator died after", name)
	Expect(c.Status.History[0].Outcome).To(Equal(baov1.OutcomeRolledBack), name)
	Expect(c.Status.History[0].Reason).To(ContainSubstring("baokeeper.dev/rollback=1"), name)
	Expect(meta.IsStatusConditionTrue(c.Status.Conditions, string(baov1.ConditionRolledBack))).To(BeTrue(), "%s: the RolledBack condition", name)
	Expect(c.Status.StatefulSet).To(BeElementOf("", "bao"), "%s: blue serves", name)

	Expect(w.raftMembers()).To(Equal([]string{"bao-0 (voter)", "bao-1 (voter)", "bao-2 (voter)"}), "%s: the Raft configuration is exactly blue's members", name)
	Expect(w.leaders).To(BeEmpty(), "%s: no election", name)
	Expect(w.leader).To(Equal("bao-1"))

	sets := &appsv1.StatefulSetList{}
	Expect(w.k.List(ctx, sets, client.InNamespace(name))).To(Succeed())
	Expect(sets.Items).To(HaveLen(1), "%s: green's StatefulSet is gone", name)
	Expect(sets.Items[0].Name).To(Equal("bao"))
	pvcs := &corev1.PersistentVolumeClaimList{}
	Expect(w.k.List(ctx, pvcs, client.InNamespace(name))).To(Succeed())
	for _, pvc := range pvcs.Items {
		Expect(pvc.Name).NotTo(HavePrefix("data-"+w.green+"-"), "%s: green's volume claims are gone", name)
	}
	// This world has no workload reconciler: the client Service exists only if the
	// upgrade pointed it somewhere, which a rollback never does.
	svc := &corev1.Service{}
	Expect(apierrors.IsNotFound(w.k.Get(ctx, client.ObjectKey{Namespace: name, Name: "bao"}, svc))).To(BeTrue(), "%s: the client Service was never switched", name)

	if crashAt < 0 {
		Expect(w.whats()).To(Equal(want), "%s: disruptive actions, in order", name)
	} else {
		Expect(withoutRepeats(w.whats())).To(Equal(want), "%s: disruptive actions, in order, an action at most repeated; got %v", name, w.whats())
	}
}
