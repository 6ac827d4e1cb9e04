package executorjob

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// The executor mailbox: one executor per operation, asked for each membership step.
//
// A membership step (step-down, promote, demote, remove-peer) used to be one
// executor Job: pod scheduling, process start, login and the Job's completion round
// trip cost 1-3 s on top of a Raft change that takes milliseconds. Now the operator
// runs one executor per operation (ServeJob, "baokeeper executor serve") and asks it
// for each step through the cluster's mailbox ConfigMap (workload.ExecutorMailbox):
// the request of a step goes under RequestKey(name), its answer under
// ResultKey(name), name being the name the step's Job would have had (JobName, with
// the operation, member and attempt). The step's Job is still built (PromoteJob,
// ...) and the request is made from it (RequestFor), so what the executor runs is
// exactly what the Job would have run, and an operation reads the step's outcome
// through operation.Snapshot.JobOf as before (MailboxJobs).
//
// The rules of the Jobs hold: a request is written only after the step's intent is
// in status; a request is answered at most once per executor process, and the
// actions are idempotent, so an executor that restarts and answers again does no
// harm; an executor answers only the requests of its own operation; a request not
// answered within its step's deadline (the Job's activeDeadlineSeconds) reads as
// failed, and the next attempt has a name of its own.

// Mailbox keys.
const (
	// RequestKeyPrefix starts the key of a request: "request.<name>".
	RequestKeyPrefix = "request."
	// ResultKeyPrefix starts the key of an answer: "result.<name>".
	ResultKeyPrefix = "result."
	// StepServe is the LabelStep value of an operation's executor Job.
	StepServe = "serve"
	// ActionServe is the executor action that serves the mailbox.
	ActionServe = "serve"
	// ServeIdleExit is how long a serving executor waits without a request before
	// it exits (its Job completes); the operator starts it again for the next one.
	// A paused upgrade does not keep a pod for days.
	ServeIdleExit = 10 * time.Minute
	// serveBackoffLimit bounds the restarts of a serving executor that fails.
	serveBackoffLimit int32 = 6
)

// RequestKey is the mailbox key of the request of the step named name.
func RequestKey(name string) string { return RequestKeyPrefix + name }

// ResultKey is the mailbox key of the answer to the step named name.
func ResultKey(name string) string { return ResultKeyPrefix + name }

// Request asks an operation's executor for one step. It names the step and nothing
// else: what the step runs (addresses, files, timeout) the executor takes from its
// Job and the cluster's status (StepArgs), and it runs only the step the status
// persists (Authorize).
type Request struct {
	// Operation is the ID of the operation the step belongs to; only that
	// operation's executor answers.
	Operation string `json:"operation"`
	// Step and Member are the step's LabelStep and LabelMember values.
	Step   string `json:"step"`
	Member string `json:"member,omitempty"`
	// At is when the request was written; Deadline how long it may stay unanswered.
	At       time.Time     `json:"at"`
	Deadline time.Duration `json:"deadline"`
	// MAC signs the request under its operation's key (Signed).
	MAC string `json:"mac,omitempty"`
}

