package openbaocluster_test

import (
	"context"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// inPlaceRequest is the baokeeper.dev/restore value of these runs.
const inPlaceRequest = restoreTestSHA + "-1"

// runInPlaceRestore creates a 3-member cluster at rest with a bucket and a verified
// snapshot, asks for its in-place restore and runs passes of a new upgrade
// reconciler until the restore ended, crashing after pass crashAt. Between passes
// the world plays the executor: the restore Job reports the snapshot applied at the
// leader's index then, which the members reach as the world steps.
func runInPlaceRestore(ctx context.Context, k client.WithWatch, ns string, crashAt int) *upgradeWorld {
	GinkgoHelper()
	c, w := inPlaceRequested(ctx, k, ns)
	w.crashAt = crashAt
	runPasses(ctx, k, w, c, 40, func(c *baov1.OpenBaoCluster) (bool, any) {
		r := c.Status.InPlaceRestore
		return r != nil && (r.Step == baov1.RestoreStepDone || r.Step == baov1.RestoreStepFailed), r
	}, func() {
		w.clock.Step(snapshot.Poll)
		finishRestoreJobs(ctx, k, w, c)
	})
	return w
}

// inPlaceRequested creates a 3-member cluster at rest with a bucket and a verified
// snapshot, lets a first pass seed its version, and asks for the snapshot's
// in-place restore (baokeeper.dev/restore=inPlaceRequest).
func inPlaceRequested(ctx context.Context, k client.WithWatch, ns string) (*baov1.OpenBaoCluster, *upgradeWorld) {
	GinkgoHelper()
	c := createRestartCluster(ctx, k, ns, 3)
	c.Spec.Snapshots = baov1.SnapshotsSpec{S3: &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}
	Expect(k.Update(ctx, c)).To(Succeed())
	taken := metav1.Now()
	c.Status.Snapshots = &baov1.SnapshotsStatus{Taken: []baov1.SnapshotReceipt{{Location: "s3://snaps/" + ns + "/bao/x.snap", SHA256: restoreTestSHA,
		TakenAt: &taken, Version: restartFrom, RaftIndex: 90, SizeBytes: 4096}}}
	Expect(k.Status().Update(ctx, c)).To(Succeed())
	w := newUpgradeWorld(k, c, 1, restartFrom)
	w.step(ctx)                                                                                           // pods created
	w.step(ctx)                                                                                           // and Ready
	_, err := w.reconciler(k).Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}) // currentVersion seeded
	Expect(err).NotTo(HaveOccurred())
	Expect(k.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	c.Annotations = map[string]string{baov1.AnnotationRestore: inPlaceRequest}
	Expect(k.Update(ctx, c)).To(Succeed())
	return c, w
}

// expectOneInPlaceRestore asserts what holds after every run, crash or not: the
// restore is done at the index the leader applied it at, its lock released, the
// request handled, one restore Job taken, and no member restarted.
func expectOneInPlaceRestore(ctx context.Context, k client.Client, w *upgradeWorld) {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	r := c.Status.InPlaceRestore
	name := c.Namespace + fmt.Sprintf(" (status.inPlaceRestore %+v; passes:%s)", r, w.history())
	Expect(r).NotTo(BeNil(), name)
	Expect(r.Step).To(Equal(baov1.RestoreStepDone), name)
	Expect(r.Request).To(Equal(inPlaceRequest), name)
	Expect(r.AppliedIndex).To(BeNumerically(">", 100), "%s: the index the leader applied the snapshot at", name)
	Expect(c.Status.Requests.Restore).To(Equal(inPlaceRequest), name)
	Expect(c.Status.OperationLock).To(BeNil(), "%s: the lock is released", name)
	jobs := &batchv1.JobList{}
	Expect(k.List(ctx, jobs, client.InNamespace(c.Namespace), client.MatchingLabels{workload.LabelCluster: c.Name})).To(Succeed())
	var names []string
	for _, j := range jobs.Items {
		names = append(names, j.Labels[executorjob.LabelStep]+" "+j.Name)
	}
	Expect(names).To(ConsistOf(MatchRegexp(`^restore-in-place bao-restore-in-place-[0-9a-f]{8}-1$`)), name)
	Expect(w.deletions()).To(BeEmpty(), "%s: no member restarted", name)
}

// inPlaceRestoreCrashAfterEveryStatusWrite runs an in-place restore without a
// crash, then once per pass of it that wrote status, crashing after that pass.
func inPlaceRestoreCrashAfterEveryStatusWrite(ctx context.Context, k client.WithWatch) {
	GinkgoHelper()
	crashEveryPass("inplace", 4, "accepted, the lock, the Job, its result, verified",
		func(ns string, crashAt int) *upgradeWorld { return runInPlaceRestore(ctx, k, ns, crashAt) },
		func(w *upgradeWorld) { expectOneInPlaceRestore(ctx, k, w) })
}

// actionRefused runs an accepted in-place restore with a client whose every write
// to ConfigMaps (the executor's mailbox) and Jobs the API server refuses, as it
// would an operator without the permission, and returns the events of the pass
// that could not hand the restore to its executor.
func actionRefused(ctx context.Context, k client.WithWatch) []string {
	GinkgoHelper()
	c, w := inPlaceRequested(ctx, k, "inplace-forbidden")
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}

	forbidden := func(obj client.Object) error {
		switch obj.(type) {
		case *corev1.ConfigMap, *batchv1.Job:
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, obj.GetName(), errors.New("the operator's role does not grant it"))
		}
		return nil
	}
	refusing := interceptor.NewClient(k, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := forbidden(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := forbidden(obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := forbidden(obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	rec := events.NewFakeRecorder(100)
	var got []string
	for range 4 {
		r := w.reconciler(refusing)
		r.Recorder = rec
		_, _ = r.Reconcile(ctx, req)
		w.step(ctx)
		for len(rec.Events) > 0 {
			got = append(got, <-rec.Events)
		}
	}
	return got
}
