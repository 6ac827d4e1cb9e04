package kubectlbao

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func withReceipts(rs ...baov1.SnapshotReceipt) option {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Snapshots = &baov1.SnapshotsStatus{Taken: rs}
	}
}

func takenReceipt(sha string, minutes int, version string) baov1.SnapshotReceipt {
	return baov1.SnapshotReceipt{Location: "s3://snaps/prod/vault/bao/requested-" + version + "-" + sha + ".snap", SHA256: strings.Repeat(sha, 64),
		TakenAt: minutesAgo(minutes), Version: version, SizeBytes: 1024, RaftIndex: 42}
}

func TestPlanRestore(t *testing.T) {
	tests := []struct {
		reason  string
		c       *baov1.OpenBaoCluster
		in      RestoreInput
		wantSHA string
		wantErr string
	}{
		{reason: "the newest receipt by default, from taken and lastSnapshot",
			c: newCluster(withReceipts(takenReceipt("a", 30, "2.4.0"), takenReceipt("b", 60, "2.4.0")), func(c *baov1.OpenBaoCluster) {
				ls := takenReceipt("c", 10, "2.4.0")
				c.Status.LastSnapshot = &ls
			}),
			in: RestoreInput{Into: "bao2"}, wantSHA: strings.Repeat("c", 64)},
		{reason: "the receipt --sha256 names",
			c:  newCluster(withReceipts(takenReceipt("a", 30, "2.4.0"), takenReceipt("b", 60, "2.4.0"))),
			in: RestoreInput{Into: "bao2", SHA256: strings.Repeat("b", 64)}, wantSHA: strings.Repeat("b", 64)},
		{reason: "no --into", c: newCluster(withReceipts(takenReceipt("a", 30, "2.4.0"))), in: RestoreInput{}, wantErr: "--into NAME"},
		{reason: "in place is not offered", c: newCluster(withReceipts(takenReceipt("a", 30, "2.4.0"))), in: RestoreInput{Into: "bao"},
			wantErr: "to replace its data use --in-place instead"},
		{reason: "no snapshot at all", c: newCluster(), in: RestoreInput{Into: "bao2"}, wantErr: "has no verified snapshot"},
		{reason: "an unknown checksum", c: newCluster(withReceipts(takenReceipt("a", 30, "2.4.0"))),
			in: RestoreInput{Into: "bao2", SHA256: strings.Repeat("f", 64)}, wantErr: "no verified snapshot of vault/bao has sha256"},
		{reason: "a version older than the snapshot's, as the operator refuses it",
			c:  newCluster(withReceipts(takenReceipt("a", 30, "2.4.1"))),
			in: RestoreInput{Into: "bao2", Version: "2.4.0"}, wantErr: "newer than spec.version 2.4.0"},
		{reason: "a bucket the source no longer names",
			c: newCluster(withReceipts(takenReceipt("a", 30, "2.4.0")), func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.PreUpgradeSnapshot.S3.Bucket = "other"
			}),
			in: RestoreInput{Into: "bao2"}, wantErr: "in bucket snaps, which neither"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			before := tt.c.DeepCopy()
			out, r, err := PlanRestore(tt.c, tt.in)
			g.Expect(tt.c).To(Equal(before))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(out).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.SHA256).To(Equal(tt.wantSHA))
			b := out.Spec.Bootstrap.FromSnapshot
			g.Expect(out.Name).To(Equal(tt.in.Into))
			g.Expect(out.Namespace).To(Equal("vault"))
			g.Expect(b.SHA256).To(Equal(tt.wantSHA))
			g.Expect("s3://"+b.S3.Bucket+"/"+b.Key).To(Equal(r.Location), "bucket and key are the receipt's location")
			g.Expect(b.S3.Prefix).To(BeEmpty(), "the key is whole")
			g.Expect(b.SourceCluster).To(Equal("bao"))
			g.Expect(b.Version).To(Equal(r.Version))
			g.Expect(out.Status).To(Equal(baov1.OpenBaoClusterStatus{}))
		})
	}
}

func TestRestoreInPlaceFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"restore", "bao", "--in-place", "--into", "bao2"}, "--in-place restores into bao itself and takes no --into: drop them, or drop --in-place"},
		{[]string{"restore", "bao", "--in-place", "--version", "2.4.1", "--dry-run"}, "takes no --dry-run, --version"},
		{[]string{"restore", "bao", "--into", "bao2", "--wait"}, "--wait applies to --in-place"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			_, err := run(tt.args...)
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)), "refused before connecting to any cluster")
		})
	}
}
