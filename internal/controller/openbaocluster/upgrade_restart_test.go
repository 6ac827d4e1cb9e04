package openbaocluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
	"github.com/baokeeper/baokeeper/test/testenv"
)

const (
	restartFrom = "2.4.0"
	restartTo   = "2.4.1"
)

// These specs drive the upgrade reconciler pass by pass and kill the operator between
// any two steps of a rolling upgrade.
//
// Crash model: the operator dies after pass k took its action (deleted a pod, created
// a step-down Job, applied the template) and before that pass's status write, which
// is the last thing a pass does. Nothing the pass decided is persisted, and the pass's
// result is lost; the world goes on for a step, and a new Reconciler, with nothing
// carried over but what the API server and OpenBao hold, runs the next pass. This is the crash that tests persist-then-act:
// a reconciler that relied on its own status to know what it had already done would
// act a second time. A crash before the action is the same as a pass that never ran,
// and a crash after the status write the same as a clean pass followed by a new
// Reconciler, which every pass here is anyway.
//
// They use an API server of their own: the suite's manager runs the upgrade reconciler
// on every OpenBaoCluster of its API server, and a second reconciler acting on the
// same cluster would make what happens at pass k depend on timing. Here nothing runs
// but the passes the test makes and the world it simulates in between
// (upgradeWorld), on a fake clock, so each run is the same sequence every time.
var _ = Describe("Rolling upgrade across operator restarts", Ordered, ContinueOnFailure, func() {
	var k client.WithWatch
	// The runs go at once; their reconcilers' logs would only interleave.
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())

	BeforeAll(func() { k = isolatedAPIServer() })

	DescribeTable("replaces every member once, the leader last after one hand-off, whichever pass the operator dies after",
		func(handoff baov1.LeaderHandoff, replicas, leader int32, wantOrder []int32) {
			prefix := fmt.Sprintf("restart%d-%s", replicas, strings.ToLower(string(handoff)))
			crashAfterEveryStatusWrite(ctx, k, prefix, upgradeRun{replicas: replicas, leader: leader, handoff: handoff}, wantOrder)
		},
		Entry("3 members, leader ordinal 1, step-down", baov1.LeaderHandoffStepDown, int32(3), int32(1), []int32{2, 0, 1}),
		Entry("5 members, leader ordinal 2, step-down", baov1.LeaderHandoffStepDown, int32(5), int32(2), []int32{4, 3, 1, 0, 2}),
		Entry("3 members, leader ordinal 1, shutdown", baov1.LeaderHandoffShutdown, int32(3), int32(1), []int32{2, 0, 1}),
		Entry("5 members, leader ordinal 2, shutdown", baov1.LeaderHandoffShutdown, int32(5), int32(2), []int32{4, 3, 1, 0, 2}),
	)

	// A rollout of the pod template (here a restart token) is the same machine on the
	// image the members run: the same order, one hand-off, one member down at most,
	// whichever pass the operator dies after.
	It("rolls a pod-template change out to every member once, the leader last, whichever pass the operator dies after", func() {
		crashAfterEveryStatusWrite(ctx, k, "rollout", upgradeRun{replicas: 3, leader: 1, handoff: baov1.LeaderHandoffShutdown, rollout: true}, []int32{2, 0, 1})
	})

	// The quorum budget is checked when a member's step begins; its pod is deleted in a
	// later pass: the next one for a follower, after the step-down for the leader, and
	// after a restart possibly much later. A member that failed in between must hold
	// the deletion.
	DescribeTable("holds a deletion while another member is down, when that member failed after the step began",
		func(handoff baov1.LeaderHandoff, failAfter func(ref *upgradeWorld) int, member int32) {
			suffix := strings.ToLower(string(handoff))
			ref := runUpgrade(ctx, k, upgradeRun{ns: fmt.Sprintf("fail%d-%s-ref", member, suffix), replicas: 3, leader: 1, crashAt: -1, handoff: handoff})
			at := failAfter(ref)
			w := runUpgrade(ctx, k, upgradeRun{ns: fmt.Sprintf("fail%d-%s", member, suffix), replicas: 3, leader: 1, crashAt: -1, handoff: handoff,
				fail: &memberFailure{member: member, after: at, passes: 5}})
			expectSafeUpgrade(ctx, w, 1, []int32{2, 0, 1})
		},
		Entry("bao-0 fails after bao-2's step began", baov1.LeaderHandoffStepDown, func(ref *upgradeWorld) int { return ref.deletions()[0].pass - 1 }, int32(0)),
		Entry("bao-2, upgraded, fails while the leader steps down", baov1.LeaderHandoffStepDown, func(ref *upgradeWorld) int { return ref.jobs()[0].pass }, int32(2)),
		Entry("bao-2, upgraded, fails right before the leader's shutdown", baov1.LeaderHandoffShutdown,
			func(ref *upgradeWorld) int { d := ref.deletions(); return d[len(d)-1].pass - 2 }, int32(2)),
	)

	// An offline upgrade stops every member at once and starts each on the target:
	// whichever pass the operator dies after, each member's pod is deleted once,
	// only after the stop was recorded, and no step-down Job runs.
	It("upgrades offline, each member stopped once, whichever pass the operator dies after", func() {
		offlineCrashAfterEveryStatusWrite(ctx, k)
	})

	// A requested snapshot with retention is one operation of two executor Jobs (the
	// snapshot, the pruning): whichever pass the operator dies after, one Job of each,
	// one receipt, and the lock released.
	It("takes a requested snapshot and prunes once, whichever pass the operator dies after", func() {
		snapshotCrashAfterEveryStatusWrite(ctx, k)
	})

	// A cluster that starts from another cluster's snapshot: one restore Job, one
	// restart of its member, one rebind Job, whichever pass the operator dies after.
	It("restores a snapshot into a new cluster once, whichever pass the operator dies after", func() {
		restoreCrashAfterEveryStatusWrite(ctx, k)
	})

	// An in-place restore takes one restore Job and verifies every member, restarting
	// none, whichever pass the operator dies after.
	It("restores a snapshot in place once, whichever pass the operator dies after", func() {
		inPlaceRestoreCrashAfterEveryStatusWrite(ctx, k)
	})

	// An action the API server refuses (a permission the operator lacks) is said in
	// a Warning event, not only in the operator's log.
	It("says in an event why it cannot take a step the API server refuses", func() {
		got := actionRefused(ctx, k)
		Expect(got).To(ContainElement(And(HavePrefix("Warning ActionFailed "), ContainSubstring("forbidden"), ContainSubstring("retries with backoff"))), "events: %v", got)
	})

	// A restore drill creates one drill cluster, records its verdict and deletes it
	// with its volume and seal key, whichever pass the operator dies after.
	It("runs a restore drill once and leaves nothing behind, whichever pass the operator dies after", func() {
		drillCrashAfterEveryStatusWrite(ctx, k)
	})

	// A rehearsal creates one copy, upgrades it, records its verdict and deletes it,
	// touching no member of the cluster, whichever pass the operator dies after.
	It("rehearses an upgrade on one copy and touches nothing of the cluster, whichever pass the operator dies after", func() {
		rehearsalCrashAfterEveryStatusWrite(ctx, k, false)
	})

	// A rehearsal on request (baokeeper.dev/rehearse) does the same under the
	// operation lock, which it releases, and starts no upgrade.
	It("rehearses on request on one copy, releases the lock and starts no upgrade, whichever pass the operator dies after", func() {
		rehearsalCrashAfterEveryStatusWrite(ctx, k, true)
	})

	// The operation's serving executor may end while a request of its operation waits
	// (out of restarts, or idle just as the request lands): the next pass deletes it
	// and the one after starts it again, and the request is answered by the new one.
	It("starts the operation's executor again when it ended before answering: deleted, created again, and the upgrade completes", func() {
		w := runUpgrade(ctx, k, upgradeRun{ns: "serve-exit", replicas: 3, leader: 1, crashAt: -1, handoff: baov1.LeaderHandoffStepDown, exitServe: true})
		expectSafeUpgrade(ctx, w, 1, []int32{2, 0, 1})
		Expect(w.serveExited).To(BeTrue(), "the run ended a serving executor")
		var kinds []string
		for _, e := range w.serveLog {
			kinds = append(kinds, e.what)
			Expect(e.name).To(Equal(w.serveLog[0].name), "one operation, one executor name: %+v", w.serveLog)
		}
		Expect(kinds).To(HaveExactElements("created", "exited", "deleted", "created"),
			"the executor's life: created with the first request, ended, deleted by the next pass, created again: %+v", w.serveLog)
		Expect(w.serveLog[2].pass).To(Equal(w.serveLog[1].pass+1), "deleted by the pass after it ended: %+v", w.serveLog)
	})
})

