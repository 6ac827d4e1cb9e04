package openbaocluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

const restoreTestSHA = "5f2b9c1e0d3a4b6c7d8e9f00112233445566778899aabbccddeeff0011223344"

// createRestoreCluster creates a 1-member cluster "bao2" that starts from a snapshot
// of "bao", with its StatefulSet (the workload loop's part, which these tests do
// not run).
func createRestoreCluster(ctx context.Context, k client.WithWatch, ns string) *baov1.OpenBaoCluster {
	GinkgoHelper()
	Expect(k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	one := int32(1)
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bao2"},
		Spec: baov1.OpenBaoClusterSpec{Version: restartFrom, Replicas: &one,
			Upgrade: baov1.UpgradeSpec{PreUpgradeSnapshot: baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotNever}},
			Bootstrap: &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{
				S3:  baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}},
				Key: ns + "/bao/requested-" + restartFrom + "-x-1.snap", SHA256: restoreTestSHA, Version: restartFrom, SourceCluster: "bao",
			}},
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
	Expect(*sts.Spec.Replicas).To(Equal(int32(1)), "a cluster that starts from a snapshot starts with one member")
	sts.OwnerReferences = []metav1.OwnerReference{workload.OwnerReference(c)}
	Expect(k.Create(ctx, sts)).To(Succeed())
	return c
}

// runRestore runs passes of a new upgrade reconciler on a cluster that starts from a
// snapshot until its restore is done or failed, crashing after pass crashAt. Between
// passes the world plays the kubelet (a deleted pod comes back) and the executor:
// a restore Job finishes with its result, a rebind Job succeeds.
func runRestore(ctx context.Context, k client.WithWatch, ns string, crashAt int) *upgradeWorld {
	GinkgoHelper()
	c := createRestoreCluster(ctx, k, ns)
	w := newUpgradeWorld(k, c, 0, restartFrom)
	w.step(ctx) // the pod is created
	w.step(ctx) // and Ready
	w.crashAt = crashAt
	runPasses(ctx, k, w, c, 40, func(c *baov1.OpenBaoCluster) (bool, any) {
		r := c.Status.Restore
		return r != nil && (r.Step == baov1.RestoreStepDone || r.Step == baov1.RestoreStepFailed), r
	}, func() {
		w.clock.Step(snapshot.Poll)
		finishRestoreJobs(ctx, k, w, c)
	})
	return w
}

// runPasses runs passes of a new upgrade reconciler on c until ended says the
// operation ended (and what to print if it never does), crashing after pass
// w.crashAt: the one loop of every crash-after-every-pass harness of an operation
// that is not an upgrade. Between passes the world steps, then between plays what
// else the operation waits for (its Jobs, a child cluster's reconcilers).
func runPasses(ctx context.Context, k client.WithWatch, w *upgradeWorld, c *baov1.OpenBaoCluster, maxPasses int,
	ended func(*baov1.OpenBaoCluster) (bool, any), between func()) {
	GinkgoHelper()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}
	for w.pass = 0; ; w.pass++ {
		Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
		done, state := ended(c)
		if done {
			return
		}
		if w.pass == maxPasses {
			Fail(fmt.Sprintf("%s: the operation did not end in %d passes: %+v; passes:%s", c.Namespace, maxPasses, state, w.history()))
		}
		w.writes[w.pass] = nil
		_, err := w.reconciler(w.operatorClient(k)).Reconcile(ctx, req)
		if w.pass == w.crashAt {
			Expect(err).To(MatchError(errOperatorCrashed), "%s: pass %d", c.Namespace, w.pass)
		} else {
			Expect(err).NotTo(HaveOccurred(), "%s: pass %d", c.Namespace, w.pass)
		}
		w.step(ctx)
		between()
	}
}

