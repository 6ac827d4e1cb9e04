package kubectlbao

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/rolling"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// ErrRefused is returned, wrapped with the reason, when a plan or a control request
// is refused: the version policy refuses the target, or the operator would ignore
// the request in the cluster's current state. Nothing was written.
var ErrRefused = errors.New("refused")

// PlanRequest is what kubectl bao plan is asked.
type PlanRequest struct {
	// To is the version to plan for (--to).
	To string
	// Image is the image to plan with (--image); empty means spec.image, or the
	// default image of To when spec.image is empty.
	Image string
}

// Plan is what an upgrade would do, computed from the cluster's spec and status
// with the operator's own policy, prechecks and planner. Nothing is changed.
type Plan struct {
	// Cluster is namespace/name.
	Cluster string `json:"cluster"`
	// Strategy is spec.upgrade.strategy.
	Strategy baov1.UpgradeStrategyType `json:"strategy"`
	// FromVersion is status.currentVersion; TargetVersion is --to.
	FromVersion   string `json:"fromVersion"`
	TargetVersion string `json:"targetVersion"`
	// TargetImage is the image the members would run.
	TargetImage string `json:"targetImage"`
	// ImageOnly is true for a new image at the same version.
	ImageOnly bool `json:"imageOnly,omitempty"`
	// Steps are the members in the order they are replaced (rolling) or join
	// (blue-green).
	Steps []PlanStep `json:"steps"`
	// Phases are the blue-green phases, in order; empty for rolling.
	Phases []string `json:"phases,omitempty"`
	// Prechecks are the operator's prechecks evaluated on what status shows.
	Prechecks []baov1.Precheck `json:"prechecks"`
	// Snapshot says whether and where the pre-upgrade snapshot goes.
	Snapshot PlanSnapshot `json:"snapshot"`
	// UndoPath says how to undo.
	UndoPath string `json:"undoPath"`
	// Warnings are the version policy's warnings.
	Warnings []string `json:"warnings,omitempty"`
	// Notes are what else stands in the way or changes the picture.
	Notes []string `json:"notes,omitempty"`
	// Apply is the command that starts the upgrade.
	Apply string `json:"apply"`
}

// PlanStep is one member of the plan.
type PlanStep struct {
	// Member is the pod name.
	Member string `json:"member"`
	// Role is its Raft role as status shows it (green members: NonVoter to be).
	Role string `json:"role"`
	// Action says what happens to it.
	Action string `json:"action"`
}

// PlanSnapshot is the snapshot part of a plan.
type PlanSnapshot struct {
	// Policy is spec.upgrade.preUpgradeSnapshot.policy (Always when unset).
	Policy baov1.SnapshotPolicy `json:"policy"`
	// Location is where it goes; empty under Never or without a target.
	Location string `json:"location,omitempty"`
	// Note says what the policy means for this upgrade.
	Note string `json:"note"`
}