// crashAfterEveryStatusWrite runs base without a crash (the reference run), then once
// per pass of it that wrote status, crashing after that pass, and checks each run:
// the passes before the crash are the reference run's, the upgrade is safe
// (expectSafeUpgrade) and it took as many step-down Jobs. The runs are independent (a
// namespace, a world and a clock each) and mostly wait on the API server: a few go at
// once.
func crashAfterEveryStatusWrite(ctx context.Context, k client.WithWatch, prefix string, base upgradeRun, wantOrder []int32) {
	GinkgoHelper()
	By("a reference run without a crash")
	run := base
	run.ns, run.crashAt = prefix+"-ref", -1
	ref := runUpgrade(ctx, k, run)
	expectSafeUpgrade(ctx, ref, base.leader, wantOrder)
	passes := len(ref.writes)
	GinkgoWriter.Printf("%s reference run: %d passes, %d step-down Job(s)%s\n", prefix, passes, len(ref.jobs()), ref.history())

	By(fmt.Sprintf("a run with a crash after each of the %d passes", passes))
	eachCrash(passes, ref.writes, restartWorkers, func(crashAt int) {
		run := base
		run.ns, run.crashAt = fmt.Sprintf("%s-k%d", prefix, crashAt), crashAt
		w := runUpgrade(ctx, k, run)
		for i := range crashAt {
			Expect(w.writes[i]).To(Equal(ref.writes[i]), "%s: up to the crash, pass %d is the reference run's", w.cluster.Namespace, i)
		}
		GinkgoWriter.Printf("%s: crash after pass %2d (%s): %d passes\n", prefix, crashAt, ref.describePass(crashAt), len(w.writes))
		expectSafeUpgrade(ctx, w, base.leader, wantOrder)
		Expect(w.jobs()).To(HaveLen(len(ref.jobs())), "%s: step-down Jobs, as many as in the reference run", w.cluster.Namespace)
	})
}

