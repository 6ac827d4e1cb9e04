package nodeagent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Timing of a pod's background loops.
const (
	volumeRefresh  = 2 * time.Second
	statusResync   = 5 * time.Second
	retryInterval  = 2 * time.Second
	apiCallTimeout = 10 * time.Second
)

// terminationReason is why a pod runtime stops.
type terminationReason int

const (
	reasonNone terminationReason = iota
	// reasonDeleted: the pod was deleted; report the final status, delete the object.
	reasonDeleted
	// reasonReplaced: a pod with the same name and another UID took its place.
	reasonReplaced
	// reasonShutdown: the agent stops; the pod object stays, volumes stay.
	reasonShutdown
)

// specGrace is the pod's termination grace period in seconds (default 30).
func specGrace(spec *corev1.PodSpec) int64 {
	if spec.TerminationGracePeriodSeconds != nil {
		return *spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// podRuntime runs one pod: its address, hosts file, volumes and container runners.
type podRuntime struct {
	a    *agent
	prov *provider
	log  logr.Logger
	key  string
	uid  types.UID
	dir  string
	prev *podRuntime // runtime of an earlier pod with the same name, waited for

	stopCtx  context.Context // canceled when termination starts
	stop     context.CancelFunc
	done     chan struct{} // closed when everything is stopped and released
	kick     chan struct{} // status changed
	volKick  chan struct{} // a source object may have changed
	volReady chan struct{} // closed once all volumes were materialized
	wg       sync.WaitGroup
	tokens   tokenCache // used by the volume loop only

	mu           sync.Mutex
	pod          *corev1.Pod // latest pod given by VK
	podIP        string
	netns        string // an isolated pod's network namespace, "" for the shared one
	hostIP       string
	startTime    *metav1.Time
	sandboxReady bool
	initStatuses []corev1.ContainerStatus
	statuses     []corev1.ContainerStatus
	conditions   []corev1.PodCondition
	volumePaths  map[string]string
	volumesOK    bool
	volumesMsg   string
	reason       terminationReason
	deadline     time.Time
	terminal     bool
	runners      map[string]*runner
	hosts        []byte
}

func newPodRuntime(p *provider, pod *corev1.Pod, prev *podRuntime) *podRuntime {
	pod = pod.DeepCopy()
	ctx, cancel := context.WithCancel(context.Background())
	pr := &podRuntime{
		a:        p.a,
		prov:     p,
		log:      p.log.WithValues("Pod", klog.KObj(pod), "podUID", pod.UID),
		key:      podKey(pod.Namespace, pod.Name),
		uid:      pod.UID,
		dir:      filepath.Join(p.a.cfg.StateDir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		prev:     prev,
		stopCtx:  ctx,
		stop:     cancel,
		done:     make(chan struct{}),
		kick:     make(chan struct{}, 1),
		volKick:  make(chan struct{}, 1),
		volReady: make(chan struct{}),
		pod:      pod,
		hostIP:   p.a.cfg.NodeIP,
		runners:  map[string]*runner{},
	}
	// After an agent restart the pod already has a status: keep its start time, its
	// condition transition times and its restart counts (plus one for containers that
	// were running, since they get a new process).
	now := metav1.Now()
	pr.startTime = &now
	if pod.Status.StartTime != nil {
		st := *pod.Status.StartTime
		pr.startTime = &st
	}
	pr.conditions = append([]corev1.PodCondition(nil), pod.Status.Conditions...)
	mainReason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		mainReason = "PodInitializing"
	}
	pr.initStatuses = initialStatuses(pod.Spec.InitContainers, pod.Status.InitContainerStatuses, "PodInitializing")
	pr.statuses = initialStatuses(pod.Spec.Containers, pod.Status.ContainerStatuses, mainReason)
	return pr
}

func initialStatuses(ctrs []corev1.Container, old []corev1.ContainerStatus, reason string) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, len(ctrs))
	for i, c := range ctrs {
		out[i] = corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
			Started: new(bool),
		}
		for _, o := range old {
			if o.Name != c.Name {
				continue
			}
			out[i].RestartCount = o.RestartCount
			if o.State.Running != nil {
				out[i].RestartCount++
			}
			out[i].LastTerminationState = *o.LastTerminationState.DeepCopy()
		}
	}
	return out
}

// podSpecCopy returns a copy of the latest pod.
func (pr *podRuntime) podSpecCopy() *corev1.Pod {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.pod.DeepCopy()
}

func (pr *podRuntime) logPath(container string) string {
	return filepath.Join(pr.dir, container+".log")
}

func (pr *podRuntime) hostsPath() string { return filepath.Join(pr.dir, "hosts") }

// netnsPath is the isolated pod's network namespace, or "" for the shared one.
func (pr *podRuntime) netnsPath() string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.netns
}

// clockFilePath is the clock-adjustable pod's offset file, or "" for the machine's clock.
func (pr *podRuntime) clockFilePath() string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if !adjustableClock(pr.pod) {
		return ""
	}
	return clockFile(pr.pod.Namespace, pr.pod.Name)
}

