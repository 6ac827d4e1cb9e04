package kubectlbao

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// RestoreInput is what kubectl bao restore was asked.
type RestoreInput struct {
	// Into is the name of the new cluster.
	Into string
	// SHA256 picks the receipt with this checksum; empty picks the newest.
	SHA256 string
	// Version is the new cluster's spec.version; empty keeps the source's.
	Version string
	// Replicas is the new cluster's spec.replicas; 0 keeps the source's.
	Replicas int32
}

// PlanRestore builds the OpenBaoCluster that starts from one of the source
// cluster's verified snapshots: the source's spec, with spec.bootstrap.fromSnapshot
// naming the receipt's object, checksum and version, the source's bucket and seal
// key. It refuses, changing nothing, what the operator would refuse: a receipt
// that is not there, a version older than the snapshot's, a restore onto the
// source's own name while it exists.
func PlanRestore(src *baov1.OpenBaoCluster, in RestoreInput) (*baov1.OpenBaoCluster, *baov1.SnapshotReceipt, error) {
	if in.Into == "" {
		return nil, nil, errors.New("name the new cluster with --into NAME (the snapshot is restored into a new OpenBaoCluster), or restore into CLUSTER itself with --in-place")
	}
	if in.Into == src.Name {
		return nil, nil, fmt.Errorf("--into %s names the cluster the snapshot comes from: to replace its data use --in-place instead, or restore into a new cluster "+
			"(--into %s-restored), check it, then point clients at it", in.Into, src.Name)
	}
	receipts := Receipts(src)
	if len(receipts) == 0 {
		return nil, nil, fmt.Errorf("openbaocluster %s/%s has no verified snapshot (status.lastSnapshot and status.snapshots.taken are empty): take one with kubectl bao snapshot %s --wait",
			src.Namespace, src.Name, src.Name)
	}
	r := &receipts[0]
	if in.SHA256 != "" {
		r = nil
		for i := range receipts {
			if receipts[i].SHA256 == in.SHA256 {
				r = &receipts[i]
				break
			}
		}
		if r == nil {
			return nil, nil, fmt.Errorf("no verified snapshot of %s/%s has sha256 %s; kubectl bao status %s lists the receipts (status.snapshots.taken, status.lastSnapshot)",
				src.Namespace, src.Name, in.SHA256, src.Name)
		}
	}
	s3, key, err := snapshot.TargetFor(src, r.Location)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: write the new cluster's spec.bootstrap.fromSnapshot by hand (docs/restore.md)", err)
	}
	out := &baov1.OpenBaoCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: baov1.GroupVersion.String(), Kind: "OpenBaoCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: in.Into, Namespace: src.Namespace, Labels: src.Labels},
		Spec:       *src.Spec.DeepCopy(),
	}
	if in.Version != "" {
		out.Spec.Version = in.Version
	}
	if in.Replicas != 0 {
		out.Spec.Replicas = &in.Replicas
	}
	out.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{
		S3: *s3, Key: key, SHA256: r.SHA256, Version: r.Version, SourceCluster: src.Name, Canary: r.Canary,
	}}
	if ref := upgrade.CheckSpec(out); ref != nil {
		return nil, nil, fmt.Errorf("the operator would refuse %s (%s): %s", in.Into, ref.Reason, ref.Message)
	}
	if d := upgrade.EvaluateVersion(upgrade.VersionRequest{Desired: out.Spec.Version, Image: out.Spec.Image}); !d.Allowed {
		return nil, nil, fmt.Errorf("the operator would refuse %s (%s): %s", in.Into, d.Reason, d.Message)
	}
	return out, r, nil
}

// Receipts are the source's verified snapshots, newest first: status.snapshots.taken
// and status.lastSnapshot (once, by checksum).
func Receipts(c *baov1.OpenBaoCluster) []baov1.SnapshotReceipt {
	var out []baov1.SnapshotReceipt
	if ss := c.Status.Snapshots; ss != nil {
		out = append(out, ss.Taken...)
	}
	if ls := c.Status.LastSnapshot; ls != nil && ls.SHA256 != "" {
		seen := false
		for _, r := range out {
			seen = seen || r.SHA256 == ls.SHA256
		}
		if !seen {
			out = append(out, *ls)
		}
	}
	slices.SortStableFunc(out, func(a, b baov1.SnapshotReceipt) int {
		switch {
		case a.TakenAt == nil && b.TakenAt == nil:
			return 0
		case a.TakenAt == nil:
			return 1
		case b.TakenAt == nil:
			return -1
		}
		return b.TakenAt.Compare(a.TakenAt.Time)
	})
	return out
}

// restoreFlags are the flags of kubectl bao restore.
type restoreFlags struct {
	into, sha256, version, output, fieldManager string
	replicas                                    int32
	dryRun, inPlace, wait                       bool
	timeout                                     time.Duration
}

