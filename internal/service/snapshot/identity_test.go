package snapshot

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

func TestLists(t *testing.T) {
	src := liveSource().Cluster
	key := "ns/bao/requested-2.4.0-20261206T100000Z-1.snap"
	g := NewWithT(t)
	g.Expect(Lists(src, "snaps", key, restoreSHA)).To(BeTrue(), "its last snapshot")
	g.Expect(Lists(src, "other", key, restoreSHA)).To(BeFalse(), "another bucket")
	g.Expect(Lists(src, "snaps", key+"x", restoreSHA)).To(BeFalse(), "another key")
	g.Expect(Lists(src, "snaps", key, strings.Repeat("0", 64))).To(BeFalse(), "another checksum")
	src.Status.LastSnapshot = nil
	g.Expect(Lists(src, "snaps", key, restoreSHA)).To(BeFalse())
	src.Status.Snapshots = &baov1.SnapshotsStatus{Taken: []baov1.SnapshotReceipt{{Location: "s3://snaps/" + key, SHA256: restoreSHA}}}
	g.Expect(Lists(src, "snaps", key, restoreSHA)).To(BeTrue(), "one it took on schedule")
	src.Status.Snapshots = nil
	src.Status.Upgrade = &baov1.UpgradeStatus{Snapshot: &baov1.SnapshotReceipt{Location: "s3://snaps/" + key, SHA256: restoreSHA}}
	g.Expect(Lists(src, "snaps", key, restoreSHA)).To(BeTrue(), "its upgrade's")
}

// TestSealSourceRefusal: the default seal key is copied only when baokeeper created
// it for the source and the source, while it exists, lists the snapshot.
func TestSealSourceRefusal(t *testing.T) {
	ours := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bao-seal", Labels: map[string]string{workload.LabelManagedBy: workload.ManagedByValue, workload.LabelCluster: "bao"}}}
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bao-seal"}}
	unlisted := liveSource().Cluster
	unlisted.Status.LastSnapshot = nil
	withRef := func(c *baov1.OpenBaoCluster) {
		c.Spec.Bootstrap.FromSnapshot.SealKeySecretRef = &corev1.LocalObjectReference{Name: "backup"}
	}
	tests := []struct {
		name string
		c    *baov1.OpenBaoCluster
		src  *baov1.OpenBaoCluster
		sec  *corev1.Secret
		want string
	}{
		{"the live source's own key, for a snapshot it lists", restoreCluster(), liveSource().Cluster, ours, ""},
		{"the key of a source that is gone", restoreCluster(), nil, ours, ""},
		{"a key put back from a backup after the source is gone (disaster recovery)", restoreCluster(), nil, planted, ""},
		{"a Secret of that name baokeeper did not create, beside the live source", restoreCluster(), liveSource().Cluster, planted,
			"Secret bao-seal is not the seal key baokeeper created for the cluster bao (it lacks the labels"},
		{"the live source's key, for a snapshot it does not list (a cluster borrowing another's key)", restoreCluster(), unlisted, ours,
			"OpenBaoCluster bao exists and does not list the snapshot"},
		{"a Secret the author names (a key from a backup): theirs to name, the admission policy checks they may read it", restoreCluster(withRef), unlisted, planted, ""},
		{"no Secret: reported where it is read", restoreCluster(), nil, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SealSourceRefusal(tc.c, tc.src, tc.sec)
			if tc.want == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
				return
			}
			NewWithT(t).Expect(got).To(ContainSubstring(tc.want))
		})
	}
}

// TestRestoreStepsRunTheOperatorsImage: the author's spec.upgrade.executor.image
// never runs with a snapshot's credentials or another cluster's identity.
func TestRestoreStepsRunTheOperatorsImage(t *testing.T) {
	g := NewWithT(t)
	c := restoreCluster(atStep(baov1.RestoreStepRebind, 0))
	c.Spec.Upgrade.Executor.Image = "evil.example/executor:1"
	s := restoreSnap(c, now, []operation.Member{member0()}, nil)
	s.ExecutorImage, s.OperatorExecutorImage = "evil.example/executor:1", "ghcr.io/baokeeper/baokeeper:0.3.0"
	s.AutopilotKnown = false
	p := RestoreOperation{}.Decide(s)
	g.Expect(p.Job).NotTo(BeNil())
	g.Expect(p.Job.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/baokeeper/baokeeper:0.3.0"))

	c = restoreCluster(atStep(baov1.RestoreStepRestore, 0))
	s = restoreSnap(c, now, []operation.Member{member0()}, nil)
	s.ExecutorImage, s.OperatorExecutorImage = "evil.example/executor:1", "ghcr.io/baokeeper/baokeeper:0.3.0"
	p = RestoreOperation{}.Decide(s)
	g.Expect(p.Job).NotTo(BeNil(), "the restore step's Job: %s", p.WaitingFor)
	g.Expect(p.Job.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/baokeeper/baokeeper:0.3.0"))
}
