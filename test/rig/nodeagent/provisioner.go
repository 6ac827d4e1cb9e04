package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// StorageClassName is the rig's default StorageClass: claims of this class (or of no
// class) get a PersistentVolume on a directory under Config.StateDir/pv.
const StorageClassName = "rig-local"

// ProvisionerName is the provisioner of StorageClassName.
const ProvisionerName = "rig.baokeeper.dev/local"

const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// provisionInterval is how often claims are checked besides watch events;
// provisionCacheTTL is how long a created PV is trusted to exist before the informer
// shows it.
const (
	provisionInterval = 3 * time.Second
	provisionCacheTTL = 30 * time.Second
)

// rigStorageClass is the StorageClass the agent ensures.
func rigStorageClass() *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimRetain
	mode := storagev1.VolumeBindingImmediate
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{defaultClassAnnotation: "true"},
		},
		Provisioner:       ProvisionerName,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &mode,
	}
}

// wantsRigVolume reports whether a claim should get a rig volume: it is Pending, not
// bound to a named volume, and of class rig-local or of no class (which the PV
// controller resolves to the default class, rig-local).
func wantsRigVolume(pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil {
		return false
	}
	c := pvc.Spec.StorageClassName
	return c == nil || *c == StorageClassName
}

// pvDir is the host directory of a claim's volume.
func pvDir(stateDir string, pvc *corev1.PersistentVolumeClaim) string {
	return filepath.Join(stateDir, "pv", pvc.Namespace, pvc.Name+"-"+string(pvc.UID))
}

// volumeForClaim builds the PersistentVolume for a claim: a hostPath directory, the
// claim's request as capacity, pre-bound to the claim, retained on release.
func volumeForClaim(stateDir string, pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	capacity, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		capacity = resource.MustParse("1Gi")
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	hostType := corev1.HostPathDirectoryOrCreate
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "pvc-" + string(pvc.UID),
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": ProvisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: capacity},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              StorageClassName,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: pvDir(stateDir, pvc), Type: &hostType},
			},
		},
	}
}

// ensureStorageClass creates the rig's StorageClass, or marks an existing one default.
func (a *agent) ensureStorageClass(ctx context.Context) error {
	scs := a.client.StorageV1().StorageClasses()
	cur, err := scs.Get(ctx, StorageClassName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		a.log.Info("Creating StorageClass", "StorageClass", klog.KRef("", StorageClassName))
		_, err = scs.Create(ctx, rigStorageClass(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	} else if err == nil && cur.Annotations[defaultClassAnnotation] != "true" {
		cur = cur.DeepCopy()
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[defaultClassAnnotation] = "true"
		_, err = scs.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("failed to ensure StorageClass %s: %w (check that the API server is up and the kubeconfig is admin)", StorageClassName, err)
	}
	return nil
}

// provisionLoop creates a PersistentVolume for every claim that wants one, on claim
// events and every provisionInterval, until ctx ends.
func (a *agent) provisionLoop(ctx context.Context) {
	tick := time.NewTicker(provisionInterval)
	defer tick.Stop()
	for {
		a.provisionOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-a.claimKick:
		}
	}
}

func (a *agent) provisionOnce(ctx context.Context) {
	pvcs, err := a.pvcs.List(labels.Everything())
	if err != nil {
		a.log.Error(err, "Failed to list PersistentVolumeClaims")
		return
	}
	for _, pvc := range pvcs {
		if !wantsRigVolume(pvc) {
			continue
		}
		pv := volumeForClaim(a.cfg.StateDir, pvc)
		if _, err := a.pvs.Get(pv.Name); err == nil {
			continue
		}
		if at, ok := a.provisioned[pv.Name]; ok && time.Since(at) < provisionCacheTTL {
			continue
		}
		log := a.log.WithValues("PersistentVolumeClaim", klog.KObj(pvc), "PersistentVolume", klog.KRef("", pv.Name))
		if err := os.MkdirAll(pv.Spec.HostPath.Path, 0o755); err != nil {
			log.Error(err, "Failed to create the volume directory", "path", pv.Spec.HostPath.Path)
			continue
		}
		log.Info("Provisioning PersistentVolume", "path", pv.Spec.HostPath.Path)
		if _, err := a.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			log.Error(err, "Failed to create PersistentVolume")
			continue
		}
		a.provisioned[pv.Name] = time.Now()
	}
}