// restartWorkers is how many runs of a table entry go at once.
const restartWorkers = 4

// upgradeRun says how to run one upgrade.
type upgradeRun struct {
	// ns is the namespace of the run's cluster, created for it.
	ns string
	// replicas and leader are the cluster's size and the ordinal of its Raft leader.
	replicas, leader int32
	// crashAt is the pass whose status write fails; -1 for none.
	crashAt int
	// fail, when set, fails a member for a while.
	fail *memberFailure
	// handoff is the cluster's spec.upgrade.rolling.leaderHandoff.
	handoff baov1.LeaderHandoff
	// rollout changes the pod template (a restart token, as the workload loop sets
	// it) instead of spec.version: the members restart on the image they run.
	rollout bool
	// exitServe ends the operation's serving executor (failed, out of restarts) right
	// after the pass that first asked it for a step, before it answered.
	exitServe bool
	// offline upgrades with strategy Offline (a fresh pre-upgrade snapshot reused
	// under IfOlderThan, so no snapshot Job runs).
	offline bool
}

// memberFailure fails a member after a pass, for a number of passes.
type memberFailure struct {
	member        int32
	after, passes int
}

// runUpgrade creates, in a namespace of its own, a cluster at restartFrom with Ready
// members, changes spec.version to restartTo and runs passes of a new upgrade
// reconciler, each followed by a world step, until the upgrade completes.
func runUpgrade(ctx context.Context, k client.WithWatch, run upgradeRun) *upgradeWorld {
	GinkgoHelper()
	ns := run.ns
	c := createRestartCluster(ctx, k, ns, run.replicas)
	c.Spec.Upgrade.Rolling.LeaderHandoff = run.handoff
	if run.offline {
		c.Spec.Upgrade.Strategy = baov1.OfflineStrategy
		c.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotIfOlderThan, MaxAge: baov1.DurationOf(24 * time.Hour),
			S3: &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}
	}
	Expect(k.Update(ctx, c)).To(Succeed())

	target := restartTo
	if run.rollout {
		target = restartFrom
	}
	w := newUpgradeWorld(k, c, run.leader, target)
	w.rollout, w.offline = run.rollout, run.offline
	if run.offline {
		taken := metav1.NewTime(w.clock.Now())
		c.Status.LastSnapshot = &baov1.SnapshotReceipt{Location: "s3://snaps/" + ns + "/bao/x.snap", SHA256: restoreTestSHA, TakenAt: &taken, Version: restartFrom, RaftIndex: 90}
		Expect(k.Status().Update(ctx, c)).To(Succeed())
	}
	w.step(ctx) // pods created
	w.step(ctx) // and Ready
	for name, p := range w.pods {
		w.original[name] = p.UID
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}
	_, err := w.reconciler(k).Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
	Expect(c.Status.CurrentVersion).To(Equal(restartFrom), "the first pass seeds currentVersion")

	if run.rollout {
		// The workload loop puts an accepted restart token on the pod template.
		sts := &appsv1.StatefulSet{}
		Expect(k.Get(ctx, req.NamespacedName, sts)).To(Succeed())
		if sts.Spec.Template.Annotations == nil {
			sts.Spec.Template.Annotations = map[string]string{}
		}
		sts.Spec.Template.Annotations[baov1.TemplateAnnotationRestart] = "t1"
		Expect(k.Update(ctx, sts)).To(Succeed())
	} else {
		c.Spec.Version = restartTo
		Expect(k.Update(ctx, c)).To(Succeed())
	}
	w.crashAt = run.crashAt
	// The last pass reads the completed upgrade and changes nothing.
	const maxPasses = 100
	for w.pass = 0; !w.done; w.pass++ {
		if w.pass == maxPasses {
			Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
			Fail(fmt.Sprintf("%s: the upgrade did not complete in %d passes; it waits for: %s; passes:%s", ns, maxPasses, waitingFor(c), w.history()))
		}
		w.writes[w.pass] = nil
		_, err := w.reconciler(w.operatorClient(k)).Reconcile(ctx, req)
		if w.pass == w.crashAt {
			// The operator died: the pass's result and error went with it.
			Expect(err).To(MatchError(errOperatorCrashed), "%s: pass %d", ns, w.pass)
		} else {
			Expect(err).NotTo(HaveOccurred(), "%s: pass %d", ns, w.pass)
		}
		if f := run.fail; f != nil {
			w.failed[w.names[f.member]] = w.pass >= f.after && w.pass < f.after+f.passes
		}
		if run.exitServe && !w.serveExited {
			if name, running := w.servingExecutor(ctx); running {
				finishStep(ctx, k, c, name, w.clock.Now(), "the executor exited: out of restarts")
				w.serveExited = true
				w.serveLog = append(w.serveLog, serveEvent{pass: w.pass, what: "exited", name: name})
			}
		}
		w.step(ctx)
	}
	return w
}

