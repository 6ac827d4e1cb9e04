package openbaocluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// kindObject returns an empty typed object of a workload kind (for the cache) and its
// group-version-kind (for a metadata-only read of the API server).
func kindObject(kind string) (client.Object, schema.GroupVersionKind, error) {
	switch kind {
	case workload.KindServiceAccount:
		return &corev1.ServiceAccount{}, corev1.SchemeGroupVersion.WithKind(kind), nil
	case workload.KindConfigMap:
		return &corev1.ConfigMap{}, corev1.SchemeGroupVersion.WithKind(kind), nil
	case workload.KindSecret:
		return &corev1.Secret{}, corev1.SchemeGroupVersion.WithKind(kind), nil
	case workload.KindService:
		return &corev1.Service{}, corev1.SchemeGroupVersion.WithKind(kind), nil
	case workload.KindRole:
		return &rbacv1.Role{}, rbacv1.SchemeGroupVersion.WithKind(kind), nil
	case workload.KindRoleBinding:
		return &rbacv1.RoleBinding{}, rbacv1.SchemeGroupVersion.WithKind(kind), nil
	case workload.KindPodDisruptionBudget:
		return &policyv1.PodDisruptionBudget{}, policyv1.SchemeGroupVersion.WithKind(kind), nil
	case workload.KindStatefulSet:
		return &appsv1.StatefulSet{}, appsv1.SchemeGroupVersion.WithKind(kind), nil
	}
	return nil, schema.GroupVersionKind{}, fmt.Errorf("no object kind %q in the workload", kind)
}

// observeExisting reads who owns each object the cluster would write. The cache
// holds only what baokeeper labelled, so a name it does not find there is read from
// the API server, metadata only (another application's Secret is never read whole).
// Once the cluster's objects exist they come from the cache, and a pass costs no
// read of the API server.
func (r *Reconciler) observeExisting(ctx context.Context, c *baov1.OpenBaoCluster) ([]workload.ExistingObject, error) {
	var out []workload.ExistingObject
	for _, ref := range workload.CreatedObjects(c) {
		obj, gvk, err := kindObject(ref.Kind)
		if err != nil {
			return nil, err
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
