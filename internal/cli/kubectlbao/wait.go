package kubectlbao

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// ErrOperationFailed is what kubectl bao wait returns for an operation that failed,
// rolled back, or stopped in break-glass: scripts and pipelines exit non-zero.
var ErrOperationFailed = errors.New("the operation failed")

// WaitVerdict judges a cluster for kubectl bao wait: done once it runs
// spec.version with nothing in progress (no upgrade, rollout or scaling); an
// ErrOperationFailed error once what runs failed (a failure to retry, a rollback of
// the version spec.version names, break-glass, a spec baokeeper refuses). Otherwise
// progress says, in a line, where it stands. Pure.
func WaitVerdict(c *baov1.OpenBaoCluster) (done bool, progress string, err error) {
	st := &c.Status
	fail := func(format string, a ...any) (bool, string, error) {
		return false, "", fmt.Errorf("%w: openbaocluster %s/%s: %s", ErrOperationFailed, c.Namespace, c.Name, fmt.Sprintf(format, a...))
	}
	switch {
	case st.BreakGlass != nil && st.BreakGlass.Active:
		return fail("break-glass (%s): %s; kubectl bao status %s -n %s shows the recovery steps", st.BreakGlass.Reason, st.BreakGlass.Message, c.Name, c.Namespace)
	case st.Upgrade != nil && st.Upgrade.Failure != nil:
		f := st.Upgrade.Failure
		return fail("the upgrade to %s failed (%s): %s; fix the cause, then kubectl bao retry %s -n %s", st.Upgrade.TargetVersion, f.Reason, f.Message, c.Name, c.Namespace)
	case st.Scaling != nil && st.Scaling.Failure != nil:
		f := st.Scaling.Failure
		return fail("the scaling to %d members failed (%s): %s; fix the cause, then kubectl bao retry %s -n %s", st.Scaling.TargetReplicas, f.Reason, f.Message, c.Name, c.Namespace)
	case st.LastRollback != nil && st.Upgrade == nil && upgrade.SameVersion(st.LastRollback.TargetVersion, c.Spec.Version):
		return fail("the upgrade to %s was rolled back (%s); it runs %s", st.LastRollback.TargetVersion, orDash(st.LastRollback.Reason), st.CurrentVersion)
	}
	if cond := meta.FindStatusCondition(st.Conditions, string(baov1.ConditionSpecValid)); cond != nil && cond.Status == "False" && cond.ObservedGeneration == c.Generation {
		return fail("the spec is refused (%s): %s", cond.Reason, cond.Message)
	}
	switch {
	case st.Upgrade != nil, st.Scaling != nil:
		return false, orDash(st.Message), nil
	case st.CurrentVersion == "" || !upgrade.SameVersion(st.CurrentVersion, c.Spec.Version):
		return false, fmt.Sprintf("runs %s, spec.version is %s: %s", orDash(st.CurrentVersion), c.Spec.Version, orDash(st.Message)), nil
	case st.ObservedGeneration != 0 && st.ObservedGeneration < c.Generation:
		return false, "the operator has not observed the latest spec yet", nil
	case st.Phase != baov1.PhaseRunning:
		return false, fmt.Sprintf("phase %s: %s", orDash(string(st.Phase)), orDash(st.Message)), nil
	}
	return true, orDash(st.Message), nil
}

func (r *runner) waitCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait CLUSTER",
		Short: "Wait until the cluster runs spec.version with nothing in progress; exit non-zero when the operation fails",
		Long: "Reads the cluster every 2 seconds and prints a line each time where it stands changes. Exits 0 once the cluster " +
			"runs spec.version, Running, with no upgrade, rollout or scaling in progress. Exits 1 when the operation failed " +
			"(a failure waiting for kubectl bao retry, a rollback of the version spec.version names, break-glass, a spec the " +
			"operator refuses), and 2 when --timeout passed. For scripts and pipelines: kubectl apply, then kubectl bao wait.",
		Example:           "  kubectl bao wait bao -n vault --timeout 30m",
		Args:              oneCluster,
		ValidArgsFunction: r.completeClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := r.connect()
			if err != nil {
				return err
			}
			return waitCluster(cmd.Context(), cmd.OutOrStdout(), s, args[0], timeout, r.opts.Now)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long to wait")
	return cmd
}

// ErrWaitTimeout is what kubectl bao wait returns when --timeout passed.
var ErrWaitTimeout = errors.New("timed out")

// waitCluster reads the cluster every waitPoll (waitOutcome) until WaitVerdict
// says done or failed, printing each new progress line with the time.
func waitCluster(ctx context.Context, w io.Writer, s *session, name string, timeout time.Duration, now func() time.Time) error {
	last := ""
	_, err := waitOutcome(ctx, s, name, timeout, func(c *baov1.OpenBaoCluster) (*baov1.OpenBaoCluster, error) {
		done, progress, err := WaitVerdict(c)
		if err != nil {
			return nil, err
		}
		if progress != last {
			fmt.Fprintf(w, "%s  %s\n", now().UTC().Format(time.TimeOnly), progress)
			last = progress
		}
		if !done {
			return nil, nil
		}
		fmt.Fprintf(w, "openbaocluster %s/%s runs %s with nothing in progress\n", c.Namespace, c.Name, c.Status.CurrentVersion)
		return c, nil
	}, fmt.Errorf("%w: openbaocluster %s/%s did not settle within %s; the last line above says where it stood (kubectl bao status %s -n %s)",
		ErrWaitTimeout, s.namespace, name, timeout, name, s.namespace))
	return err
}
