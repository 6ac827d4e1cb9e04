package executorjob

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestRequestForNamesTheStepOnly(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	job := PromoteJob(c, "1a2b3c4d", "bao-1a2b-0", 2, "img", MemberAddresses(c))
	req, err := RequestFor(job, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(req.Operation).To(Equal("1a2b3c4d"))
	g.Expect(req.Step).To(Equal(StepPromote))
	g.Expect(req.Member).To(Equal("bao-1a2b-0"))
	g.Expect(req.MAC).To(BeEmpty(), "the operator signs it with the operation's key")
	g.Expect(req.Deadline).To(Equal(time.Duration(MembershipActiveDeadlineSeconds)*time.Second), "the Job's deadline")

	sd, err := RequestFor(StepDownJobFor(c, "1a2b3c4d", "bao-0", 1, "img", MemberAddresses(c)), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sd.Deadline).To(Equal(time.Duration(StepDownActiveDeadlineSeconds) * time.Second))

	_, err = RequestFor(StepDownJob(c, "bao-0", 1, "img"), now)
	g.Expect(err).To(MatchError(ContainSubstring("not a membership step of an operation")), "a Job without an operation has no executor to ask")
	g.Expect(Mailed(ServeJob(c, "1a2b3c4d", "img"))).To(BeFalse(), "the executor is not asked to start itself")
}

func TestMailboxPatchesRoundTrip(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	cm := &corev1.ConfigMap{Data: map[string]string{}}
	apply := func(patch []byte) {
		var p struct {
			Data map[string]*string `json:"data"`
		}
		g.Expect(json.Unmarshal(patch, &p)).To(Succeed())
		for k, v := range p.Data {
			if v == nil {
				delete(cm.Data, k)
			} else {
				cm.Data[k] = *v
			}
		}
	}
	old := Request{Operation: "old", Step: StepPromote, At: now}
	p, err := RequestPatch("bao-promote-old-0-1", old, nil)
	g.Expect(err).NotTo(HaveOccurred())
	apply(p)
	p, err = ResultPatch("bao-promote-old-0-1", Result{ExitCode: 0, Output: `{"benign":false}`, FinishedAt: now})
	g.Expect(err).NotTo(HaveOccurred())
	apply(p)

	m := ReadMailbox(cm)
	g.Expect(m.Pending("old")).To(BeEmpty())
	g.Expect(m.KeysNotOf("new")).To(Equal([]string{"request.bao-promote-old-0-1", "result.bao-promote-old-0-1"}))

	req := Request{Operation: "new", Step: StepDemote, Member: "bao-1", At: now, Deadline: time.Minute}
	p, err = RequestPatch("bao-demote-new-1-1", req, m.KeysNotOf("new"))
	g.Expect(err).NotTo(HaveOccurred())
	apply(p)
	m = ReadMailbox(cm)
	g.Expect(cm.Data).To(HaveLen(1), "a new operation's request drops the old operation's keys")
	g.Expect(m.Requests).To(HaveKeyWithValue("bao-demote-new-1-1", req))
	g.Expect(m.Pending("new")).To(Equal([]string{"bao-demote-new-1-1"}))
	g.Expect(m.Pending("old")).To(BeEmpty(), "an executor answers its own operation's requests only")

	cm.Data["request.broken"] = "{"
	g.Expect(ReadMailbox(cm).Foreign).To(ConsistOf(HaveField("Key", "request.broken")))
}

func TestMailboxJobs(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	req := func(age time.Duration) Request {
		return Request{Operation: "op", Step: StepPromote, At: now.Add(-age), Deadline: 150 * time.Second}
	}
	tests := []struct {
		name   string
		req    Request
		result *Result
		stuck  map[string]string
		want   operation.ObservedJob
	}{
		{name: "asked, not answered yet", req: req(time.Second),
			want: operation.ObservedJob{Job: operation.Job{Phase: operation.JobRunning}, Operation: "op"}},
		{name: "answered with success: the action's line is the termination message", req: req(time.Second),
			result: &Result{ExitCode: 0, Output: `{"voter":true}`, FinishedAt: now},
			want:   operation.ObservedJob{Job: operation.Job{Phase: operation.JobSucceeded, FinishedAt: now}, Operation: "op", Termination: `{"voter":true}`}},
		{name: "answered with a failure: the message says who and why", req: req(time.Second),
			result: &Result{ExitCode: 1, Message: "permission denied", Executor: "bao-executor-op-x", FinishedAt: now},
			want: operation.ObservedJob{Job: operation.Job{Phase: operation.JobFailed, FinishedAt: now,
				Message: "the executor bao-executor-op-x answered s with exit code 1: permission denied"}, Operation: "op"}},
		{name: "the executor cannot start: the step is stuck like a Job whose pod cannot start", req: req(time.Minute),
			stuck: map[string]string{"op": "executor pod x cannot start its container executor: ImagePullBackOff"},
			want: operation.ObservedJob{Job: operation.Job{Phase: operation.JobRunning}, Operation: "op",
				Stuck: "executor pod x cannot start its container executor: ImagePullBackOff"}},
		{name: "no answer within the deadline: failed, as the Job's deadline would", req: req(151 * time.Second),
			want: operation.ObservedJob{Job: operation.Job{Phase: operation.JobFailed, FinishedAt: now.Add(-time.Second),
				Message: "the executor of operation op did not answer s within 2m30s"}, Operation: "op"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := Mailbox{Requests: map[string]Request{"s": tc.req}, Results: map[string]Result{}}
			if tc.result != nil {
				m.Results["s"] = *tc.result
			}
			got := MailboxJobs(m, tc.stuck, now)
			NewWithT(t).Expect(got).To(Equal(map[string]operation.ObservedJob{"s": tc.want}))
			if tc.want.Phase != operation.JobRunning || tc.want.Stuck != "" {
				return
			}
			s := &operation.Snapshot{Cluster: &operation.Cluster{Now: now}, Jobs: got}
			NewWithT(t).Expect(s.JobOf("s", "other").Phase).To(Equal(operation.JobFailed), "another operation's step is never this one's")
		})
	}
}

func TestServeJob(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	job := ServeJob(c, "1a2b3c4d", "img")
	g.Expect(job.Name).To(Equal("bao-executor-1a2b3c4d"))
	g.Expect(job.Labels).To(HaveKeyWithValue(LabelOperation, "1a2b3c4d"))
	g.Expect(job.Spec.Template.Spec.Containers[0].Args).To(Equal([]string{"executor", "serve", "--namespace", c.Namespace, "--cluster", "bao",
		"--mailbox", "bao-executor", "--operation", "1a2b3c4d", "--key-file", KeyFile}), "everything it connects with is its own; a request names a step only")
	g.Expect(job.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.Secret.Items", Equal([]corev1.KeyToPath{{Key: "1a2b3c4d", Path: "key"}}))),
		"it mounts its own operation's key, no other")
	g.Expect(job.Spec.ActiveDeadlineSeconds).To(BeNil(), "an operation may wait days for a promotion; the executor exits when idle")
	g.Expect(job.Spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyOnFailure), "its steps are idempotent: a crash answers again")
	g.Expect(*job.Spec.Template.Spec.AutomountServiceAccountToken).To(BeTrue(), "it reads and answers the mailbox through the API")
	g.Expect(job.Spec.Template.Spec.ServiceAccountName).To(Equal("bao-executor"))
}
