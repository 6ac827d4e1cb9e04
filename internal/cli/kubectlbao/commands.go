package kubectlbao

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// FieldManager is the field manager of every write of the plugin; the user the API
// server names is appended ("kubectl-bao/alice") so that break-glass records who
// acknowledged it (status.breakGlass.acknowledgedBy).
const FieldManager = "kubectl-bao"

// maxFieldManagerLength is the API server's limit on a field manager's length.
const maxFieldManagerLength = 128

// Options are what the commands take from outside. Zero values mean the process's:
// os streams are set by the caller, time.Now and crypto/rand otherwise.
type Options struct {
	// Streams are stdin, stdout and stderr.
	Streams genericiooptions.IOStreams
	// Now is the clock, read once per command.
	Now func() time.Time
	// Rand is the source of control tokens.
	Rand io.Reader
}

// runner holds the flags and options one invocation shares.
type runner struct {
	opts  Options
	flags *genericclioptions.ConfigFlags
}

// session is one connection to the API server.
type session struct {
	cl        client.Client
	namespace string
}

// NewRootCommand builds `kubectl bao` with every command and the kubeconfig flags
// (--kubeconfig, --context, --namespace, ...). Errors are returned, not printed: the
// caller prints them once.
func NewRootCommand(o Options) *cobra.Command {
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &runner{opts: o, flags: genericclioptions.NewConfigFlags(true)}
	root := &cobra.Command{
		Use:   "kubectl-bao",
		Short: "Follow and steer baokeeper's OpenBao clusters and their upgrades",
		Long: "kubectl bao shows an OpenBaoCluster's members, Raft health, upgrade, snapshot and break-glass at a glance, " +
			"says what an upgrade would do before it starts, and writes the manual controls the operator acts on " +
			"(promote, rollback, retry, pause, resume, break-glass ack), refusing those the operator would ignore.",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl bao"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	r.flags.AddFlags(root.PersistentFlags())
	root.SetIn(o.Streams.In)
	root.SetOut(o.Streams.Out)
	root.SetErr(o.Streams.ErrOut)
	root.AddCommand(r.statusCommand(), r.planCommand(), r.timelineCommand(), r.historyCommand(), r.fleetCommand(), r.waitCommand(), r.reportCommand(),
		r.controlCommand(ControlPromote, "Release a blue-green upgrade that waits for promotion",
			"Writes baokeeper.dev/promote with a fresh token. Only while the upgrade holds for it (status.blueGreen.promotion: Waiting): "+
				"a value set before the hold is refused by the operator and releases nothing, so nothing is written then."),
		r.controlCommand(ControlRollback, "Roll back a blue-green upgrade before the point of no return",
			"Writes baokeeper.dev/rollback with a fresh token, only while the operator would start a rollback: a blue-green upgrade whose green has not led yet."),
		r.controlCommand(ControlRetry, "Retry a failed upgrade or scaling step, or a rolled-back upgrade",
			"Writes baokeeper.dev/retry with a fresh token, only after a failure (status.upgrade.failure, status.scaling.failure) or a rollback (status.lastRollback)."),
		r.controlCommand(ControlPause, "Hold the upgrade at its next safe point (spec.upgrade.paused: true)",
			"Sets spec.upgrade.paused to true: the member or step in progress finishes, then the upgrade holds with UpgradePaused=True."),
		r.controlCommand(ControlResume, "Let a paused upgrade go on (spec.upgrade.paused: false)",
			"Sets spec.upgrade.paused to false."),
		r.controlCommand(ControlRestart, "Restart every member, one at a time, the leader last",
			"Writes baokeeper.dev/restart with a fresh token: the operator sets it on the member pod template and the rollout restarts every member, "+
				"followers first and the leader last with one hand-off, each gated on Raft. Queued behind an upgrade or scaling in progress; "+
				"refused (nothing written) while break-glass is active."),
		r.controlCommand(ControlSnapshot, "Take a verified Raft snapshot now",
			"Writes baokeeper.dev/snapshot with a fresh token: the operator takes a snapshot into the cluster's bucket (spec.snapshots.s3, else "+
				"spec.upgrade.preUpgradeSnapshot.s3), reads it back, checks its size and SHA-256, and lists its receipt in status.snapshots.taken; "+
				"with spec.snapshots.retention it then prunes older objects. Queued behind an upgrade or scaling in progress; refused (nothing written) "+
				"when the cluster has no bucket. With --wait, waits for the receipt (or the failure) and prints it."),
		r.restoreCommand(),
		r.rehearseCommand(),
		r.breakGlassCommand(), r.recoverQuorumCommand(),
	)
	return root
}

// oneCluster accepts exactly one argument, the cluster's name.
func oneCluster(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("name one OpenBaoCluster: %s NAME (kubectl get bao lists them), got %d arguments", cmd.CommandPath(), len(args))
	}
	return nil
}

func addOutputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", "", "print the object as json or yaml instead of text")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{OutputJSON, OutputYAML}, cobra.ShellCompDirectiveNoFileComp
	})
}

func (r *runner) statusCommand() *cobra.Command {
	var output string
	var watch bool
	cmd := &cobra.Command{
		Use:               "status CLUSTER",
		Short:             "Show members, Raft health, the upgrade, snapshots and break-glass of a cluster",
		Example:           "  kubectl bao status bao -n vault\n  kubectl bao status bao -o yaml",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ValidateOutput(output); err != nil {
				return err
			}
			s, err := r.connect()
			if err != nil {
				return err
			}
			seen := ""
			for {
				c, err := s.get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if c.ResourceVersion != seen {
					if seen != "" {
						fmt.Fprintf(cmd.OutOrStdout(), "\n--- %s ---\n", r.opts.Now().UTC().Format(time.RFC3339))
					}
					seen = c.ResourceVersion
					if output != OutputText {
						err = PrintObject(cmd.OutOrStdout(), output, Printable(c))
					} else {
						err = RenderStatus(cmd.OutOrStdout(), c, r.opts.Now())
					}
					if err != nil || !watch {
						return err
					}
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(waitPoll):
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "print the status again each time it changes, until interrupted")
	addOutputFlag(cmd, &output)
	return cmd
}

func (r *runner) planCommand() *cobra.Command {
	var output, file string
	var req PlanRequest
	cmd := &cobra.Command{
		Use:   "plan CLUSTER (--to VERSION | -f FILE)",
		Short: "Show what an upgrade, or any change of the spec, would do, without changing anything",
		Long: "With --to: shows the order of members (rolling: followers first, the leader last; blue-green: green's members and the phases), " +
			"the prechecks as far as status shows them, the snapshot target and the undo path, computed with the operator's own " +
			"version policy, prechecks and planner. An invalid version or a downgrade is refused.\n\n" +
			"With -f: reads the edited OpenBaoCluster and shows what applying it would do: what is refused (spec.storage, invalid durations), " +
			"the upgrade, the scaling, and what changes in the member pod template, which restarts every member through the rollout " +
			"(in this order, the leader last). The pod template is built by the operator's own code.",
		Example: "  kubectl bao plan bao --to 2.4.1\n  kubectl bao plan bao --to 2.4.1 --image registry.example/openbao:2.4.1 -o json\n" +
			"  kubectl get bao bao -o yaml > bao.yaml; $EDITOR bao.yaml; kubectl bao plan bao -f bao.yaml",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ValidateOutput(output); err != nil {
				return err
			}
			switch {
			case req.To == "" && file == "":
				return fmt.Errorf("name the version to plan for, or the edited manifest: %s %s --to VERSION, or %s %s -f FILE", cmd.CommandPath(), args[0], cmd.CommandPath(), args[0])
			case req.To != "" && file != "":
				return fmt.Errorf("--to and -f plan different things: give one (the version of the manifest is planned with -f)")
			}
			var proposed *baov1.OpenBaoCluster
			if file != "" {
				in := cmd.InOrStdin()
				if file != "-" {
					f, err := os.Open(file)
					if err != nil {
						return fmt.Errorf("failed to open %s: %w", file, err)
					}
					defer f.Close()
					in = f
				}
				var err error
				if proposed, err = ReadCluster(in); err != nil {
					return err
				}
			}
			s, err := r.connect()
			if err != nil {
				return err
			}
			c, err := s.get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if proposed != nil {
				p, err := BuildSpecPlan(c, proposed, r.opts.Now())
				if err != nil {
					return err
				}
				if output != OutputText {
					return PrintObject(cmd.OutOrStdout(), output, p)
				}
				return RenderSpecPlan(cmd.OutOrStdout(), p)
			}
			p, err := BuildPlan(c, req, r.opts.Now())
			if err != nil {
				return err
			}
			if output != OutputText {
				return PrintObject(cmd.OutOrStdout(), output, p)
			}
			return RenderPlan(cmd.OutOrStdout(), p)
		},
	}
	cmd.Flags().StringVar(&req.To, "to", "", "the version to plan the upgrade to (MAJOR.MINOR.PATCH)")
	cmd.Flags().StringVar(&req.Image, "image", "", "the image to plan with (default: spec.image, or the OpenBao image of --to)")
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the edited OpenBaoCluster manifest to plan (- reads standard input)")
	addOutputFlag(cmd, &output)
	return cmd
}

// TimelineOutput is what kubectl bao timeline prints with -o json|yaml.
type TimelineOutput struct {
	// Cluster is namespace/name.
	Cluster string `json:"cluster"`
	// Events are oldest first.
	Events []TimelineEntry `json:"events"`
}

func (r *runner) timelineCommand() *cobra.Command {
	var output string
	var watch bool
	cmd := &cobra.Command{
		Use:               "timeline CLUSTER",
		Short:             "Show the cluster's events in time order",
		Example:           "  kubectl bao timeline bao -n vault",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ValidateOutput(output); err != nil {
				return err
			}
			s, err := r.connect()
			if err != nil {
				return err
			}
			c, err := s.get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			list := func() ([]TimelineEntry, error) {
				events := &corev1.EventList{}
				if err := s.cl.List(cmd.Context(), events, client.InNamespace(c.Namespace),
					client.MatchingFields{"involvedObject.uid": string(c.UID)}); err != nil {
					return nil, fmt.Errorf("failed to list the events of openbaocluster %s/%s: %w; check that you may list events in %s", c.Namespace, c.Name, err, c.Namespace)
				}
				return Timeline(events.Items), nil
			}
			entries, err := list()
			if err != nil {
				return err
			}
			cluster := c.Namespace + "/" + c.Name
			if output != OutputText {
				return PrintObject(cmd.OutOrStdout(), output, TimelineOutput{Cluster: cluster, Events: entries})
			}
			if err := RenderTimeline(cmd.OutOrStdout(), cluster, entries, r.opts.Now()); err != nil || !watch {
				return err
			}
			// --watch: each event once more as it happens (or repeats).
			printed := map[string]bool{}
			for _, e := range entries {
				printed[timelineKey(e)] = true
			}
			for {
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(waitPoll):
				}
				if entries, err = list(); err != nil {
					return err
				}
				for _, e := range entries {
					if k := timelineKey(e); !printed[k] {
						printed[k] = true
						fmt.Fprintf(cmd.OutOrStdout(), "%s  %-7s  %s  %s\n", e.Time.UTC().Format(time.RFC3339), e.Type, e.Reason, e.Message)
					}
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after the events so far, print each new one as it happens, until interrupted")
	addOutputFlag(cmd, &output)
	return cmd
}

// timelineKey identifies an event as printed: a repeat (a higher count) prints again.
func timelineKey(e TimelineEntry) string {
	return fmt.Sprintf("%s|%s|%s|%d", e.Time.UTC().Format(time.RFC3339Nano), e.Reason, e.Message, e.Count)
}

// controlFlags are the flags of every control command.
type controlFlags struct {
	output       string
	fieldManager string
	nonce        string
	// wait and timeout: snapshot --wait, restore --in-place --wait.
	wait    bool
	timeout time.Duration
	// sha256: restore --in-place --sha256.
	sha256 string
	// to: rehearse --to.
	to string
	// annotation: pause --annotation, resume --annotation.
	annotation bool
	// from: recover-quorum --from.
	from string
}

func (f *controlFlags) add(cmd *cobra.Command) {
	addOutputFlag(cmd, &f.output)
	cmd.Flags().StringVar(&f.fieldManager, "field-manager", "",
		"the field manager of the write (default: "+FieldManager+"/<your user name as the API server knows it>)")
}

func (r *runner) controlCommand(ctl Control, short, long string) *cobra.Command {
	var f controlFlags
	cmd := &cobra.Command{
		Use:               string(ctl) + " CLUSTER",
		Short:             short,
		Long:              long,
		Example:           fmt.Sprintf("  kubectl bao %s bao -n vault", ctl),
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.runControl(cmd, ctl, args[0], &f)
		},
	}
	f.add(cmd)
	if ctl == ControlPause || ctl == ControlResume {
		cmd.Flags().BoolVar(&f.annotation, "annotation", false, "write the "+baov1.AnnotationPause+" annotation instead of spec.upgrade.paused: "+
			"a control beside the spec that a GitOps controller (Argo CD, Flux) does not revert when Git does not name it (docs/fleet.md)")
	}
	if ctl == ControlSnapshot {
		cmd.Flags().BoolVar(&f.wait, "wait", false, "wait until the snapshot is verified (or failed) and print its receipt; exit non-zero when it failed")
		cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Minute, "how long --wait waits")
	}
	return cmd
}

func (r *runner) rehearseCommand() *cobra.Command {
	var f controlFlags
	cmd := &cobra.Command{
		Use:   "rehearse CLUSTER --to VERSION",
		Short: "Rehearse an upgrade on a copy restored from the newest snapshot, changing nothing of the cluster",
		Long: "Writes baokeeper.dev/rehearse=VERSION+<token>, only when the operator would accept it: the cluster is not upgrading, VERSION is later than " +
			"status.currentVersion and an upgrade could reach it, and the cluster has a verified snapshot. Holding the operation lock, the operator " +
			"restores the newest snapshot into a copy (CLUSTER-rehearsal), upgrades the copy to VERSION with the cluster's strategy and gates, reads the " +
			"restore canary back, and deletes the copy; the verdict is in status.rehearsal. An upgrade between the same two versions within 24 hours " +
			"counts a rehearsal that passed for spec.upgrade.rehearsal Required. With --wait, waits for the verdict and exits non-zero when it failed.",
		Example:           "  kubectl bao rehearse bao -n vault --to 2.5.1 --wait",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.to == "" {
				return fmt.Errorf("name the version to rehearse: %s %s --to VERSION (kubectl bao plan %s --to VERSION shows what the upgrade would do)", cmd.CommandPath(), args[0], args[0])
			}
			return r.runControl(cmd, ControlRehearse, args[0], &f)
		},
	}
	cmd.Flags().StringVar(&f.to, "to", "", "the version to rehearse the upgrade to, such as 2.5.1")
	cmd.Flags().BoolVar(&f.wait, "wait", false, "wait until the rehearsal ended and print its verdict; exit non-zero when it failed")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 45*time.Minute, "how long --wait waits")
	f.add(cmd)
	return cmd
}

