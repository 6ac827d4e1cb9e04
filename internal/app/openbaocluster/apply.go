package openbaocluster

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/baokeeper/baokeeper/internal/platform/objectapply"
)

// FieldOwner is the field manager of every workload object baokeeper applies.
const FieldOwner = objectapply.FieldOwner

// applyObject server-side-applies a typed object built by the workload package
// (see objectapply.Apply).
func applyObject(ctx context.Context, c client.Client, obj client.Object) error {
	return objectapply.Apply(ctx, c, obj)
}