// BuildPlan says what an upgrade of c to req.To would do: the version policy first
// (an invalid version or a downgrade is refused with ErrRefused and the policy's
// message), then the order (rolling.Plan: followers from the highest ordinal down,
// the leader last; blue-green: green's members join, then the phases), the prechecks
// as far as status shows them, the snapshot target and the undo path.
func BuildPlan(c *baov1.OpenBaoCluster, req PlanRequest, now time.Time) (*Plan, error) {
	cur := c.Status.CurrentVersion
	if cur == "" {
		return nil, fmt.Errorf("%w: %s/%s has no status.currentVersion yet, so there is nothing to upgrade from: "+
			"wait until kubectl get bao shows CURRENT (the cluster is still being created), then plan again", ErrRefused, c.Namespace, c.Name)
	}
	image := req.Image
	if image == "" {
		image = c.Spec.Image
	}
	d := upgrade.EvaluateVersion(upgrade.VersionRequest{Desired: req.To, Image: image, CurrentVersion: cur})
	if !d.Allowed {
		msg := d.Message
		if d.Reason == upgrade.ReasonImageMismatch && req.Image == "" {
			msg += "; plan with --image to name the image that goes with the new version"
		}
		return nil, fmt.Errorf("%w (%s): %s", ErrRefused, d.Reason, strings.ReplaceAll(msg, "spec.version", "--to (spec.version)"))
	}
	target := strings.TrimPrefix(req.To, "v")
	targetImage := upgrade.ResolveImage(image, req.To)
	obs := Observation(c, now)
	imageOnly := upgrade.SameVersion(req.To, cur)
	if imageOnly && !upgrade.ImageChanged(obs, targetImage) {
		return nil, fmt.Errorf("%w: %s/%s runs %s already (image %s): nothing would change; name a newer version with --to, or another image with --image",
			ErrRefused, c.Namespace, c.Name, cur, upgrade.RunningImage(obs))
	}
	strategy := c.GetStrategy()
	if strategy == baov1.OfflineStrategy && imageOnly {
		strategy = baov1.RollingUpdateStrategy // as the operator plans it (startUpgrade)
	}
	p := &Plan{
		Cluster: c.Namespace + "/" + c.Name, Strategy: strategy,
		FromVersion: cur, TargetVersion: target, TargetImage: targetImage, ImageOnly: imageOnly,
		Prechecks: planPrechecks(c, obs, d, strategy, cur, target),
		Snapshot:  planSnapshot(c.Spec.Upgrade.PreUpgradeSnapshot, c.Status.LastSnapshot, now),
		Apply:     applyCommand(c, req, image),
	}
	for _, w := range d.Warnings {
		p.Warnings = append(p.Warnings, w.Message)
	}
	if strategy == baov1.BlueGreenStrategy {
		p.Steps = blueGreenSteps(c)
		for _, ph := range bluegreen.Phases() {
			p.Phases = append(p.Phases, string(ph))
		}
	} else if strategy == baov1.OfflineStrategy {
		p.Steps = offlineSteps(c, obs, targetImage)
	} else {
		p.Steps = rollingSteps(c, obs, target, targetImage)
	}
	names := workload.NamesFor(c)
	p.UndoPath = upgrade.UndoPath(upgrade.UndoInput{Name: c.Name, Namespace: c.Namespace, Strategy: strategy, From: cur, ImageOnly: imageOnly,
		RunningImage: upgrade.RunningImage(obs), Blue: c.ServingStatefulSet(), Green: names.GreenStatefulSet("<id>")})
	p.Notes = append(planNotes(c, obs, req.To), fleetNotes(c, obs.Now)...)
	return p, nil
}

// planPrechecks runs the operator's prechecks over the observation built from status.
// The snapshot target's reachability is checked by a Job in the cluster's namespace
// when the operator plans: a target that is set is shown Pending.
func planPrechecks(c *baov1.OpenBaoCluster, obs *operation.Cluster, d upgrade.Decision, strategy baov1.UpgradeStrategyType, from, to string) []baov1.Precheck {
	pcs := upgrade.Prechecks(upgrade.PrecheckInput{
		Cluster: obs, Replicas: c.GetReplicas(), Policy: d,
		Snapshot:   c.Spec.Upgrade.PreUpgradeSnapshot,
		LockHeldBy: operation.HeldByOther(&c.Status, operationOf(strategy)),
		Strategy:   strategy, From: from, To: to, Copy: c.Labels[snapshot.LabelRehearsalOf] != "",
	})
	for i := range pcs {
		pc := &pcs[i]
		switch {
		case pc.Name == upgrade.PrecheckSnapshotTarget && pc.Result == baov1.PrecheckPending:
			s3 := c.Spec.Upgrade.PreUpgradeSnapshot.S3
			pc.Message = fmt.Sprintf("snapshots go to %s; once the other prechecks pass, an executor Job in namespace %s checks that the bucket is reachable with Secret %s",
				upgrade.SnapshotLocation(c.Spec.Upgrade.PreUpgradeSnapshot), c.Namespace, s3.CredentialsSecretRef.Name)
		case pc.Name == upgrade.PrecheckAutopilotHealthy && !obs.AutopilotKnown:
			pc.Message = "status.voters is empty: the operator could not read autopilot when it last looked"
		}
	}
	return pcs
}

