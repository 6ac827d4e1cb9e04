package adminops

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/objectapply"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// The executor of an operation and its mailbox (executorjob): a membership step's
// Job is not created; its request goes into the cluster's mailbox, and the
// operation's serving executor answers it.

// executorView is what a pass observed of its cluster's executors: the mailbox and
// each operation's serving executor Job.
type executorView struct {
	// mailbox holds the entries baokeeper wrote (executorjob.Trusted); refused the
	// others, which the pass reports and drops.
	mailbox executorjob.Mailbox
	refused []executorjob.Refusal
	// found is false when the mailbox ConfigMap does not exist.
	found bool
	// keys are the operations' mailbox keys by operation ID; keysFound is false when
	// their Secret does not exist.
	keys      map[string][]byte
	keysFound bool
	// serving are the serving executor Jobs by operation.
	serving map[string]servingExecutor
}

// servingExecutor is one operation's serving executor Job as read.
type servingExecutor struct {
	name     string
	uid      types.UID
	phase    operation.JobPhase
	deleting bool
	stuck    string
	// unsigned is true for an executor started by a baokeeper before signed requests
	// (no --key-file): it cannot verify a request nor sign an answer, so it is
	// replaced.
	unsigned bool
}

// observeExecutors reads the mailbox and the operations' keys, finds the serving
// executors among the cluster's executor Jobs (observed: as observeJob read them),
// and adds each request baokeeper wrote to s.Jobs as the Job it stands for. Entries
// it did not write are set aside in refused: they count for nothing.
func (r *Reconciler) observeExecutors(ctx context.Context, c *baov1.OpenBaoCluster, jobs []batchv1.Job, s *operation.Snapshot) (*executorView, error) {
	v := &executorView{serving: map[string]servingExecutor{}, keys: map[string][]byte{}}
	stuck := map[string]string{}
	for i := range jobs {
		j := &jobs[i]
		op := j.Labels[executorjob.LabelOperation]
		if j.Labels[executorjob.LabelStep] != executorjob.StepServe || op == "" {
			continue
		}
		o := s.Jobs[j.Name]
		v.serving[op] = servingExecutor{name: j.Name, uid: j.UID, phase: o.Phase, deleting: j.DeletionTimestamp != nil, stuck: o.Stuck,
			unsigned: !servesSigned(j)}
		stuck[op] = o.Stuck
	}
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).ExecutorMailbox()}, cm)
	switch {
	case apierrors.IsNotFound(err):
		v.mailbox = executorjob.ReadMailbox(nil)
		return v, r.readKeys(ctx, c, v, nil)
	case err != nil:
		return nil, fmt.Errorf("failed to get the executor mailbox of %s/%s: %w", c.Namespace, c.Name, err)
	}
	v.found = true
	raw := executorjob.ReadMailbox(cm)
	var asked []string
	for _, req := range raw.Requests {
		asked = append(asked, req.Operation)
	}
	if err := r.readKeys(ctx, c, v, asked); err != nil {
		return nil, err
	}
	v.mailbox, v.refused = executorjob.Trusted(c, raw, v.keys)
	for name, o := range executorjob.MailboxJobs(v.mailbox, stuck, s.Now) {
		if _, isJob := s.Jobs[name]; !isJob {
			s.Jobs[name] = o
		}
	}
	return v, nil
}

// readKeys reads the operations' mailbox keys. The Secret is created by the workload
// reconciler and written by this one: a key added by the previous pass may not be in
// the cache yet, and the entries it signed would read as forged. So when the mailbox
// holds a request (asked: their operations) of an operation of the status whose key
// the cache lacks, the Secret is read from the API server; an operation that has not
// asked anything costs no read.
func (r *Reconciler) readKeys(ctx context.Context, c *baov1.OpenBaoCluster, v *executorView, asked []string) error {
	key := client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).ExecutorKeys()}
	sec := &corev1.Secret{}
	err := r.Client.Get(ctx, key, sec)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to get the executor keys Secret %s/%s: %w", c.Namespace, key.Name, err)
	}
	stale := false
	for _, op := range executorjob.Operations(c) {
		if _, ok := sec.Data[op]; !ok && slices.Contains(asked, op) {
			stale = true
		}
	}
	if stale && r.APIReader != nil {
		sec = &corev1.Secret{}
		err = r.APIReader.Get(ctx, key, sec)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get the executor keys Secret %s/%s: %w", c.Namespace, key.Name, err)
	}
	if !ownedBy(sec, c) {
		// The workload reconciler refuses the cluster (NameConflict) until it is gone.
		return nil
	}
	v.keysFound = true
	for op, k := range sec.Data {
		if len(k) == executorjob.KeyBytes {
			v.keys[op] = k
		}
	}
	return nil
}

