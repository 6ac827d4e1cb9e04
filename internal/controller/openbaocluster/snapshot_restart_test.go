package openbaocluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// snapshotRun is one requested snapshot with retention, run pass by pass on the
// upgrade world's members (they stay as they are: a snapshot changes no member).
type snapshotRun struct {
	ns      string
	crashAt int
}

// runSnapshot creates a cluster at rest with a bucket and retention, requests a
// snapshot (baokeeper.dev/snapshot=r1) and runs passes of a new upgrade reconciler
// until the run ended, crashing after pass crashAt. Between passes the world plays
// the executor: a snapshot or prune Job it sees is finished with a pod whose
// termination message is the receipt, or the prune result.
func runSnapshot(ctx context.Context, k client.WithWatch, run snapshotRun) *upgradeWorld {
	GinkgoHelper()
	c := createRestartCluster(ctx, k, run.ns, 3)
	count := int32(2)
	c.Spec.Snapshots = baov1.SnapshotsSpec{
		S3:        &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", Prefix: "p", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}},
		Retention: &baov1.SnapshotRetention{Count: &count},
	}
	Expect(k.Update(ctx, c)).To(Succeed())
	w := newUpgradeWorld(k, c, 0, restartFrom)
	w.step(ctx) // pods created
	w.step(ctx) // and Ready
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}
	_, err := w.reconciler(k).Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
	c.Annotations = map[string]string{baov1.AnnotationSnapshot: "r1"}
	Expect(k.Update(ctx, c)).To(Succeed())

	w.crashAt = run.crashAt
	const maxPasses = 40
	for w.pass = 0; ; w.pass++ {
		Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
		if c.Status.Requests.Snapshot == "r1" && (c.Status.Snapshots == nil || (c.Status.Snapshots.Current == nil && c.Status.Snapshots.Requested == "")) {
			return w
		}
		if w.pass == maxPasses {
			Fail(fmt.Sprintf("%s: the snapshot did not finish in %d passes: %+v; passes:%s", run.ns, maxPasses, c.Status.Snapshots, w.history()))
		}
		w.writes[w.pass] = nil
		_, err := w.reconciler(w.operatorClient(k)).Reconcile(ctx, req)
		if w.pass == w.crashAt {
			Expect(err).To(MatchError(errOperatorCrashed), "%s: pass %d", run.ns, w.pass)
		} else {
			Expect(err).NotTo(HaveOccurred(), "%s: pass %d", run.ns, w.pass)
		}
		w.clock.Step(snapshot.Poll)
		finishSnapshotJobs(ctx, k, c)
	}
}

// finishSnapshotJobs plays the executor of snapshot and prune Jobs: each that has not
// finished gets a terminated pod with its result, and succeeds.
func finishSnapshotJobs(ctx context.Context, k client.Client, c *baov1.OpenBaoCluster) {
	GinkgoHelper()
	jobs := &batchv1.JobList{}
	Expect(k.List(ctx, jobs, client.InNamespace(c.Namespace), client.MatchingLabels{workload.LabelCluster: c.Name})).To(Succeed())
	for i := range jobs.Items {
		job := &jobs.Items[i]
		step := job.Labels[executorjob.LabelStep]
		if (step != snapshot.StepSnapshot && step != snapshot.StepPrune) || job.Status.CompletionTime != nil {
			continue
		}
		args := job.Spec.Template.Spec.Containers[0].Args
		var msg []byte
		if step == snapshot.StepSnapshot {
			key := args[slices.Index(args, "--s3-key")+1]
			msg, _ = json.Marshal(snapshot.Receipt{Location: snapshot.Location("snaps", key), SizeBytes: 4096,
				SHA256: "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12", RaftIndex: 120, FromMember: "bao-0", TakenAt: metav1.Now().UTC()})
		} else {
			msg, _ = json.Marshal(snapshot.PruneResult{Listed: 3, Deleted: []string{"p/" + c.Namespace + "/bao/old.snap"}, Kept: 2})
		}
		finishJobWithMessage(ctx, k, c, job.Name, string(msg))
	}
}