func waitingFor(c *baov1.OpenBaoCluster) string {
	if c.Status.Upgrade == nil {
		return "no upgrade in status"
	}
	if f := c.Status.Upgrade.Failure; f != nil {
		return fmt.Sprintf("failed: %s: %s", f.Reason, f.Message)
	}
	return c.Status.Upgrade.WaitingFor
}

// expectSafeUpgrade asserts what must hold after every run, crash or not: the upgrade
// completed; each member's pod was deleted exactly once, in the planned order, the
// leader's last and never while it led; one step-down Job moved leadership off the
// leader before its pod was deleted; and no more than one member was down at a time.
func expectSafeUpgrade(ctx context.Context, w *upgradeWorld, leader int32, wantOrder []int32) {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(w.k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	name := c.Namespace + " (no crash)"
	if w.crashAt >= 0 {
		name = fmt.Sprintf("%s (crash after pass %d)", c.Namespace, w.crashAt)
	}
	Expect(c.Status.CurrentVersion).To(Equal(w.targetVersion), name)
	Expect(c.Status.Upgrade).To(BeNil(), name)
	sts := &appsv1.StatefulSet{}
	Expect(w.k.Get(ctx, client.ObjectKeyFromObject(w.cluster), sts)).To(Succeed())
	Expect(workload.ContainerImage(&sts.Spec.Template.Spec)).To(Equal(w.target), name)
	rev := templateRevision(sts)

	// Each member's pod was deleted once, in the planned order, never while it led, and
	// the pods now are those the world created in their place.
	pods := &corev1.PodList{}
	Expect(w.k.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(workload.SelectorLabels(c)))).To(Succeed())
	Expect(pods.Items).To(HaveLen(len(w.names)), name)
	for _, p := range pods.Items {
		Expect(p.UID).To(Equal(w.pods[p.Name].UID), "%s: pod %s", name, p.Name)
		Expect(p.UID).NotTo(Equal(w.original[p.Name]), "%s: pod %s", name, p.Name)
		Expect(workload.ContainerImage(&p.Spec)).To(Equal(w.target), "%s: pod %s", name, p.Name)
		Expect(p.Labels[appsv1.ControllerRevisionHashLabelKey]).To(Equal(rev), "%s: pod %s on the current pod template", name, p.Name)
	}
	dels := w.deletions()
	var order []string
	for _, d := range dels {
		order = append(order, d.member)
		Expect(d.uid).To(Equal(w.original[d.member]), "%s: pass %d deleted a pod of %s that was not the original", name, d.pass, d.member)
		if c.Spec.Upgrade.Rolling.LeaderHandoff != baov1.LeaderHandoffShutdown || d.member != w.names[leader] {
			Expect(d.leader).NotTo(Equal(d.member), "%s: pass %d deleted %s while it led", name, d.pass, d.member)
		}
	}
	var want []string
	for _, o := range wantOrder {
		want = append(want, w.names[o])
	}
	Expect(order).To(Equal(want), "%s: pods deleted, in order", name)
	lastDel := dels[len(dels)-1]
	Expect(lastDel.member).To(Equal(w.names[leader]), "%s: the leader goes last", name)

	jobList := &batchv1.JobList{}
	Expect(w.k.List(ctx, jobList, client.InNamespace(c.Namespace))).To(Succeed())
	jobs := w.jobs()
	Expect(w.leaders).To(HaveLen(1), "%s: elections", name)
	Expect(w.leaders[0].from).To(Equal(w.names[leader]), name)
	Expect(w.pods[w.leaders[0].to]).NotTo(BeNil(), name)
	Expect(workload.ContainerImage(&w.pods[w.leaders[0].to].Spec)).To(Equal(w.target), "%s: the new leader runs the target", name)
	if c.Spec.Upgrade.Rolling.LeaderHandoff == baov1.LeaderHandoffShutdown {
		// No Job; the leader's own deletion handed leadership over, while it led.
		Expect(jobList.Items).To(BeEmpty(), "%s: Jobs", name)
		Expect(lastDel.leader).To(Equal(w.names[leader]), "%s: the leader was shut down while it led", name)
		Expect(w.leaders[0].pass).To(Equal(lastDel.pass), "%s: leadership moved with the leader's shutdown", name)
	} else {
		// One step-down Job, whose leadership change came before the leader's deletion.
		Expect(jobList.Items).To(HaveLen(1), "%s: Jobs", name)
		Expect(jobs).To(HaveLen(1), "%s: step-down Jobs", name)
		Expect(jobs[0].member).To(Equal(w.names[leader]), name)
		Expect(jobs[0].leader).To(Equal(w.names[leader]), "%s: the Job asked the leader to step down", name)
		Expect(jobs[0].pass).To(BeNumerically("<", lastDel.pass), "%s: step-down before the leader's deletion", name)
		Expect(w.leaders[0].pass).To(BeNumerically("<", lastDel.pass), "%s: leadership moved before the leader's deletion", name)
	}

	Expect(w.maxDown).To(BeNumerically("<=", 1), "%s: at most one member down at a time; %s", name, w.downNote)
	expectOneHistoryEntry(c, w, name)
}

