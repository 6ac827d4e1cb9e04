//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// executorStep is one membership step the operator had an executor carry out: a
// request in the cluster's executor mailbox (answered by the operation's serving
// executor), or an executor Job of its own (step Jobs, snapshots).
type executorStep struct {
	name, member, operation string
	at                      time.Time
	// answered says the step finished; failed that it did not succeed.
	answered, failed bool
}

// executorSteps lists the steps of kind step (an executorjob.Step* label value) in
// the cluster's namespace, sorted by name: the mailbox's requests (the mailbox holds
// the last operation's, and the one before it until the next asks for its first
// step) and the executor Jobs of that kind.
func (tc *testCluster) executorSteps(ctx context.Context, step string) []executorStep {
	GinkgoHelper()
	var out []executorStep
	jobs := &batchv1.JobList{}
	Expect(k8s.List(ctx, jobs, client.InNamespace(tc.ns), client.MatchingLabels{executorjob.LabelStep: step})).To(Succeed())
	for _, j := range jobs.Items {
		out = append(out, executorStep{name: j.Name, member: j.Labels[executorjob.LabelMember], operation: j.Labels[executorjob.LabelOperation],
			at: j.CreationTimestamp.Time, answered: j.Status.Succeeded+j.Status.Failed > 0, failed: j.Status.Failed > 0})
	}
	cm := &corev1.ConfigMap{}
	err := k8s.Get(ctx, types.NamespacedName{Namespace: tc.ns, Name: workload.NamesFor(tc.get(ctx, Default)).ExecutorMailbox()}, cm)
	if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
		m := executorjob.ReadMailbox(cm)
		Expect(m.Foreign).To(BeEmpty(), "every mailbox entry decodes")
		for name, r := range m.Requests {
			if r.Step != step {
				continue
			}
			res, answered := m.Results[name]
			out = append(out, executorStep{name: name, member: r.Member, operation: r.Operation, at: r.At,
				answered: answered, failed: answered && res.ExitCode != 0})
		}
	}
	slices.SortFunc(out, func(a, b executorStep) int { return strings.Compare(a.name, b.name) })
	return out
}

// stepNames are the names of steps.
func stepNames(steps []executorStep) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.name)
	}
	return out
}