func (r *runner) breakGlassCommand() *cobra.Command {
	group := &cobra.Command{
		Use:   "break-glass",
		Short: "Act on a cluster whose automation stopped (status.breakGlass)",
	}
	var f controlFlags
	ack := &cobra.Command{
		Use:   "ack CLUSTER --nonce NONCE",
		Short: "Acknowledge break-glass with the current nonce, after following its recovery steps",
		Long: "Writes baokeeper.dev/break-glass-ack with the nonce, only when break-glass is active and the nonce is the current " +
			"status.breakGlass.nonce: a stale or mistyped nonce is refused before anything is written.",
		Example:           "  kubectl bao break-glass ack bao -n vault --nonce 9f2c...",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.nonce == "" {
				return fmt.Errorf("name the nonce: %s %s --nonce NONCE (kubectl bao status %s shows status.breakGlass.nonce)", cmd.CommandPath(), args[0], args[0])
			}
			return r.runControl(cmd, ControlBreakGlassAck, args[0], &f)
		},
	}
	ack.Flags().StringVar(&f.nonce, "nonce", "", "status.breakGlass.nonce, as kubectl bao status shows it")
	f.add(ack)
	group.AddCommand(ack)
	return group
}

func (r *runner) recoverQuorumCommand() *cobra.Command {
	var f controlFlags
	cmd := &cobra.Command{
		Use:   "recover-quorum CLUSTER --from MEMBER --nonce NONCE",
		Short: "Recover a cluster whose majority of voters is lost for good from its best survivor",
		Long: "Writes baokeeper.dev/recover-quorum=MEMBER:NONCE, only when break-glass MajorityLost is active, NONCE is status.breakGlass.nonce and " +
			"MEMBER is status.breakGlass.survivor (the voter with the highest committed index); the operator refuses it, changing nothing, while another " +
			"voter of the last configuration answers. The operator then carries out OpenBao's peers.json recovery: a Job on the survivor's node writes " +
			"peers.json naming it the only voter, the survivor restarts and leads alone, the other members' volume claims and pods are deleted so that " +
			"they join it afresh, and scaling makes them voters. What the recovery loses is status.breakGlass.loss. With --wait, waits until the survivor " +
			"leads alone and the others were replaced, and exits non-zero when the recovery failed.",
		Example:           "  kubectl bao recover-quorum bao -n vault --from bao-0 --nonce 9f2c... --wait",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.from == "" || f.nonce == "" {
				return fmt.Errorf("name the survivor and the nonce: %s %s --from MEMBER --nonce NONCE (kubectl bao status %s shows status.breakGlass.survivor and nonce)",
					cmd.CommandPath(), args[0], args[0])
			}
			return r.runControl(cmd, ControlRecoverQuorum, args[0], &f)
		},
	}
	cmd.Flags().StringVar(&f.from, "from", "", "status.breakGlass.survivor: the voter to recover from")
	cmd.Flags().StringVar(&f.nonce, "nonce", "", "status.breakGlass.nonce, as kubectl bao status shows it")
	cmd.Flags().BoolVar(&f.wait, "wait", false, "wait until the survivor leads alone and the other members were replaced; exit non-zero when the recovery failed")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 10*time.Minute, "how long --wait waits")
	f.add(cmd)
	return cmd
}

