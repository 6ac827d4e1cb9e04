package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// volumeLoop materializes the pod's volumes and keeps them current.
func (pr *podRuntime) volumeLoop() {
	tick := time.NewTicker(volumeRefresh)
	defer tick.Stop()
	for {
		pr.syncVolumes()
		select {
		case <-pr.stopCtx.Done():
			return
		case <-tick.C:
		case <-pr.volKick:
		}
	}
}

func (pr *podRuntime) facts() podFacts {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return podFacts{PodIP: pr.podIP, HostIP: pr.hostIP, NodeAllocatable: nodeCapacity()}
}

func (pr *podRuntime) syncVolumes() {
	pod := pr.podSpecCopy()
	facts := pr.facts()
	paths := map[string]string{}
	var firstErr error
	for _, v := range pod.Spec.Volumes {
		p, err := pr.syncVolume(pod, v, facts)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("volume %q: %w", v.Name, err)
			}
			continue
		}
		paths[v.Name] = p
	}
	pr.mu.Lock()
	wasOK := pr.volumesOK
	switch {
	case firstErr == nil:
		pr.volumePaths = paths
		pr.volumesMsg = ""
		if !pr.volumesOK {
			pr.volumesOK = true
			close(pr.volReady)
		}
	case !wasOK:
		pr.volumesMsg = firstErr.Error()
	}
	msgChanged := firstErr != nil && pr.volumesMsg != "" && !wasOK
	pr.mu.Unlock()
	switch {
	case firstErr != nil && wasOK:
		pr.log.V(1).Info("Keeping old volume content, refresh failed", "reason", firstErr.Error())
	case msgChanged:
		pr.setCreatingMessage(firstErr.Error())
	case firstErr == nil && !wasOK:
		pr.log.V(1).Info("Volumes ready")
	}
}

// forcedReadOnly: the kubelet always mounts these kinds read-only.
func forcedReadOnly(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.Projected != nil || v.DownwardAPI != nil ||
		(v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly)
}

// syncVolume materializes one volume and returns its host directory.
func (pr *podRuntime) syncVolume(pod *corev1.Pod, v corev1.Volume, facts podFacts) (string, error) {
	dir := filepath.Join(pr.dir, "volumes", v.Name)
	ns := pod.Namespace
	var files map[string]volumeFile
	var err error
	switch {
	case v.EmptyDir != nil:
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", fmt.Errorf("failed to create emptyDir %s: %w", dir, err)
		}
		return dir, os.Chmod(dir, 0o777)
	case v.ConfigMap != nil:
		s := v.ConfigMap
		files, err = configMapFiles(pr.a, ns, s.Name, s.Items, derefMode(s.DefaultMode), s.Optional != nil && *s.Optional)
	case v.Secret != nil:
		s := v.Secret
		files, err = secretFiles(pr.a, ns, s.SecretName, s.Items, derefMode(s.DefaultMode), s.Optional != nil && *s.Optional)
	case v.Projected != nil:
		ctx, cancel := context.WithTimeout(pr.stopCtx, apiCallTimeout)
		files, err = projectedFiles(ctx, pr.a, &pr.tokens, pod, v.Projected, facts, time.Now())
		cancel()
	case v.DownwardAPI != nil:
		files, err = downwardAPIFiles(pod, v.DownwardAPI.Items, derefMode(v.DownwardAPI.DefaultMode), facts)
	case v.PersistentVolumeClaim != nil:
		return pr.a.ClaimPath(ns, v.PersistentVolumeClaim.ClaimName)
	case v.HostPath != nil:
		if t := v.HostPath.Type; t != nil && *t == corev1.HostPathDirectoryOrCreate {
			if err := os.MkdirAll(v.HostPath.Path, 0o755); err != nil {
				return "", fmt.Errorf("failed to create hostPath %s: %w", v.HostPath.Path, err)
			}
		}
		return v.HostPath.Path, nil
	default:
		return "", fmt.Errorf("volume kind not supported by the rig node agent (supported: emptyDir, configMap, secret, projected, downwardAPI, persistentVolumeClaim, hostPath)")
	}
	if err != nil {
		return "", err
	}
	if err := syncDir(dir, files); err != nil {
		return "", err
	}
	return dir, nil
}

func derefMode(m *int32) int32 {
	if m != nil {
		return *m
	}
	return defaultFileMode
}