// changed schedules a status push to VK.
func (pr *podRuntime) changed() {
	select {
	case pr.kick <- struct{}{}:
	default:
	}
}

// sleepCtx waits d, until wake fires or until ctx ends; it reports false when ctx
// ended first.
func sleepCtx(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-wake:
		return true
	}
}

// hostname is the pod's hostname: spec.hostname, else the pod name (at most 63 bytes).
func hostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// run is the pod's main goroutine.
func (pr *podRuntime) run() {
	defer pr.finish()
	go pr.notifyLoop()
	if pr.prev != nil {
		select {
		case <-pr.prev.done:
		case <-pr.stopCtx.Done():
			return
		}
	}
	killStale(filepath.Join(pr.dir, "containers"))
	if !pr.setupSandbox() {
		return
	}
	go pr.volumeLoop()
	if pr.runInit() {
		pr.runMain()
	}
	<-pr.stopCtx.Done()
}

// setupSandbox allocates the pod address, puts it on lo (or, for an isolated pod, on
// the eth0 of a network namespace of its own) and writes the hosts file.
func (pr *podRuntime) setupSandbox() bool {
	pod := pr.podSpecCopy()
	ip, netns := pr.a.cfg.NodeIP, ""
	for !pod.Spec.HostNetwork {
		var err error
		ip, err = pr.a.ips.Allocate(string(pr.uid), pod.Status.PodIP)
		if err == nil {
			if isolated(pod) {
				netns, err = pr.a.addrs.Isolate(pr.uid, ip)
			} else {
				err = pr.a.addrs.Add(ip)
			}
			if err != nil {
				pr.a.ips.Release(string(pr.uid))
			}
		}
		if err == nil {
			break
		}
		pr.log.Error(err, "Failed to set up the pod address, retrying")
		pr.setCreatingMessage(err.Error())
		if !sleepCtx(pr.stopCtx, retryInterval, nil) {
			return false
		}
	}
	for _, d := range []string{pr.dir, filepath.Join(pr.dir, "containers"), filepath.Join(pr.dir, "volumes")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			pr.log.Error(err, "Failed to create the pod state directory")
		}
	}
	pr.mu.Lock()
	pr.podIP = ip
	pr.netns = netns
	pr.sandboxReady = true
	pr.mu.Unlock()
	pr.refreshHosts()
	pr.log.Info("Pod sandbox ready", "podIP", ip, "netns", netns)
	pr.changed()
	return true
}

// refreshHosts regenerates the hosts file and rewrites it in place when it changed.
func (pr *podRuntime) refreshHosts() {
	pr.mu.Lock()
	if !pr.sandboxReady || pr.terminal {
		pr.mu.Unlock()
		return
	}
	in := hostsInput{
		Namespace:     pr.pod.Namespace,
		PodIP:         pr.podIP,
		Hostname:      hostname(pr.pod),
		Subdomain:     pr.pod.Spec.Subdomain,
		APIServerHost: pr.a.cfg.APIServerHost,
	}
	old := pr.hosts
	pr.mu.Unlock()
	in.Services, in.Slices = pr.a.serviceView()
	data := renderHosts(in)
	if bytes.Equal(data, old) {
		return
	}
	if err := writeInPlace(pr.hostsPath(), data); err != nil {
		pr.log.Error(err, "Failed to write the pod hosts file")
		return
	}
	pr.mu.Lock()
	pr.hosts = data
	pr.mu.Unlock()
}

// setCreatingMessage puts msg on every container still waiting to be created.
func (pr *podRuntime) setCreatingMessage(msg string) {
	pr.mu.Lock()
	for _, list := range [][]corev1.ContainerStatus{pr.initStatuses, pr.statuses} {
		for i := range list {
			if w := list[i].State.Waiting; w != nil && w.Reason == "ContainerCreating" {
				w.Message = msg
			}
		}
	}
	pr.mu.Unlock()
	pr.changed()
}

// runInit runs the init containers in order; sidecars (restartPolicy Always) keep
// running once started. It reports whether all succeeded.
func (pr *podRuntime) runInit() bool {
	pod := pr.podSpecCopy()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		policy := corev1.RestartPolicyOnFailure
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			policy = corev1.RestartPolicyNever
		}
		if isSidecar(c) {
			policy = corev1.RestartPolicyAlways
		}
		r := pr.newRunner(c.Name, true, i, policy)
		pr.wg.Add(1)
		if isSidecar(c) {
			go func() { defer pr.wg.Done(); r.loop() }()
			select {
			case <-r.started:
				continue
			case <-pr.stopCtx.Done():
				return false
			}
		}
		ok := r.loop()
		pr.wg.Done()
		if !ok {
			return false
		}
	}
	return true
}

// runMain starts every main container; once all of them have finished for good
// (restartPolicy Never or OnFailure), sidecars are stopped.
func (pr *podRuntime) runMain() {
	pod := pr.podSpecCopy()
	var main sync.WaitGroup
	for i := range pod.Spec.Containers {
		r := pr.newRunner(pod.Spec.Containers[i].Name, false, i, pod.Spec.RestartPolicy)
		pr.wg.Add(1)
		main.Add(1)
		go func() {
			defer pr.wg.Done()
			defer main.Done()
			r.loop()
		}()
	}
	go func() {
		main.Wait()
		pr.mu.Lock()
		var sidecars []*runner
		for _, r := range pr.runners {
			if r.init {
				sidecars = append(sidecars, r)
			}
		}
		pr.mu.Unlock()
		for _, r := range sidecars {
			r.cancel()
		}
	}()
}

