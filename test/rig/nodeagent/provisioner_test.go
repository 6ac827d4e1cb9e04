package nodeagent

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func claim(opts ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "data-bao-0", UID: "c-1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func TestWantsRigVolume(t *testing.T) {
	cases := []struct {
		name, reason string
		pvc          *corev1.PersistentVolumeClaim
		want         bool
	}{
		{"rig class", "a Pending claim of class rig-local gets a volume", claim(), true},
		{"no class", "a claim without class defaults to rig-local", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = nil }), true},
		{"empty class", "an explicit empty class means no dynamic provisioning", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("") }), false},
		{"other class", "another class is someone else's", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("fast") }), false},
		{"bound", "a bound claim needs nothing", claim(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimBound }), false},
		{"named volume", "a claim for a named volume is not provisioned", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-x" }), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(wantsRigVolume(tc.pvc)).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestVolumeForClaim(t *testing.T) {
	g := NewWithT(t)
	pv := volumeForClaim("/state", claim())
	g.Expect(pv.Name).To(Equal("pvc-c-1"))
	g.Expect(pv.Spec.HostPath.Path).To(Equal("/state/pv/prod/data-bao-0-c-1"), "one directory per claim, stable across pod restarts")
	g.Expect(*pv.Spec.HostPath.Type).To(Equal(corev1.HostPathDirectoryOrCreate))
	g.Expect(pv.Spec.Capacity.Storage().String()).To(Equal("2Gi"), "capacity is the request")
	g.Expect(pv.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
	g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))
	g.Expect(pv.Spec.StorageClassName).To(Equal(StorageClassName))
	g.Expect(pv.Spec.ClaimRef).To(Equal(&corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "prod", Name: "data-bao-0", UID: "c-1"}),
		"pre-bound to the claim so the PV controller binds exactly this pair")

	sc := rigStorageClass()
	g.Expect(sc.Annotations).To(HaveKeyWithValue(defaultClassAnnotation, "true"))
	g.Expect(sc.Provisioner).To(Equal(ProvisionerName))
	g.Expect(*sc.VolumeBindingMode).To(Equal(storagev1.VolumeBindingImmediate))
	g.Expect(*sc.ReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))
}
