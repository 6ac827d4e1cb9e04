package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// errNotSupported is returned by the kubelet API calls the rig does not serve.
var errNotSupported = errors.New("not supported by the rig node agent (it serves exec without a TTY and container logs only)")

// provider runs the pods of one virtual-kubelet node. It implements VK's
// PodLifecycleHandler and PodNotifier, and the exec and container-log calls of the
// kubelet API (see kubeletapi.go); attach, port-forward and stats are stubbed.
type provider struct {
	a        *agent
	nodeName string
	log      logr.Logger
	podsAPI  corev1listers.PodLister // VK's lister of this node's pods

	mu     sync.Mutex
	pods   map[string]*podRuntime // namespace/name -> current runtime
	notify func(*corev1.Pod)
}

var _ nodeutil.Provider = (*provider)(nil)

func newProvider(a *agent, nodeName string, pods corev1listers.PodLister) *provider {
	return &provider{
		a:        a,
		nodeName: nodeName,
		log:      a.log.WithValues("Node", klog.KRef("", nodeName)),
		podsAPI:  pods,
		pods:     map[string]*podRuntime{},
	}
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// CreatePod starts a pod. A runtime of an older pod with the same name is terminated
// first; the new one waits for it, so the two never share a volume.
func (p *provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	p.start(pod)
	return nil
}

// UpdatePod applies spec changes of a running pod (image changes restart containers);
// a pod with another UID replaces the old one.
func (p *provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	p.start(pod)
	return nil
}

func (p *provider) start(pod *corev1.Pod) {
	key := podKey(pod.Namespace, pod.Name)
	p.mu.Lock()
	old := p.pods[key]
	if old != nil && old.uid == pod.UID {
		p.mu.Unlock()
		old.update(pod)
		return
	}
	if p.a.isStopping() {
		p.mu.Unlock()
		return
	}
	pr := newPodRuntime(p, pod, old)
	p.pods[key] = pr
	p.mu.Unlock()
	if old != nil {
		old.log.Info("Replacing pod runtime of a pod with the same name", "newUID", pod.UID)
		old.terminate(reasonReplaced, specGrace(&old.podSpecCopy().Spec))
	}
	p.a.register(pr)
	pr.log.Info("Starting pod")
	go pr.run()
}

// DeletePod starts a graceful termination and returns at once: the runtime stops the
// containers (SIGTERM, grace period, SIGKILL), reports terminated statuses, frees the
// address and then deletes the pod object with grace 0 and a UID precondition, as a
// kubelet does. Without that last delete VK would wait the whole grace period.
func (p *provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	pr := p.get(pod.Namespace, pod.Name)
	if pr == nil || (pod.UID != "" && pr.uid != pod.UID) {
		return errdefs.NotFoundf("pod %s/%s is not running on node %s", pod.Namespace, pod.Name, p.nodeName)
	}
	grace := specGrace(&pod.Spec)
	if pod.DeletionGracePeriodSeconds != nil {
		grace = *pod.DeletionGracePeriodSeconds
	}
	pr.terminate(reasonDeleted, grace)
	return nil
}

// GetPod returns the pod with its current status.
func (p *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	pr := p.get(namespace, name)
	if pr == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not running on node %s", namespace, name, p.nodeName)
	}
	return pr.podWithStatus(), nil
}

// GetPodStatus returns the pod's current status.
func (p *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod of this node.
func (p *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	prs := make([]*podRuntime, 0, len(p.pods))
	for _, pr := range p.pods {
		prs = append(prs, pr)
	}
	p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(prs))
	for _, pr := range prs {
		out = append(out, pr.podWithStatus())
	}
	return out, nil
}

// NotifyPods registers VK's status callback.
func (p *provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	p.mu.Lock()
	p.notify = cb
	p.mu.Unlock()
}

func (p *provider) send(pod *corev1.Pod) {
	p.mu.Lock()
	cb := p.notify
	p.mu.Unlock()
	if cb != nil && !p.a.isStopping() {
		cb(pod)
	}
}

func (p *provider) get(namespace, name string) *podRuntime {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[podKey(namespace, name)]
}

// forget removes pr if it is still the current runtime of its name.
func (p *provider) forget(pr *podRuntime) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods[pr.key] == pr {
		delete(p.pods, pr.key)
	}
}