// runControl reads the cluster, decides with Decide and writes the control once,
// with the read resourceVersion as precondition; a conflict reads and decides again.
func (r *runner) runControl(cmd *cobra.Command, ctl Control, name string, f *controlFlags) error {
	if err := ValidateOutput(f.output); err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := r.connect()
	if err != nil {
		return err
	}
	manager := f.fieldManager
	if manager == "" {
		manager = s.fieldManager(ctx)
	}
	if err := validFieldManager(manager); err != nil {
		return err
	}
	var res *RequestResult
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := s.get(ctx, name)
		if err != nil {
			return err
		}
		now := r.opts.Now()
		pauseAnnotation := f.annotation && (ctl == ControlPause || ctl == ControlResume)
		v := Decide(c, DecideInput{Control: ctl, Nonce: f.nonce, FieldManager: manager, Now: now, SHA256: f.sha256, To: f.to, Annotation: pauseAnnotation, From: f.from})
		res = &RequestResult{Cluster: c.Namespace + "/" + c.Name, Control: ctl, Field: ctl.Field(), FieldManager: manager,
			Next: v.Next, Warnings: v.Warnings, Follow: Follow(c)}
		if pauseAnnotation {
			res.Field = "metadata.annotations[" + baov1.AnnotationPause + "]"
		}
		switch {
		case v.Noop:
			res.Next = v.Why
			return nil
		case !v.Write:
			return fmt.Errorf("%w: %s of openbaocluster %s/%s: %s; nothing was written", ErrRefused, ctl, c.Namespace, c.Name, v.Why)
		}
		value, err := Value(c, ctl, f.nonce, now, r.opts.Rand)
		if err != nil {
			return err
		}
		value = v.ValuePrefix + value
		orig := c.DeepCopy()
		switch {
		case pauseAnnotation:
			SetPauseAnnotation(c, ctl == ControlPause)
			value = fmt.Sprint(c.PausedByAnnotation())
		case ctl == ControlPause || ctl == ControlResume:
			Set(c, ctl, value)
			value = fmt.Sprint(c.Spec.Upgrade.Paused)
		default:
			Set(c, ctl, value)
		}
		if err := s.cl.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(manager)); err != nil {
			return err
		}
		res.Value, res.Written = value, true
		return nil
	})
	switch {
	case errors.Is(err, ErrRefused):
		return err
	case apierrors.IsConflict(err):
		return fmt.Errorf("failed to write %s on openbaocluster %s/%s: it kept changing while this command wrote (%w); run it again", ctl.Field(), s.namespace, name, err)
	case err != nil:
		return fmt.Errorf("failed to write %s on openbaocluster %s/%s: %w", ctl.Field(), s.namespace, name, err)
	}
	var waitErr error
	switch {
	case ctl == ControlSnapshot && f.wait && res.Written:
		res.Receipt, waitErr = waitSnapshot(ctx, s, name, res.Value, f.timeout)
	case ctl == ControlRestore && f.wait && res.Written:
		res.Restore, waitErr = waitRestore(ctx, s, name, res.Value, f.timeout)
	case ctl == ControlRehearse && f.wait && res.Written:
		res.Rehearsal, waitErr = waitRehearsal(ctx, s, name, res.Value, f.timeout)
	case ctl == ControlRecoverQuorum && f.wait && res.Written:
		res.Recovery, waitErr = waitOutcome(ctx, s, name, f.timeout, func(c *baov1.OpenBaoCluster) (*baov1.QuorumRecoveryStatus, error) {
			return RecoveryOutcome(c, res.Value)
		},
			fmt.Errorf("the recovery %s=%s did not end within %s; kubectl bao status %s -n %s says what it waits for (status.quorumRecovery.waitingFor)",
				baov1.AnnotationRecoverQuorum, res.Value, f.timeout, name, s.namespace))
	}
	if f.output != OutputText {
		return errors.Join(PrintObject(cmd.OutOrStdout(), f.output, res), waitErr)
	}
	return errors.Join(RenderResult(cmd.OutOrStdout(), res), waitErr)
}