// expectOneHistoryEntry asserts that the run left exactly one history entry, for
// its operation, Succeeded, with the elections the world held and a longest step:
// written once by the pass that ended it, whichever pass the operator died after.
func expectOneHistoryEntry(c *baov1.OpenBaoCluster, w *upgradeWorld, name string) {
	GinkgoHelper()
	Expect(c.Status.History).To(HaveLen(1), "%s: history entries", name)
	e := c.Status.History[0]
	kind := baov1.HistoryVersion
	if w.rollout {
		kind = baov1.HistoryRollout
	}
	Expect(e.Kind).To(Equal(kind), name)
	Expect(e.Outcome).To(Equal(baov1.OutcomeSucceeded), name)
	Expect(e.TargetVersion).To(Equal(w.targetVersion), name)
	Expect(e.ID).NotTo(BeEmpty(), name)
	Expect(int(e.Elections)).To(Equal(w.elections()), "%s: elections in the entry against the world's", name)
	Expect(e.LongestStep).NotTo(BeNil(), "%s: the longest step", name)
	Expect(e.StartedAt).NotTo(BeNil(), name)
	Expect(e.EndedAt.Time).NotTo(BeTemporally("<", e.StartedAt.Time), name)
}

// isolatedAPIServer starts a kube-apiserver and etcd of their own for the specs that
// drive a reconciler pass by pass (nothing else acts on their clusters), stopped when
// the container ends. Thousands of writes need not survive the test: etcd skips fsync.
func isolatedAPIServer() client.WithWatch {
	GinkgoHelper()
	assets, skip := testenv.Assets()
	if skip != "" {
		// The suite's BeforeSuite has already failed when the binaries are required
		// (make test); outside it, without them, there is nothing to run against.
		Skip(skip)
	}
	etcd := &envtest.Etcd{}
	etcd.Configure().Set("unsafe-no-fsync", "true")
	apiServer := &envtest.APIServer{}
	apiServer.Configure().Set("watch-cache", "false")
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		ControlPlane:          envtest.ControlPlane{Etcd: etcd, APIServer: apiServer},
	}
	restCfg, err := env.Start()
	// Stopped even when Start failed part-way (a CRD the API server refused left
	// etcd and kube-apiserver running behind a failed run).
	DeferCleanup(env.Stop)
	Expect(err).NotTo(HaveOccurred())
	k, err := client.NewWithWatch(restCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return k
}

