package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
var errNotSupported = errors.New("not supported by the rig node agent (no kubelet API: read the container log files instead)")

// provider runs the pods of one virtual-kubelet node. It implements VK's
// PodLifecycleHandler and PodNotifier; the rest of nodeutil.Provider is stubbed (there
// is no kubelet HTTP server).
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

// GetContainerLogs returns a container's log file.
func (p *provider) GetContainerLogs(_ context.Context, namespace, podName, containerName string, _ api.ContainerLogOpts) (io.ReadCloser, error) {
	pr := p.get(namespace, podName)
	if pr == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not running on node %s", namespace, podName, p.nodeName)
	}
	f, err := os.Open(pr.logPath(containerName))
	if err != nil {
		return nil, fmt.Errorf("failed to open the log of container %s: %w", containerName, err)
	}
	return f, nil
}

// RunInContainer is not supported.
func (p *provider) RunInContainer(context.Context, string, string, string, []string, api.AttachIO) error {
	return errNotSupported
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
