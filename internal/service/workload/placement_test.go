package workload

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestMemberPlacement(t *testing.T) {
	cases := []struct {
		name, reason string
		placement    baov1.PlacementSpec
		wantSpread   int
		wantDefault  bool
	}{
		{name: "nothing set", reason: "members spread across nodes by default, so three voters never share one node where there are three",
			wantSpread: 1, wantDefault: true},
		{name: "node affinity only", reason: "a node affinity says where, not how far apart: the default spread stays",
			placement:  baov1.PlacementSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}},
			wantSpread: 1, wantDefault: true},
		{name: "the user's pod anti-affinity", reason: "a spread of the user's own replaces the default",
			placement:  baov1.PlacementSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}},
			wantSpread: 0},
		{name: "the user's constraints", reason: "replaces the default, kept as written",
			placement:  baov1.PlacementSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone"}}},
			wantSpread: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster()
			c.Spec.Placement = tc.placement
			sts, err := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.4.0", TLSSecretName: "bao-tls"})
			g.Expect(err).NotTo(HaveOccurred())
			spread := sts.Spec.Template.Spec.TopologySpreadConstraints
			g.Expect(spread).To(HaveLen(tc.wantSpread), tc.reason)
			if tc.wantDefault {
				g.Expect(spread[0].TopologyKey).To(Equal(corev1.LabelHostname))
				g.Expect(spread[0].WhenUnsatisfiable).To(Equal(corev1.DoNotSchedule), tc.reason)
				g.Expect(*spread[0].NodeTaintsPolicy).To(Equal(corev1.NodeInclusionPolicyHonor), "a tainted node (a cordoned one, a control-plane node) is no domain to spread to")
				g.Expect(spread[0].LabelSelector.MatchLabels).To(Equal(sts.Spec.Selector.MatchLabels), "members of this StatefulSet only")
			}
		})
	}
}

func TestPlacementFieldsReachMembers(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.Placement = baov1.PlacementSpec{NodeSelector: map[string]string{"disk": "ssd"}, PriorityClassName: "critical",
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "bao", Effect: corev1.TaintEffectNoSchedule}}}
	c.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	c.Spec.PodAnnotations = map[string]string{"example.com/team": "secrets"}
	sts, err := StatefulSet(c, StatefulSetParams{Image: "openbao/openbao:2.4.0", TLSSecretName: "bao-tls",
		TemplateAnnotations: map[string]string{baov1.TemplateAnnotationConfig: "abc"}})
	g.Expect(err).NotTo(HaveOccurred())
	spec := sts.Spec.Template.Spec
	g.Expect(spec.NodeSelector).To(Equal(map[string]string{"disk": "ssd"}))
	g.Expect(spec.PriorityClassName).To(Equal("critical"))
	g.Expect(spec.Tolerations).To(HaveLen(1))
	g.Expect(spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "regcred"}))
	g.Expect(sts.Spec.Template.Annotations).To(Equal(map[string]string{"example.com/team": "secrets", baov1.TemplateAnnotationConfig: "abc"}))
}
