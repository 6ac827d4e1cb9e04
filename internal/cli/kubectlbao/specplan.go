package kubectlbao

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/rolling"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// SpecPlan is what applying a changed OpenBaoCluster would do, computed with the
// operator's own builders (the member pod template it would write) and planners.
// Nothing is changed.
type SpecPlan struct {
	// Cluster is namespace/name.
	Cluster string `json:"cluster"`
	// Refused lists what the API server or the operator would refuse, each with
	// what to do instead.
	Refused []string `json:"refused,omitempty"`
	// Upgrade is the version or image change the new spec starts, if any.
	Upgrade *Plan `json:"upgrade,omitempty"`
	// Scaling says the membership change, if any.
	Scaling string `json:"scaling,omitempty"`
	// Rollout names what changes in the member pod template: every member restarts
	// onto it, in the order of Restarts.
	Rollout  []string   `json:"rollout,omitempty"`
	Restarts []PlanStep `json:"restarts,omitempty"`
	// Summary is one sentence of what happens.
	Summary string `json:"summary"`
}

// ReadCluster reads an OpenBaoCluster manifest (YAML or JSON).
func ReadCluster(r io.Reader) (*baov1.OpenBaoCluster, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("failed to read the manifest: %w", err)
	}
	c := &baov1.OpenBaoCluster{}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, fmt.Errorf("the manifest is not an OpenBaoCluster: %w; check the field names against kubectl explain openbaocluster.spec", err)
	}
	if c.Kind != "" && c.Kind != "OpenBaoCluster" {
		return nil, fmt.Errorf("the manifest is a %s, not an OpenBaoCluster", c.Kind)
	}
	return c, nil
}

// BuildSpecPlan says what replacing cur's spec with proposed's would do: what is
// refused, the upgrade it starts (BuildPlan), the scaling, and the rollout of the
// member pod template, with the members in the order they would restart.
func BuildSpecPlan(cur, proposed *baov1.OpenBaoCluster, now time.Time) (*SpecPlan, error) {
	if proposed.Name != "" && proposed.Name != cur.Name {
		return nil, fmt.Errorf("%w: the manifest names %s, not %s: plan it against that cluster", ErrRefused, proposed.Name, cur.Name)
	}
	next := cur.DeepCopy()
	next.Spec = *proposed.Spec.DeepCopy()
	p := &SpecPlan{Cluster: cur.Namespace + "/" + cur.Name}

	if !equality.Semantic.DeepEqual(cur.Spec.Storage, next.Spec.Storage) {
		p.Refused = append(p.Refused, "spec.storage cannot change on a cluster (the API server refuses it): expand each volume claim where its StorageClass allows it, or restore a snapshot into a new cluster with the new storage")
	}
	if ref := upgrade.CheckSpec(next); ref != nil {
		p.Refused = append(p.Refused, ref.Message)
	}
	if !upgrade.SameVersion(cur.Spec.Version, next.Spec.Version) || cur.Spec.Image != next.Spec.Image {
		up, err := BuildPlan(cur, PlanRequest{To: next.Spec.Version, Image: next.Spec.Image}, now)
		switch {
		case err == nil:
			p.Upgrade = up
		case errors.Is(err, ErrRefused):
			p.Refused = append(p.Refused, err.Error())
		default:
			return nil, err
		}
	}
	if cur.GetReplicas() != next.GetReplicas() {
		p.Scaling = fmt.Sprintf("scaling from %d to %d members through Raft, one member at a time: a new member joins as a non-voter and is promoted once caught up; "+
			"a leaving member is removed from Raft (the leader hands off first) before its pod goes, and its volume claim is deleted", cur.GetReplicas(), next.GetReplicas())
	}
	changes, err := templateChanges(cur, next)
	if err != nil {
		return nil, err
	}
	p.Rollout = changes
	obs := Observation(cur, now)
	if len(changes) > 0 {
		for _, name := range rolling.Plan(obs) {
			role := "Unknown"
			if ms := memberStatus(cur, name); ms != nil && ms.RaftRole != "" {
				role = string(ms.RaftRole)
			}
			action := "restarts on the new pod template, then is gated (Ready, unsealed, a voter, healthy, caught up)"
			if name == obs.Leader {
				action = "last: hands leadership off once (the one planned election), then restarts like the others"
			}
			p.Restarts = append(p.Restarts, PlanStep{Member: name, Role: role, Action: action})
		}
	}
	p.Summary = specSummary(p)
	return p, nil
}

