package kubectlbao

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestBuildSpecPlan(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, reason string
		edit         func(c *baov1.OpenBaoCluster)
		wantRollout  []string
		wantRefused  string
		wantUpgrade  bool
		wantScaling  bool
		wantSummary  string
	}{
		{name: "nothing", reason: "the same spec restarts nobody", edit: func(*baov1.OpenBaoCluster) {},
			wantSummary: "Nothing restarts"},
		{name: "resources", reason: "a resources change reaches the members only through a restart: the rollout",
			edit: func(c *baov1.OpenBaoCluster) {
				c.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}
			},
			wantRollout: []string{"resources (spec.resources)"}, wantSummary: "a rollout that restarts all 3 members"},
		{name: "placement and annotations", reason: "each changed part of the template is named",
			edit: func(c *baov1.OpenBaoCluster) {
				c.Spec.Placement.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
				c.Spec.PodAnnotations = map[string]string{"team": "platform"}
			},
			wantRollout: []string{"pod annotations (spec.podAnnotations)", "tolerations (spec.placement.tolerations)"}},
		{name: "configuration", reason: "a Raft setting is read at start: the configuration's hash changes",
			edit: func(c *baov1.OpenBaoCluster) {
				v := int32(2)
				c.Spec.Raft.PerformanceMultiplier = &v
			},
			wantRollout: []string{"configuration (config.hcl or the start script)"}},
		{name: "replicas", reason: "a size change is a scaling, not a rollout",
			edit: func(c *baov1.OpenBaoCluster) { r := int32(5); c.Spec.Replicas = &r }, wantScaling: true, wantSummary: "a scaling"},
		{name: "version", reason: "a version change is the upgrade's plan",
			edit: func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" }, wantUpgrade: true, wantSummary: "an upgrade from 2.4.0 to 2.4.1"},
		{name: "downgrade", reason: "what the policy refuses is said, with its words",
			edit: func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.3.0" }, wantRefused: "older than"},
		{name: "storage", reason: "the API server refuses a storage change: say so and what to do",
			edit: func(c *baov1.OpenBaoCluster) { q := resource.MustParse("20Gi"); c.Spec.Storage.Size = &q }, wantRefused: "spec.storage cannot change"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cur := newCluster()
			proposed := cur.DeepCopy()
			tc.edit(proposed)
			p, err := BuildSpecPlan(cur, proposed, now)
			g.Expect(err).NotTo(HaveOccurred())
			if tc.wantRollout == nil {
				g.Expect(p.Rollout).To(BeEmpty(), tc.reason)
			} else {
				g.Expect(p.Rollout).To(ConsistOf(tc.wantRollout), tc.reason)
				g.Expect(p.Restarts).To(HaveLen(3))
				g.Expect(p.Restarts[2].Member).To(Equal("bao-0"), "the leader restarts last")
			}
			g.Expect(p.Upgrade != nil).To(Equal(tc.wantUpgrade), tc.reason)
			g.Expect(p.Scaling != "").To(Equal(tc.wantScaling), tc.reason)
			if tc.wantRefused != "" {
				g.Expect(strings.Join(p.Refused, "; ")).To(ContainSubstring(tc.wantRefused), tc.reason)
			} else {
				g.Expect(p.Refused).To(BeEmpty(), tc.reason)
			}
			g.Expect(p.Summary).To(ContainSubstring(tc.wantSummary))
			var out bytes.Buffer
			g.Expect(RenderSpecPlan(&out, p)).To(Succeed())
			g.Expect(out.String()).To(ContainSubstring("Nothing was changed"))
		})
	}
	g := NewWithT(t)
	other := newCluster()
	other.Name = "other"
	_, err := BuildSpecPlan(newCluster(), other, now)
	g.Expect(errors.Is(err, ErrRefused)).To(BeTrue(), "a manifest of another cluster is refused")
}

func TestReadCluster(t *testing.T) {
	g := NewWithT(t)
	c, err := ReadCluster(strings.NewReader("apiVersion: openbao.baokeeper.dev/v1alpha1\nkind: OpenBaoCluster\nmetadata:\n  name: bao\nspec:\n  version: 2.4.1\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Spec.Version).To(Equal("2.4.1"))
	_, err = ReadCluster(strings.NewReader("kind: OpenBaoCluster\nspec:\n  verison: 2.4.1\n"))
	g.Expect(err).To(MatchError(ContainSubstring("kubectl explain")), "a misspelt field is refused, not ignored")
	_, err = ReadCluster(strings.NewReader("kind: Deployment\n"))
	g.Expect(err).To(MatchError(ContainSubstring("not an OpenBaoCluster")))
}
