package openbaocluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Namespace tenants try to reach Raft or another cluster through baokeeper. One who may patch ConfigMaps, and nothing of baokeeper's, tries to
// drive the executor through the mailbox (issue 38, docs/security.md). The operator
// starts no executor for what only the mailbox names, removes every entry it did not
// write, and says so in status, a condition and an event.
var _ = Describe("A namespace tenant (issue 38)", func() {
	ctx := context.Background()

	BeforeEach(func() {
		// Every member answers as active: the cluster serves (as in "The OpenBaoCluster reconciler").
		bao.SetDefaultHealth(openbao.Health{Initialized: true, Version: "2.4.0"})
		bao.SetDefaultReplication(openbao.Replication{AppendEntries: 1})
	})

	It("cannot start an executor or feed it steps through the mailbox", func() {
		ns := newNamespace(ctx)
		c := newCluster(ns, "bao")
		settleServing(ctx, c)
		mailbox := workload.NamesFor(c).ExecutorMailbox()

		By("writing the forged remove-peer of the issue (an invented operation, its own connection flags), a new-style forged request, a forged answer and a key that is no step name")
		forged := map[string]any{
			"request.zz1": `{"operation":"zz1","args":["remove-peer","--member","bao-2","--members","https://bao-0.bao-internal.` + ns +
				`.svc:8200","--ca-file","/var/run/secrets/baokeeper-ca/ca.crt","--token-file","/var/run/secrets/baokeeper/token","--timeout","8760h"]}`,
			"request.bao-removepeer-zz2-2-1": `{"operation":"zz2","step":"removepeer","member":"bao-2","at":"2026-12-07T12:00:00Z","deadline":150000000000}`,
			"result.bao-stepdown-zz2-0-1":    `{"operation":"zz2","exitCode":1,"executor":"bao-executor-zz2-x"}`,
			"request.Not_A_Step":             `{}`,
		}
		patch, err := json.Marshal(map[string]any{"data": forged})
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: mailbox}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())

		By("waiting for the operator to refuse them")
		Eventually(func(g Gomega) {
			cur := getCluster(ctx, c)
			g.Expect(cur.Status.RefusedInput).NotTo(BeNil())
			g.Expect(cur.Status.RefusedInput.Count).To(BeEquivalentTo(4))
			cond := condition(cur, baov1.ConditionInputRefused)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(BeEquivalentTo("True"))
			g.Expect(cond.Reason).To(Equal(string(baov1.ReasonMailboxEntryRefused)))
		}, timeout, interval).Should(Succeed())
		Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement(string(baov1.ReasonMailboxEntryRefused)))

		By("finding them removed, and no executor started for an operation that only the mailbox names")
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(k8s.Get(ctx, key(ns, mailbox), cm)).To(Succeed())
			for k := range forged {
				g.Expect(cm.Data).NotTo(HaveKey(k))
			}
		}, timeout, interval).Should(Succeed())
		Consistently(func(g Gomega) {
			jobs := &batchv1.JobList{}
			g.Expect(k8s.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{executorjob.LabelStep: executorjob.StepServe})).To(Succeed())
			g.Expect(jobs.Items).To(BeEmpty(), "bug: the operator started an executor for an operation only the mailbox named")
		}, "2s", interval).Should(Succeed())
		refused := getCluster(ctx, c).Status.RefusedInput
		var sources []string
		for _, r := range refused.Last {
			sources = append(sources, r.Source)
		}
		Expect(sources).To(ContainElement("ConfigMap bao-executor, key request.zz1"))
		Expect(refused.Count).To(BeEquivalentTo(4), "each refused once: gone, they are not counted again")
	})

	It("cannot fill the operator's memory with labelled ConfigMaps", func() {
		ns := newNamespace(ctx)
		n := 50
		if v, err := strconv.Atoi(os.Getenv("BAOKEEPER_FLOOD_CONFIGMAPS")); err == nil && v > 0 {
			n = v // the figure in docs/security.md: 500
		}
		cached := newReconciler().Client
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		before := heap()
		By(fmt.Sprintf("creating %d ConfigMaps of 1 MiB labelled app.kubernetes.io/managed-by=baokeeper", n))
		value := strings.Repeat("x", 1<<20-512)
		for i := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("flood-%03d", i),
				Labels: map[string]string{workload.LabelManagedBy: workload.ManagedByValue}}, Data: map[string]string{"v": value}}
			Expect(k8s.Create(ctx, cm)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			list := &corev1.ConfigMapList{}
			g.Expect(cached.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(n), "the cache sees them")
			for _, cm := range list.Items {
				g.Expect(cm.Data).To(BeEmpty(), "but holds their metadata only")
			}
		}, timeout, interval).Should(Succeed())
		after := heap()
		grew := int64(after) - int64(before)
		AddReportEntry("operator heap growth", fmt.Sprintf("%d labelled 1 MiB ConfigMaps: heap %+.1f MiB", n, float64(grew)/(1<<20)))
		GinkgoWriter.Printf("%d labelled 1 MiB ConfigMaps: heap grew by %.1f MiB\n", n, float64(grew)/(1<<20))
		Expect(grew).To(BeNumerically("<", int64(n)<<20/5), "bug: the cache holds the flood's data (%d MiB of it)", n)
		for i := range n {
			Expect(k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("flood-%03d", i)}})).To(Succeed())
		}
	})

	It("cannot borrow a live cluster's seal key with a snapshot that cluster does not list", func() {
		ns := newNamespace(ctx)
		prod := newCluster(ns, "prod")
		Expect(k8s.Create(ctx, prod)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, key(ns, "prod-seal"), &corev1.Secret{}) }, timeout, interval).Should(Succeed())

		evil := newCluster(ns, "evil")
		evil.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{
			S3:  baov1.S3Target{Endpoint: "https://s3.example.com", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}},
			Key: ns + "/prod/forged.snap", SHA256: strings.Repeat("b", 64), SourceCluster: "prod"}}
		Expect(k8s.Create(ctx, evil)).To(Succeed())
		Eventually(func(g Gomega) {
			cond := condition(getCluster(ctx, evil), baov1.ConditionDegraded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(string(baov1.ReasonSealKeyRefused)))
			g.Expect(cond.Message).To(ContainSubstring("OpenBaoCluster prod exists and does not list the snapshot " + ns + "/prod/forged.snap"))
		}, timeout, interval).Should(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, key(ns, "evil-seal"), &corev1.Secret{})) &&
				apierrors.IsNotFound(k8s.Get(ctx, key(ns, "evil"), &appsv1.StatefulSet{}))
		}, 2*time.Second, interval).Should(BeTrue(), "bug: prod's seal key was copied for a snapshot prod never took")
	})
})