// waitPoll is how often snapshot --wait and restore --in-place --wait read the
// cluster.
const waitPoll = 2 * time.Second

// waitSnapshot waits until the snapshot requested with token is in
// status.snapshots.taken, or failed (status.snapshots.lastFailure).
func waitSnapshot(ctx context.Context, s *session, name, token string, timeout time.Duration) (*baov1.SnapshotReceipt, error) {
	return waitOutcome(ctx, s, name, timeout, func(c *baov1.OpenBaoCluster) (*baov1.SnapshotReceipt, error) { return SnapshotOutcome(c, token) },
		fmt.Errorf("the snapshot %s=%s was not taken within %s; kubectl bao status %s -n %s says what it waits for (status.snapshots.waitingFor)",
			baov1.AnnotationSnapshot, token, timeout, name, s.namespace))
}

// waitRestore waits until the in-place restore requested with value is done or
// failed (status.inPlaceRestore).
func waitRestore(ctx context.Context, s *session, name, value string, timeout time.Duration) (*baov1.RestoreStatus, error) {
	return waitOutcome(ctx, s, name, timeout, func(c *baov1.OpenBaoCluster) (*baov1.RestoreStatus, error) { return RestoreOutcome(c, value) },
		fmt.Errorf("the in-place restore %s=%s did not end within %s; kubectl bao status %s -n %s says what it waits for (status.inPlaceRestore.waitingFor)",
			baov1.AnnotationRestore, value, timeout, name, s.namespace))
}

