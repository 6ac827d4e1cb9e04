package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kubelet-like limits of termination messages.
const (
	maxTerminationMessage = 4096
	maxFallbackLogBytes   = 2048
	maxFallbackLogLines   = 80
	minGraceAfterPreStop  = 2 * time.Second
)

// runner runs one container: it prepares, starts, probes, stops and restarts it.
type runner struct {
	pr        *podRuntime
	log       logr.Logger
	name      string
	init      bool
	idx       int
	policy    corev1.RestartPolicy
	ctx       context.Context // ends when the container must stop for good
	cancel    context.CancelFunc
	restartCh chan struct{}
	started   chan struct{} // closed once the container first runs
	startOnce sync.Once
	starts    int
	backoff   restartBackoff
	live      *liveContainer // the running process, nil when none (under pr.mu)
}

// liveContainer is a running container process, for exec sessions: how it was started
// and a channel closed when it exits.
type liveContainer struct {
	plan   *execPlan
	exited <-chan struct{}
}

func (pr *podRuntime) newRunner(name string, init bool, idx int, policy corev1.RestartPolicy) *runner {
	ctx, cancel := context.WithCancel(pr.stopCtx)
	r := &runner{
		pr: pr, log: pr.log.WithValues("container", name), name: name, init: init, idx: idx, policy: policy,
		ctx: ctx, cancel: cancel, restartCh: make(chan struct{}, 1), started: make(chan struct{}),
	}
	pr.mu.Lock()
	pr.runners[name] = r
	pr.mu.Unlock()
	return r
}

func (r *runner) requestRestart() {
	select {
	case r.restartCh <- struct{}{}:
	default:
	}
}

// update changes this container's status under the pod lock and schedules a push.
func (r *runner) update(fn func(s *corev1.ContainerStatus)) {
	r.pr.mu.Lock()
	list := r.pr.statuses
	if r.init {
		list = r.pr.initStatuses
	}
	if r.idx < len(list) {
		fn(&list[r.idx])
	}
	r.pr.mu.Unlock()
	r.pr.changed()
}

func (r *runner) setWaiting(reason, msg string) {
	r.update(func(s *corev1.ContainerStatus) {
		if w := s.State.Waiting; w != nil && w.Reason == reason && w.Message == msg {
			return
		}
		s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
		s.Ready = false
	})
}

func (r *runner) container() (*corev1.Container, *corev1.Pod) {
	pod := r.pr.podSpecCopy()
	if r.init {
		return &pod.Spec.InitContainers[r.idx], pod
	}
	return &pod.Spec.Containers[r.idx], pod
}

// shouldRestart applies a restart policy to an exit code.
func shouldRestart(policy corev1.RestartPolicy, code int32) bool {
	switch policy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return code != 0
	default:
		return false
	}
}

// loop runs the container until it is done for good and reports whether its last run
// exited 0.
func (r *runner) loop() bool {
	defer r.cancel()
	for {
		select {
		case <-r.ctx.Done():
			return false
		case <-r.pr.volReady:
		}
		ctr, pod := r.container()
		plan, err := r.pr.planContainer(pod, ctr)
		if err != nil {
			var ie *imageError
			var ce *configError
			switch {
			case errors.As(err, &ie):
				r.log.Info("Container image has no local executable", "image", ctr.Image)
				r.setWaiting("ErrImagePull", ie.msg)
				select { // the image map does not change; wait for a new image or the end
				case <-r.ctx.Done():
					return false
				case <-r.restartCh:
				}
			case errors.As(err, &ce):
				r.setWaiting("CreateContainerConfigError", ce.msg)
				if !sleepCtx(r.ctx, retryInterval, r.restartCh) {
					return false
				}
			default:
				r.setWaiting("CreateContainerError", err.Error())
				if !sleepCtx(r.ctx, retryInterval, r.restartCh) {
					return false
				}
			}
			continue
		}
		code, ranFor, again := r.runOnce(pod, ctr, plan)
		if r.ctx.Err() != nil {
			return code == 0
		}
		if again {
			continue
		}
		if !shouldRestart(r.policy, code) {
			return code == 0
		}
		delay := r.backoff.Next(ranFor)
		r.update(func(s *corev1.ContainerStatus) {
			s.LastTerminationState = s.State
			s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, r.name, pod.Name, pod.Namespace, pod.UID),
			}}
			s.Ready = false
		})
		r.log.V(1).Info("Restarting container after back-off", "exitCode", code, "backOff", delay.String())
		if !sleepCtx(r.ctx, delay, nil) {
			return false
		}
	}
}

