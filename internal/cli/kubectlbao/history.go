package kubectlbao

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/history"
)

// HistoryOutput is what kubectl bao history prints with -o json|yaml.
type HistoryOutput struct {
	// Cluster is namespace/name.
	Cluster string `json:"cluster"`
	// Limit is spec.historyLimit (or its default).
	Limit int `json:"limit"`
	// Entries are newest first, as status.history keeps them.
	Entries []baov1.HistoryEntry `json:"entries"`
}

func (r *runner) historyCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "history CLUSTER",
		Short: "Show the operations that ended: upgrades, rollouts and scalings, newest first",
		Long: "Prints status.history: each upgrade, rollout or scaling that ended, with its versions, strategy, start, " +
			"duration, outcome (Succeeded, Failed, Cancelled, RolledBack), the elections seen, the longest step, the " +
			"pre-upgrade snapshot and the reason of a failure or rollback. Written by the operator in the status write " +
			"that ends the operation, so it outlives events (an hour) and operator restarts; spec.historyLimit keeps the " +
			"last N (default 10).",
		Example:           "  kubectl bao history bao -n vault\n  kubectl bao history bao -o yaml",
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
			if output != OutputText {
				return PrintObject(cmd.OutOrStdout(), output, HistoryOutput{Cluster: c.Namespace + "/" + c.Name, Limit: c.HistoryLimitOf(), Entries: c.Status.History})
			}
			return RenderHistory(cmd.OutOrStdout(), c, r.opts.Now())
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// RenderHistory prints a cluster's history as a table, newest first, then the
// reason and snapshot of each entry that has one. Pure.
func RenderHistory(w io.Writer, c *baov1.OpenBaoCluster, now time.Time) error {
	d := newDescriber(w)
	cluster := c.Namespace + "/" + c.Name
	h := c.Status.History
	if len(h) == 0 {
		d.line(0, "No operation of openbaocluster %s has ended yet (status.history keeps the last %d).", cluster, c.HistoryLimitOf())
		if up := c.Status.Upgrade; up != nil {
			d.line(0, "In progress: %s from %s to %s (kubectl bao status %s -n %s).", kindWord(up.Kind), up.FromVersion, up.TargetVersion, c.Name, c.Namespace)
		}
		return d.flush()
	}
	d.line(0, "Operations of openbaocluster %s, newest first (the last %d are kept):", cluster, c.HistoryLimitOf())
	rows := make([][]string, 0, len(h))
	for _, e := range h {
		started := "-"
		if e.StartedAt != nil {
			started = e.StartedAt.UTC().Format(time.RFC3339)
		}
		took := "-"
		if d := history.Duration(e); d > 0 || (e.StartedAt != nil && e.EndedAt != nil) {
			took = d.String()
		}
		ended := "-"
		if e.EndedAt != nil {
			ended = ago(e.EndedAt.Time, now)
		}
		rows = append(rows, []string{started, ended, string(e.Kind), what(e), orDash(string(e.Strategy)), took, string(e.Outcome),
			fmt.Sprint(e.Elections), longestStep(e.LongestStep)})
	}
	d.table(0, []string{"STARTED", "ENDED", "KIND", "CHANGE", "STRATEGY", "TOOK", "OUTCOME", "ELECTIONS", "LONGEST STEP"}, rows)
	for i, e := range h {
		var notes []string
		if e.Reason != "" || (e.Outcome != baov1.OutcomeSucceeded && e.Message != "") {
			notes = append(notes, fmt.Sprintf("%s: %s", orDash(e.Reason), orDash(e.Message)))
		}
		if s := e.Snapshot; s != nil {
			notes = append(notes, fmt.Sprintf("snapshot %s (sha256 %s, Raft index %d)", s.Location, short(s.SHA256), s.RaftIndex))
		}
		if len(notes) > 0 {
			d.line(0, "%d. %s; %s", i+1, history.Summary(e), strings.Join(notes, "; "))
		}
	}
	return d.flush()
}

func what(e baov1.HistoryEntry) string {
	switch e.Kind {
	case baov1.HistoryScaling:
		return fmt.Sprintf("%d → %d members", e.FromReplicas, e.TargetReplicas)
	case baov1.HistoryRollout:
		return fmt.Sprintf("%s: %s", e.TargetVersion, orDash(strings.TrimPrefix(e.Changes, "the pod template changed: ")))
	}
	return fmt.Sprintf("%s → %s", orDash(e.FromVersion), orDash(e.TargetVersion))
}

func longestStep(s *baov1.StepRecord) string {
	if s == nil {
		return "-"
	}
	on := ""
	if s.Member != "" {
		on = " " + s.Member
	}
	return fmt.Sprintf("%s%s %ds", s.Action, on, s.Seconds)
}

func kindWord(k baov1.OperationKind) string {
	switch k {
	case baov1.OperationRollout:
		return "a rollout"
	case baov1.OperationImage:
		return "an image change"
	}
	return "an upgrade"
}
