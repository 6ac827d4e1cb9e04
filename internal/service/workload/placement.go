package workload

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// ApplyPlacement sets the fields of a PlacementSpec on a pod spec, and the image
// pull secrets.
func ApplyPlacement(spec *corev1.PodSpec, p baov1.PlacementSpec, pullSecrets []corev1.LocalObjectReference) {
	spec.NodeSelector = maps.Clone(p.NodeSelector)
	if p.Affinity != nil {
		spec.Affinity = p.Affinity.DeepCopy()
	}
	spec.Tolerations = append([]corev1.Toleration(nil), p.Tolerations...)
	for _, t := range p.TopologySpreadConstraints {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, *t.DeepCopy())
	}
	spec.PriorityClassName = p.PriorityClassName
	spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), pullSecrets...)
}

// MemberSpread is the default placement of members when spec.placement sets
// neither topology spread constraints nor pod anti-affinity: at most one member
// more on any node than on another, among the nodes that can run a member (their
// taints and the pod's node affinity honoured). With at least as many such nodes as
// members, no two members share a node; with fewer, members still start, evenly
// spread. So it is required where the cluster has enough nodes and no obstacle
// where it has fewer, without baokeeper reading the cluster's nodes.
func MemberSpread(selector map[string]string) []corev1.TopologySpreadConstraint {
	honor := corev1.NodeInclusionPolicyHonor
	return []corev1.TopologySpreadConstraint{{
		MaxSkew:            1,
		TopologyKey:        corev1.LabelHostname,
		WhenUnsatisfiable:  corev1.DoNotSchedule,
		LabelSelector:      &metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
		NodeAffinityPolicy: &honor,
		NodeTaintsPolicy:   &honor,
	}}
}

// memberPlacement applies spec.placement to the member pod spec, with the default
// spread when the user set no spread of their own.
func memberPlacement(c *baov1.OpenBaoCluster, spec *corev1.PodSpec, selector map[string]string) {
	p := c.Spec.Placement
	ApplyPlacement(spec, p, c.Spec.ImagePullSecrets)
	if len(p.TopologySpreadConstraints) == 0 && (p.Affinity == nil || p.Affinity.PodAntiAffinity == nil) {
		spec.TopologySpreadConstraints = MemberSpread(selector)
	}
}

// memberAnnotations are the user's spec.podAnnotations and baokeeper's template
// annotations (which win: the API server refuses user keys under baokeeper.dev/).
func memberAnnotations(c *baov1.OpenBaoCluster, template map[string]string) map[string]string {
	if len(c.Spec.PodAnnotations) == 0 && len(template) == 0 {
		return nil
	}
	out := maps.Clone(c.Spec.PodAnnotations)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, template)
	return out
}