// execPlan is a prepared container start.
type execPlan struct {
	spec    execSpec
	env     []string
	exe     string
	ctrDir  string
	logPath string
	termLog string // per-container file bind-mounted at terminationMessagePath, or ""
}

// planContainer resolves the image, environment, command and mounts of a container.
func (pr *podRuntime) planContainer(pod *corev1.Pod, ctr *corev1.Container) (*execPlan, error) {
	a := pr.a
	exe, err := a.containerExecutable(pod, ctr)
	if err != nil {
		return nil, err
	}
	pr.mu.Lock()
	facts := podFacts{PodIP: pr.podIP, HostIP: pr.hostIP, NodeAllocatable: nodeCapacity()}
	paths := pr.volumePaths
	pr.mu.Unlock()
	host := hostname(pod)
	if pod.Spec.HostNetwork {
		host = ""
	}
	env, err := containerEnv(pod, ctr, facts, a.cfg.APIServerHost, a.cfg.APIServerPort, hostname(pod), a)
	if err != nil {
		return nil, err
	}
	ctrDir := filepath.Join(pr.dir, "containers", ctr.Name)
	binDir := filepath.Join(ctrDir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", binDir, err)
	}
	for _, n := range commandNames(ctr.Image, exe) {
		if err := ensureSymlink(filepath.Join(binDir, n), exe); err != nil {
			return nil, err
		}
	}
	pathVal, _ := env.get("PATH")
	pathVal = binDir + ":" + pathVal
	env.set("PATH", pathVal)
	lookup := mapLookup(env.asMap())
	expandAll := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = expandVars(s, lookup)
		}
		return out
	}
	cp := planCommand(expandAll(ctr.Command), expandAll(ctr.Args), exe,
		func(n string) (string, bool) { return lookPathIn(pathVal, n) }, fileExists)

	vols := map[string]*corev1.Volume{}
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var mounts []bindMount
	for _, vm := range ctr.VolumeMounts {
		src, ok := paths[vm.Name]
		v := vols[vm.Name]
		if !ok || v == nil {
			return nil, &configError{msg: fmt.Sprintf("volume %q of mount %s is not defined or not ready", vm.Name, vm.MountPath)}
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expandVars(vm.SubPathExpr, lookup)
		}
		if sub != "" {
			clean := filepath.Clean(sub)
			if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
				return nil, &configError{msg: fmt.Sprintf("subPath %q of volume %q must be relative and stay inside the volume", sub, vm.Name)}
			}
			src = filepath.Join(src, clean)
			if !fileExists(src) {
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, fmt.Errorf("failed to create subPath %s: %w", src, err)
				}
			}
		}
		mounts = append(mounts, bindMount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly || forcedReadOnly(v)})
	}
	plan := &execPlan{env: env.environ(), exe: exe, ctrDir: ctrDir, logPath: pr.logPath(ctr.Name)}
	if ctr.TerminationMessagePath != "" {
		plan.termLog = filepath.Join(ctrDir, "termination-log")
		mounts = append(mounts, bindMount{Source: plan.termLog, Target: ctr.TerminationMessagePath, Optional: true})
	}
	dir := ctr.WorkingDir
	if dir == "" {
		dir = ctrDir
	}
	plan.spec = execSpec{
		Path: cp.path, Argv: cp.argv, Dir: dir, Hostname: host, Mounts: mounts,
		HostsFile: pr.hostsPath(), RecordFile: a.recordFile(), Netns: pr.netnsPath(),
		ClockFile: pr.clockFilePath(), Nice: a.niceOf(ctr.Image),
		ReadOnlyRoot: ctr.SecurityContext != nil && ctr.SecurityContext.ReadOnlyRootFilesystem != nil && *ctr.SecurityContext.ReadOnlyRootFilesystem,
	}
	return plan, nil
}

// niceOf is the nice value of a container of image: FavorNice for an image of
// Config.FavorImages, else 0 (the agent's own).
func (a *agent) niceOf(image string) int {
	for _, p := range a.cfg.FavorImages {
		if p != "" && strings.HasPrefix(image, p) {
			return FavorNice
		}
	}
	return 0
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func ensureSymlink(link, target string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	_ = os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		return fmt.Errorf("failed to link %s to %s: %w", link, target, err)
	}
	return nil
}

