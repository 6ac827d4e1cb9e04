package openbaocluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// observeExisting reads who owns each object the cluster would write. The cache
// holds only what baokeeper labelled, so a name it does not find there is read from
// the API server, metadata only (another application's Secret is never read whole).
// Once the cluster's objects exist they come from the cache, and a pass costs no
// read of the API server.
func (r *Reconciler) observeExisting(ctx context.Context, c *baov1.OpenBaoCluster) ([]workload.ExistingObject, error) {
	var out []workload.ExistingObject
	for _, ref := range workload.CreatedObjects(c) {
		gvk := ref.GroupVersionKind()
		typed, err := r.Client.Scheme().New(gvk)
		if err != nil {
			return nil, fmt.Errorf("no API type for %s: %w", ref, err)
		}
		obj, ok := typed.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", ref)
		}
		key := client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}
		err = r.Client.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) && r.APIReader != nil {
			pm := &metav1.PartialObjectMetadata{}
			pm.SetGroupVersionKind(gvk)
			err = r.APIReader.Get(ctx, key, pm)
			obj = pm
		}
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("failed to read %s %s/%s to check that it is the cluster's: %w", ref.Kind, c.Namespace, ref.Name, err)
		}
		out = append(out, workload.ExistingObject{Ref: ref, Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), OwnerReferences: obj.GetOwnerReferences()})
	}
	return out, nil
}