// servesSigned reports whether the serving executor Job j verifies requests and signs
// answers: its command line names the operation's key file.
func servesSigned(j *batchv1.Job) bool {
	for _, ctr := range j.Spec.Template.Spec.Containers {
		if slices.Contains(ctr.Args, "--key-file") {
			return true
		}
	}
	return false
}

// ownedBy reports whether the cluster controls obj (by UID).
func ownedBy(obj metav1.Object, c *baov1.OpenBaoCluster) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && c.UID != "" && ref.UID == c.UID
}

// ensureKey returns operation op's mailbox key, adding a new one to the keys Secret
// when it has none. The keys of operations that the status no longer runs and that
// have no entry left in the mailbox are dropped in the same write.
func (r *Reconciler) ensureKey(ctx context.Context, c *baov1.OpenBaoCluster, v *executorView, op string) ([]byte, error) {
	if k, ok := v.keys[op]; ok {
		return k, nil
	}
	if r.APIReader != nil {
		// The cache may not have the key a previous pass added (and mounted into the
		// executor): a second key would make the two disagree.
		sec := &corev1.Secret{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: workload.NamesFor(c).ExecutorKeys()}, sec)
		switch {
		case err == nil && ownedBy(sec, c):
			v.keysFound = true
			if k := sec.Data[op]; len(k) == executorjob.KeyBytes {
				v.keys[op] = k
				return k, nil
			}
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("failed to get the executor keys Secret %s/%s: %w", c.Namespace, workload.NamesFor(c).ExecutorKeys(), err)
		}
	}
	if !v.keysFound {
		// The workload reconciler creates it; a pass may come first.
		if err := objectapply.Apply(ctx, r.Client, workload.ExecutorKeys(c)); err != nil {
			return nil, fmt.Errorf("failed to create the executor keys Secret: %w", err)
		}
		v.keysFound = true
	}
	rnd := r.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	k, err := executorjob.NewKey(rnd)
	if err != nil {
		return nil, err
	}
	data := map[string]any{op: k}
	live := executorjob.Operations(c)
	for _, req := range v.mailbox.Requests {
		live = append(live, req.Operation)
	}
	for old := range v.keys {
		if !slices.Contains(live, old) {
			data[old] = nil
			delete(v.keys, old)
		}
	}
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return nil, fmt.Errorf("failed to encode the executor keys: %w", err)
	}
	sec := workload.ExecutorKeys(c)
	if err := r.Client.Patch(ctx, sec, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return nil, fmt.Errorf("failed to add the mailbox key of operation %s to Secret %s/%s: %w", op, c.Namespace, sec.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Added the operation's mailbox key", "operation", op, "Secret", klog.KObj(sec))
	v.keys[op] = k
	return k, nil
}

// askExecutor asks the operation's executor for what job would do: it writes the
// request, signed with the operation's key, into the mailbox (once: a request already
// there is the same request) and makes sure the operation has a serving executor.
// created says whether the request is new, for the step's event.
func (r *Reconciler) askExecutor(ctx context.Context, c *baov1.OpenBaoCluster, v *executorView, job *batchv1.Job, now metav1.Time) (created bool, err error) {
	op := job.Labels[executorjob.LabelOperation]
	if _, asked := v.mailbox.Requests[job.Name]; !asked {
		req, err := executorjob.RequestFor(job, now.Time)
		if err != nil {
			return false, err
		}
		key, err := r.ensureKey(ctx, c, v, op)
		if err != nil {
			return false, err
		}
		req = req.Signed(key, job.Name)
		if !v.found {
			// The workload reconciler creates it; a pass may come first.
			if err := objectapply.Apply(ctx, r.Client, workload.ExecutorMailbox(c)); err != nil {
				return false, fmt.Errorf("failed to create the executor mailbox: %w", err)
			}
			v.found = true
		}
		patch, err := executorjob.RequestPatch(job.Name, req, v.mailbox.KeysNotOf(req.Operation))
		if err != nil {
			return false, err
		}
		mailbox := workload.ExecutorMailbox(c)
		if err := r.Client.Patch(ctx, mailbox, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return false, fmt.Errorf("failed to ask the executor for %s in the mailbox %s/%s: %w", job.Name, c.Namespace, mailbox.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Asked the executor", "request", job.Name, "step", job.Labels[executorjob.LabelStep])
		v.mailbox.Requests[job.Name] = req
		created = true
	}
	return created, r.tendExecutor(ctx, c, v, op, r.executorImage(c))
}

// tendExecutors keeps a serving executor for every operation of the status that has
// a request without an answer, and for the operation prestartFor names; none while
// break-glass is active, when nothing may act on the cluster. Only operations of the
// status: an operation that only the mailbox names gets no executor.
func (r *Reconciler) tendExecutors(ctx context.Context, c *baov1.OpenBaoCluster, v *executorView) error {
	if v == nil || (c.Status.BreakGlass != nil && c.Status.BreakGlass.Active) {
		return nil
	}
	for _, op := range servedOperations(c, v.mailbox) {
		if err := r.tendExecutor(ctx, c, v, op, r.executorImage(c)); err != nil {
			return err
		}
	}
	return nil
}

// servedOperations are the operations that get an executor, sorted: those of the
// status with a request (of the trusted mailbox m) that has no answer yet, and the one
// prestartFor names. An operation that only the mailbox names gets none.
func servedOperations(c *baov1.OpenBaoCluster, m executorjob.Mailbox) []string {
	ours := executorjob.Operations(c)
	var ops []string
	for name, req := range m.Requests {
		if _, answered := m.Results[name]; !answered && slices.Contains(ours, req.Operation) && !slices.Contains(ops, req.Operation) {
			ops = append(ops, req.Operation)
		}
	}
	if op := prestartFor(c); op != "" && !slices.Contains(ops, op) {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// tendExecutor makes sure operation op has a serving executor: it creates its Job
// when there is none, and deletes one that finished (idle, or out of restarts) so
// that the next pass creates it again. A stuck one is deleted with the other stuck
// executor Jobs (deleteStuckJobs).
func (r *Reconciler) tendExecutor(ctx context.Context, c *baov1.OpenBaoCluster, v *executorView, op, image string) error {
	cur, ok := v.serving[op]
	switch tendDecision(cur, ok) {
	case tendCreate:
		if _, err := r.ensureKey(ctx, c, v, op); err != nil {
			return err
		}
		job := executorjob.ServeJob(c, op, image)
		_, err := r.createJob(ctx, job)
		if err == nil {
			v.serving[op] = servingExecutor{name: job.Name, phase: operation.JobRunning}
		}
		return err
	case tendKeep:
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("Deleting a finished executor: the next pass starts it again", "Job", cur.name, "phase", string(cur.phase))
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: cur.name}}
	err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &cur.uid})
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete the finished executor Job %s/%s (delete it by hand if this persists; the next pass starts a new one): %w", c.Namespace, cur.name, err)
	}
	cur.deleting = true
	v.serving[op] = cur
	return nil
}

// prestartFor names the operation whose serving executor is started before its first
// membership step: a blue-green upgrade that deploys, syncs or validates green and
// promotes on its own. Its promotions follow within seconds to minutes, and the
// executor's start (about 5 s on the rig: a pod, a process, a login) then overlaps
// green's start instead of delaying the first promotion. Not for an upgrade that waits
// for a person to promote: an executor with nothing to do exits after ServeIdleExit,
// and would be started again and again. "" when none.
func prestartFor(c *baov1.OpenBaoCluster) string {
	up, bg := c.Status.Upgrade, c.Status.BlueGreen
	if up == nil || up.ID == "" || bg == nil || !c.Spec.Upgrade.BlueGreen.AutoPromote {
		return ""
	}
	switch bg.Phase {
	case baov1.BlueGreenDeployGreen, baov1.BlueGreenSync, baov1.BlueGreenValidate:
		return up.ID
	}
	return ""
}

// tend is what an operation with a pending request needs done to its executor.
type tend string

const (
	tendCreate tend = "Create"
	tendKeep   tend = "Keep"
	tendDelete tend = "Delete"
)

// tendDecision decides it from the operation's serving executor as observed
// (exists says whether there is one): none is created; one being deleted is kept
// until it is gone; one started by a baokeeper before signed requests is deleted
// (it would answer nothing this operator counts); one that runs is kept; one that
// finished (idle exit, out of restarts) is deleted, so that the next pass creates it
// again.
func tendDecision(cur servingExecutor, exists bool) tend {
	switch {
	case !exists:
		return tendCreate
	case cur.deleting:
		return tendKeep
	case cur.unsigned:
		return tendDelete
	case cur.phase == operation.JobRunning:
		return tendKeep
	}
	return tendDelete
}