// finishRestoreJobs plays the executor of restore and rebind Jobs.
func finishRestoreJobs(ctx context.Context, k client.Client, w *upgradeWorld, c *baov1.OpenBaoCluster) {
	GinkgoHelper()
	jobs := &batchv1.JobList{}
	Expect(k.List(ctx, jobs, client.InNamespace(c.Namespace), client.MatchingLabels{workload.LabelCluster: c.Name})).To(Succeed())
	for i := range jobs.Items {
		job := &jobs.Items[i]
		step := job.Labels[executorjob.LabelStep]
		if (step != snapshot.StepRestore && step != snapshot.StepRebind && step != snapshot.StepRestoreInPlace) || job.Status.CompletionTime != nil {
			continue
		}
		// Finished here, with its result: the world's own Job runner leaves it.
		w.jobSteps[job.Name] = 3
		args := job.Spec.Template.Spec.Containers[0].Args
		msg := []byte(`{"rebound":true}`)
		if step != snapshot.StepRebind {
			key := args[slices.Index(args, "--s3-key")+1]
			res := snapshot.RestoreResult{Location: snapshot.Location("snaps", key), SHA256: args[slices.Index(args, "--sha256")+1],
				SizeBytes: 4096, RaftIndex: 90, RaftTerm: 2, RestoredTo: c.Name + "-0", RestoredAt: time.Now().UTC()}
			if slices.Contains(args, "--wait-applied") {
				// The leader applied it at the index it is at now; the members reach it
				// as the world steps.
				res.RestoredTo, res.AppliedIndex = w.leader, w.index
			}
			msg, _ = json.Marshal(res)
		}
		finishJobWithMessage(ctx, k, c, job.Name, string(msg))
	}
}

// expectOneRestore asserts what holds after every run, crash or not: the restore is
// done, its lock released, and it took one restore Job, one rebind Job and one
// restart of the member; the borrowed identity is gone.
func expectOneRestore(ctx context.Context, k client.Client, w *upgradeWorld) {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	name := c.Namespace + fmt.Sprintf(" (status.restore %+v; passes:%s)", c.Status.Restore, w.history())
	Expect(c.Status.Restore).NotTo(BeNil(), name)
	Expect(c.Status.Restore.Step).To(Equal(baov1.RestoreStepDone), name)
	Expect(c.Status.Restore.RaftIndex).To(Equal(int64(90)), name)
	Expect(c.Status.OperationLock).To(BeNil(), "%s: the lock is released", name)
	jobs := &batchv1.JobList{}
	Expect(k.List(ctx, jobs, client.InNamespace(c.Namespace), client.MatchingLabels{workload.LabelCluster: c.Name})).To(Succeed())
	var names []string
	for _, j := range jobs.Items {
		names = append(names, j.Labels[executorjob.LabelStep]+" "+j.Name)
	}
	Expect(names).To(ConsistOf(MatchRegexp(`^restore bao2-restore-[0-9a-f]{8}-1$`), MatchRegexp(`^rebind bao2-rebind-[0-9a-f]{8}-1$`)), name)
	Expect(w.deletions()).To(HaveLen(1), "%s: the member restarted once", name)
	err := k.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: "bao-executor"}, &corev1.ServiceAccount{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: the source's executor account, created for the rebind, is gone: %v", name, err)
}

// restoreCrashAfterEveryStatusWrite runs a restore without a crash, then once per
// pass of it that wrote status, crashing after that pass.
func restoreCrashAfterEveryStatusWrite(ctx context.Context, k client.WithWatch) {
	GinkgoHelper()
	crashEveryPass("restore", 6, "begin, the restore Job, its result, the restart, the rebind, the check",
		func(ns string, crashAt int) *upgradeWorld { return runRestore(ctx, k, ns, crashAt) },
		func(w *upgradeWorld) { expectOneRestore(ctx, k, w) })
}

// crashEveryPass runs an operation once without a crash (namespace
// <what>-ref), then once per pass of that reference run that wrote status,
// crashing after that pass (namespace <what>-k<pass>): up to the crash every run is
// the reference run, and after it expect holds. minPasses guards the reference
// run's length (why names its passes).
func crashEveryPass(what string, minPasses int, why string, run func(ns string, crashAt int) *upgradeWorld, expect func(*upgradeWorld)) {
	GinkgoHelper()
	ref := run(what+"-ref", -1)
	expect(ref)
	passes := len(ref.writes)
	GinkgoWriter.Printf("%s reference run: %d passes%s\n", what, passes, ref.history())
	Expect(passes).To(BeNumerically(">=", minPasses), why)
	eachCrash(passes, ref.writes, restartWorkers, func(crashAt int) {
		w := run(fmt.Sprintf("%s-k%d", what, crashAt), crashAt)
		for i := range crashAt {
			Expect(w.writes[i]).To(Equal(ref.writes[i]), "%s: up to the crash, pass %d is the reference run's", w.cluster.Namespace, i)
		}
		GinkgoWriter.Printf("%s: crash after pass %2d (%s): %d passes\n", what, crashAt, ref.describePass(crashAt), len(w.writes))
		expect(w)
	})
}