// templateChanges builds the member pod template the operator would write for each
// spec, on the same image (a version change is the upgrade's), and names what differs.
func templateChanges(cur, next *baov1.OpenBaoCluster) ([]string, error) {
	image := upgrade.ResolveImage(cur.Spec.Image, cur.Spec.Version)
	build := func(c *baov1.OpenBaoCluster) (*corev1.PodTemplateSpec, error) {
		annotations, err := workload.TemplateAnnotations(c)
		if err != nil {
			return nil, fmt.Errorf("%w: the operator cannot render this spec: %w", ErrRefused, err)
		}
		sts, err := workload.StatefulSet(c, workload.StatefulSetParams{Image: image, TLSSecretName: workload.CASecretName(c), TemplateAnnotations: annotations})
		if err != nil {
			return nil, fmt.Errorf("%w: the operator cannot render this spec: %w", ErrRefused, err)
		}
		return &sts.Spec.Template, nil
	}
	a, err := build(cur)
	if err != nil {
		return nil, err
	}
	b, err := build(next)
	if err != nil {
		return nil, err
	}
	return workload.TemplateChanges(a, b), nil
}

func specSummary(p *SpecPlan) string {
	var parts []string
	if p.Upgrade != nil {
		parts = append(parts, fmt.Sprintf("an upgrade from %s to %s (%s, see below)", p.Upgrade.FromVersion, p.Upgrade.TargetVersion, p.Upgrade.Strategy))
	}
	if p.Scaling != "" {
		parts = append(parts, "a scaling")
	}
	if len(p.Rollout) > 0 {
		if p.Upgrade != nil {
			parts = append(parts, "the members the upgrade replaces come back on the new pod template")
		} else {
			parts = append(parts, fmt.Sprintf("a rollout that restarts all %d members, one at a time, the leader last", len(p.Restarts)))
		}
	}
	if len(parts) == 0 {
		if len(p.Refused) > 0 {
			return "Refused: nothing would change"
		}
		return "Nothing restarts: no member picks up this change before it restarts for another reason, and none needs to"
	}
	s := "Applying this starts " + strings.Join(parts, "; ")
	if p.Scaling != "" && (p.Upgrade != nil || len(p.Rollout) > 0) {
		s += ". One operation at a time: the scaling runs first, then the rest"
	}
	return s
}

// RenderSpecPlan prints a SpecPlan for a person.
func RenderSpecPlan(w io.Writer, p *SpecPlan) error {
	d := newDescriber(w)
	d.line(0, "Plan for %s: %s. Nothing was changed.", p.Cluster, p.Summary)
	for _, r := range p.Refused {
		d.kv(0, "Refused", "%s", r)
	}
	if p.Scaling != "" {
		d.kv(0, "Scaling", "%s", p.Scaling)
	}
	if len(p.Rollout) > 0 {
		d.kv(0, "Pod template", "%s", strings.Join(p.Rollout, ", "))
		if p.Upgrade == nil {
			d.head(0, "Restart order (followers first, the leader last)")
			rows := make([][]string, 0, len(p.Restarts))
			for i, s := range p.Restarts {
				rows = append(rows, []string{fmt.Sprintf("%d.", i+1), s.Member, s.Role, s.Action})
			}
			d.table(1, []string{"#", "MEMBER", "ROLE", "WHAT HAPPENS"}, rows)
		}
	}
	if err := d.flush(); err != nil {
		return err
	}
	if p.Upgrade != nil {
		return RenderPlan(w, p.Upgrade)
	}
	return nil
}
