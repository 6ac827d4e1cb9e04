package adminops

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestObserveJob(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao", UID: "u1"}, Spec: baov1.OpenBaoClusterSpec{Version: "2.5.0"}}
	up := &baov1.UpgradeStatus{ID: "0a1b2c3d", CurrentStep: &baov1.UpgradeStep{Pod: "bao-1", Attempts: 1}}
	mine := executorjob.StepDownJobFor(c, up.ID, "bao-1", 1, "baokeeper:dev", executorjob.MemberAddresses(c))
	succeeded := func(j *batchv1.Job) *batchv1.Job {
		j = j.DeepCopy()
		done := metav1.NewTime(now.Add(-time.Minute))
		j.Status.CompletionTime = &done
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: done}}
		return j
	}
	foreign := succeeded(mine)
	foreign.Labels[executorjob.LabelOperation] = "ffffffff"
	pod := func(reason string, age time.Duration) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: mine.Name + "-x", CreationTimestamp: metav1.NewTime(now.Add(-age)),
				Labels: map[string]string{batchv1.JobNameLabel: mine.Name}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: executorjob.ExecutorContainerName,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "pull access denied"}}}}},
		}
	}
	cases := []struct {
		name, reason string
		objs         []client.Object
		want         operation.JobPhase
		wantMsg      string
		wantDeleted  bool
	}{
		{name: "none", reason: "no Job yet", want: operation.JobNone},
		{name: "ours succeeded", reason: "the Job of this upgrade and attempt counts", objs: []client.Object{succeeded(mine)}, want: operation.JobSucceeded},
		{name: "another upgrade's Job under the name", reason: "bug: a Job left by an earlier upgrade was taken for this one's step-down; it never counts",
			objs: []client.Object{foreign}, want: operation.JobFailed, wantMsg: "belongs to another operation"},
		{name: "running, pod starting", reason: "a pod that waits for its image within the grace period is left alone",
			objs: []client.Object{mine.DeepCopy(), pod("ImagePullBackOff", 10*time.Second)}, want: operation.JobRunning},
		{name: "running, image cannot be pulled", reason: "bug: an executor image that cannot run held each attempt until the Job's deadline",
			objs: []client.Object{mine.DeepCopy(), pod("ImagePullBackOff", 2*time.Minute)}, want: operation.JobFailed,
			wantMsg: "cannot start its container executor: ImagePullBackOff (pull access denied); check spec.upgrade.executor.image", wantDeleted: true},
		{name: "running, Secret missing", reason: "bug: a credentials Secret deleted after the precheck surfaced after 30 minutes",
			objs: []client.Object{mine.DeepCopy(), pod("CreateContainerConfigError", 2*time.Minute)}, want: operation.JobFailed,
			wantMsg: "CreateContainerConfigError", wantDeleted: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			// What observe reads: the Jobs of the cluster, and the pods of each.
			snap := &operation.Snapshot{Cluster: &operation.Cluster{Now: now}, Object: c, Jobs: map[string]operation.ObservedJob{}}
			var job *batchv1.Job
			var pods []*corev1.Pod
			for _, o := range tc.objs {
				switch o := o.(type) {
				case *batchv1.Job:
					job = o
				case *corev1.Pod:
					pods = append(pods, o)
				}
			}
			if job != nil {
				snap.Jobs[job.Name] = observeJob(job, pods, now)
			}
			got := snap.JobOf(mine.Name, up.ID)
			g.Expect(got.Phase).To(Equal(tc.want), tc.reason)
			g.Expect(got.Message).To(ContainSubstring(tc.wantMsg), tc.reason)

			// After the pass, the executor deletes a Job whose pod cannot start.
			sch := runtime.NewScheme()
			g.Expect(clientgoscheme.AddToScheme(sch)).To(Succeed())
			cl := fake.NewClientBuilder().WithScheme(sch).WithObjects(tc.objs...).Build()
			r := &Reconciler{Client: cl}
			g.Expect(r.deleteStuckJobs(context.Background(), c, snap)).To(Succeed())
			err := cl.Get(context.Background(), client.ObjectKeyFromObject(mine), &batchv1.Job{})
			g.Expect(apierrors.IsNotFound(err)).To(Equal(tc.wantDeleted || len(tc.objs) == 0), tc.reason)
		})
	}
}