// waitRehearsal waits until the rehearsal requested with value ended
// (status.rehearsal).
func waitRehearsal(ctx context.Context, s *session, name, value string, timeout time.Duration) (*baov1.RehearsalStatus, error) {
	return waitOutcome(ctx, s, name, timeout, func(c *baov1.OpenBaoCluster) (*baov1.RehearsalStatus, error) { return RehearsalOutcome(c, value) },
		fmt.Errorf("the rehearsal %s=%s did not end within %s; kubectl bao status %s -n %s says what it waits for (status.rehearsal.waitingFor)",
			baov1.AnnotationRehearse, value, timeout, name, s.namespace))
}

// waitOutcome reads the cluster every waitPoll until outcome has a result or an
// error, or timeout passed (then late).
func waitOutcome[T any](ctx context.Context, s *session, name string, timeout time.Duration, outcome func(*baov1.OpenBaoCluster) (*T, error), late error) (*T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		c, err := s.get(ctx, name)
		switch {
		case err != nil && ctx.Err() != nil:
			// The read itself ran into the timeout: there is nothing to judge.
			return nil, late
		case err != nil:
			return nil, err
		}
		if r, ferr := outcome(c); r != nil || ferr != nil {
			return r, ferr
		}
		select {
		case <-ctx.Done():
			return nil, late
		case <-time.After(waitPoll):
		}
	}
}