// createRestartCluster creates, in a new namespace, a cluster of replicas members at
// restartFrom and the workload reconciler's objects that the adminops reconciler
// reads: the StatefulSet and the Secret with the cluster CA. No pod exists yet; the
// spec's world creates them.
func createRestartCluster(ctx context.Context, k client.WithWatch, ns string, replicas int32) *baov1.OpenBaoCluster {
	GinkgoHelper()
	Expect(k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bao"},
		Spec: baov1.OpenBaoClusterSpec{
			Version:  restartFrom,
			Replicas: &replicas,
			Upgrade: baov1.UpgradeSpec{
				PreUpgradeSnapshot: baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotNever},
				Rolling: baov1.RollingUpdateSpec{
					SettleTime:  baov1.DurationOf(time.Second),
					StepTimeout: baov1.DurationOf(time.Minute),
				},
			},
		},
	}
	Expect(k.Create(ctx, c)).To(Succeed())
	n := workload.NamesFor(c)
	Expect(k.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n.TLSSecret(), Labels: workload.CommonLabels(c)},
		Data:       map[string][]byte{workload.CACertKey: []byte("test CA")},
	})).To(Succeed())
	sts, err := workload.StatefulSet(c, workload.StatefulSetParams{Image: upgrade.ResolveImage("", restartFrom), TLSSecretName: n.TLSSecret()})
	Expect(err).NotTo(HaveOccurred())
	sts.OwnerReferences = []metav1.OwnerReference{workload.OwnerReference(c)}
	Expect(k.Create(ctx, sts)).To(Succeed())
	return c
}
