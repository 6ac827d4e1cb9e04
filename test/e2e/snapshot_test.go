//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/test/rig/s3server"
)

const (
	snapNS     = "e2e-snapshot"
	snapBucket = "snapshots"
	snapCreds  = "s3-credentials"
)

var _ = Describe("A rolling upgrade with a pre-upgrade snapshot to a real S3 server", Ordered, SpecPriority(360), func() {
	var (
		s3           *s3server.Server
		tc           *testCluster
		restoreCheck string
	)

	BeforeAll(func(ctx SpecContext) {
		bins, _ := filepath.Glob(filepath.Join(root, "bin", "s3server-*"))
		Expect(bins).To(HaveLen(1), "bin/s3server-*: use `make test-e2e`, which builds it")
		var err error
		s3, err = s3server.Start(ctx, bins[0], filepath.Join(rigDir, "s3"), snapBucket)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s3.Stop)
		tc = newTestCluster(ctx, snapNS, 3)
		DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, snapNS) }, NodeTimeout(3*time.Minute))
		// Written before any snapshot: the restore at the end must bring it back.
		restoreCheck = randomValue()
		tc.writeKV(ctx, "restore-check", restoreCheck)
	}, NodeTimeout(bringUp+2*time.Minute))

	It("holds the upgrade at its prechecks while the S3 target refuses the credentials, touching nothing", func(ctx SpecContext) {
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: snapCreds, Namespace: snapNS},
			StringData: map[string]string{snapshot.EnvAccessKeyID: s3server.AccessKeyID, snapshot.EnvSecretAccessKey: "not-the-secret"},
		})).To(Succeed())
		tc.update(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Version = "2.4.1"
			c.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways, S3: &baov1.S3Target{
				Endpoint: s3.Endpoint, Bucket: snapBucket, Prefix: "e2e", ForcePathStyle: true,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: snapCreds},
			}}
		})
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			pc := upgrade.FirstFailedPrecheck(c.Status.Upgrade.Plan.Prechecks)
			g.Expect(pc).NotTo(BeNil())
			g.Expect(pc.Name).To(Equal(upgrade.PrecheckSnapshotTarget))
			g.Expect(pc.Message).To(ContainSubstring("is not usable"))
			g.Expect(pc.Message).To(ContainSubstring("checked from namespace "+snapNS), "the check ran in the cluster's namespace, not from the operator")
			g.Expect(c.Status.Message).To(ContainSubstring("SnapshotTarget"))
		}, time.Minute, pollEvery).Should(Succeed())
		checks := &batchv1.JobList{}
		Expect(k8s.List(ctx, checks, client.InNamespace(snapNS), client.MatchingLabels{executorjob.LabelStep: snapshot.StepCheckTarget})).To(Succeed())
		Expect(checks.Items).NotTo(BeEmpty(), "the reachability check is an executor Job in the cluster's namespace")
		Consistently(func(g Gomega) {
			g.Expect(templateImage(ctx, g)).To(HaveSuffix(":2.4.0"))
			jobs := &batchv1.JobList{}
			g.Expect(k8s.List(ctx, jobs, client.InNamespace(snapNS))).To(Succeed())
			for _, j := range jobs.Items {
				g.Expect(j.Labels).To(HaveKeyWithValue(executorjob.LabelStep, snapshot.StepCheckTarget), "no Job but the check: no snapshot, no step")
			}
		}, 4*time.Second, pollEvery).Should(Succeed(), "nothing is touched while a precheck fails")
	})

	It("fails after 3 snapshot Jobs when the bucket refuses uploads, touching nothing, and names the cause", func(ctx SpecContext) {
		uids := podUIDsIn(ctx, snapNS)
		failingFrom := time.Now()
		By("credentials that may read and list the bucket (the precheck passes) but not write to it")
		setCredentials(ctx, s3server.ReadOnlyAccessKeyID, s3server.ReadOnlySecretAccessKey)
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.Failure).NotTo(BeNil(), c.Status.Message)
			g.Expect(c.Status.Upgrade.Failure.Reason).To(Equal(snapshot.ReasonSnapshotFailed))
			g.Expect(c.Status.Upgrade.Failure.Message).To(ContainSubstring("failed to upload the snapshot"))
			g.Expect(c.Status.Upgrade.Failure.Message).To(ContainSubstring("no member was touched"))
			g.Expect(c.Status.Message).To(ContainSubstring("baokeeper.dev/retry"))
		}, 3*time.Minute, pollEvery).Should(Succeed())
		jobs := &batchv1.JobList{}
		Expect(k8s.List(ctx, jobs, client.InNamespace(snapNS), client.MatchingLabels{executorjob.LabelStep: snapshot.StepSnapshot})).To(Succeed())
		Expect(jobs.Items).To(HaveLen(int(operation.DefaultMaxJobAttempts)), "a bounded number of attempts")
		for _, j := range jobs.Items {
			Expect(j.Status.Failed).To(BeEquivalentTo(1), j.Name)
		}
		Consistently(func(g Gomega) {
			g.Expect(templateImage(ctx, g)).To(HaveSuffix(":2.4.0"))
			g.Expect(podUIDsIn(ctx, snapNS)).To(Equal(uids))
		}, 3*time.Second, pollEvery).Should(Succeed(), "a failed snapshot changes nothing of the cluster")
		recordScenario(scenarioSnapshotFailed, snapNS, failingFrom, time.Now())
		Expect(eventReasonsIn(ctx, snapNS)).To(ContainElement("UpgradeFailed"))
	}, SpecTimeout(5*time.Minute))

	It("after the fix and a retry, takes, verifies and records the snapshot before any member changes, then upgrades with one leader change", func(ctx SpecContext) {
		obs := tc.observe(ctx)
		oldLeader := tc.settledLeader(ctx)
		By("fixing the credentials and asking for a retry")
		uids := podUIDsIn(ctx, snapNS)
		setCredentials(ctx, s3server.AccessKeyID, s3server.SecretAccessKey)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[baov1.AnnotationRetry] = "fixed-credentials"
		})

		// A fault: the S3 server stops answering (SIGSTOP) as the snapshot Job starts,
		// for 20 s, less than the S3 client's one-minute response timeout. Expected: the
		// upgrade holds at its snapshot with nothing touched, and goes on after the thaw
		// in the same attempt.
		By("freezing the S3 server as the snapshot Job starts")
		Eventually(func(g Gomega) {
			jobs := &batchv1.JobList{}
			g.Expect(k8s.List(ctx, jobs, client.InNamespace(snapNS), client.MatchingLabels{executorjob.LabelStep: snapshot.StepSnapshot})).To(Succeed())
			g.Expect(len(jobs.Items)).To(BeNumerically(">", int(operation.DefaultMaxJobAttempts)), "the snapshot Job of the retry")
		}, time.Minute, 50*time.Millisecond).Should(Succeed())
		Expect(s3.Freeze()).To(Succeed())
		thawed := false
		thaw := func() {
			if !thawed {
				thawed = true
				Expect(s3.Thaw()).To(Succeed())
			}
		}
		DeferCleanup(thaw)
		Consistently(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.Snapshot).To(BeNil(), "no receipt while S3 does not answer")
			g.Expect(c.Status.Upgrade.Failure).To(BeNil(), c.Status.Message)
			g.Expect(c.Status.Message).To(ContainSubstring("snapshot"), "status says what the upgrade waits for")
			g.Expect(templateImage(ctx, g)).To(HaveSuffix(":2.4.0"))
			g.Expect(podUIDsIn(ctx, snapNS)).To(Equal(uids))
		}, 20*time.Second, pollEvery).Should(Succeed(), "the upgrade holds at its snapshot while S3 is frozen, touching nothing")
		GinkgoWriter.Printf("held while S3 was frozen: %s\n", tc.get(ctx, Default).Status.Message)
		thaw()

		By("watching that nothing changes before the receipt is in status")
		var receipt *baov1.SnapshotReceipt
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			if c.Status.Upgrade == nil || c.Status.Upgrade.Snapshot == nil {
				g.Expect(c.Status.CurrentVersion).To(Equal("2.4.0"), "the upgrade cannot finish without a snapshot")
				Expect(templateImage(ctx, g)).To(HaveSuffix(":2.4.0"), "the pod template changes only after the receipt is recorded")
				Expect(podUIDsIn(ctx, snapNS)).To(Equal(uids), "no member is replaced before the receipt is recorded")
				g.Expect(c.Status.Upgrade.Snapshot).NotTo(BeNil())
			}
			receipt = c.Status.Upgrade.Snapshot.DeepCopy()
		}, 3*time.Minute, 100*time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("receipt: %+v\n", *receipt)

		tc.waitUpgraded(ctx, "2.4.1", 6*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("rolling upgrade with a pre-upgrade snapshot", "snapshot "+receipt.Location)
		res.recordWindow(scenarioSnapshot, snapNS)
		res.expectClean(tc, 1, "2.4.1")
		tc.expectAllOn(ctx, "2.4.1")

		By("the receipt describes the snapshot of the old leader, on the old version")
		Expect(receipt.FromMember).To(Equal(oldLeader))
		Expect(receipt.Version).To(Equal("2.4.0"))
		Expect(receipt.RaftIndex).To(BeNumerically(">", 0))
		Expect(receipt.Location).To(HavePrefix("s3://" + snapBucket + "/e2e/" + snapNS + "/" + name + "/2.4.0-to-2.4.1-"))
		c := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: name}, c)).To(Succeed())
		Expect(c.Status.LastSnapshot).To(Equal(receipt), "the cluster keeps the receipt after the upgrade")

		By("the object in S3 is a complete OpenBao snapshot with the recorded size, SHA-256 and Raft index")
		cl, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		key := receipt.Location[len("s3://"+snapBucket+"/"):]
		obj, err := cl.GetObject(ctx, snapBucket, key, minio.GetObjectOptions{})
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(obj)
		Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(body)
		Expect(int64(len(body))).To(Equal(receipt.SizeBytes))
		Expect(hex.EncodeToString(sum[:])).To(Equal(receipt.SHA256))
		index, sealed := readSnapshotArchive(body)
		Expect(sealed).To(BeTrue(), "the archive ends with its sealed checksums")
		Expect(index).To(BeEquivalentTo(receipt.RaftIndex))

		By("attempt 4 succeeded, with the least privilege")
		jobs := &batchv1.JobList{}
		Expect(k8s.List(ctx, jobs, client.InNamespace(snapNS), client.MatchingLabels{executorjob.LabelStep: snapshot.StepSnapshot})).To(Succeed())
		var succeeded []string
		for _, j := range jobs.Items {
			if j.Status.Succeeded == 1 {
				succeeded = append(succeeded, j.Name)
				Expect(j.Spec.Template.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()), "no Kubernetes API token")
			}
		}
		Expect(jobs.Items).To(HaveLen(4), "3 failed attempts and the one after the retry")
		Expect(succeeded).To(ConsistOf(HaveSuffix("-4")), "the retry continued counting attempts")
		Expect(eventReasonsIn(ctx, snapNS)).To(ContainElements("SnapshotStarted", "SnapshotTaken"))
	}, SpecTimeout(10*time.Minute))

	It("reuses a snapshot younger than maxAge under IfOlderThan, without a new Job", func(ctx SpecContext) {
		before := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: name}, before)).To(Succeed())
		last := before.Status.LastSnapshot
		Expect(last).NotTo(BeNil())
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Version = "2.5.0"
			c.Spec.Upgrade.PreUpgradeSnapshot.Policy = baov1.SnapshotIfOlderThan
			c.Spec.Upgrade.PreUpgradeSnapshot.MaxAge = baov1.DurationOf(time.Hour)
		})
		var used *baov1.SnapshotReceipt
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.TargetVersion).To(Equal("2.5.0"))
			g.Expect(c.Status.Upgrade.Snapshot).NotTo(BeNil())
			used = c.Status.Upgrade.Snapshot
		}, 2*time.Minute, 100*time.Millisecond).Should(Succeed())
		Expect(used).To(Equal(last), "the last receipt is reused as is")
		tc.waitUpgraded(ctx, "2.5.0", 6*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("rolling upgrade reusing the last snapshot, 2.4.1 to 2.5.0")
		res.expectClean(tc, 1, "2.5.0")
		tc.expectAllOn(ctx, "2.5.0")
		jobs := &batchv1.JobList{}
		Expect(k8s.List(ctx, jobs, client.InNamespace(snapNS), client.MatchingLabels{executorjob.LabelStep: snapshot.StepSnapshot})).To(Succeed())
		Expect(jobs.Items).To(HaveLen(4), "no new snapshot Job")
		Expect(eventReasonsIn(ctx, snapNS)).To(ContainElement("SnapshotReused"))
	}, SpecTimeout(10*time.Minute))

	It("goes back to the pre-upgrade snapshot with the restore runbook's commands: the cluster re-created at the old version holds the data of the snapshot and grows back to 3 voters", func(ctx SpecContext) {
		c := tc.get(ctx, Default)
		last := c.Status.LastSnapshot
		Expect(last).NotTo(BeNil())
		Expect(last.Version).To(Equal("2.4.0"), "the snapshot was taken before 2.4.0 went to 2.4.1")
		Expect(c.Status.CurrentVersion).To(Equal("2.5.0"))
		By("writing a key after the snapshot: the restore drops it")
		tc.writeKV(ctx, "after-snapshot", "lost-by-the-restore")

		out := runRunbook(ctx, "restore-from-snapshot.md", snapNS,
			"AWS_ACCESS_KEY_ID="+s3server.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+s3server.SecretAccessKey,
			"AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
		Expect(out).To(ContainSubstring("bao.snap: OK"), "the download is the snapshot baokeeper verified")
		Expect(out).To(ContainSubstring(restoreCheck), "the runbook's check reads the key written before the snapshot")

		By("the cluster runs 2.4.0 on 3 voters, with the snapshot's data on every member")
		members := memberNames(3)
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Phase).To(Equal(baov1.PhaseRunning), c.Status.Message)
			g.Expect(c.Status.CurrentVersion).To(Equal("2.4.0"))
			g.Expect(c.Status.ReadyMembers).To(BeEquivalentTo(3))
		}, 5*time.Minute, pollEvery).Should(Succeed())
		tc.refresh(ctx, members...)
		Eventually(func(g Gomega) {
			st, err := tc.autopilot(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Healthy).To(BeTrue())
			g.Expect(st.Voters).To(ConsistOf(members))
		}, 3*time.Minute, pollEvery).Should(Succeed())
		tc.expectAllOn(ctx, "2.4.0")
		for _, m := range members {
			Eventually(func(g Gomega) {
				v, found := tc.readKV(ctx, m, "restore-check")
				g.Expect(found).To(BeTrue(), "restore-check through %s", m)
				g.Expect(v).To(Equal(restoreCheck))
			}, time.Minute, pollEvery).Should(Succeed())
			_, found := tc.readKV(ctx, m, "after-snapshot")
			Expect(found).To(BeFalse(), "a write after the snapshot is gone, through %s", m)
		}
	}, SpecTimeout(20*time.Minute))

	// Issue 24: snapshots on request and on a schedule, with retention, on the cluster
	// the restore above re-created, while it serves writes.
	It("takes requested and scheduled snapshots while the cluster serves, and prunes the bucket to the retention count", func(ctx SpecContext) {
		cl, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		var folder string
		listFolder := func(g Gomega) []string {
			var keys []string
			for o := range cl.ListObjects(ctx, snapBucket, minio.ListObjectsOptions{Prefix: folder, Recursive: true}) {
				g.Expect(o.Err).NotTo(HaveOccurred())
				keys = append(keys, o.Key)
			}
			return keys
		}
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots = baov1.SnapshotsSpec{
				S3: &baov1.S3Target{Endpoint: s3.Endpoint, Bucket: snapBucket, Prefix: "e2e", ForcePathStyle: true,
					CredentialsSecretRef: corev1.LocalObjectReference{Name: snapCreds}},
				Retention: &baov1.SnapshotRetention{Count: ptrTo(int32(2))},
			}
			folder = snapshot.Folder(c, c.Spec.Snapshots.S3)
		})
		before := listFolder(Default)
		GinkgoWriter.Printf("objects in %s before: %d %v\n", folder, len(before), before)

		By("two requested snapshots, each verified in the bucket by its SHA-256")
		var requested []*baov1.SnapshotReceipt
		for range 2 {
			out := kubectlBao(ctx, "snapshot", name, "-n", snapNS, "--wait", "-o", "json")
			var res struct {
				Value   string                 `json:"value"`
				Receipt *baov1.SnapshotReceipt `json:"receipt"`
			}
			Expect(json.Unmarshal([]byte(out), &res)).To(Succeed(), out)
			Expect(res.Receipt).NotTo(BeNil(), out)
			Expect(res.Receipt.Request).To(Equal(res.Value))
			Expect(res.Receipt.Trigger).To(Equal(baov1.SnapshotRequested))
			key := res.Receipt.Location[len("s3://"+snapBucket+"/"):]
			o, err := cl.GetObject(ctx, snapBucket, key, minio.GetObjectOptions{})
			Expect(err).NotTo(HaveOccurred())
			body, err := io.ReadAll(o)
			Expect(err).NotTo(HaveOccurred())
			sum := sha256.Sum256(body)
			Expect(hex.EncodeToString(sum[:])).To(Equal(res.Receipt.SHA256), "the object is the snapshot the receipt names")
			Expect(int64(len(body))).To(Equal(res.Receipt.SizeBytes))
			requested = append(requested, res.Receipt)
		}

		By("a schedule of every minute: one scheduled snapshot, then retention keeps the newest 2")
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Snapshots.Schedule = "* * * * *" })
		killed := killOperatorOnce(ctx, "the scheduled snapshot started", func(g Gomega) {
			ss := tc.get(ctx, g).Status.Snapshots
			g.Expect(ss).NotTo(BeNil())
			g.Expect(ss.Current).NotTo(BeNil())
		}, 3*time.Second)
		var scheduled *baov1.SnapshotReceipt
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			ss := c.Status.Snapshots
			g.Expect(ss).NotTo(BeNil())
			g.Expect(ss.Taken).NotTo(BeEmpty())
			g.Expect(ss.Taken[0].Trigger).To(Equal(baov1.SnapshotScheduled), "the newest receipt is the scheduled one")
			g.Expect(ss.Current).To(BeNil(), "and its run, pruning included, ended")
			g.Expect(ss.LastPrune).NotTo(BeNil())
			g.Expect(ss.LastPrune.At.Time).To(BeTemporally(">=", ss.Taken[0].TakenAt.Time))
			scheduled = ss.Taken[0].DeepCopy()
		}, 3*time.Minute, pollEvery).Should(Succeed())
		killed()
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Snapshots.Schedule = "" })
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("two requested and one scheduled snapshot, with pruning")
		res.expectNoLoss()
		res.expectElections(0, "")

		c := tc.get(ctx, Default)
		Expect(c.Status.Snapshots.LastPrune.Failed).To(BeEmpty())
		Expect(c.Status.Snapshots.Taken[0].Location).To(Equal(scheduled.Location), "the newest verified snapshot")
		after := listFolder(Default)
		GinkgoWriter.Printf("objects in %s after: %d %v; last pruning: %+v\n", folder, len(after), after, *c.Status.Snapshots.LastPrune)
		key := func(r *baov1.SnapshotReceipt) string { return r.Location[len("s3://"+snapBucket+"/"):] }
		Expect(after).To(ConsistOf(key(scheduled), key(requested[1])),
			"retention count 2 keeps the newest two (this cluster's status names no older one to protect): %v before", before)
		Expect(c.Status.Snapshots.LastPrune.Kept).To(BeEquivalentTo(2))
		Expect(c.Status.Snapshots.LastPrune.Deleted).To(BeEquivalentTo(c.Status.Snapshots.LastPrune.Listed-2), "the last pruning deleted what it did not keep")
		Expect(c.Status.Snapshots.LastPrune.Deleted).To(BeNumerically(">=", 1), "the first requested snapshot, at least, is gone")
		Expect(eventReasonsIn(ctx, snapNS)).To(ContainElements("SnapshotRequested", "SnapshotTaken", "SnapshotsPruned"))
	}, SpecTimeout(8*time.Minute))

	// Issue 24: restore as an operation, into a new cluster.
	It("restores a snapshot into a new cluster with kubectl bao restore: no client before the restore, every write before the snapshot by value, none after, grown to 3 voters", func(ctx SpecContext) {
		restoreIntoNewCluster(ctx, tc, restoreCheck)
	}, SpecTimeout(12*time.Minute))

	// Issue 24: restore drills.
	It("runs restore drills on a schedule: one passes and leaves nothing behind, one of a corrupted object fails and alerts", func(ctx SpecContext) {
		cl, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		restoreDrills(ctx, tc, cl)
	}, SpecTimeout(12*time.Minute))

	// Issue 24: an upgrade rehearsed on a copy: on request, passing (the upgrade
	// counts it); before an upgrade, failing.
	It("rehearses an upgrade on a copy restored from the newest snapshot: one on request (kubectl bao rehearse) passes, reads the canary after the upgrade and lets the upgrade go, one Required fails and holds it", func(ctx SpecContext) {
		rehearseUpgrades(ctx, tc)
	}, SpecTimeout(20*time.Minute))

	// Issue 24: restore as an operation, in place.
	It("restores a snapshot in place with kubectl bao restore --in-place while the cluster serves, the operator killed meanwhile: every write before it by value, none after it, no member replaced", func(ctx SpecContext) {
		restoreInPlace(ctx, tc)
	}, SpecTimeout(12*time.Minute))

	// Issue 24: across a version boundary two versions cannot share, offline.
	It("upgrades across the version boundary offline: refused for a rolling upgrade, every member stopped and started on 2.6.0, no acknowledged write lost, the window measured", func(ctx SpecContext) {
		offlineAcrossBoundary(ctx, tc)
	}, SpecTimeout(12*time.Minute))
})