// Result is an executor's answer to one request.
type Result struct {
	// Operation is the operation of the request answered.
	Operation string `json:"operation,omitempty"`
	// ExitCode is what "baokeeper executor <action>" returned: 0 for success
	// (also when the goal already held), 1 when retrying cannot help, 2 when a
	// retryable failure outlasted the step's timeout.
	ExitCode int `json:"exitCode"`
	// Output is the action's JSON line on success.
	Output string `json:"output,omitempty"`
	// Message is the end of what the action logged, on failure.
	Message string `json:"message,omitempty"`
	// Executor is the pod that answered.
	Executor   string    `json:"executor,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// MAC signs the answer under its operation's key (Signed).
	MAC string `json:"mac,omitempty"`
}

// Mailed reports whether the executor Job job is a membership step that goes through
// the mailbox: a step-down, promotion, demotion or peer removal of an operation. A
// snapshot or a target check keeps its Job (it needs credentials of its own).
func Mailed(job *batchv1.Job) bool {
	return job != nil && job.Labels[LabelOperation] != "" && MailedStep(job.Labels[LabelStep]) && len(job.Spec.Template.Spec.Containers) == 1
}

// MailedStep reports whether steps of kind step (a LabelStep value) go through the
// mailbox.
func MailedStep(step string) bool {
	switch step {
	case StepStepDown, StepPromote, StepDemote, StepRemovePeer:
		return true
	}
	return false
}

// RequestFor is the request that asks the executor for what job would have done,
// written at now: the step's name, operation, step and member, and the Job's deadline.
func RequestFor(job *batchv1.Job, now time.Time) (Request, error) {
	if !Mailed(job) {
		return Request{}, fmt.Errorf("the executor Job %s is not a membership step of an operation: this is a bug, please report it", job.Name)
	}
	deadline := time.Duration(MembershipActiveDeadlineSeconds) * time.Second
	if d := job.Spec.ActiveDeadlineSeconds; d != nil {
		deadline = time.Duration(*d) * time.Second
	}
	return Request{
		Operation: job.Labels[LabelOperation], Step: job.Labels[LabelStep], Member: job.Labels[LabelMember],
		At: now.UTC(), Deadline: deadline,
	}, nil
}

// RequestPatch is the JSON merge patch of the mailbox that adds the request of the
// step named name and drops the keys in drop (requests and answers of other
// operations).
func RequestPatch(name string, req Request, drop []string) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the request %s: %w", name, err)
	}
	data := map[string]any{RequestKey(name): string(b)}
	for _, k := range drop {
		data[k] = nil
	}
	return json.Marshal(map[string]any{"data": data})
}

// ResultPatch is the JSON merge patch of the mailbox that adds the answer to the
// step named name.
func ResultPatch(name string, res Result) ([]byte, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the answer to %s: %w", name, err)
	}
	return json.Marshal(map[string]any{"data": map[string]any{ResultKey(name): string(b)}})
}

// Mailbox is what a mailbox holds: the requests and answers by step name.
type Mailbox struct {
	Requests map[string]Request
	Results  map[string]Result
	// Foreign are the keys that are no request or answer baokeeper could have
	// written: another prefix, a name that is no step name, a value that does not
	// decode.
	Foreign []Refusal
}

// ReadMailbox decodes a mailbox ConfigMap; nil reads as empty. It trusts nothing it
// decodes: see Trusted.
func ReadMailbox(cm *corev1.ConfigMap) Mailbox {
	m := Mailbox{Requests: map[string]Request{}, Results: map[string]Result{}}
	if cm == nil {
		return m
	}
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		v := cm.Data[k]
		var name string
		var into any
		switch {
		case strings.HasPrefix(k, RequestKeyPrefix):
			name, into = strings.TrimPrefix(k, RequestKeyPrefix), &Request{}
		case strings.HasPrefix(k, ResultKeyPrefix):
			name, into = strings.TrimPrefix(k, ResultKeyPrefix), &Result{}
		default:
			m.Foreign = append(m.Foreign, Refusal{k, fmt.Sprintf("a mailbox holds %s<step> and %s<step> keys only", RequestKeyPrefix, ResultKeyPrefix)})
			continue
		}
		if why := validName(name); why != "" {
			m.Foreign = append(m.Foreign, Refusal{k, why})
			continue
		}
		if len(v) > maxEntryBytes {
			m.Foreign = append(m.Foreign, Refusal{k, fmt.Sprintf("its value has %d bytes, more than any entry of baokeeper (%d)", len(v), maxEntryBytes)})
			continue
		}
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			m.Foreign = append(m.Foreign, Refusal{k, fmt.Sprintf("its value does not decode: %v", err)})
			continue
		}
		switch e := into.(type) {
		case *Request:
			m.Requests[name] = *e
		case *Result:
			m.Results[name] = *e
		}
	}
	return m
}

// maxEntryBytes bounds one mailbox value: an answer carries one JSON line and at most
// a KiB of log.
const maxEntryBytes = 8 << 10

// Pending lists, sorted, the names of the requests of operation opID that have no
// answer yet.
func (m Mailbox) Pending(opID string) []string {
	var out []string
	for name, r := range m.Requests {
		if _, answered := m.Results[name]; !answered && r.Operation == opID {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// KeysNotOf lists, sorted, the mailbox keys of every operation but opID: what a new
// request of opID drops, so that the mailbox holds one operation's steps.
func (m Mailbox) KeysNotOf(opID string) []string {
	var out []string
	for name, r := range m.Requests {
		if r.Operation != opID {
			out = append(out, RequestKey(name))
			if _, ok := m.Results[name]; ok {
				out = append(out, ResultKey(name))
			}
		}
	}
	for name := range m.Results {
		if _, ok := m.Requests[name]; !ok {
			out = append(out, ResultKey(name))
		}
	}
	slices.Sort(out)
	return out
}

// MailboxJobs reads each request of the mailbox as the Job it stands for, so that an
// operation reads a step's outcome through operation.Snapshot.JobOf whether a Job or
// the mailbox carried it: answered with exit code 0 is Succeeded (the action's JSON
// line is the termination message), any other answer Failed with what the executor
// logged; unanswered is Running, Stuck when the operation's executor cannot start
// (stuck says why, per operation), and Failed once the request is older than its
// deadline.
func MailboxJobs(m Mailbox, stuck map[string]string, now time.Time) map[string]operation.ObservedJob {
	out := map[string]operation.ObservedJob{}
	for name, req := range m.Requests {
		o := operation.ObservedJob{Operation: req.Operation}
		res, answered := m.Results[name]
		switch {
		case answered && res.ExitCode == 0:
			o.Job = operation.Job{Phase: operation.JobSucceeded, FinishedAt: res.FinishedAt}
			o.Termination = res.Output
		case answered:
			msg := fmt.Sprintf("the executor %s answered %s with exit code %d", res.Executor, name, res.ExitCode)
			if res.Message != "" {
				msg += ": " + res.Message
			}
			o.Job = operation.Job{Phase: operation.JobFailed, FinishedAt: res.FinishedAt, Message: msg}
		case req.Deadline > 0 && now.Sub(req.At) > req.Deadline:
			o.Job = operation.Job{Phase: operation.JobFailed, FinishedAt: req.At.Add(req.Deadline),
				Message: fmt.Sprintf("the executor of operation %s did not answer %s within %s", req.Operation, name, req.Deadline)}
		default:
			o.Job = operation.Job{Phase: operation.JobRunning}
			o.Stuck = stuck[req.Operation]
		}
		out[name] = o
	}
	return out
}

// ServeJobName is the name of operation opID's executor Job:
// <cluster>-executor-<opID>, bounded like JobName.
func ServeJobName(c *baov1.OpenBaoCluster, opID string) string {
	return boundedName(fmt.Sprintf("%s-executor-%s", c.Name, opID))
}

// Paths of the serving executor.
const (
	// KeyMountPath holds the operation's mailbox key.
	KeyMountPath = "/var/run/secrets/baokeeper-mailbox"
	// KeyFile is the operation's mailbox key file.
	KeyFile = KeyMountPath + "/key"
)

// ServeJob builds operation opID's executor Job, which serves the cluster's mailbox
// ("baokeeper executor serve") until it has been idle for ServeIdleExit. Unlike a
// step's Job it restarts on failure (every step it runs is idempotent), it has no
// deadline (an operation may wait days for a promotion), and it gets a Kubernetes
// API token: its service account may read and patch the mailbox and read its
// cluster, nothing else (workload.ExecutorRBAC). It mounts the operation's mailbox
// key, and only that one (workload.Names.ExecutorKeys, the key named opID).
func ServeJob(c *baov1.OpenBaoCluster, opID, image string) *batchv1.Job {
	n := workload.NamesFor(c)
	job := ExecutorJob(c, ExecutorJobSpec{
		Name: ServeJobName(c, opID), Step: StepServe, Operation: opID, Image: image,
		Args: []string{
			"executor", ActionServe,
			"--namespace", c.Namespace,
			"--cluster", c.Name,
			"--mailbox", n.ExecutorMailbox(),
			"--operation", opID,
			"--key-file", KeyFile,
		},
		Volumes: []corev1.Volume{{Name: "mailbox-key", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: n.ExecutorKeys(),
			Items:      []corev1.KeyToPath{{Key: opID, Path: "key"}},
		}}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "mailbox-key", MountPath: KeyMountPath, ReadOnly: true}},
	})
	job.Spec.ActiveDeadlineSeconds = nil
	job.Spec.BackoffLimit = ptrTo(serveBackoffLimit)
	pod := &job.Spec.Template.Spec
	pod.RestartPolicy = corev1.RestartPolicyOnFailure
	pod.AutomountServiceAccountToken = ptrTo(true)
	return job
}
