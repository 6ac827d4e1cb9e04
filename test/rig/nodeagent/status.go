package nodeagent

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusInput is everything a pod's status is computed from.
type statusInput struct {
	// Pod is the pod as the API server last showed it: spec, generation, QoS class and
	// conditions owned by others (PodScheduled, readiness gates, DisruptionTarget).
	Pod *corev1.Pod
	// Prev are the conditions this agent computed last, for LastTransitionTime.
	Prev         []corev1.PodCondition
	PodIP        string
	HostIP       string
	StartTime    *metav1.Time
	SandboxReady bool
	InitStatuses []corev1.ContainerStatus
	Statuses     []corev1.ContainerStatus
	// Terminal is true once the pod was deleted and all its processes are gone.
	Terminal bool
	Now      metav1.Time
}

// ownedConditions are the pod conditions this agent sets, in the order it writes them.
var ownedConditions = []corev1.PodConditionType{
	corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled,
}

// isSidecar reports whether an init container is a restartable (sidecar) one.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// initialized reports whether every init container has finished (regular ones with exit
// 0, sidecars started), and lists the ones that have not.
func initialized(spec *corev1.PodSpec, st []corev1.ContainerStatus) (bool, []string) {
	var pending []string
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		var s *corev1.ContainerStatus
		if i < len(st) {
			s = &st[i]
		}
		done := false
		switch {
		case s == nil:
		case isSidecar(c):
			done = s.Started != nil && *s.Started
		default:
			done = s.State.Terminated != nil && s.State.Terminated.ExitCode == 0
		}
		if !done {
			pending = append(pending, c.Name)
		}
	}
	return len(pending) == 0, pending
}

// podPhase follows the kubelet's getPhase. terminal means the pod was deleted and its
// processes are gone, so nothing will restart.
func podPhase(spec *corev1.PodSpec, initSt, st []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	statusAt := func(list []corev1.ContainerStatus, i int) *corev1.ContainerStatus {
		if i < len(list) {
			return &list[i]
		}
		return nil
	}
	var pendingInit, pendingSidecars, failedInit int
	var running, waiting, stopped, succeeded, unknown int
	for i := range spec.InitContainers {
		s := statusAt(initSt, i)
		if isSidecar(&spec.InitContainers[i]) {
			switch {
			case s == nil:
				pendingSidecars++
				unknown++
			case s.State.Running != nil:
				if s.Started == nil || !*s.Started {
					pendingSidecars++
				}
				running++
			case s.State.Terminated != nil:
			case s.LastTerminationState.Terminated == nil:
				pendingSidecars++
			}
			continue
		}
		switch {
		case s == nil, s.State.Running != nil:
			pendingInit++
		case s.State.Terminated != nil:
			if s.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case s.LastTerminationState.Terminated != nil:
			if s.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	for i := range spec.Containers {
		s := statusAt(st, i)
		switch {
		case s == nil:
			unknown++
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.LastTerminationState.Terminated != nil:
			// Waiting to restart: counted as stopped, like the kubelet.
			stopped++
		default:
			waiting++
		}
	}
	if failedInit > 0 && spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && stopped < len(spec.Containers)) || waiting > 0:
		if terminal {
			// Deleted before its containers ran: nothing will run any more.
			return corev1.PodFailed
		}
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		if spec.RestartPolicy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	default:
		return corev1.PodPending
	}
}

// computeStatus computes a pod's status like a kubelet would report it.
func computeStatus(in statusInput) corev1.PodStatus {
	spec := &in.Pod.Spec
	phase := podPhase(spec, in.InitStatuses, in.Statuses, in.Terminal)
	done := phase == corev1.PodSucceeded || phase == corev1.PodFailed

	st := corev1.PodStatus{
		ObservedGeneration:    in.Pod.Generation,
		Phase:                 phase,
		HostIP:                in.HostIP,
		PodIP:                 in.PodIP,
		StartTime:             in.StartTime,
		QOSClass:              in.Pod.Status.QOSClass,
		InitContainerStatuses: in.InitStatuses,
		ContainerStatuses:     in.Statuses,
	}
	if in.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: in.HostIP}}
	}
	if in.PodIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: in.PodIP}}
	}

	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, ObservedGeneration: in.Pod.Generation}
		if ok {
			c.Status = corev1.ConditionTrue
		} else {
			c.Reason, c.Message = reason, msg
		}
		return c
	}
	var conds []corev1.PodCondition
	conds = append(conds, cond(corev1.PodReadyToStartContainers, in.SandboxReady && !in.Terminal, "", ""))

	initOK, pending := initialized(spec, in.InitStatuses)
	initCond := cond(corev1.PodInitialized, initOK, "ContainersNotInitialized",
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pending, " ")))
	if phase == corev1.PodSucceeded && !initOK {
		initCond = cond(corev1.PodInitialized, true, "", "")
	}

	var unready []string
	for i, c := range spec.Containers {
		if i >= len(in.Statuses) || !in.Statuses[i].Ready {
			unready = append(unready, c.Name)
		}
	}
	ctrsReady := len(unready) == 0 && !done
	reason, msg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	if done {
		reason, msg = "PodCompleted", ""
	}
	ctrsCond := cond(corev1.ContainersReady, ctrsReady, reason, msg)
	readyCond := cond(corev1.PodReady, ctrsReady, reason, msg)
	if ctrsReady {
		if gateMsg := readinessGatesMessage(in.Pod); gateMsg != "" {
			readyCond = cond(corev1.PodReady, false, "ReadinessGatesNotReady", gateMsg)
		}
	}
	conds = append(conds, initCond, readyCond, ctrsCond)

	scheduled := cond(corev1.PodScheduled, true, "", "")
	for _, c := range in.Pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			scheduled = c
		}
	}
	conds = append(conds, scheduled)
	for _, c := range in.Pod.Status.Conditions {
		if !isOwned(c.Type) {
			conds = append(conds, c)
		}
	}

	// LastTransitionTime moves only when a condition's status changes.
	for i := range conds {
		c := &conds[i]
		if !isOwned(c.Type) || c.Type == corev1.PodScheduled && !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = in.Now
		if p := findCondition(in.Prev, c.Type); p != nil && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
			c.LastTransitionTime = p.LastTransitionTime
		} else if p := findCondition(in.Pod.Status.Conditions, c.Type); in.Prev == nil && p != nil && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
			c.LastTransitionTime = p.LastTransitionTime
		}
	}
	st.Conditions = conds
	return st
}

func isOwned(t corev1.PodConditionType) bool {
	for _, o := range ownedConditions {
		if o == t {
			return true
		}
	}
	return false
}

func findCondition(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// readinessGatesMessage returns why the pod's readiness gates keep it unready, or "".
func readinessGatesMessage(pod *corev1.Pod) string {
	for _, g := range pod.Spec.ReadinessGates {
		c := findCondition(pod.Status.Conditions, g.ConditionType)
		if c == nil {
			return fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType)
		}
		if c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, c.Status)
		}
	}
	return ""
}

// terminatedState builds a Terminated state for an exit code like a container runtime:
// reason Completed for 0, else Error.
func terminatedState(code int32, started, finished metav1.Time, msg string) *corev1.ContainerStateTerminated {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, StartedAt: started, FinishedAt: finished}
}
