package workload

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// TemplateChanges names, in words, what differs between two member pod templates
// that baokeeper builds (StatefulSet): what a change of the spec would roll out to
// the members. Empty when a rollout would restart nobody.
func TemplateChanges(a, b *corev1.PodTemplateSpec) []string {
	var out []string
	add := func(differ bool, word string) {
		if differ {
			out = append(out, word)
		}
	}
	ca, cb := container(&a.Spec), container(&b.Spec)
	userA, userB := userAnnotations(a.Annotations), userAnnotations(b.Annotations)
	add(a.Annotations[baov1.TemplateAnnotationConfig] != b.Annotations[baov1.TemplateAnnotationConfig], "configuration (config.hcl or the start script)")
	add(a.Annotations[baov1.TemplateAnnotationRestart] != b.Annotations[baov1.TemplateAnnotationRestart], "restart token")
	add(!maps.Equal(userA, userB), "pod annotations (spec.podAnnotations)")
	if ca != nil && cb != nil {
		add(ca.Image != cb.Image, "image")
		add(!equality.Semantic.DeepEqual(ca.Resources, cb.Resources), "resources (spec.resources)")
	}
	add(!equality.Semantic.DeepEqual(a.Spec.Affinity, b.Spec.Affinity), "affinity (spec.placement.affinity)")
	add(!equality.Semantic.DeepEqual(a.Spec.TopologySpreadConstraints, b.Spec.TopologySpreadConstraints), "topology spread (spec.placement.topologySpreadConstraints)")
	add(!equality.Semantic.DeepEqual(a.Spec.Tolerations, b.Spec.Tolerations), "tolerations (spec.placement.tolerations)")
	add(!maps.Equal(a.Spec.NodeSelector, b.Spec.NodeSelector), "node selector (spec.placement.nodeSelector)")
	add(a.Spec.PriorityClassName != b.Spec.PriorityClassName, "priority class (spec.placement.priorityClassName)")
	add(!equality.Semantic.DeepEqual(a.Spec.ImagePullSecrets, b.Spec.ImagePullSecrets), "image pull secrets (spec.imagePullSecrets)")
	if len(out) == 0 && !equality.Semantic.DeepEqual(a, b) {
		out = append(out, "other fields of the pod template")
	}
	return out
}

func container(spec *corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == ContainerName {
			return &spec.Containers[i]
		}
	}
	return nil
}

// userAnnotations are the annotations that are not baokeeper's.
func userAnnotations(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if !strings.HasPrefix(k, "baokeeper.dev/") {
			out[k] = v
		}
	}
	return out
}