// terminate starts stopping the pod: every container gets SIGTERM, and SIGKILL after
// grace seconds. Calling it again can only shorten the grace period.
func (pr *podRuntime) terminate(reason terminationReason, grace int64) {
	if grace < 0 {
		grace = 0
	}
	dl := time.Now().Add(time.Duration(grace) * time.Second)
	pr.mu.Lock()
	if pr.reason == reasonNone || dl.Before(pr.deadline) {
		pr.deadline = dl
	}
	if pr.reason == reasonNone || pr.reason == reasonShutdown {
		pr.reason = reason
	}
	first := pr.stopCtx.Err() == nil
	pr.mu.Unlock()
	if first {
		pr.log.Info("Stopping pod", "gracePeriod", grace, "reason", reasonName(reason))
	}
	pr.stop()
	pr.changed()
}

func reasonName(r terminationReason) string {
	switch r {
	case reasonDeleted:
		return "deleted"
	case reasonReplaced:
		return "replaced by a pod with the same name"
	case reasonShutdown:
		return "agent stopping"
	default:
		return ""
	}
}

// stopDeadline is when containers get SIGKILL: the termination deadline, or now plus
// the spec's grace for a container stopped outside a pod termination (a sidecar). Read
// it once per stop and pass it through earliest, so a later, shorter grace still wins.
func (pr *podRuntime) stopDeadline() time.Time {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.reason != reasonNone {
		return pr.deadline
	}
	return time.Now().Add(time.Duration(specGrace(&pr.pod.Spec)) * time.Second)
}

// update applies a newer version of the same pod; a changed image restarts the
// container, like the kubelet.
func (pr *podRuntime) update(pod *corev1.Pod) {
	pod = pod.DeepCopy()
	pr.mu.Lock()
	old := pr.pod
	pr.pod = pod
	var restart []*runner
	for i, c := range pod.Spec.Containers {
		if i < len(old.Spec.Containers) && old.Spec.Containers[i].Image != c.Image {
			pr.statuses[i].Image = c.Image
			if r := pr.runners[c.Name]; r != nil && !r.init {
				restart = append(restart, r)
			}
		}
	}
	pr.mu.Unlock()
	for _, r := range restart {
		pr.log.Info("Restarting container for its new image", "container", r.name)
		r.requestRestart()
	}
	select {
	case pr.volKick <- struct{}{}:
	default:
	}
	pr.changed()
}

// podWithStatus returns the pod with its current status.
func (pr *podRuntime) podWithStatus() *corev1.Pod {
	apiConds := pr.apiConditions()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pod := pr.pod.DeepCopy()
	pod.Status = pr.statusLocked(apiConds)
	return pod
}

// apiConditions returns the conditions of the pod as the API server has them.
func (pr *podRuntime) apiConditions() []corev1.PodCondition {
	if pr.prov.podsAPI == nil {
		return nil
	}
	ns, name, _ := strings.Cut(pr.key, "/")
	cur, err := pr.prov.podsAPI.Pods(ns).Get(name)
	if err != nil || cur.UID != pr.uid {
		return nil
	}
	return cur.Status.Conditions
}

func (pr *podRuntime) statusLocked(apiConds []corev1.PodCondition) corev1.PodStatus {
	view := *pr.pod
	view.Status = corev1.PodStatus{Conditions: apiConds, QOSClass: pr.pod.Status.QOSClass}
	if apiConds == nil {
		view.Status.Conditions = pr.pod.Status.Conditions
	}
	in := statusInput{
		Pod:          &view,
		Prev:         pr.conditions,
		PodIP:        pr.podIP,
		HostIP:       pr.hostIP,
		StartTime:    pr.startTime.DeepCopy(),
		SandboxReady: pr.sandboxReady,
		InitStatuses: copyStatuses(pr.initStatuses),
		Statuses:     copyStatuses(pr.statuses),
		Terminal:     pr.terminal,
		Now:          metav1.Now(),
	}
	st := computeStatus(in)
	pr.conditions = st.Conditions
	return st
}

func copyStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// notifyLoop pushes the status to VK when it changes (and re-checks periodically).
func (pr *podRuntime) notifyLoop() {
	tick := time.NewTicker(statusResync)
	defer tick.Stop()
	var last *corev1.PodStatus
	for {
		select {
		case <-pr.done:
			return
		case <-pr.kick:
		case <-tick.C:
		}
		pr.mu.Lock()
		terminal := pr.terminal
		pr.mu.Unlock()
		if terminal {
			return
		}
		pod := pr.podWithStatus()
		if last != nil && equality.Semantic.DeepEqual(*last, pod.Status) {
			continue
		}
		last = pod.Status.DeepCopy()
		pr.prov.send(pod)
	}
}