func operationOf(s baov1.UpgradeStrategyType) string {
	if l := upgrade.LockOfStrategy(s); l != "" {
		return l
	}
	return operation.OperationRollingUpgrade
}

// offlineSteps are the members of an offline upgrade: each stops with the others
// and starts on the target from its own volume.
func offlineSteps(c *baov1.OpenBaoCluster, obs *operation.Cluster, targetImage string) []PlanStep {
	steps := []PlanStep{}
	for _, m := range obs.Members {
		role := "Unknown"
		if ms := memberStatus(c, m.Name); ms != nil && ms.RaftRole != "" {
			role = string(ms.RaftRole)
		}
		steps = append(steps, PlanStep{Member: m.Name, Role: role, Action: "stops with every other member, then starts on " + targetImage + " from its own volume"})
	}
	return steps
}

// rollingSteps is rolling.Plan over the observation: the order the operator would
// record in status.upgrade.plan.pods.
func rollingSteps(c *baov1.OpenBaoCluster, obs *operation.Cluster, target, targetImage string) []PlanStep {
	steps := []PlanStep{}
	for _, name := range rolling.Plan(obs) {
		m := obs.Member(name)
		role := "Unknown"
		if ms := memberStatus(c, name); ms != nil && ms.RaftRole != "" {
			role = string(ms.RaftRole)
		}
		action := "replaced: its pod is deleted and comes back on the new image, then gated (Ready, unsealed, on the target, a voter, healthy, caught up, settle time)"
		if name == obs.Leader {
			role = string(baov1.RaftRoleLeader)
			action = "last: steps down once onto a member already on the target (the one planned election), then replaced like the others"
			if c.GetLeaderHandoff() == baov1.LeaderHandoffShutdown {
				action = "last: its pod is deleted once every other member runs the target; its graceful shutdown hands leadership to one of them (the one planned election), then it is gated like the others"
			}
		} else if m != nil && m.PodReady && upgrade.SameVersion(m.Version, target) && m.Image == targetImage {
			action = "already runs the target: only gated, never replaced again"
		}
		steps = append(steps, PlanStep{Member: name, Role: role, Action: action})
	}
	return steps
}

func memberStatus(c *baov1.OpenBaoCluster, name string) *baov1.MemberStatus {
	for i := range c.Status.Members {
		if c.Status.Members[i].Name == name {
			return &c.Status.Members[i]
		}
	}
	return nil
}

// blueGreenSteps are green's members as they would join: the StatefulSet's name
// carries the upgrade's ID, which the operator draws when it plans.
func blueGreenSteps(c *baov1.OpenBaoCluster) []PlanStep {
	names := workload.NamesFor(c)
	green := names.ForStatefulSet(names.GreenStatefulSet("<id>"))
	steps := []PlanStep{}
	for i := range c.GetReplicas() {
		steps = append(steps, PlanStep{Member: green.Member(i), Role: "NonVoter (joins)",
			Action: "starts on the target with a fresh volume, joins as a non-voter, syncs; votes only after promotion"})
	}
	return steps
}