func (r *runner) restoreCommand() *cobra.Command {
	var f restoreFlags
	cmd := &cobra.Command{
		Use:   "restore CLUSTER (--into NEW | --in-place)",
		Short: "Restore one of CLUSTER's verified snapshots into a new cluster, or into CLUSTER itself",
		Long: "Creates the OpenBaoCluster NEW with CLUSTER's spec and spec.bootstrap.fromSnapshot naming a verified snapshot of CLUSTER " +
			"(the newest, or the one --sha256 names): NEW starts with one member, copies CLUSTER's seal key, checks the object's SHA-256, " +
			"restores it, restarts, takes over the roles the snapshot holds, then grows to spec.replicas and creates its client Service. " +
			"Refused, with nothing created, when the operator would refuse NEW (a version older than the snapshot's, an unknown receipt). " +
			"With --dry-run, prints NEW instead of creating it.\n\n" +
			"With --in-place, writes baokeeper.dev/restore=<sha256>-<token> on CLUSTER instead: the operator replaces CLUSTER's data with the snapshot " +
			"(every write since it is lost), sends it to the leader, waits until it is applied and verifies every member. Refused, with nothing written, " +
			"during an upgrade, for a snapshot newer than the cluster's version, or for a checksum no receipt has.",
		Example: "  kubectl bao restore bao --into bao-restored -n vault\n  kubectl bao restore bao --into bao-old --sha256 9f2c... --version 2.4.0 --dry-run -o yaml\n" +
			"  kubectl bao restore bao --in-place --sha256 9f2c... --wait -n vault",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.runRestore(cmd, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.into, "into", "", "name of the new cluster (required)")
	cmd.Flags().StringVar(&f.sha256, "sha256", "", "the receipt to restore, by checksum (default: the newest verified snapshot)")
	cmd.Flags().StringVar(&f.version, "version", "", "spec.version of the new cluster (default: CLUSTER's; never older than the snapshot's)")
	cmd.Flags().Int32Var(&f.replicas, "replicas", 0, "spec.replicas of the new cluster (default: CLUSTER's)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the new cluster instead of creating it")
	cmd.Flags().BoolVar(&f.inPlace, "in-place", false, "restore into CLUSTER itself, replacing its data (every write since the snapshot is lost)")
	cmd.Flags().BoolVar(&f.wait, "wait", false, "with --in-place: wait until the restore is done (or failed); exit non-zero when it failed")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Minute, "how long --wait waits")
	cmd.Flags().StringVar(&f.fieldManager, "field-manager", "",
		"with --in-place: the field manager of the write (default: "+FieldManager+"/<your user name as the API server knows it>)")
	addOutputFlag(cmd, &f.output)
	return cmd
}

func (r *runner) runRestore(cmd *cobra.Command, name string, f restoreFlags) error {
	if err := ValidateOutput(f.output); err != nil {
		return err
	}
	if f.inPlace {
		var conflicting []string
		for flag, set := range map[string]bool{"--into": f.into != "", "--version": f.version != "", "--replicas": f.replicas != 0, "--dry-run": f.dryRun} {
			if set {
				conflicting = append(conflicting, flag)
			}
		}
		if len(conflicting) > 0 {
			slices.Sort(conflicting)
			return fmt.Errorf("--in-place restores into %s itself and takes no %s: drop them, or drop --in-place to restore into a new cluster", name, strings.Join(conflicting, ", "))
		}
		return r.runControl(cmd, ControlRestore, name, &controlFlags{output: f.output, fieldManager: f.fieldManager, wait: f.wait, timeout: f.timeout, sha256: f.sha256})
	}
	if f.wait {
		return errors.New("--wait applies to --in-place; a new cluster shows its restore in kubectl bao status NEW (condition Restored)")
	}
	ctx := cmd.Context()
	s, err := r.connect()
	if err != nil {
		return err
	}
	src, err := s.get(ctx, name)
	if err != nil {
		return err
	}
	out, receipt, err := PlanRestore(src, RestoreInput{Into: f.into, SHA256: f.sha256, Version: f.version, Replicas: f.replicas})
	if err != nil {
		return fmt.Errorf("%w: restore of openbaocluster %s/%s: %v; nothing was created", ErrRefused, src.Namespace, src.Name, err)
	}
	if !f.dryRun {
		if err := s.cl.Create(ctx, out, client.FieldOwner(s.fieldManager(ctx))); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%w: openbaocluster %s/%s exists: choose another --into name, or delete it first; nothing was created", ErrRefused, out.Namespace, out.Name)
			}
			return fmt.Errorf("failed to create openbaocluster %s/%s: %w", out.Namespace, out.Name, err)
		}
	}
	if f.output != OutputText || f.dryRun {
		format := f.output
		if format == OutputText {
			format = OutputYAML
		}
		return PrintObject(cmd.OutOrStdout(), format, out)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Created openbaocluster %s/%s from %s\n", out.Namespace, out.Name, receipt.Location)
	fmt.Fprintf(w, "  snapshot: sha256 %s, %d bytes, taken %s on %s at Raft index %d\n", receipt.SHA256, receipt.SizeBytes, fmtTime(receipt.TakenAt), receipt.Version, receipt.RaftIndex)
	fmt.Fprintf(w, "  lost: every write to %s after %s\n", src.Name, fmtTime(receipt.TakenAt))
	fmt.Fprintf(w, "  follow: kubectl bao status %s -n %s (status.restore); kubectl wait bao/%s -n %s --for=condition=Restored --timeout=10m\n",
		out.Name, out.Namespace, out.Name, out.Namespace)
	return nil
}

func fmtTime(t *metav1.Time) string {
	if t == nil {
		return "at an unknown time"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}
