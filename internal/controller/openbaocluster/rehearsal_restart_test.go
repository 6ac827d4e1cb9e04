package openbaocluster_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
)

// rehearsalTarget is the version the rehearsal runs in these tests.
const rehearsalTarget = "2.4.1"

// runRehearsal creates a cluster at rest with a verified snapshot and rehearsal
// Required, changes spec.version, and runs passes of a new upgrade reconciler until
// the rehearsal ended, crashing after pass crashAt. Between passes the world plays
// the copy's own reconcilers: it restores and runs, and once its spec.version is
// the target, reaches it.
//
// requested rehearses on request instead (baokeeper.dev/rehearse), with no upgrade.
func runRehearsal(ctx context.Context, k client.WithWatch, run *drillRun, requested bool) *upgradeWorld {
	GinkgoHelper()
	c := createRestartCluster(ctx, k, run.ns, 3)
	c.Spec.Snapshots = baov1.SnapshotsSpec{
		S3: &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}},
	}
	if !requested {
		c.Spec.Upgrade.Rehearsal = baov1.RehearsalRequired
	}
	Expect(k.Update(ctx, c)).To(Succeed())
	taken := metav1.Now()
	c.Status.LastSnapshot = &baov1.SnapshotReceipt{Location: "s3://snaps/" + run.ns + "/bao/x.snap", SHA256: restoreTestSHA, TakenAt: &taken, Version: restartFrom, RaftIndex: 90}
	Expect(k.Status().Update(ctx, c)).To(Succeed())
	w := newUpgradeWorld(k, c, 0, rehearsalTarget)
	w.step(ctx) // pods created
	w.step(ctx) // and Ready
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}
	_, err := w.reconciler(k).Reconcile(ctx, req) // currentVersion seeded
	Expect(err).NotTo(HaveOccurred())
	Expect(k.Get(ctx, req.NamespacedName, c)).To(Succeed())
	if requested {
		c.Annotations = map[string]string{baov1.AnnotationRehearse: rehearsalTarget + "+t1"}
	} else {
		c.Spec.Version = rehearsalTarget
	}
	Expect(k.Update(ctx, c)).To(Succeed())

	w.crashAt = run.crashAt
	runPasses(ctx, k, w, c, 60, func(c *baov1.OpenBaoCluster) (bool, any) {
		if requested {
			return c.Status.Rehearsal != nil && c.Status.Rehearsal.Step == baov1.RehearsalStepDone, c.Status.Rehearsal
		}
		up := c.Status.Upgrade
		return up != nil && up.Rehearsal != nil && up.Rehearsal.Step == baov1.RehearsalStepDone, up
	}, func() { playRehearsalCopy(ctx, k, run, c) })
	return w
}

// playRehearsalCopy is the copy's reconcilers: restored and running on its version
// once it exists, on the target once its spec names it.
func playRehearsalCopy(ctx context.Context, k client.Client, run *drillRun, c *baov1.OpenBaoCluster) {
	GinkgoHelper()
	d := &baov1.OpenBaoCluster{}
	err := k.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: snapshot.RehearsalClusterName(c)}, d)
	if apierrors.IsNotFound(err) || (err == nil && !d.DeletionTimestamp.IsZero()) {
		return
	}
	Expect(err).NotTo(HaveOccurred())
	run.children[d.UID] = true
	want := d.Status.DeepCopy()
	want.Restore = &baov1.RestoreStatus{Source: "s3://snaps/x", SHA256: restoreTestSHA, Step: baov1.RestoreStepDone, RaftIndex: 90}
	want.Phase, want.CurrentVersion = baov1.PhaseRunning, d.Spec.Version
	if d.Status.CurrentVersion == "" {
		want.CurrentVersion = restartFrom
	}
	if d.Spec.Version == rehearsalTarget {
		want.CurrentVersion = rehearsalTarget
	}
	if !equalStatus(&d.Status, want) {
		d.Status = *want
		Expect(k.Status().Update(ctx, d)).To(Succeed())
	}
}

func equalStatus(a, b *baov1.OpenBaoClusterStatus) bool {
	return a.Phase == b.Phase && a.CurrentVersion == b.CurrentVersion && a.Restore != nil && b.Restore != nil && a.Restore.Step == b.Restore.Step
}

// expectOneRehearsal asserts what holds after every run, crash or not: one copy was
// created, it was upgraded to the target, the rehearsal passed, and the copy is
// gone; no member of the cluster was touched.
//
// A requested one also released the operation lock and started no upgrade.
func expectOneRehearsal(ctx context.Context, k client.Client, w *upgradeWorld, run *drillRun, requested bool) {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	r := c.Status.Rehearsal
	if !requested {
		r = c.Status.Upgrade.Rehearsal
	}
	name := c.Namespace + fmt.Sprintf(" (rehearsal %+v; passes:%s)", r, w.history())
	Expect(r).NotTo(BeNil(), name)
	if requested {
		Expect(r.Request).To(Equal(rehearsalTarget+"+t1"), name)
		Expect(c.Status.OperationLock).To(BeNil(), "%s: the lock is released", name)
		Expect(c.Status.Upgrade).To(BeNil(), "%s: no upgrade started", name)
		Expect(c.Spec.Version).To(Equal(restartFrom), name)
	}
	Expect(r.Result).NotTo(BeNil(), name)
	Expect(r.Result.Outcome).To(Equal(baov1.DrillPassed), name)
	Expect(r.TargetVersion).To(Equal(rehearsalTarget), name)
	Expect(run.children).To(HaveLen(1), "%s: one copy was created", name)
	err := k.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: snapshot.RehearsalClusterName(c)}, &baov1.OpenBaoCluster{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: the copy is deleted", name)
	Expect(w.deletions()).To(BeEmpty(), "%s: no member of the cluster was taken down", name)
	Expect(c.Status.CurrentVersion).To(Equal(restartFrom), "%s: the real upgrade has not run yet", name)
}

// rehearsalCrashAfterEveryStatusWrite runs a rehearsal without a crash, then once
// per pass of it that wrote status, crashing after that pass.
//
// requested rehearses on request (baokeeper.dev/rehearse) instead of before an upgrade.
func rehearsalCrashAfterEveryStatusWrite(ctx context.Context, k client.WithWatch, requested bool) {
	GinkgoHelper()
	prefix := "rehearse"
	if requested {
		prefix = "rehearse-req"
	}
	ref := &drillRun{ns: prefix + "-ref", crashAt: -1, children: map[types.UID]bool{}}
	w := runRehearsal(ctx, k, ref, requested)
	expectOneRehearsal(ctx, k, w, ref, requested)
	passes := len(w.writes)
	GinkgoWriter.Printf("rehearsal reference run: %d passes%s\n", passes, w.history())
	Expect(passes).To(BeNumerically(">=", 6), "plan or accept, start, create, restored, version, passed, delete, done")
	eachCrash(passes, w.writes, restartWorkers, func(crashAt int) {
		run := &drillRun{ns: fmt.Sprintf("%s-k%d", prefix, crashAt), crashAt: crashAt, children: map[types.UID]bool{}}
		cw := runRehearsal(ctx, k, run, requested)
		GinkgoWriter.Printf("%s: crash after pass %2d (%s): %d passes\n", prefix, crashAt, w.describePass(crashAt), len(cw.writes))
		expectOneRehearsal(ctx, k, cw, run, requested)
	})
}
