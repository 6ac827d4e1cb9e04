// Package v1alpha1 holds the OpenBaoCluster API of baokeeper: types, condition types,
// reasons and defaults. It has no logic beyond small helpers.
//
// +kubebuilder:object:generate=true
// +groupName=openbao.baokeeper.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the OpenBaoCluster API.
	GroupVersion = schema.GroupVersion{Group: "openbao.baokeeper.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the API types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the API types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