// runOnce starts the container, watches it and returns its exit code, how long it ran
// and whether it must start again at once (its image changed).
func (r *runner) runOnce(pod *corev1.Pod, ctr *corev1.Container, plan *execPlan) (int32, time.Duration, bool) {
	logf, err := os.OpenFile(plan.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		r.setWaiting("CreateContainerError", fmt.Sprintf("failed to open log file %s: %v", plan.logPath, err))
		sleepCtx(r.ctx, retryInterval, nil)
		return 128, 0, true
	}
	var offset int64
	if fi, err := logf.Stat(); err == nil {
		offset = fi.Size()
	}
	if plan.termLog != "" {
		if err := os.WriteFile(plan.termLog, nil, 0o666); err != nil {
			r.log.Error(err, "Failed to reset the termination log")
		}
	}
	r.log.Info("Starting container", "executable", plan.spec.Path)
	proc, err := startProcess(r.pr.a.selfExe, plan.spec, plan.env, logf)
	_ = logf.Close()
	restarted := r.starts > 0
	r.starts++
	now := metav1.Now()
	if err != nil {
		msg := err.Error()
		r.log.Info("Container failed to start", "reason", msg)
		r.update(func(s *corev1.ContainerStatus) {
			if restarted {
				s.RestartCount++
			}
			s.ImageID = "rig://" + plan.exe
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 128, Reason: "StartError", Message: msg, StartedAt: now, FinishedAt: now,
			}}
			s.Ready = false
		})
		return 128, 0, false
	}
	writePidFile(filepath.Join(plan.ctrDir, "pid"), proc.pid)
	r.setLive(&liveContainer{plan: plan, exited: proc.exited})
	defer r.setLive(nil)
	started := metav1.NewTime(proc.startedAt)
	hasReadiness := ctr.ReadinessProbe != nil && !r.init
	r.update(func(s *corev1.ContainerStatus) {
		if restarted {
			s.RestartCount++
		}
		s.Image = ctr.Image
		s.ImageID = "rig://" + plan.exe
		s.ContainerID = "rig://" + strconv.Itoa(proc.pid)
		s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
		s.Ready = !hasReadiness && (!r.init || isSidecar(ctr))
		t := true
		s.Started = &t
	})
	r.startOnce.Do(func() { close(r.started) })

	probeCtx, stopProbes := context.WithCancel(context.Background())
	defer stopProbes()
	target := r.probeTarget(ctr, plan)
	if hasReadiness {
		go probeLoop(probeCtx, ctr.ReadinessProbe, false, target, func(ok bool, msg string) {
			if ok {
				r.log.V(1).Info("Readiness probe succeeded")
			} else {
				r.log.Info("Readiness probe failed", "reason", msg)
			}
			r.update(func(s *corev1.ContainerStatus) {
				if s.State.Running != nil {
					s.Ready = ok
				}
			})
		})
	}
	liveness := make(chan string, 1)
	if ctr.LivenessProbe != nil && (!r.init || isSidecar(ctr)) {
		go probeLoop(probeCtx, ctr.LivenessProbe, true, target, func(ok bool, msg string) {
			if !ok {
				select {
				case liveness <- msg:
				default:
				}
			}
		})
	}

	again := false
	select {
	case <-proc.exited:
	case <-r.ctx.Done():
		dl := r.pr.stopDeadline()
		r.stopProcess(ctr, plan, proc, func() time.Time { return earliest(dl, r.pr) })
	case msg := <-liveness:
		grace := specGrace(&pod.Spec)
		if g := ctr.LivenessProbe.TerminationGracePeriodSeconds; g != nil {
			grace = *g
		}
		r.log.Info("Liveness probe failed, killing container", "reason", msg, "gracePeriod", grace)
		dl := time.Now().Add(time.Duration(grace) * time.Second)
		r.stopProcess(ctr, plan, proc, func() time.Time { return earliest(dl, r.pr) })
	case <-r.restartCh:
		dl := time.Now().Add(time.Duration(specGrace(&pod.Spec)) * time.Second)
		r.stopProcess(ctr, plan, proc, func() time.Time { return earliest(dl, r.pr) })
		again = true
	}
	<-proc.exited
	stopProbes()
	_ = os.Remove(filepath.Join(plan.ctrDir, "pid"))
	finished := metav1.Now()
	code := proc.exitCode
	msg := terminationMessage(ctr, plan, code, offset)
	r.log.Info("Container exited", "exitCode", code)
	r.update(func(s *corev1.ContainerStatus) {
		s.State = corev1.ContainerState{Terminated: terminatedState(code, started, finished, msg)}
		s.State.Terminated.ContainerID = s.ContainerID
		s.Ready = r.init && !isSidecar(ctr) && code == 0
		f := false
		s.Started = &f
	})
	return code, finished.Sub(proc.startedAt), again
}

