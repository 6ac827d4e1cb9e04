package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
)

// serveFlags are the flags of "executor serve".
type serveFlags struct {
	namespace, cluster, mailbox, operation, keyFile string
	idleExit                                        time.Duration
}

func parseServeFlags(args []string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("baokeeper executor "+executorjob.ActionServe, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.namespace, "namespace", "", "Namespace of the cluster and its mailbox.")
	fs.StringVar(&f.cluster, "cluster", "", "Name of the OpenBaoCluster whose status says which step may run.")
	fs.StringVar(&f.mailbox, "mailbox", "", "Name of the cluster's executor mailbox ConfigMap.")
	fs.StringVar(&f.keyFile, "key-file", "", "File of the operation's mailbox key, which signs its requests and answers.")
	fs.StringVar(&f.operation, "operation", "", "ID of the operation whose requests this executor answers; it answers no other.")
	fs.DurationVar(&f.idleExit, "idle-exit", executorjob.ServeIdleExit, "Exit after this long without a request to answer.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	missing := missingFlags(map[string]bool{"--namespace": f.namespace == "", "--cluster": f.cluster == "", "--mailbox": f.mailbox == "",
		"--operation": f.operation == "", "--key-file": f.keyFile == ""})
	switch {
	case len(missing) > 0:
		return f, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	case f.idleExit <= 0:
		return f, fmt.Errorf("--idle-exit %s must be positive", f.idleExit)
	}
	return f, nil
}

// mailboxAPI is what the serving executor needs of the Kubernetes API: its mailbox,
// read, watched and patched, and its cluster, read (workload.ExecutorRBAC grants
// exactly that).
type mailboxAPI interface {
	get(ctx context.Context) (*corev1.ConfigMap, error)
	watch(ctx context.Context, resourceVersion string) (watch.Interface, error)
	patch(ctx context.Context, patch []byte) error
	cluster(ctx context.Context) (*baov1.OpenBaoCluster, error)
}

// kubeMailbox is mailboxAPI over client-go.
type kubeMailbox struct {
	cs              kubernetes.Interface
	namespace, name string
	clusterName     string
}

func (k kubeMailbox) cluster(ctx context.Context) (*baov1.OpenBaoCluster, error) {
	// A list pinned to the name by a field selector: what the Role's resourceNames
	// authorize (workload.ExecutorRBAC).
	raw, err := k.cs.Discovery().RESTClient().Get().
		AbsPath("/apis", baov1.GroupVersion.Group, baov1.GroupVersion.Version, "namespaces", k.namespace, "openbaoclusters").
		Param("fieldSelector", fields.OneTermEqualSelector("metadata.name", k.clusterName).String()).
		DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to read OpenBaoCluster %s/%s: %w", k.namespace, k.clusterName, err)
	}
	list := &baov1.OpenBaoClusterList{}
	if err := json.Unmarshal(raw, list); err != nil {
		return nil, fmt.Errorf("failed to decode OpenBaoCluster %s/%s: %w", k.namespace, k.clusterName, err)
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("OpenBaoCluster %s/%s not found (%d items)", k.namespace, k.clusterName, len(list.Items))
	}
	return &list.Items[0], nil
}

func (k kubeMailbox) get(ctx context.Context) (*corev1.ConfigMap, error) {
	return k.cs.CoreV1().ConfigMaps(k.namespace).Get(ctx, k.name, metav1.GetOptions{})
}

