package kubectlbao

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/history"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// FleetRow is one cluster of kubectl bao fleet.
type FleetRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Version is spec.version; Current is status.currentVersion.
	Version string `json:"version"`
	Current string `json:"current,omitempty"`
	Phase   string `json:"phase,omitempty"`
	// WaitsFor says what holds the cluster's next change: a precheck (the order
	// after other clusters, a maintenance window), a failure, break-glass, a pause.
	WaitsFor string `json:"waitsFor,omitempty"`
	// Last is the last operation that ended, in one line.
	Last string `json:"last,omitempty"`
	// LastEnded is when it ended.
	LastEnded *time.Time `json:"lastEnded,omitempty"`
	// NextWindow is when the next maintenance window opens, or "open until ...".
	NextWindow string `json:"nextWindow,omitempty"`
}

func (r *runner) fleetCommand() *cobra.Command {
	var output string
	var all bool
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "List every cluster with its version, phase, what it waits for, its last operation and its next window",
		Long: "One line per OpenBaoCluster of the namespace (-n) or of every namespace (-A): the version it should run and " +
			"the one it runs, its phase, what holds its next change (the order after other clusters, a maintenance window, " +
			"a failure, break-glass, a pause), the last operation that ended (kubectl bao history) and the next maintenance window.",
		Example: "  kubectl bao fleet -A\n  kubectl bao fleet -n vault -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ValidateOutput(output); err != nil {
				return err
			}
			s, err := r.connect()
			if err != nil {
				return err
			}
			list := &baov1.OpenBaoClusterList{}
			var opts []client.ListOption
			where := "every namespace"
			if !all {
				opts = append(opts, client.InNamespace(s.namespace))
				where = "namespace " + s.namespace
			}
			if err := s.cl.List(cmd.Context(), list, opts...); err != nil {
				return fmt.Errorf("failed to list the OpenBaoClusters of %s: %w; check that you may list openbaoclusters there", where, err)
			}
			rows := FleetRows(list.Items, r.opts.Now())
			if output != OutputText {
				return PrintObject(cmd.OutOrStdout(), output, rows)
			}
			return RenderFleet(cmd.OutOrStdout(), where, rows, r.opts.Now())
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the clusters of every namespace")
	addOutputFlag(cmd, &output)
	return cmd
}

// FleetRows is one row per cluster, sorted by namespace and name. Pure.
func FleetRows(cs []baov1.OpenBaoCluster, now time.Time) []FleetRow {
	out := make([]FleetRow, 0, len(cs))
	for i := range cs {
		c := &cs[i]
		row := FleetRow{Namespace: c.Namespace, Name: c.Name, Version: c.Spec.Version, Current: c.Status.CurrentVersion,
			Phase: string(c.Status.Phase), WaitsFor: waitsFor(c)}
		if h := c.Status.History; len(h) > 0 {
			row.Last = history.Summary(h[0])
			if h[0].EndedAt != nil {
				t := h[0].EndedAt.Time
				row.LastEnded = &t
			}
		}
		if w := c.Status.Window; w != nil {
			switch {
			case w.Open && w.ClosesAt != nil:
				row.NextWindow = "open until " + w.ClosesAt.UTC().Format(time.RFC3339)
			case w.OpensAt != nil:
				row.NextWindow = w.OpensAt.UTC().Format(time.RFC3339)
			}
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b FleetRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// waitsFor says what holds a cluster's next change, in a few words; "" when
// nothing does.
func waitsFor(c *baov1.OpenBaoCluster) string {
	st := &c.Status
	switch {
	case st.BreakGlass != nil && st.BreakGlass.Active:
		return "break-glass (" + string(st.BreakGlass.Reason) + ")"
	case st.Upgrade != nil && st.Upgrade.Failure != nil:
		return "retry: failed (" + string(st.Upgrade.Failure.Reason) + ")"
	case st.Scaling != nil && st.Scaling.Failure != nil:
		return "retry: scaling failed (" + string(st.Scaling.Failure.Reason) + ")"
	case c.UpgradePaused() && st.Upgrade != nil:
		return "resume (paused by " + c.PausedBy() + ")"
	}
	if up := st.Upgrade; up != nil && up.Plan != nil && up.CurrentStep == nil && len(up.CompletedPods) == 0 {
		if pc := upgrade.FirstUnpassedPrecheck(up.Plan.Prechecks); pc != nil {
			return pc.Name + ": " + pc.Message
		}
	}
	if up := st.Upgrade; up != nil {
		return up.WaitingFor
	}
	return ""
}

// RenderFleet prints the rows as a table. Pure.
func RenderFleet(w io.Writer, where string, rows []FleetRow, now time.Time) error {
	d := newDescriber(w)
	if len(rows) == 0 {
		d.line(0, "No OpenBaoCluster in %s.", where)
		return d.flush()
	}
	t := make([][]string, 0, len(rows))
	for _, r := range rows {
		last := orDash(r.Last)
		if r.LastEnded != nil {
			last += ", " + ago(*r.LastEnded, now)
		}
		t = append(t, []string{r.Namespace, r.Name, r.Version, orDash(r.Current), orDash(r.Phase), orDash(r.WaitsFor), last, orDash(r.NextWindow)})
	}
	d.table(0, []string{"NAMESPACE", "NAME", "VERSION", "CURRENT", "PHASE", "WAITS FOR", "LAST OPERATION", "NEXT WINDOW"}, t)
	return d.flush()
}
