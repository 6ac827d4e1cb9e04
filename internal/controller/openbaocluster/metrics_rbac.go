package openbaocluster

// The metrics endpoint authenticates its callers with TokenReviews and authorizes them
// with SubjectAccessReviews (controller-runtime's metrics filters, enabled by
// --metrics-secure, the default).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
