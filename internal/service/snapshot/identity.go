package snapshot

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// A cluster that restores another cluster's snapshot borrows two things of that
// cluster: its static-seal key (copied when the cluster is created) and, for the
// rebind, its executor identity (ServiceAccount and audience). Both are another
// tenant's credentials, so baokeeper lends them only for what that cluster itself
// produced (issue 38, docs/security.md):
//
//   - the source OpenBaoCluster exists and lists the snapshot (key and checksum) in
//     its status, or it is gone;
//   - the seal key Secret of the default name is baokeeper's for the source (its
//     labels), and the ServiceAccount is the source's (its controller, by UID) or
//     this cluster's own (created for the rebind when the source is gone).
//
// Anything else fails the restore with a message that says what to do; nothing runs
// under the other identity. A restore's steps run the operator's own executor image
// (operation.Snapshot.RestoreImage), never the author's.

// Lists reports whether cluster src lists the snapshot of object key in bucket with
// checksum sha in its status: its last snapshot, the snapshots it took, or its
// upgrade's.
func Lists(src *baov1.OpenBaoCluster, bucket, key, sha string) bool {
	st := &src.Status
	match := func(r *baov1.SnapshotReceipt) bool {
		if r == nil || r.SHA256 != sha {
			return false
		}
		b, k, ok := splitLocation(r.Location)
		return ok && b == bucket && k == key
	}
	if match(st.LastSnapshot) {
		return true
	}
	if up := st.Upgrade; up != nil && match(up.Snapshot) {
		return true
	}
	if ss := st.Snapshots; ss != nil {
		for i := range ss.Taken {
			if match(&ss.Taken[i]) {
				return true
			}
		}
	}
	return false
}

// splitLocation splits a receipt's location s3://BUCKET/KEY; ok is false for
// anything else.
func splitLocation(location string) (bucket, key string, ok bool) {
	rest, isS3 := strings.CutPrefix(location, "s3://")
	bucket, key, found := strings.Cut(rest, "/")
	return bucket, key, isS3 && found && bucket != "" && key != ""
}

// sourceUnlisted says why src's identity or key is not lent for c's snapshot, or "".
func sourceUnlisted(c, src *baov1.OpenBaoCluster) string {
	fs := c.Spec.Bootstrap.FromSnapshot
	if Lists(src, fs.S3.Bucket, fs.Key, fs.SHA256) {
		return ""
	}
	return fmt.Sprintf("OpenBaoCluster %s exists and does not list the snapshot %s (sha256 %s) in its status (status.lastSnapshot, status.snapshots.taken): "+
		"baokeeper lends %s's seal key and executor identity only to restore a snapshot %s took. Restore one it lists (kubectl bao restore %s --into %s), "+
		"or, if %s is another cluster that reuses the name, give the key in spec.bootstrap.fromSnapshot.sealKeySecretRef and restore under the name of the cluster the snapshot came from",
		src.Name, fs.Key, fs.SHA256, src.Name, src.Name, src.Name, c.Name, src.Name)
}

// RebindRefusal says why the rebind of cluster c may not log in as its source
// cluster's executor ("" when it may), from what the pass read (nil: not read).
func RebindRefusal(c *baov1.OpenBaoCluster, src *operation.RestoreSource) string {
	if c.Spec.Bootstrap == nil || c.BootstrapSourceCluster() == c.Name {
		return ""
	}
	if src == nil {
		return "the source cluster was not read: this is a bug, please report it"
	}
	sa, _ := SourceIdentity(c)
	ctl := src.AccountController
	switch {
	case src.Cluster != nil:
		if why := sourceUnlisted(c, src.Cluster); why != "" {
			return why
		}
		if !src.AccountExists {
			return fmt.Sprintf("OpenBaoCluster %s exists but its executor ServiceAccount %s does not: baokeeper does not create another cluster's account. Wait until %s's own reconciler created it, then delete and create this cluster again",
				src.Cluster.Name, sa.Name, src.Cluster.Name)
		}
		if ctl == nil || ctl.Kind != "OpenBaoCluster" || ctl.UID != src.Cluster.UID {
			return fmt.Sprintf("ServiceAccount %s is not the executor account of OpenBaoCluster %s (%s): the rebind would run as it. Nothing ran",
				sa.Name, src.Cluster.Name, controllerWords(ctl))
		}
		return ""
	case !src.AccountExists:
		// The source is gone: the rebind creates the account itself, owned by c.
		return ""
	case ctl != nil && ctl.UID == c.UID && c.UID != "":
		return ""
	}
	return fmt.Sprintf("ServiceAccount %s exists, and no OpenBaoCluster %s does (%s): the rebind would run as an account that is not baokeeper's for this restore. "+
		"Nothing ran. Delete the ServiceAccount if nothing needs it, then delete and create this cluster again", sa.Name, c.BootstrapSourceCluster(), controllerWords(ctl))
}

func controllerWords(ctl *metav1.OwnerReference) string {
	if ctl == nil {
		return "it has no controller"
	}
	return fmt.Sprintf("its controller is %s %s", ctl.Kind, ctl.Name)
}

// SealSourceRefusal says why cluster c may not copy the seal key Secret sec (read
// from the API server; nil when missing, which copySealKey reports itself) of its
// source cluster src (nil when gone), or "". A Secret named in
// spec.bootstrap.fromSnapshot.sealKeySecretRef is the author's choice (a key from a
// backup): with the admission policy on, the author must be able to read it. So is
// the default <source>-seal once the source is gone (the disaster-recovery path: the
// key put back from a backup). While the source exists, its key is copied only when
// baokeeper created it for that source and the source lists the snapshot.
func SealSourceRefusal(c, src *baov1.OpenBaoCluster, sec *corev1.Secret) string {
	fs := c.Spec.Bootstrap.FromSnapshot
	if sec == nil || src == nil || src.Name == c.Name || (fs.SealKeySecretRef != nil && fs.SealKeySecretRef.Name != "") {
		return ""
	}
	if sec.Labels[workload.LabelManagedBy] != workload.ManagedByValue || sec.Labels[workload.LabelCluster] != src.Name {
		return fmt.Sprintf("Secret %s is not the seal key baokeeper created for the cluster %s (it lacks the labels %s=%s and %s=%s): baokeeper does not copy it. "+
			"If it holds the key the snapshot was sealed with, name it in spec.bootstrap.fromSnapshot.sealKeySecretRef. Nothing was created",
			sec.Name, src.Name, workload.LabelManagedBy, workload.ManagedByValue, workload.LabelCluster, src.Name)
	}
	if why := sourceUnlisted(c, src); why != "" {
		return why + ". Nothing was created"
	}
	return ""
}

// RestoreWorkLimit bounds the scratch volume a restore downloads its snapshot into
// (issue 38): an object larger than that evicts the restore's pod, and its attempt
// fails, instead of filling the node's disk. It is the members' tmp directory's
// bound, where OpenBao writes the snapshot it receives.
const RestoreWorkLimit = workload.TmpDirLimit

func restoreWorkDir() *corev1.EmptyDirVolumeSource {
	q := resource.MustParse(RestoreWorkLimit)
	return &corev1.EmptyDirVolumeSource{SizeLimit: &q}
}