func TestStepDownJobNamesCarryTheUpgrade(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao", UID: "u1"}}
	t1 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	a := operation.ID(c, "upgrade-to-2.5.1", t1)
	b := operation.ID(c, "upgrade-to-2.5.1", t1.Add(10*time.Minute))
	job := func(id string) *batchv1.Job {
		return executorjob.StepDownJobFor(c, id, "bao-1", 1, "img", executorjob.MemberAddresses(c))
	}
	g.Expect(job(a).Name).NotTo(Equal(job(b).Name), "two upgrades never share a Job name")
	g.Expect(job(a).Name).NotTo(Equal("bao-stepdown-1-1"), "the name of the old scheme is never reused")
	g.Expect(executorjob.JobOfOperation(job(a), a)).To(BeTrue())
	g.Expect(executorjob.JobOfOperation(job(a), b)).To(BeFalse())
	g.Expect(operation.ID(c, "upgrade-to-2.5.1", t1)).To(Equal(a), "the ID is a pure function of what status keeps")
}

func TestPodProblem(t *testing.T) {
	cases := []struct {
		name, reason string
		status       corev1.PodStatus
		want         string
	}{
		{name: "running", reason: "a pod that runs says nothing", want: ""},
		{name: "unschedulable", reason: "a placement no node satisfies: the scheduler's words",
			status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}},
			want: "Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."},
		{name: "image pull", reason: "a target image that does not exist",
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "openbao",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"openbao/openbao:2.5.2\""}}}}},
			want: "ImagePullBackOff (container openbao): Back-off pulling image \"openbao/openbao:2.5.2\""},
		{name: "crash loop", reason: "bad-inputs row 73: a memory limit OpenBao is killed at",
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "openbao",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container=openbao"}}}}},
			want: "CrashLoopBackOff (container openbao): back-off 20s restarting failed container=openbao"},
		{name: "creating", reason: "a container being created is not a problem",
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "openbao",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}},
			want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := podProblem(&corev1.Pod{Status: tc.status}); got != tc.want {
				t.Errorf("podProblem() = %q, want %q: %s", got, tc.want, tc.reason)
			}
		})
	}
}

func TestNeverStarted(t *testing.T) {
	pull := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}
	cases := []struct {
		name, reason string
		status       corev1.PodStatus
		want         bool
	}{
		{name: "image never pulled", reason: "the container never ran: its data was never opened by the new image",
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "openbao", State: pull}}}, want: true},
		{name: "never scheduled", reason: "a pod that no node took never ran",
			status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}}, want: true},
		{name: "pull failing after it ran", reason: "a container that terminated before did run: not provably untouched",
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "openbao", State: pull,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}}, want: false},
		{name: "crash loop", reason: "it ran and crashed: it may have opened its data",
			status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "openbao", RestartCount: 3,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}, want: false},
		{name: "running", reason: "it runs", status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "openbao",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := neverStarted(&corev1.Pod{Status: tc.status}); got != tc.want {
				t.Errorf("neverStarted() = %t, want %t: %s", got, tc.want, tc.reason)
			}
		})
	}
}

func TestTakeDownBy(t *testing.T) {
	cases := []struct {
		name, reason string
		ready        bool
		replicas     int32
		processed    bool
		want         takeDown
	}{
		{"ready member", "the budget arbitrates with drains: two members never go down at once", true, 3, true, takeDownEvict},
		{"not ready", "an unavailable member costs the budget nothing, and an unhealthy pod's eviction may be refused", false, 3, true, takeDownDelete},
		{"single member", "the budget never allows evicting the only member", true, 1, true, takeDownDelete},
		{"no disruption controller", "an unprocessed budget refuses every eviction (envtest runs no controller manager)", true, 3, false, takeDownDelete},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(takeDownBy(tc.ready, tc.replicas, tc.processed)).To(Equal(tc.want), tc.reason)
		})
	}
}