func (k kubeMailbox) watch(ctx context.Context, rv string) (watch.Interface, error) {
	// The field selector pins the name, which is what lets a Role with resourceNames
	// authorize the watch.
	return k.cs.CoreV1().ConfigMaps(k.namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", k.name).String(), ResourceVersion: rv})
}

func (k kubeMailbox) patch(ctx context.Context, patch []byte) error {
	_, err := k.cs.CoreV1().ConfigMaps(k.namespace).Patch(ctx, k.name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// serveRetry is the pause before the mailbox is read again after a failed read,
// watch or answer.
const serveRetry = time.Second

// runServe serves the cluster's executor mailbox: "baokeeper executor serve".
func runServe(ctx context.Context, args []string, env executorEnv) int {
	f, err := parseServeFlags(args, env.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "baokeeper executor serve: invalid flags: %v\n", err)
		return exitFatal
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Fprintf(env.stderr, "baokeeper executor serve: fatal: %v\n", err)
		return exitFatal
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(env.stderr, "baokeeper executor serve: fatal: %v\n", err)
		return exitFatal
	}
	key, err := os.ReadFile(f.keyFile)
	if err == nil && len(key) != executorjob.KeyBytes {
		err = fmt.Errorf("%s holds %d bytes, not a mailbox key of %d", f.keyFile, len(key), executorjob.KeyBytes)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "baokeeper executor serve: fatal: the operation's mailbox key: %v\n", err)
		return exitFatal
	}
	self, _ := os.Hostname()
	api := kubeMailbox{cs: cs, namespace: f.namespace, name: f.mailbox, clusterName: f.cluster}
	return serve(ctx, f, key, api, self, runSubprocess(entrypoint()), env)
}

// entrypoint is the path this process was started as (argv[0]), so that a step runs
// through the same entrypoint the serving executor did; this binary's own path when
// argv[0] is not a path.
func entrypoint() string {
	if strings.Contains(os.Args[0], "/") {
		return os.Args[0]
	}
	if exe, err := os.Executable(); err == nil {
		return exe
	}
	return os.Args[0]
}

// actionRunner runs "baokeeper executor <args...>" and returns its exit code,
// stdout and stderr.
type actionRunner func(ctx context.Context, args []string) (code int, stdout, stderr string)

// runSubprocess runs each action in a process of its own, as the image's entrypoint
// (argv0, the path this process was started as) with "executor" and the request's
// arguments: what the step's Job would have run, with a crash, a kill or a leak
// confined to the one step, and its exit code its outcome as a Job's would be.
func runSubprocess(argv0 string) actionRunner {
	return func(ctx context.Context, args []string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, argv0, append([]string{"executor"}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(os.Stderr, &stderr)
		cmd.WaitDelay = actionGrace
		err := cmd.Run()
		var exitErr *exec.ExitError
		switch {
		case err == nil:
			return exitOK, stdout.String(), stderr.String()
		case errors.As(err, &exitErr):
			code := exitErr.ExitCode()
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
				fmt.Fprintf(&stderr, "\nbaokeeper executor serve: the action was killed by %s", ws.Signal())
			}
			return code, stdout.String(), stderr.String()
		default:
			return exitFatal, stdout.String(), fmt.Sprintf("%s\nbaokeeper executor serve: failed to run the action: %v", stderr.String(), err)
		}
	}
}

// runInProcess runs each action in this process (tests).
func runInProcess(env executorEnv) actionRunner {
	return func(ctx context.Context, args []string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		run := env
		run.stdout, run.stderr = &stdout, io.MultiWriter(env.stderr, &stderr)
		code := runExecutor(ctx, args, run)
		return code, stdout.String(), stderr.String()
	}
}

// serve answers, one at a time and in name order, the requests of its operation
// that have no answer, until it has answered none for f.idleExit (exit 0) or ctx
// ends. It trusts nothing the mailbox says:
//   - a request counts only when it verifies under the operation's key (the operator
//     signed it), and runs only when the cluster's status persists it as the
//     operation's current step (executorjob.Authorize); anything else is logged once
//     and left alone (the operator removes and reports it);
//   - what runs is built here, from this Job's flags and the status
//     (executorjob.StepArgs): the members' addresses, the pod's CA and token files,
//     the step's own timeout.
//
// Each step runs as "baokeeper executor <action>" would (run), and the answer, signed
// under the key, carries its exit code and its JSON line or the end of its log. A
// request is run at most once by this process; one answered before it started (an
// earlier executor's) is not run again, and an answer of this process that
// disappears or is altered is written again, not run again.
func serve(ctx context.Context, f serveFlags, key []byte, api mailboxAPI, self string, run actionRunner, env executorEnv) int {
	log := logr.FromContextOrDiscard(ctx).WithValues("operation", f.operation, "ConfigMap", f.namespace+"/"+f.mailbox)
	log.Info("Serving the executor mailbox")
	answered := map[string]executorjob.Result{}
	// refused holds when each refused request was last checked: it is checked again
	// after refuseRecheck (the operator persists a step before it asks for it, but a
	// status this process read may be older than the request), and logged once.
	refused := map[string]time.Time{}
	keys := map[string][]byte{f.operation: key}
	self0 := &baov1.OpenBaoCluster{}
	self0.Name, self0.Namespace = f.cluster, f.namespace
	idleSince := env.clock.Now()
	for ctx.Err() == nil {
		cm, err := api.get(ctx)
		if err != nil {
			log.Error(err, "Failed to read the mailbox; retrying")
			if !sleepCtx(ctx, env, serveRetry) {
				break
			}
			continue
		}
		m, _ := executorjob.Trusted(self0, executorjob.ReadMailbox(cm), keys)
		if name, res, ok := lostAnswer(m, answered); ok {
			if err := writeAnswer(ctx, api, name, res); err != nil {
				log.Error(err, "Failed to write the answer again; retrying", "request", name)
				if !sleepCtx(ctx, env, serveRetry) {
					break
				}
			} else {
				log.Info("Wrote an answer again: it was gone or altered", "request", name)
			}
			continue
		}
		waitRefused := false
		pending := slices.DeleteFunc(m.Pending(f.operation), func(name string) bool {
			at, ok := refused[name]
			recent := ok && env.clock.Since(at) < refuseRecheck
			waitRefused = waitRefused || recent
			return answered[name].MAC != "" || recent
		})
		if len(pending) > 0 {
			name := pending[0]
			c, err := api.cluster(ctx)
			if err != nil {
				log.Error(err, "Failed to read the cluster's status; retrying", "request", name)
				if !sleepCtx(ctx, env, serveRetry) {
					break
				}
				continue
			}
			step, err := executorjob.Authorize(c, f.operation, name, m.Requests[name])
			var args []string
			if err == nil {
				args, err = executorjob.StepArgs(c, step)
			}
			if err != nil {
				if _, logged := refused[name]; !logged {
					log.Info("Refusing a request: it is not the step the cluster's status plans", "request", name, "reason", err.Error())
				}
				refused[name] = env.clock.Now()
				continue
			}
			delete(refused, name)
			res := answer(ctx, args, self, run, env)
			res.Operation = f.operation
			res = res.Signed(key, name)
			if err := writeAnswer(ctx, api, name, res); err != nil {
				// Not marked answered: the next round runs it again (idempotent).
				log.Error(err, "Failed to write the answer; retrying", "request", name)
				if !sleepCtx(ctx, env, serveRetry) {
					break
				}
				continue
			}
			answered[name] = res
			log.Info("Answered", "request", name, "exitCode", res.ExitCode, "took", res.FinishedAt.Sub(res.StartedAt).String())
			idleSince = env.clock.Now()
			continue
		}
		idle := env.clock.Since(idleSince)
		if idle >= f.idleExit {
			log.Info("Idle; exiting", "idle", idle.String())
			return exitOK
		}
		wait := min(f.idleExit-idle, time.Minute)
		if waitRefused {
			wait = min(wait, refuseRecheck)
		}
		if err := waitForChange(ctx, api, cm.ResourceVersion, wait, env); err != nil {
			log.Error(err, "Failed to watch the mailbox; reading it again")
			if !sleepCtx(ctx, env, serveRetry) {
				break
			}
		}
	}
	log.Info("Stopped")
	return exitOK
}

// lostAnswer finds a request of the trusted mailbox m that this process answered
// (answered) and whose answer is no longer there as written: removed, or altered
// (Trusted then refuses it). Sorted by name; false when there is none.
func lostAnswer(m executorjob.Mailbox, answered map[string]executorjob.Result) (string, executorjob.Result, bool) {
	for _, name := range slices.Sorted(maps.Keys(answered)) {
		if _, asked := m.Requests[name]; !asked {
			continue
		}
		if got, ok := m.Results[name]; !ok || got.MAC != answered[name].MAC {
			return name, answered[name], true
		}
	}
	return "", executorjob.Result{}, false
}

// writeAnswer writes res as the answer to the request named name.
func writeAnswer(ctx context.Context, api mailboxAPI, name string, res executorjob.Result) error {
	patch, err := executorjob.ResultPatch(name, res)
	if err != nil {
		return err
	}
	return api.patch(ctx, patch)
}

// answer runs one step, its arguments built by StepArgs, and says how it went.
func answer(ctx context.Context, args []string, self string, run actionRunner, env executorEnv) executorjob.Result {
	res := executorjob.Result{Executor: self, StartedAt: env.clock.Now().UTC()}
	code, stdout, stderr := run(ctx, args)
	res.ExitCode, res.Output = code, tail(stdout, maxAnswerOutput)
	if code != exitOK {
		res.Message = tail(stderr, maxAnswerMessage)
	}
	res.FinishedAt = env.clock.Now().UTC()
	return res
}

// refuseRecheck is how soon a refused request is checked against the status again.
const refuseRecheck = 2 * time.Second

// maxAnswerOutput bounds the JSON line an answer carries (a few hundred bytes).
const maxAnswerOutput = 2048

// maxAnswerMessage bounds the log an answer carries: the status message it ends up
// in is for a person, and the mailbox holds every answer of the operation.
const maxAnswerMessage = 1024

// tail is the end of s, at most n bytes, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// waitForChange returns once the mailbox changes after resourceVersion, or after
// timeout.
func waitForChange(ctx context.Context, api mailboxAPI, resourceVersion string, timeout time.Duration, env executorEnv) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := api.watch(ctx, resourceVersion)
	if err != nil {
		return err
	}
	defer w.Stop()
	t := env.clock.NewTimer(timeout)
	defer t.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if ok && ev.Type == watch.Error {
			return fmt.Errorf("the watch ended: %v", ev.Object)
		}
	case <-t.C():
	case <-ctx.Done():
	}
	return nil
}

// sleepCtx waits d on the executor's clock; false when ctx ended first.
func sleepCtx(ctx context.Context, env executorEnv, d time.Duration) bool {
	t := env.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}