// earliest is dl, or the pod's termination deadline when that comes first.
func earliest(dl time.Time, pr *podRuntime) time.Time {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.reason != reasonNone && pr.deadline.Before(dl) {
		return pr.deadline
	}
	return dl
}

// stopProcess runs the preStop hook, then SIGTERM, then SIGKILL at the deadline (at
// least 2 s after a hook, like the kubelet).
func (r *runner) stopProcess(ctr *corev1.Container, plan *execPlan, proc *process, deadline func() time.Time) {
	hookRan := false
	if ctr.Lifecycle != nil && ctr.Lifecycle.PreStop != nil {
		ctx, cancel := context.WithDeadline(context.Background(), deadline())
		r.log.Info("Running preStop hook")
		if err := r.runHook(ctx, ctr.Lifecycle.PreStop, plan); err != nil {
			r.log.Info("PreStop hook failed", "reason", err.Error())
		}
		cancel()
		hookRan = true
	}
	floor := time.Now().Add(minGraceAfterPreStop)
	proc.stop(func() time.Time {
		d := deadline()
		if hookRan && d.Before(floor) {
			return floor
		}
		return d
	})
}

// runHook runs a lifecycle handler: exec (through the helper, in the container's mount
// namespace), httpGet or sleep.
func (r *runner) runHook(ctx context.Context, h *corev1.LifecycleHandler, plan *execPlan) error {
	switch {
	case h.Exec != nil:
		code, out, err := r.execInContainer(ctx, plan, h.Exec.Command)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("command exited with %d: %s", code, strings.TrimSpace(out))
		}
		return nil
	case h.HTTPGet != nil:
		r.pr.mu.Lock()
		ip := r.pr.podIP
		r.pr.mu.Unlock()
		ctr, _ := r.container()
		port, err := resolvePort(h.HTTPGet.Port, ctr.Ports)
		if err != nil {
			return err
		}
		host := h.HTTPGet.Host
		if host == "" {
			host = ip
		}
		if ok, msg := httpProbe(ctx, h.HTTPGet, probeURL(h.HTTPGet, host, port)); !ok {
			return errors.New(msg)
		}
		return nil
	case h.Sleep != nil:
		sleepCtx(ctx, time.Duration(h.Sleep.Seconds)*time.Second, nil)
		return nil
	default:
		return errors.New("hook has no handler")
	}
}

// execInContainer runs command through the helper with the container's mounts, hosts
// file, hostname and environment.
func (r *runner) execInContainer(ctx context.Context, plan *execPlan, command []string) (int, string, error) {
	spec, err := commandSpec(plan, command)
	if err != nil {
		return -1, "", err
	}
	return runHelper(ctx, r.pr.a.selfExe, spec, plan.env)
}

// commandSpec is the container's exec spec with command in place of its own, resolved
// on the container's PATH like the container's command (see planCommand).
func commandSpec(plan *execPlan, command []string) (execSpec, error) {
	if len(command) == 0 {
		return execSpec{}, errors.New("empty command")
	}
	pathVal := ""
	for _, e := range plan.env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathVal = v
		}
	}
	cp := planCommand(command, nil, plan.exe, func(n string) (string, bool) { return lookPathIn(pathVal, n) }, fileExists)
	spec := plan.spec
	spec.Path, spec.Argv = cp.path, cp.argv
	return spec, nil
}

// errContainerStopped ends exec sessions of a container whose process exited.
var errContainerStopped = errors.New("the container stopped")

// execAttached runs command in the live container like execInContainer, with an exec
// session's streams (see streamHelper). The command is killed when ctx ends or the
// container's process exits, as a container runtime does.
func (r *runner) execAttached(ctx context.Context, live *liveContainer, command []string, s stdio) (int, error) {
	spec, err := commandSpec(live.plan, command)
	if err != nil {
		return -1, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-live.exited:
			cancel(errContainerStopped)
		case <-ctx.Done():
		}
	}()
	return streamHelper(ctx, r.pr.a.selfExe, spec, live.plan.env, s)
}

func (r *runner) setLive(l *liveContainer) {
	r.pr.mu.Lock()
	r.live = l
	r.pr.mu.Unlock()
}

func (r *runner) probeTarget(ctr *corev1.Container, plan *execPlan) probeTarget {
	r.pr.mu.Lock()
	ip := r.pr.podIP
	r.pr.mu.Unlock()
	return probeTarget{
		podIP: ip,
		ports: ctr.Ports,
		exec: func(ctx context.Context, command []string) (int, string, error) {
			return r.execInContainer(ctx, plan, command)
		},
	}
}
