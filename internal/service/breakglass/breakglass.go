// Package breakglass holds the pure decisions of break-glass (invariant 7): what is
// recorded on entry (the Raft view and the recovery steps a person can run, with
// the names filled in) and whether a baokeeper.dev/break-glass-ack value leaves it.
// The reconcilers stop every automation of a cluster while status.breakGlass is
// active; entering and leaving are status writes of the adminops reconciler.
package breakglass

import (
	"fmt"
	"math"
	"slices"
	"strings"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Runbook is the runbook of a break-glass reason.
func Runbook(reason baov1.BreakGlassReason) string {
	switch reason {
	case baov1.BreakGlassQuorumLost:
		return "docs/runbooks/break-glass-quorum-lost.md"
	case baov1.BreakGlassGreenLeads:
		return "docs/runbooks/break-glass-green-leads.md"
	case baov1.BreakGlassMajorityLost:
		return "docs/runbooks/break-glass-majority-lost.md"
	}
	return "docs/runbooks/break-glass-rollback.md"
}

// View is the Raft view of one observation as break-glass records it: the leader
// and every member and Raft server with its role and version.
func View(c *operation.Cluster) (leader string, members []baov1.BreakGlassMember) {
	for _, m := range c.AllServers() {
		if !m.PodExists && !m.InRaft {
			continue
		}
		role := baov1.RaftRoleUnknown
		switch {
		case !c.AutopilotKnown:
		case m.Name == c.Leader:
			role = baov1.RaftRoleLeader
		case m.InRaft && m.Voter:
			role = baov1.RaftRoleVoter
		case m.InRaft:
			role = baov1.RaftRoleNonVoter
		default:
			role = baov1.RaftRoleNotInConfiguration
		}
		healthy := m.Healthy
		if !c.AutopilotKnown {
			healthy = m.Responsive()
		}
		members = append(members, baov1.BreakGlassMember{Name: m.Name, Role: role, Version: m.Version, Healthy: healthy,
			CommittedIndex: int64(min(m.CommittedIndex, math.MaxInt64))})
	}
	return c.Leader, members
}

// WithRecovery adds to the Raft view of a majority lost at rest each last voter's
// committed index and, for a voter whose data is gone, why; a last voter without a
// pod is listed too.
func WithRecovery(members []baov1.BreakGlassMember, rec *operation.Recovery) []baov1.BreakGlassMember {
	out := slices.Clone(members)
	for _, v := range rec.Voters {
		i := slices.IndexFunc(out, func(m baov1.BreakGlassMember) bool { return m.Name == v })
		if i < 0 {
			out = append(out, baov1.BreakGlassMember{Name: v, Role: baov1.RaftRoleUnknown})
			i = len(out) - 1
		}
		out[i].Lost = rec.Gone[v]
	}
	return out
}

// Others are the last voters other than the survivor, sorted.
func Others(rec *operation.Recovery) []string {
	var out []string
	for _, v := range rec.Voters {
		if v != rec.Survivor {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// Input names what the recovery steps talk about.
type Input struct {
	Name, Namespace string
	Reason          baov1.BreakGlassReason
	Nonce           string
	// Member is the member the failure is about, if any.
	Member string
	// Leader is the leader observed on entry, if any.
	Leader string
	// Job is the executor Job that failed last, if any.
	Job string
	// Green is green's StatefulSet during a blue-green upgrade; empty otherwise.
	Green string
	// Snapshot is the pre-upgrade snapshot, if one was taken.
	Snapshot *baov1.SnapshotReceipt
	// Survivor is the voter to recover a lost majority from (MajorityLost), and
	// SurvivorAddress its Raft (cluster) address, host:port; Others are the other
	// last voters, whose old data must not rejoin.
	Survivor, SurvivorAddress string
	Others                    []string
}

// RecoverySteps are the commands and checks a person runs, in order, with the names
// filled in. The last one always acknowledges the nonce.
func RecoverySteps(in Input) []string {
	ns, name := in.Namespace, in.Name
	exec := in.Leader
	if exec == "" {
		exec = in.Member
	}
	if exec == "" {
		exec = "<a member that answers>"
	}
	steps := []string{
		fmt.Sprintf("Read what baokeeper saw: kubectl get openbaocluster %s -n %s -o jsonpath='{.status.breakGlass}'", name, ns),
		fmt.Sprintf("See the members: kubectl get pods -n %s -l %s=%s -o wide", ns, workload.LabelCluster, name),
		fmt.Sprintf("Read the Raft configuration with an operator token: kubectl exec -n %s %s -c "+workload.ContainerName+" -- env BAO_TOKEN=<token> bao operator raft list-peers", ns, exec),
	}
	switch in.Reason {
	case baov1.BreakGlassQuorumLost:
		steps = append(steps,
			fmt.Sprintf("Find why a majority of voters does not answer: kubectl describe pod -n %s <member>, and kubectl logs -n %s <member> -c openbao", ns, ns),
			"Bring the members back (a pod that is gone is re-created by its StatefulSet; a stuck one can be deleted) until a majority of voters is unsealed and one of them leads",
			fmt.Sprintf("Check that autopilot is healthy again: kubectl exec -n %s <member> -c "+workload.ContainerName+" -- env BAO_TOKEN=<token> bao operator raft autopilot state", ns))
	case baov1.BreakGlassMajorityLost:
		steps = append(steps, majorityLostSteps(in)...)
	case baov1.BreakGlassGreenLeads:
		steps = append(steps,
			fmt.Sprintf("Green member %s leads and has written with its version: blue must not lead after it. Do not step it down", orDash(in.Leader)),
			"Decide with the application owners: keep green (restore nothing) or go back to blue's version by restoring the pre-upgrade snapshot into a new cluster: "+
				restoreCommand(name, ns, in.Snapshot)+" (docs/restore.md)"+snapshotHint(in.Snapshot))
	default:
		if in.Job != "" {
			steps = append(steps, fmt.Sprintf("Read why the executor failed: kubectl logs -n %s job/%s", ns, in.Job))
		}
		steps = append(steps,
			"Fix the cause (the executor image, its OpenBao role, a member that does not answer); after the acknowledgement the rollback retries its step from what it observes",
			fmt.Sprintf("If the rollback cannot finish, the pre-upgrade snapshot restores blue into a new cluster: %s (docs/restore.md)%s", restoreCommand(name, ns, in.Snapshot), snapshotHint(in.Snapshot)))
		if in.Green != "" {
			steps = append(steps, fmt.Sprintf("Green's StatefulSet %s is left as it is until the rollback finishes", in.Green))
		}
	}
	return append(steps, fmt.Sprintf("Then let baokeeper go on: kubectl annotate openbaocluster %s -n %s %s=%s --overwrite --field-manager=<your name>",
		name, ns, baov1.AnnotationBreakGlassAck, in.Nonce))
}

// Acknowledge decides a baokeeper.dev/break-glass-ack value: only the current nonce
// of an active break-glass leaves it. It says why anything else is refused.
func Acknowledge(bg *baov1.BreakGlassStatus, value string) (bool, string) {
	switch {
	case bg == nil || !bg.Active:
		return false, "break-glass is not active, so there is nothing to acknowledge"
	case value != bg.Nonce:
		return false, fmt.Sprintf("%q is not the current nonce (status.breakGlass.nonce): a stale or mistyped value leaves automation stopped", value)
	}
	return true, ""
}

// restoreCommand is the command that restores the pre-upgrade snapshot into a new
// cluster, with its checksum and version when status records them.
func restoreCommand(name, ns string, s *baov1.SnapshotReceipt) string {
	if s == nil || s.SHA256 == "" {
		return fmt.Sprintf("kubectl bao restore %s -n %s --into %s-back --sha256 <status.lastSnapshot.sha256> --version <status.lastSnapshot.version>", name, ns, name)
	}
	return fmt.Sprintf("kubectl bao restore %s -n %s --into %s-back --sha256 %s --version %s", name, ns, name, s.SHA256, s.Version)
}

func snapshotHint(s *baov1.SnapshotReceipt) string {
	if s == nil || s.Location == "" {
		return " (no pre-upgrade snapshot is recorded in status.lastSnapshot)"
	}
	return fmt.Sprintf(" (status.lastSnapshot: %s)", s.Location)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// majorityLostSteps are OpenBao's peers.json recovery of a lost majority on the
// survivor, then the members that lost their data rejoining fresh, with kubectl.
func majorityLostSteps(in Input) []string {
	ns, name, s := in.Namespace, in.Name, in.Survivor
	if s == "" {
		return []string{
			"No voter of the last configuration survives with its data: the cluster cannot be recovered from its members",
			fmt.Sprintf("Restore the latest snapshot into a new cluster: %s (docs/restore.md)%s", restoreCommand(name, ns, in.Snapshot), snapshotHint(in.Snapshot)),
		}
	}
	peers := fmt.Sprintf(`[{"id":"%s","address":"%s","non_voter":false}]`, s, in.SurvivorAddress)
	steps := []string{
		fmt.Sprintf("Make sure no other voter of the last configuration (%s) still runs with its data, and none will come back (a node that returns): "+
			"a recovery while one of them can still vote splits the cluster in two. If one can come back, bring it back instead and acknowledge", strings.Join(in.Others, ", ")),
		fmt.Sprintf("Recover from %s with baokeeper: kubectl bao recover-quorum %s -n %s --from %s --nonce %s. It writes peers.json on %s (a Job on its node), "+
			"restarts it as the only voter, replaces the data of %s so that they join it afresh, and acknowledges this break-glass; kubectl bao status follows it. "+
			"The steps below do the same by hand", s, name, ns, s, in.Nonce, s, strings.Join(in.Others, ", ")),
		fmt.Sprintf("By hand, write the one-voter configuration on %s: kubectl exec -n %s %s -c %s -- sh -c 'printf %%s %s > %s/raft/peers.json'",
			s, ns, s, workload.ContainerName, shellQuote(peers), workload.DataMountPath),
		fmt.Sprintf("Restart %s so that OpenBao reads it (its volume keeps its data): kubectl delete pod -n %s %s", s, ns, s),
		fmt.Sprintf("Check that %s leads alone (HA Mode active): kubectl exec -n %s %s -c %s -- bao status", s, ns, s, workload.ContainerName),
	}
	for _, o := range in.Others {
		steps = append(steps, fmt.Sprintf("So that %s joins with fresh data, never its old copy: kubectl delete pvc -n %s %s-%s --wait=false; kubectl delete pod -n %s %s",
			o, ns, workload.DataVolume, o, ns, o))
	}
	return append(steps, "Once acknowledged, baokeeper grows the cluster back to spec.replicas: each member joins as a non-voter and is promoted")
}

// shellQuote quotes s for a POSIX shell inside single quotes of an outer sh -c.
func shellQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
