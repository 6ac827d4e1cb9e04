package openbaocluster_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// drillRun is one scheduled restore drill of a cluster at rest, run pass by pass.
type drillRun struct {
	ns      string
	crashAt int
	// children are the UIDs of the drill clusters the world saw.
	children map[types.UID]bool
}

// runDrill creates a cluster at rest with a bucket, a verified snapshot and a drill
// schedule of every minute, lets the drill come due and runs passes of a new upgrade
// reconciler until it ended, crashing after pass crashAt. Between passes the world
// plays the drill cluster's own reconcilers: its volume claim and seal key appear,
// and its restore succeeds.
func runDrill(ctx context.Context, k client.WithWatch, run *drillRun) *upgradeWorld {
	GinkgoHelper()
	c := createRestartCluster(ctx, k, run.ns, 3)
	c.Spec.Snapshots = baov1.SnapshotsSpec{
		S3:     &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}},
		Verify: &baov1.SnapshotVerifySpec{Schedule: "* * * * *"},
	}
	Expect(k.Update(ctx, c)).To(Succeed())
	taken := metav1.Now()
	c.Status.LastSnapshot = &baov1.SnapshotReceipt{Location: "s3://snaps/" + run.ns + "/bao/x.snap", SHA256: restoreTestSHA, TakenAt: &taken, Version: restartFrom, RaftIndex: 90}
	Expect(k.Status().Update(ctx, c)).To(Succeed())
	w := newUpgradeWorld(k, c, 0, restartFrom)
	w.step(ctx) // pods created
	w.step(ctx) // and Ready
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}
	_, err := w.reconciler(k).Reconcile(ctx, req) // the schedule's next time
	Expect(err).NotTo(HaveOccurred())
	w.clock.Step(time.Minute)

	w.crashAt = run.crashAt
	runPasses(ctx, k, w, c, 40, func(c *baov1.OpenBaoCluster) (bool, any) {
		d := c.Status.Snapshots.GetDrills()
		return d != nil && d.Last != nil && d.Current == nil, c.Status.Snapshots
	}, func() { playDrillCluster(ctx, k, run, c) })
	return w
}

// playDrillCluster is the drill cluster's reconcilers: once it exists, its volume
// claim and its copy of the seal key exist, and its restore is done.
func playDrillCluster(ctx context.Context, k client.Client, run *drillRun, c *baov1.OpenBaoCluster) {
	GinkgoHelper()
	d := &baov1.OpenBaoCluster{}
	err := k.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: snapshot.DrillClusterName(c)}, d)
	if apierrors.IsNotFound(err) || (err == nil && !d.DeletionTimestamp.IsZero()) {
		return
	}
	Expect(err).NotTo(HaveOccurred())
	run.children[d.UID] = true
	labels := workload.CommonLabels(d)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: "data-" + d.Name + "-0", Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := k.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	seal := workload.SealSecretWithKey(d, []byte("key"))
	if err := k.Create(ctx, seal); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	if d.Status.Restore == nil {
		d.Status.Restore = &baov1.RestoreStatus{Source: "s3://snaps/x", SHA256: restoreTestSHA, Step: baov1.RestoreStepDone, RaftIndex: 90}
		Expect(k.Status().Update(ctx, d)).To(Succeed())
	}
}

// expectOneDrill asserts what holds after every run, crash or not: one drill
// cluster was created, the drill passed, and the drill cluster, its volume claim and
// its seal key are gone; the lock is free.
func expectOneDrill(ctx context.Context, k client.Client, w *upgradeWorld, run *drillRun) {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	d := c.Status.Snapshots.GetDrills()
	name := c.Namespace + fmt.Sprintf(" (drills %+v; passes:%s)", d, w.history())
	Expect(d.Last.Outcome).To(Equal(baov1.DrillPassed), name)
	Expect(d.Last.RaftIndex).To(Equal(int64(90)), name)
	Expect(d.LastPassedAt).NotTo(BeNil(), name)
	Expect(c.Status.OperationLock).To(BeNil(), "%s: the lock is released", name)
	Expect(run.children).To(HaveLen(1), "%s: one drill cluster was created", name)
	drill := snapshot.DrillClusterName(c)
	Expect(apierrors.IsNotFound(k.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: drill}, &baov1.OpenBaoCluster{}))).To(BeTrue(), name)
	pvcs := &corev1.PersistentVolumeClaimList{}
	Expect(k.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels{workload.LabelCluster: drill})).To(Succeed())
	for _, p := range pvcs.Items {
		Expect(p.DeletionTimestamp).NotTo(BeNil(), "%s: volume claim %s is deleted", name, p.Name)
	}
	Expect(apierrors.IsNotFound(k.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: drill + "-seal"}, &corev1.Secret{}))).To(BeTrue(), "%s: its seal key is deleted", name)
}

// drillCrashAfterEveryStatusWrite runs a drill without a crash, then once per pass
// of it that wrote status, crashing after that pass.
func drillCrashAfterEveryStatusWrite(ctx context.Context, k client.WithWatch) {
	GinkgoHelper()
	ref := &drillRun{ns: "drill-ref", crashAt: -1, children: map[types.UID]bool{}}
	w := runDrill(ctx, k, ref)
	expectOneDrill(ctx, k, w, ref)
	passes := len(w.writes)
	GinkgoWriter.Printf("drill reference run: %d passes%s\n", passes, w.history())
	Expect(passes).To(BeNumerically(">=", 5), "start, create, restored, delete, recorded")
	eachCrash(passes, w.writes, restartWorkers, func(crashAt int) {
		run := &drillRun{ns: fmt.Sprintf("drill-k%d", crashAt), crashAt: crashAt, children: map[types.UID]bool{}}
		cw := runDrill(ctx, k, run)
		GinkgoWriter.Printf("drill: crash after pass %2d (%s): %d passes\n", crashAt, w.describePass(crashAt), len(cw.writes))
		expectOneDrill(ctx, k, cw, run)
	})
}
