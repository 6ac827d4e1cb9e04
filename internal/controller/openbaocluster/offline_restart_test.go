package openbaocluster_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// offlineCrashAfterEveryStatusWrite runs an offline upgrade of three members without
// a crash, then once per pass of it that wrote status, crashing after that pass,
// and checks each run with expectOfflineUpgrade.
func offlineCrashAfterEveryStatusWrite(ctx context.Context, k client.WithWatch) {
	GinkgoHelper()
	base := upgradeRun{replicas: 3, leader: 1, offline: true}
	run := base
	run.ns, run.crashAt = "offline-ref", -1
	ref := runUpgrade(ctx, k, run)
	expectOfflineUpgrade(ctx, k, ref)
	passes := len(ref.writes)
	GinkgoWriter.Printf("offline reference run: %d passes%s\n", passes, ref.history())
	eachCrash(passes, ref.writes, restartWorkers, func(crashAt int) {
		run := base
		run.ns, run.crashAt = fmt.Sprintf("offline-k%d", crashAt), crashAt
		w := runUpgrade(ctx, k, run)
		GinkgoWriter.Printf("offline: crash after pass %2d (%s): %d passes\n", crashAt, ref.describePass(crashAt), len(w.writes))
		expectOfflineUpgrade(ctx, k, w)
	})
}

// expectOfflineUpgrade asserts what holds after every run, crash or not: the
// upgrade completed on the target with the lock released; each member's original
// pod was deleted exactly once, every deletion within two passes of the first (the
// stop deletes them together; a crash may leave the rest to the next pass), after
// status recorded the stop; no step-down Job ran; a leader came back.
func expectOfflineUpgrade(ctx context.Context, k client.Client, w *upgradeWorld) {
	GinkgoHelper()
	c := &baov1.OpenBaoCluster{}
	Expect(k.Get(ctx, client.ObjectKeyFromObject(w.cluster), c)).To(Succeed())
	name := c.Namespace + " (passes:" + w.history() + ")"
	Expect(c.Status.CurrentVersion).To(Equal(restartTo), name)
	Expect(c.Status.Upgrade).To(BeNil(), name)
	Expect(c.Status.OperationLock).To(BeNil(), "%s: the lock is released", name)
	for _, j := range w.jobs() {
		Expect(j.member).To(BeEmpty(), "%s: no Job about a member (step-down, promote): %s", name, j.name)
	}
	deleted := map[string]int{}
	first := -1
	for _, d := range w.deletions() {
		if d.uid == w.original[d.member] {
			deleted[d.member]++
		}
		if first < 0 {
			first = d.pass
		}
		Expect(d.pass-first).To(BeNumerically("<=", 1), "%s: %s deleted in pass %d, the stop began in pass %d", name, d.member, d.pass, first)
	}
	for _, m := range w.names {
		Expect(deleted[m]).To(Equal(1), "%s: %s's pod deleted exactly once", name, m)
	}
	Expect(w.leader).NotTo(BeEmpty(), "%s: a leader after the restart", name)
	for _, d := range w.deletions() {
		Expect(d.stopRecorded).To(BeTrue(), "%s: %s was deleted in pass %d before status recorded the stop", name, d.member, d.pass)
	}
	expectOneHistoryEntry(c, w, name)
	Expect(c.Status.History[0].LongestStep.Action).To(Equal("OfflineWindow"), name)
}