// setCredentials writes the snapshot credentials Secret.
func setCredentials(ctx context.Context, id, secret string) {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: snapCreds}, s)).To(Succeed())
	s.Data = map[string][]byte{snapshot.EnvAccessKeyID: []byte(id), snapshot.EnvSecretAccessKey: []byte(secret)}
	Expect(k8s.Update(ctx, s)).To(Succeed())
}

// templateImage is the image of the snapshot cluster's pod template.
func templateImage(ctx context.Context, g Gomega) string {
	sts := &appsv1.StatefulSet{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: snapNS, Name: name}, sts)).To(Succeed())
	return sts.Spec.Template.Spec.Containers[0].Image
}

// podUIDsIn maps each member pod of the namespace to its UID.
func podUIDsIn(ctx context.Context, namespace string) map[string]types.UID {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/name": "openbao"})).To(Succeed())
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// eventReasonsIn lists the reasons of the events in a namespace.
func eventReasonsIn(ctx context.Context, namespace string) []string {
	GinkgoHelper()
	evs := &corev1.EventList{}
	Expect(k8s.List(ctx, evs, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Reason)
	}
	return out
}

// readSnapshotArchive returns the Raft index of meta.json and whether the archive
// has a non-empty SHA256SUMS.sealed.
func readSnapshotArchive(b []byte) (index uint64, sealed bool) {
	GinkgoHelper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return index, sealed
		}
		Expect(err).NotTo(HaveOccurred())
		switch h.Name {
		case "meta.json":
			var m struct{ Index uint64 }
			Expect(json.NewDecoder(tr).Decode(&m)).To(Succeed())
			index = m.Index
		case "SHA256SUMS.sealed":
			data, err := io.ReadAll(tr)
			Expect(err).NotTo(HaveOccurred())
			sealed = len(data) > 0
		}
	}
}