// GetContainerLogs returns a container's log file (all runs of the container, stdout
// and stderr interleaved), its last opts.Tail lines when set, at most opts.LimitBytes
// bytes when set. Follow, previous, timestamps and since are not supported: the whole
// log is returned at once.
func (p *provider) GetContainerLogs(_ context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	pr := p.get(namespace, podName)
	if pr == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not running on node %s", namespace, podName, p.nodeName)
	}
	if !pr.hasContainer(containerName) {
		return nil, errdefs.NotFoundf("pod %s/%s has no container %q", namespace, podName, containerName)
	}
	f, err := os.Open(pr.logPath(containerName))
	if errors.Is(err, os.ErrNotExist) {
		return io.NopCloser(strings.NewReader("")), nil // not started yet: no output
	}
	if err != nil {
		return nil, fmt.Errorf("failed to open the log of container %s: %w", containerName, err)
	}
	if opts.Tail <= 0 && opts.LimitBytes <= 0 {
		return f, nil
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("failed to read the log of container %s: %w", containerName, err)
	}
	return io.NopCloser(bytes.NewReader(logView(b, opts.Tail, opts.LimitBytes))), nil
}

// logView is the part of a log that kubectl logs --tail and --limit-bytes ask for: the
// last tail lines (all when tail <= 0), then at most limit bytes of them (no limit when
// limit <= 0), like the kubelet applies them.
func logView(b []byte, tail, limit int) []byte {
	if tail > 0 {
		end := len(b)
		if end > 0 && b[end-1] == '\n' {
			end-- // a final newline ends the last line, it does not start another
		}
		start := 0
		for i, n := end-1, 0; i >= 0; i-- {
			if b[i] == '\n' {
				if n++; n == tail {
					start = i + 1
					break
				}
			}
		}
		b = b[start:]
	}
	if limit > 0 && len(b) > limit {
		b = b[:limit]
	}
	return b
}

// RunInContainer serves kubectl exec: it runs cmd in the container's running process
// environment (see runner.execAttached) with the session's stdin, stdout and stderr,
// and returns once cmd exited. A non-zero exit code comes back as exitError, so that
// kubectl exec exits with it. TTY sessions are refused.
func (p *provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach api.AttachIO) error {
	if attach.TTY() {
		return errors.New("the rig node agent does not support exec with a TTY: run kubectl exec without -t (use -i alone to pass stdin)")
	}
	if len(cmd) == 0 {
		return errors.New("no command to exec: give one after --")
	}
	pr := p.get(namespace, podName)
	if pr == nil {
		return errdefs.NotFoundf("pod %s/%s is not running on node %s", namespace, podName, p.nodeName)
	}
	r, live, err := pr.liveContainer(containerName)
	if err != nil {
		return err
	}
	r.log.V(1).Info("Running exec session", "command", cmd[0], "stdin", attach.Stdin() != nil)
	code, err := r.execAttached(ctx, live, cmd, stdio{in: attach.Stdin(), out: writerOrNil(attach.Stdout()), err: writerOrNil(attach.Stderr())})
	if err != nil {
		return fmt.Errorf("exec session in container %s of pod %s/%s ended: %w", containerName, namespace, podName, err)
	}
	r.log.V(1).Info("Exec session ended", "command", cmd[0], "exitCode", code)
	return exitError(code)
}

// writerOrNil keeps a nil stream nil as an io.Writer (a stream that was not asked for).
func writerOrNil(w io.WriteCloser) io.Writer {
	if w == nil {
		return nil
	}
	return w
}

// hasContainer reports whether the pod spec has an (init) container of that name.
func (pr *podRuntime) hasContainer(name string) bool {
	pod := pr.podSpecCopy()
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return true
			}
		}
	}
	return false
}

// liveContainer returns the runner and the running process of a container, or why it
// has none.
func (pr *podRuntime) liveContainer(name string) (*runner, *liveContainer, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	ns, pod, _ := strings.Cut(pr.key, "/")
	r := pr.runners[name]
	if r == nil {
		return nil, nil, fmt.Errorf("container %q of pod %s/%s has not been started (or does not exist): check kubectl get pod %s -n %s", name, ns, pod, pod, ns)
	}
	if r.live == nil {
		return nil, nil, fmt.Errorf("container %q of pod %s/%s is not running: wait for it to run, see kubectl describe pod %s -n %s", name, ns, pod, pod, ns)
	}
	return r, r.live, nil
}

// AttachToContainer is not supported.
func (p *provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errNotSupported
}

// PortForward is not supported.
func (p *provider) PortForward(context.Context, string, string, int32, io.ReadWriteCloser) error {
	return errNotSupported
}

// GetStatsSummary returns an empty summary.
func (p *provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{}, nil
}

// GetMetricsResource returns no metrics.
func (p *provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, nil
}
