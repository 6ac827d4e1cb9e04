package nodeagent

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

type podOpt func(*corev1.Pod)

func testPod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "bao-0", UID: "uid-1", Generation: 3},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers:    []corev1.Container{{Name: "bao", Image: "openbao/openbao:2.4.0"}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withPolicy(rp corev1.RestartPolicy) podOpt {
	return func(p *corev1.Pod) { p.Spec.RestartPolicy = rp }
}
func withContainers(names ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
	}
}
func withInit(names ...string) podOpt {
	return func(p *corev1.Pod) {
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n})
		}
	}
}
func withConditions(c ...corev1.PodCondition) podOpt {
	return func(p *corev1.Pod) { p.Status.Conditions = c }
}

var t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func running(ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Ready: ready, Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}}
}
func waiting(reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}
func exited(code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: terminatedState(code, t0, t0, "")}}
}
func backingOff(lastCode int32) corev1.ContainerStatus {
	s := waiting("CrashLoopBackOff")
	s.LastTerminationState = corev1.ContainerState{Terminated: terminatedState(lastCode, t0, t0, "")}
	return s
}
func st(s ...corev1.ContainerStatus) []corev1.ContainerStatus { return s }

func TestPodPhase(t *testing.T) {
	cases := []struct {
		name, reason string
		pod          *corev1.Pod
		init, main   []corev1.ContainerStatus
		terminal     bool
		want         corev1.PodPhase
	}{
		{name: "creating", reason: "a container not started yet keeps the pod Pending",
			pod: testPod(), main: st(waiting("ContainerCreating")), want: corev1.PodPending},
		{name: "running", reason: "a running container makes the pod Running",
			pod: testPod(), main: st(running(false)), want: corev1.PodRunning},
		{name: "partly started", reason: "one container still waiting keeps the pod Pending",
			pod: testPod(withContainers("a", "b")), main: st(running(true), waiting("ContainerCreating")), want: corev1.PodPending},
		{name: "crash loop", reason: "Always: a container in back-off keeps the pod Running",
			pod: testPod(), main: st(backingOff(1)), want: corev1.PodRunning},
		{name: "never success", reason: "Never: all exited 0 is Succeeded",
			pod: testPod(withPolicy(corev1.RestartPolicyNever), withContainers("a", "b")), main: st(exited(0), exited(0)), want: corev1.PodSucceeded},
		{name: "never failure", reason: "Never: any non-zero exit is Failed",
			pod: testPod(withPolicy(corev1.RestartPolicyNever), withContainers("a", "b")), main: st(exited(0), exited(3)), want: corev1.PodFailed},
		{name: "never one running", reason: "Never: while one still runs the pod is Running",
			pod: testPod(withPolicy(corev1.RestartPolicyNever), withContainers("a", "b")), main: st(exited(1), running(false)), want: corev1.PodRunning},
		{name: "onfailure success", reason: "OnFailure: all exited 0 is Succeeded",
			pod: testPod(withPolicy(corev1.RestartPolicyOnFailure)), main: st(exited(0)), want: corev1.PodSucceeded},
		{name: "onfailure restarting", reason: "OnFailure: a failed container restarts, the pod stays Running",
			pod: testPod(withPolicy(corev1.RestartPolicyOnFailure)), main: st(backingOff(2)), want: corev1.PodRunning},
		{name: "init pending", reason: "main containers wait for init containers: Pending",
			pod: testPod(withInit("setup")), init: st(running(false)), main: st(waiting("PodInitializing")), want: corev1.PodPending},
		{name: "init failed never", reason: "Never: a failed init container fails the pod",
			pod: testPod(withPolicy(corev1.RestartPolicyNever), withInit("setup")), init: st(exited(1)), main: st(waiting("PodInitializing")), want: corev1.PodFailed},
		{name: "init failed always", reason: "Always: a failed init container is retried, Pending",
			pod: testPod(withInit("setup")), init: st(backingOff(1)), main: st(waiting("PodInitializing")), want: corev1.PodPending},
		{name: "init done", reason: "after init the main containers decide",
			pod: testPod(withInit("setup")), init: st(exited(0)), main: st(running(true)), want: corev1.PodRunning},
		{name: "deleted clean", reason: "a deleted pod whose containers exited 0 is Succeeded",
			pod: testPod(), main: st(exited(0)), terminal: true, want: corev1.PodSucceeded},
		{name: "deleted killed", reason: "a deleted pod with a killed container is Failed even with Always",
			pod: testPod(), main: st(exited(143)), terminal: true, want: corev1.PodFailed},
		{name: "deleted before start", reason: "a deleted pod that never started is Failed",
			pod: testPod(), main: st(waiting("ContainerCreating")), terminal: true, want: corev1.PodFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(podPhase(&tc.pod.Spec, tc.init, tc.main, tc.terminal)).To(Equal(tc.want), tc.reason)
		})
	}
}