func planSnapshot(s baov1.PreUpgradeSnapshotSpec, last *baov1.SnapshotReceipt, now time.Time) PlanSnapshot {
	policy := s.Policy
	if policy == "" {
		policy = baov1.SnapshotAlways
	}
	out := PlanSnapshot{Policy: policy, Location: upgrade.SnapshotLocation(s)}
	switch {
	case policy == baov1.SnapshotNever:
		out.Note = "no snapshot is taken: undoing after the first member means a backup taken elsewhere"
	case s.S3 == nil:
		out.Note = "no target is set: the SnapshotTarget precheck holds the upgrade until spec.upgrade.preUpgradeSnapshot.s3 is set (or policy: Never)"
	case policy == baov1.SnapshotIfOlderThan:
		maxAge := baov1.DurationOr(s.MaxAge, 0)
		out.Note = fmt.Sprintf("a fresh snapshot unless status.lastSnapshot is younger than %s and in the same bucket and prefix", maxAge)
		if last != nil && last.TakenAt != nil && maxAge > 0 && now.Sub(last.TakenAt.Time) < maxAge {
			out.Note += fmt.Sprintf(" (the last one, %s, is %s old: it would be reused if its location matches)", last.Location, ago(last.TakenAt.Time, now))
		}
	default:
		out.Note = "a fresh Raft snapshot from the leader, verified by size and SHA-256, before anything of the cluster changes"
	}
	return out
}

// planNotes says what else stands in the way: break-glass, pause, an upgrade or a
// scaling in progress, a rolled-back target.
func planNotes(c *baov1.OpenBaoCluster, obs *operation.Cluster, to string) []string {
	var notes []string
	st := &c.Status
	if bg := st.BreakGlass; bg != nil && bg.Active {
		notes = append(notes, fmt.Sprintf("break-glass is active (%s): nothing starts until it is acknowledged (kubectl bao break-glass ack %s -n %s --nonce ...)", bg.Reason, c.Name, c.Namespace))
	}
	switch {
	case c.Spec.Upgrade.Paused:
		notes = append(notes, "spec.upgrade.paused is true: the upgrade would be planned and then hold before the snapshot (kubectl bao resume)")
	case c.PausedByAnnotation():
		notes = append(notes, fmt.Sprintf("the %s annotation pauses it: the upgrade would be planned and then hold before the snapshot (kubectl bao resume --annotation)", baov1.AnnotationPause))
	}
	if up := st.Upgrade; up != nil {
		rt := upgrade.DecideRetarget(up, obs, to, "")
		switch {
		case upgrade.SameVersion(to, up.TargetVersion):
			notes = append(notes, fmt.Sprintf("an upgrade to %s runs already: kubectl bao status %s -n %s", up.TargetVersion, c.Name, c.Namespace))
		case rt.Cancel:
			notes = append(notes, fmt.Sprintf("an upgrade from %s to %s runs and has replaced no member: changing spec.version now cancels it and plans this one", up.FromVersion, up.TargetVersion))
		default:
			notes = append(notes, fmt.Sprintf("an upgrade from %s to %s runs and has replaced a member: it finishes first, then this one is planned (or refused if it is then a downgrade)", up.FromVersion, up.TargetVersion))
		}
	}
	if st.Scaling != nil {
		notes = append(notes, fmt.Sprintf("a scaling to %d members runs: the API server refuses a version change until it ends", st.Scaling.TargetReplicas))
	}
	if lr := st.LastRollback; lr != nil && lr.Retry == "" && upgrade.SameVersion(to, lr.TargetVersion) {
		notes = append(notes, fmt.Sprintf("an upgrade to %s was rolled back (%s): it does not start again until kubectl bao retry %s -n %s", lr.TargetVersion, lr.Reason, c.Name, c.Namespace))
	}
	if !obs.AutopilotKnown || len(obs.Members) == 0 {
		notes = append(notes, "status shows no Raft view of the members: the order is decided on what the operator observes when it plans")
	} else if obs.Leader == "" {
		notes = append(notes, "status names no leader: the operator waits for one (OneLeader) and plans the leader last once it is known")
	}
	return notes
}

func applyCommand(c *baov1.OpenBaoCluster, req PlanRequest, image string) string {
	patch := fmt.Sprintf(`{"spec":{"version":%q}}`, req.To)
	if req.Image != "" {
		patch = fmt.Sprintf(`{"spec":{"version":%q,"image":%q}}`, req.To, image)
	}
	return fmt.Sprintf("kubectl patch openbaocluster %s -n %s --type merge -p '%s'", c.Name, c.Namespace, patch)
}