// connect builds one client from the kubeconfig flags.
func (r *runner) connect() (*session, error) {
	cfg, err := r.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to load the kubeconfig: %w; check --kubeconfig, --context and KUBECONFIG", err)
	}
	ns, _, err := r.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("failed to find the namespace in the kubeconfig: %w; pass -n NAMESPACE", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("failed to register the Kubernetes types: %w", err)
	}
	if err := baov1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("failed to register the OpenBaoCluster types: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client for %s: %w; check the kubeconfig's server and credentials", cfg.Host, err)
	}
	return &session{cl: cl, namespace: ns}, nil
}

// get reads the cluster.
func (s *session) get(ctx context.Context, name string) (*baov1.OpenBaoCluster, error) {
	c := &baov1.OpenBaoCluster{}
	err := s.cl.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, c)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("openbaocluster %s/%s not found (%w): check the name and -n (kubectl get bao -A lists them)", s.namespace, name, err)
	case err != nil:
		return nil, fmt.Errorf("failed to get openbaocluster %s/%s: %w", s.namespace, name, err)
	}
	return c, nil
}

// fieldManager is kubectl-bao/<user>, the user as the API server names it (a
// SelfSubjectReview), or kubectl-bao when the review is not allowed.
func (s *session) fieldManager(ctx context.Context) string {
	review := &authenticationv1.SelfSubjectReview{}
	if err := s.cl.Create(ctx, review); err != nil || review.Status.UserInfo.Username == "" {
		return FieldManager
	}
	m := FieldManager + "/" + strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '_'
	}, review.Status.UserInfo.Username)
	if len(m) > maxFieldManagerLength {
		m = m[:maxFieldManagerLength]
	}
	return m
}

// validFieldManager applies the API server's rules to --field-manager, so that a bad
// one is refused before anything is read.
func validFieldManager(m string) error {
	if len(m) > maxFieldManagerLength {
		return fmt.Errorf("--field-manager has %d characters; use at most %d", len(m), maxFieldManagerLength)
	}
	for _, r := range m {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("--field-manager %q has a character that is not printable; use letters, digits and punctuation", m)
		}
	}
	return nil
}

// completeClusters completes a cluster name from the namespace's OpenBaoClusters.
func (r *runner) completeClusters(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	s, err := r.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list := &baov1.OpenBaoClusterList{}
	if err := s.cl.List(cmd.Context(), list, client.InNamespace(s.namespace)); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, c := range list.Items {
		if strings.HasPrefix(c.Name, toComplete) {
			names = append(names, c.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