func condStatus(s corev1.PodStatus, typ corev1.PodConditionType) corev1.ConditionStatus {
	if c := findCondition(s.Conditions, typ); c != nil {
		return c.Status
	}
	return ""
}

func TestComputeStatus(t *testing.T) {
	t1 := metav1.NewTime(t0.Add(time.Minute))
	cases := []struct {
		name, reason string
		in           statusInput
		check        func(g Gomega, s corev1.PodStatus)
	}{
		{
			name: "ready pod", reason: "a running ready container makes ContainersReady and Ready true with IPs set",
			in: statusInput{Pod: testPod(), PodIP: "10.250.0.10", HostIP: "10.250.0.1", SandboxReady: true, Statuses: st(running(true)), Now: t1},
			check: func(g Gomega, s corev1.PodStatus) {
				g.Expect(s.Phase).To(Equal(corev1.PodRunning))
				g.Expect(condStatus(s, corev1.PodReady)).To(Equal(corev1.ConditionTrue))
				g.Expect(condStatus(s, corev1.ContainersReady)).To(Equal(corev1.ConditionTrue))
				g.Expect(condStatus(s, corev1.PodInitialized)).To(Equal(corev1.ConditionTrue))
				g.Expect(condStatus(s, corev1.PodScheduled)).To(Equal(corev1.ConditionTrue))
				g.Expect(condStatus(s, corev1.PodReadyToStartContainers)).To(Equal(corev1.ConditionTrue))
				g.Expect(s.PodIPs).To(Equal([]corev1.PodIP{{IP: "10.250.0.10"}}))
				g.Expect(s.HostIPs).To(Equal([]corev1.HostIP{{IP: "10.250.0.1"}}))
				g.Expect(s.ObservedGeneration).To(Equal(int64(3)))
			},
		},
		{
			name: "not ready", reason: "an unready container names itself in the Ready condition",
			in: statusInput{Pod: testPod(withContainers("a", "b")), SandboxReady: true, Statuses: st(running(true), running(false)), Now: t1},
			check: func(g Gomega, s corev1.PodStatus) {
				c := findCondition(s.Conditions, corev1.PodReady)
				g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
				g.Expect(c.Reason).To(Equal("ContainersNotReady"))
				g.Expect(c.Message).To(Equal("containers with unready status: [b]"))
			},
		},
		{
			name: "transition time kept", reason: "LastTransitionTime stays while the status does not change",
			in: statusInput{Pod: testPod(), SandboxReady: true, Statuses: st(running(true)), Now: t1,
				Prev: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t0}}},
			check: func(g Gomega, s corev1.PodStatus) {
				g.Expect(findCondition(s.Conditions, corev1.PodReady).LastTransitionTime).To(Equal(t0))
				g.Expect(findCondition(s.Conditions, corev1.ContainersReady).LastTransitionTime).To(Equal(t1), "no previous value: now")
			},
		},
		{
			name: "transition time moves", reason: "LastTransitionTime moves when the status flips",
			in: statusInput{Pod: testPod(), SandboxReady: true, Statuses: st(running(false)), Now: t1,
				Prev: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t0}}},
			check: func(g Gomega, s corev1.PodStatus) {
				g.Expect(findCondition(s.Conditions, corev1.PodReady).LastTransitionTime).To(Equal(t1))
			},
		},
		{
			name: "foreign conditions kept", reason: "conditions of other writers and the scheduler's PodScheduled survive",
			in: statusInput{Pod: testPod(withConditions(
				corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0},
				corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"},
			)), SandboxReady: true, Statuses: st(running(true)), Now: t1},
			check: func(g Gomega, s corev1.PodStatus) {
				g.Expect(findCondition(s.Conditions, corev1.PodScheduled).LastTransitionTime).To(Equal(t0))
				g.Expect(condStatus(s, corev1.DisruptionTarget)).To(Equal(corev1.ConditionTrue))
			},
		},
		{
			name: "readiness gate", reason: "a readiness gate that is not True keeps the pod unready",
			in: statusInput{Pod: testPod(func(p *corev1.Pod) {
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}}
				p.Status.Conditions = []corev1.PodCondition{{Type: "example.com/gate", Status: corev1.ConditionFalse}}
			}), SandboxReady: true, Statuses: st(running(true)), Now: t1},
			check: func(g Gomega, s corev1.PodStatus) {
				g.Expect(condStatus(s, corev1.ContainersReady)).To(Equal(corev1.ConditionTrue))
				c := findCondition(s.Conditions, corev1.PodReady)
				g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
				g.Expect(c.Reason).To(Equal("ReadinessGatesNotReady"))
			},
		},
		{
			name: "initializing", reason: "Initialized is false and names the pending init container",
			in: statusInput{Pod: testPod(withInit("setup")), SandboxReady: true, InitStatuses: st(running(false)), Statuses: st(waiting("PodInitializing")), Now: t1},
			check: func(g Gomega, s corev1.PodStatus) {
				c := findCondition(s.Conditions, corev1.PodInitialized)
				g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
				g.Expect(c.Message).To(Equal("containers with incomplete status: [setup]"))
				g.Expect(s.Phase).To(Equal(corev1.PodPending))
			},
		},
		{
			name: "completed", reason: "a completed pod is not ready, with reason PodCompleted",
			in: statusInput{Pod: testPod(withPolicy(corev1.RestartPolicyNever)), SandboxReady: true, Statuses: st(exited(0)), Now: t1},
			check: func(g Gomega, s corev1.PodStatus) {
				g.Expect(s.Phase).To(Equal(corev1.PodSucceeded))
				g.Expect(findCondition(s.Conditions, corev1.PodReady).Reason).To(Equal("PodCompleted"))
			},
		},
		{
			name: "terminal", reason: "after deletion the sandbox is gone",
			in: statusInput{Pod: testPod(), SandboxReady: true, Statuses: st(exited(0)), Terminal: true, Now: t1},
			check: func(g Gomega, s corev1.PodStatus) {
				g.Expect(s.Phase).To(Equal(corev1.PodSucceeded))
				g.Expect(condStatus(s, corev1.PodReadyToStartContainers)).To(Equal(corev1.ConditionFalse))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Log("reason:", tc.reason)
				}
			})
			tc.check(NewWithT(t), computeStatus(tc.in))
		})
	}
}

func TestFinalizeStatus(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Hour))
	cases := []struct {
		name, reason string
		in           corev1.ContainerStatus
		wantCode     int32
		wantReason   string
	}{
		{"terminated stays", "a terminated container keeps its exit", exited(3), 3, "Error"},
		{"back-off", "a container in back-off reports its last exit", backingOff(1), 1, "Error"},
		{"never started", "a container that never ran is ContainerStatusUnknown, like the kubelet", waiting("ContainerCreating"), 137, "ContainerStatusUnknown"},
		{"running", "a running container counts as killed", running(true), 137, "Error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := *tc.in.DeepCopy()
			finalizeStatus(&s, now)
			g.Expect(s.State.Terminated).NotTo(BeNil(), tc.reason)
			g.Expect(s.State.Terminated.ExitCode).To(Equal(tc.wantCode), tc.reason)
			g.Expect(s.State.Terminated.Reason).To(Equal(tc.wantReason), tc.reason)
			g.Expect(s.Ready).To(BeFalse(), tc.reason)
		})
	}
}
