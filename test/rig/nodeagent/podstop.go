package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// finish stops everything, releases the address and volumes and, for a deleted pod,
// reports the final status and deletes the pod object.
func (pr *podRuntime) finish() {
	pr.stop()
	pr.wg.Wait()
	pr.mu.Lock()
	reason := pr.reason
	hostNetwork := pr.pod.Spec.HostNetwork
	netns := pr.netns
	now := metav1.Now()
	for _, list := range [][]corev1.ContainerStatus{pr.initStatuses, pr.statuses} {
		for i := range list {
			finalizeStatus(&list[i], now)
		}
	}
	pr.terminal = reason != reasonShutdown
	pr.mu.Unlock()

	pr.a.unregister(pr)
	if !hostNetwork {
		if netns != "" {
			if err := pr.a.addrs.Unisolate(pr.uid); err != nil {
				pr.log.Error(err, "Failed to remove the pod's network namespace")
			}
		}
		if ip := pr.a.ips.Release(string(pr.uid)); ip != "" && netns == "" {
			if err := pr.a.addrs.Del(ip); err != nil {
				pr.log.Error(err, "Failed to remove the pod address")
			}
		}
	}
	if reason != reasonShutdown {
		// Volumes (Secret copies, emptyDirs) and container dirs go with the pod; logs stay.
		for _, d := range []string{"volumes", "containers", "hosts"} {
			if err := os.RemoveAll(filepath.Join(pr.dir, d)); err != nil {
				pr.log.Error(err, "Failed to remove pod state", "path", filepath.Join(pr.dir, d))
			}
		}
	}
	pr.prov.forget(pr)
	if reason == reasonDeleted {
		pr.reportAndDelete()
	}
	pr.log.Info("Pod stopped", "reason", reasonName(reason))
	close(pr.done)
}

// finalizeStatus turns a container that is not terminated into a terminated one: its
// last termination when it had one, else ContainerStatusUnknown like the kubelet.
func finalizeStatus(s *corev1.ContainerStatus, now metav1.Time) {
	s.Ready = false
	if s.Started != nil {
		f := false
		s.Started = &f
	}
	if s.State.Terminated != nil {
		return
	}
	if s.State.Running != nil {
		s.State = corev1.ContainerState{Terminated: terminatedState(137, s.State.Running.StartedAt, now, "")}
		return
	}
	if t := s.LastTerminationState.Terminated; t != nil {
		s.State = corev1.ContainerState{Terminated: t.DeepCopy()}
		return
	}
	s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 137, Reason: "ContainerStatusUnknown", FinishedAt: now,
		Message: "The container could not be located when the pod was terminated",
	}}
}

// reportAndDelete writes the terminal status and deletes the pod object with grace 0
// and a UID precondition, so a new pod of the same name is never touched.
func (pr *podRuntime) reportAndDelete() {
	ctx, cancel := context.WithTimeout(context.Background(), apiCallTimeout)
	defer cancel()
	ns, name, _ := strings.Cut(pr.key, "/")
	pods := pr.a.client.CoreV1().Pods(ns)
	cur, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err == nil && cur.UID == pr.uid && cur.Status.Phase != corev1.PodSucceeded && cur.Status.Phase != corev1.PodFailed {
		cur.Status = pr.podWithStatus().Status
		if _, err := pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			pr.log.Error(err, "Failed to report the final pod status")
		}
	}
	zero := int64(0)
	err = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions(string(pr.uid))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		pr.log.Error(err, "Failed to delete the pod object")
	}
}