// RenderPlan writes a plan for a person.
func RenderPlan(w io.Writer, p *Plan) error {
	d := newDescriber(w)
	what := fmt.Sprintf("%s -> %s", p.FromVersion, p.TargetVersion)
	if p.ImageOnly {
		what = fmt.Sprintf("image %s at the same version %s", p.TargetImage, p.FromVersion)
	}
	d.line(0, "Plan for %s: %s (%s). Nothing was changed.", p.Cluster, what, p.Strategy)
	d.kv(0, "Image", "%s", p.TargetImage)
	d.kv(0, "Version policy", "allowed")
	for _, w := range p.Warnings {
		d.kv(1, "Warning", "%s", w)
	}
	if p.Strategy == baov1.BlueGreenStrategy {
		d.head(0, "Green members (join in this order)")
	} else if p.Strategy == baov1.OfflineStrategy {
		d.head(0, "Members (all stop together; no member answers until a leader on the target is elected)")
	} else {
		d.head(0, "Order (followers first, the leader last)")
	}
	rows := make([][]string, 0, len(p.Steps))
	for i, s := range p.Steps {
		rows = append(rows, []string{fmt.Sprintf("%d.", i+1), s.Member, s.Role, s.Action})
	}
	d.table(1, []string{"#", "MEMBER", "ROLE", "WHAT HAPPENS"}, rows)
	if len(p.Phases) > 0 {
		d.kv(0, "Phases", "%s", strings.Join(p.Phases, " -> "))
	}
	d.head(0, "Prechecks (as far as status shows)")
	pcRows := make([][]string, 0, len(p.Prechecks))
	for _, pc := range p.Prechecks {
		pcRows = append(pcRows, []string{pc.Name, string(pc.Result), pc.Message})
	}
	d.table(1, []string{"NAME", "RESULT", "MESSAGE"}, pcRows)
	if failed := upgrade.FirstFailedPrecheck(p.Prechecks); failed != nil {
		d.line(1, "The upgrade would be held by %s until it passes; nothing is touched meanwhile.", failed.Name)
	}
	d.head(0, "Snapshot")
	d.kv(1, "Policy", "%s", p.Snapshot.Policy)
	d.kv(1, "Target", "%s", orDash(p.Snapshot.Location))
	d.kv(1, "What", "%s", p.Snapshot.Note)
	d.kv(0, "Undo", "%s", p.UndoPath)
	if len(p.Notes) > 0 {
		d.head(0, "Notes")
		for _, n := range p.Notes {
			d.line(1, "- %s", n)
		}
	}
	d.kv(0, "To start it", "%s", p.Apply)
	return d.flush()
}

// fleetNotes says when the maintenance windows let the upgrade start, and which
// clusters it is ordered after (their state is read by the operator when it plans:
// kubectl bao fleet -A shows it).
func fleetNotes(c *baov1.OpenBaoCluster, now time.Time) []string {
	var notes []string
	if st, ok := fleet.Windows(c, now); ok {
		switch {
		case st.Open:
			notes = append(notes, fmt.Sprintf("inside a maintenance window until %s: the upgrade may start now; if it still runs then, spec.upgrade.windowEnd (%s) says what it does",
				st.ClosesAt.UTC().Format(time.RFC3339), orDefault(string(c.Spec.Upgrade.WindowEnd), string(baov1.WindowEndPause))))
		case !st.OpensAt.IsZero():
			notes = append(notes, fmt.Sprintf("outside every maintenance window: the upgrade would be planned and wait until the next opens at %s (in %s)",
				st.OpensAt.UTC().Format(time.RFC3339), st.OpensAt.Sub(now).Round(time.Minute)))
		}
	}
	if names := fleet.Names(c); len(names) > 0 {
		notes = append(notes, fmt.Sprintf("ordered after %s (spec.upgrade.after): it starts once each ran the target healthily for its soak; kubectl bao fleet -A shows where they stand",
			strings.Join(names, ", ")))
	}
	return notes
}