// expectOneSnapshot asserts what holds after every run, crash or not: the request
// was taken once (one snapshot Job, of attempt 1, and one prune Job), its receipt is
// recorded once, and the lock is free.
func expectOneSnapshot(ctx context.Context, k client.Client, w *upgradeWorld) {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	name := c.Namespace + fmt.Sprintf(" (status.snapshots %+v; passes:%s)", c.Status.Snapshots, w.history())
	Expect(c.Status.OperationLock).To(BeNil(), "%s: the lock is released", name)
	ss := c.Status.Snapshots
	Expect(ss).NotTo(BeNil(), name)
	Expect(ss.Taken).To(HaveLen(1), "%s: one receipt", name)
	Expect(ss.Taken[0].Request).To(Equal("r1"), name)
	Expect(ss.Taken[0].Trigger).To(Equal(baov1.SnapshotRequested), name)
	Expect(ss.LastPrune).NotTo(BeNil(), "%s: retention pruned", name)
	Expect(ss.LastPrune.Deleted).To(Equal(int32(1)), name)
	Expect(ss.LastFailure).To(BeNil(), name)
	Expect(c.Status.LastSnapshot).To(BeNil(), "%s: status.lastSnapshot is the last upgrade's, and none ran", name)
	jobs := &batchv1.JobList{}
	Expect(k.List(ctx, jobs, client.InNamespace(c.Namespace), client.MatchingLabels{workload.LabelCluster: c.Name})).To(Succeed())
	var names []string
	for _, j := range jobs.Items {
		names = append(names, j.Labels[executorjob.LabelStep]+" "+j.Name)
	}
	Expect(names).To(HaveLen(2), "%s: one snapshot Job and one prune Job: %v", name, names)
	Expect(names).To(ContainElement(MatchRegexp(`^snapshot bao-snapshot-[0-9a-f]{8}-1$`)), name)
	Expect(names).To(ContainElement(MatchRegexp(`^prune bao-prune-[0-9a-f]{8}$`)), name)
}

// snapshotCrashAfterEveryStatusWrite runs a requested snapshot without a crash, then
// once per pass of it that wrote status, crashing after that pass.
func snapshotCrashAfterEveryStatusWrite(ctx context.Context, k client.WithWatch) {
	GinkgoHelper()
	ref := runSnapshot(ctx, k, snapshotRun{ns: "snap-ref", crashAt: -1})
	expectOneSnapshot(ctx, k, ref)
	passes := len(ref.writes)
	GinkgoWriter.Printf("snapshot reference run: %d passes%s\n", passes, ref.history())
	Expect(passes).To(BeNumerically(">=", 5), "begin, the snapshot Job, its receipt, the prune Job, its result")
	eachCrash(passes, ref.writes, restartWorkers, func(crashAt int) {
		w := runSnapshot(ctx, k, snapshotRun{ns: fmt.Sprintf("snap-k%d", crashAt), crashAt: crashAt})
		for i := range crashAt {
			Expect(w.writes[i]).To(Equal(ref.writes[i]), "%s: up to the crash, pass %d is the reference run's", w.cluster.Namespace, i)
		}
		GinkgoWriter.Printf("snapshot: crash after pass %2d (%s): %d passes\n", crashAt, ref.describePass(crashAt), len(w.writes))
		expectOneSnapshot(ctx, k, w)
	})
}

// finishJobWithMessage plays the executor of one Job: its pod terminated with msg as
// its termination message (the result the operator reads), and the Job succeeded.
func finishJobWithMessage(ctx context.Context, k client.Client, c *baov1.OpenBaoCluster, job, msg string) {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: job + "-x",
			Labels: map[string]string{workload.LabelCluster: c.Name, batchv1.JobNameLabel: job}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: executorjob.ExecutorContainerName, Image: "executor"}}},
	}
	Expect(k.Create(ctx, pod)).To(Succeed())
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: executorjob.ExecutorContainerName,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg}}}}
	Expect(k.Status().Update(ctx, pod)).To(Succeed())
	finishStep(ctx, k, c, job, metav1.Now().Time, "")
}
