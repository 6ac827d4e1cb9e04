package openbaocluster_test

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// stepMailbox lets a world see the steps the operator asks of its operation's
// executor through the mailbox as the step Jobs it knows: each new request is the Job
// it stands for (name and labels), and the world answers it as it would complete the
// Job (finishStep).
type stepMailbox struct {
	seen map[string]bool
}

// asked returns the requests written since the last call, in name order, as their
// Jobs. obj is what the operator patched; anything but the cluster's mailbox asks
// nothing.
func (m *stepMailbox) asked(ctx context.Context, c client.Client, cluster *baov1.OpenBaoCluster, obj client.Object) []*batchv1.Job {
	if _, ok := obj.(*corev1.ConfigMap); !ok || obj.GetName() != workload.NamesFor(cluster).ExecutorMailbox() {
		return nil
	}
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	cm := &corev1.ConfigMap{}
	Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), cm)).To(Succeed())
	box := executorjob.ReadMailbox(cm)
	Expect(box.Foreign).To(BeEmpty())
	var out []*batchv1.Job
	for _, name := range sortedKeys(box.Requests) {
		if m.seen[name] {
			continue
		}
		m.seen[name] = true
		r := box.Requests[name]
		out = append(out, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: map[string]string{
			executorjob.LabelStep: r.Step, executorjob.LabelMember: r.Member, executorjob.LabelOperation: r.Operation}}})
	}
	return out
}

// patches is a world's Patch interceptor: the patch goes through, and each request
// it added to the mailbox is passed to asked as the step Job it stands for.
func (m *stepMailbox) patches(cluster *baov1.OpenBaoCluster, asked func(*batchv1.Job)) func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
	return func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		err := c.Patch(ctx, obj, patch, opts...)
		if err == nil {
			for _, job := range m.asked(ctx, c, cluster, obj) {
				asked(job)
			}
		}
		return err
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// isServingExecutor reports whether obj is an operation's serving executor Job,
// which the worlds start nothing for: they answer the mailbox themselves.
func isServingExecutor(obj client.Object) bool {
	job, ok := obj.(*batchv1.Job)
	return ok && job.Labels[executorjob.LabelStep] == executorjob.StepServe
}

// finishStep ends the step named name at now, succeeded when failure is empty: it
// completes the step's Job when there is one (the world runs with step Jobs), and
// answers its request in the mailbox otherwise.
func finishStep(ctx context.Context, k client.Client, cluster *baov1.OpenBaoCluster, name string, now time.Time, failure string) {
	job := &batchv1.Job{}
	err := k.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: name}, job)
	if err == nil {
		t := metav1.NewTime(now)
		job.Status.StartTime = &t
		if failure == "" {
			job.Status.CompletionTime, job.Status.Succeeded = &t, 1
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: t, LastTransitionTime: t},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: t, LastTransitionTime: t},
			}
		} else {
			job.Status.Failed = 1
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: failure, LastProbeTime: t, LastTransitionTime: t},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: failure, LastProbeTime: t, LastTransitionTime: t},
			}
		}
		Expect(k.Status().Update(ctx, job)).To(Succeed())
		return
	}
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading the step Job %s: %v", name, err)
	// Answered as the operation's executor would: under its key, from a pod of its Job.
	cm := &corev1.ConfigMap{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: workload.NamesFor(cluster).ExecutorMailbox()}, cm)).To(Succeed())
	req, ok := executorjob.ReadMailbox(cm).Requests[name]
	Expect(ok).To(BeTrue(), "no request %s in the mailbox", name)
	keys := &corev1.Secret{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: workload.NamesFor(cluster).ExecutorKeys()}, keys)).To(Succeed())
	res := executorjob.Result{Operation: req.Operation, Executor: executorjob.ServeJobName(cluster, req.Operation) + "-world", StartedAt: now, FinishedAt: now}
	if failure != "" {
		res.ExitCode, res.Message = 1, failure
	}
	patch, err := executorjob.ResultPatch(name, res.Signed(keys.Data[req.Operation], name))
	Expect(err).NotTo(HaveOccurred())
	mailbox := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: workload.NamesFor(cluster).ExecutorMailbox()}}
	Expect(k.Patch(ctx, mailbox, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}
