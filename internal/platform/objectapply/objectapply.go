// Package objectapply server-side-applies typed objects built in memory, owning only
// the fields the builder set. The workload reconciler applies every workload object
// through it; the upgrade manager applies the client Service's switch to green
// through it, under the same field manager, so that the two never fight.
package objectapply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager of every workload object baokeeper applies.
const FieldOwner = "baokeeper"

// Apply server-side-applies obj under FieldOwner. Only the fields the builder set
// are owned, so other writers (the StatefulSet controller, OpenBao's service
// registration labelling pods, users adding annotations) are not fought over.
func Apply(ctx context.Context, c client.Client, obj client.Object) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("failed to convert %T %s: %w", obj, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: raw}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	if vcts, ok, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates"); ok {
		for i := range vcts {
			if m, ok := vcts[i].(map[string]any); ok {
				unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
				unstructured.RemoveNestedField(m, "status")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, vcts, "spec", "volumeClaimTemplates")
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply %s %s/%s: %w", u.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
