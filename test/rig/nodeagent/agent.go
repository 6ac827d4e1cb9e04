package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Config configures the node agent.
// FavorNice is the nice value of the containers of Config.FavorImages.
const FavorNice = -5

type Config struct {
	// Kubeconfig is the admin kubeconfig of the rig's API server.
	Kubeconfig string
	// Nodes are the names of the Nodes to register (e.g. rig-node-1..3). Every node runs
	// its pods on this machine.
	Nodes []string
	// StateDir is the root of per-pod state, container logs and persistent volumes.
	StateDir string
	// PodIPPrefix is the prefix of pod addresses, e.g. "10.250.0."; pods get
	// PodIPPrefix+N, N in 10..250, the lowest free one.
	PodIPPrefix string
	// NodeIP is the pods' hostIP and the nodes' InternalIP, e.g. "10.250.0.1" (listed
	// after KubeletAPI's address when the kubelet API is served).
	NodeIP string
	// ImageMap maps container images to local executables (see doc.go for matching).
	ImageMap map[string]string
	// ImageLayouts are OCI image layouts (make image writes dist/oci) searched before
	// ImageMap: an image found there is unpacked under StateDir/images and its
	// entrypoint runs, with the kubelet's runAsNonRoot check against its user.
	ImageLayouts []string
	// APIServerHost is KUBERNETES_SERVICE_HOST and the address of kubernetes.default.svc
	// in every pod's /etc/hosts.
	APIServerHost string
	// APIServerPort is KUBERNETES_SERVICE_PORT.
	APIServerPort string
	// KubeletAPI is the kubelet API (exec, logs) served to the API server; its zero
	// value serves none.
	KubeletAPI KubeletAPIConfig
	// FavorImages are image prefixes whose containers run at FavorNice, a higher CPU
	// priority than the rig's other processes. On a real cluster each member has
	// CPU of its own; on the rig two cores serve the control plane, the operator,
	// the tests' writers and pollers and every member, and a member starved for
	// longer than Raft's leader lease (500 ms at performance_multiplier 1) loses
	// leadership for no reason a cluster would have (counted by the e2e suite).
	FavorImages []string
	// Log receives the agent's logs.
	Log logr.Logger
}

func (c *Config) validate() error {
	var errs []error
	if c.Kubeconfig == "" {
		errs = append(errs, errors.New("Kubeconfig is empty"))
	}
	if len(c.Nodes) == 0 {
		errs = append(errs, errors.New("Nodes is empty"))
	}
	for i, n := range c.Nodes {
		if n == "" || slices.Contains(c.Nodes[:i], n) {
			errs = append(errs, fmt.Errorf("node name %q is empty or repeated", n))
		}
	}
	if c.StateDir == "" {
		errs = append(errs, errors.New("StateDir is empty"))
	}
	if !strings.HasSuffix(c.PodIPPrefix, ".") || net.ParseIP(c.PodIPPrefix+"1") == nil {
		errs = append(errs, fmt.Errorf("PodIPPrefix %q must be the first three octets and a dot, like 10.250.0.", c.PodIPPrefix))
	}
	if net.ParseIP(c.NodeIP) == nil {
		errs = append(errs, fmt.Errorf("NodeIP %q is not an IP address", c.NodeIP))
	}
	if c.APIServerHost == "" || c.APIServerPort == "" {
		errs = append(errs, errors.New("APIServerHost and APIServerPort must be set"))
	}
	if err := c.KubeletAPI.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid node agent config: %w", err)
	}
	return nil
}

// Shutdown limits.
const (
	maxShutdownGrace = 10 // seconds: the most a pod gets when the agent stops
	nodeReadyTimeout = 60 * time.Second
	hostsRefresh     = time.Second
)

// Run registers the nodes and runs their pods until ctx ends; then it stops every pod
// process (SIGTERM, the pod's grace period capped at 10 s, SIGKILL) and removes the pod
// addresses it added. Pod objects stay in the API, bound to their nodes.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("failed to resolve StateDir %s: %w", cfg.StateDir, err)
	}
	cfg.StateDir = abs
	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("failed to load kubeconfig %s: %w (check Config.Kubeconfig)", cfg.Kubeconfig, err)
	}
	restCfg.QPS, restCfg.Burst = 50, 100
	restCfg.UserAgent = "rig-nodeagent"
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("failed to create a Kubernetes client from %s: %w", cfg.Kubeconfig, err)
	}
	return newAgent(cfg, client, ipCommand{}).run(ctx)
}

// agent is state shared by all nodes: the address pool, the informers and the pods.
type agent struct {
	cfg     Config
	log     logr.Logger
	client  kubernetes.Interface
	addrs   addrManager
	ips     *ipAllocator
	selfExe string
	oci     *ociStore

	factory  informers.SharedInformerFactory
	secrets  corev1listers.SecretLister
	cms      corev1listers.ConfigMapLister
	services corev1listers.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	pvcs     corev1listers.PersistentVolumeClaimLister
	pvs      corev1listers.PersistentVolumeLister

	hostsKick chan struct{}
	claimKick chan struct{}
	// provisioned remembers PVs just created (provision loop only), because the PV
	// informer may not show them yet on the next pass.
	provisioned map[string]time.Time

	mu        sync.Mutex
	pods      map[types.UID]*podRuntime
	providers []*provider // one per node, in Config.Nodes order
	stopping  bool
}

func newAgent(cfg Config, client kubernetes.Interface, addrs addrManager) *agent {
	f := informers.NewSharedInformerFactory(client, 10*time.Minute)
	return &agent{
		cfg:       cfg,
		log:       cfg.Log,
		client:    client,
		addrs:     addrs,
		ips:       newIPAllocator(cfg.PodIPPrefix),
		selfExe:   "/proc/self/exe",
		oci:       &ociStore{layouts: cfg.ImageLayouts, dir: filepath.Join(cfg.StateDir, "images")},
		factory:   f,
		secrets:   f.Core().V1().Secrets().Lister(),
		cms:       f.Core().V1().ConfigMaps().Lister(),
		services:  f.Core().V1().Services().Lister(),
		slices:    f.Discovery().V1().EndpointSlices().Lister(),
		pvcs:      f.Core().V1().PersistentVolumeClaims().Lister(),
		pvs:       f.Core().V1().PersistentVolumes().Lister(),
		hostsKick: make(chan struct{}, 1),
		claimKick: make(chan struct{}, 1),
		pods:      map[types.UID]*podRuntime{},

		provisioned: map[string]time.Time{},
	}
}

func kickChan(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// onChange returns an event handler that calls fn on every add, update and delete.
func onChange(fn func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { fn() },
		UpdateFunc: func(any, any) { fn() },
		DeleteFunc: func(any) { fn() },
	}
}

func (a *agent) run(ctx context.Context) error {
	for _, d := range []string{filepath.Join(a.cfg.StateDir, "pods"), filepath.Join(a.cfg.StateDir, "pv")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w (check Config.StateDir)", d, err)
		}
	}
	hosts := onChange(func() { kickChan(a.hostsKick) })
	vols := onChange(a.kickVolumes)
	claims := onChange(func() { kickChan(a.claimKick); a.kickVolumes() })
	for _, reg := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{a.factory.Core().V1().Services().Informer(), hosts},
		{a.factory.Discovery().V1().EndpointSlices().Informer(), hosts},
		{a.factory.Core().V1().Secrets().Informer(), vols},
		{a.factory.Core().V1().ConfigMaps().Informer(), vols},
		{a.factory.Core().V1().PersistentVolumeClaims().Informer(), claims},
		{a.factory.Core().V1().PersistentVolumes().Informer(), vols},
	} {
		if _, err := reg.inf.AddEventHandler(reg.h); err != nil {
			return fmt.Errorf("failed to add an informer event handler: %w", err)
		}
	}
	a.factory.Start(ctx.Done())
	defer a.factory.Shutdown()
	a.log.Info("Waiting for informer caches")
	for typ, ok := range a.factory.WaitForCacheSync(ctx.Done()) {
		if !ok && ctx.Err() != nil {
			return nil
		}
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync: %w (check that the API server at %s is reachable)", typ, ctx.Err(), a.cfg.Kubeconfig)
		}
	}
	for {
		err := a.ensureStorageClass(ctx)
		if err == nil {
			break
		}
		a.log.Error(err, "Failed to ensure the StorageClass, retrying")
		if !sleepCtx(ctx, retryInterval, nil) {
			return nil
		}
	}
	go a.provisionLoop(ctx)
	go a.hostsLoop(ctx)

	vkCtx, stopVK := context.WithCancel(vklog.WithLogger(ctx, newVKLogger(a.log.WithName("virtual-kubelet"))))
	defer stopVK()
	var kubelet *kubeletServer
	if a.cfg.KubeletAPI.enabled() {
		var err error
		if kubelet, err = listenKubeletAPI(a.cfg.KubeletAPI); err != nil {
			return err
		}
		defer kubelet.close()
	}
	errCh := make(chan error, len(a.cfg.Nodes))
	var wg sync.WaitGroup
	var nodes []*nodeutil.Node
	for _, name := range a.cfg.Nodes {
		n, err := a.newNode(name, kubelet.advertised())
		if err != nil {
			stopVK()
			wg.Wait()
			a.shutdown()
			return err
		}
		nodes = append(nodes, n)
	}
	if kubelet != nil {
		a.log.Info("Serving the kubelet API", "address", kubelet.listener.Addr().String())
		kubelet.serve(vkCtx, agentKubelet{a: a})
	}
	for i, n := range nodes {
		name := a.cfg.Nodes[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Run(vkCtx); err != nil && vkCtx.Err() == nil {
				errCh <- fmt.Errorf("node %s stopped: %w (check the API server and the agent log)", name, err)
			}
		}()
		go func() {
			if err := n.WaitReady(vkCtx, nodeReadyTimeout); err != nil {
				if vkCtx.Err() == nil {
					a.log.Error(err, "Node did not become ready", "Node", klog.KRef("", name))
				}
				return
			}
			a.log.Info("Node registered and ready", "Node", klog.KRef("", name))
		}()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errCh:
	}
	a.log.Info("Stopping the node agent")
	stopVK()
	if kubelet != nil {
		kubelet.close()
	}
	wg.Wait()
	a.shutdown()
	return runErr
}

// newNode creates one virtual-kubelet node, advertising the agent's kubelet API at
// kubelet. VK's own HTTP server stays off (no TLS config): the agent serves one kubelet
// API for all nodes. VK's naive node provider marks the node Ready and VK keeps its
// Lease fresh.
func (a *agent) newNode(name string, kubelet kubeletEndpoint) (*nodeutil.Node, error) {
	n, err := nodeutil.NewNode(name,
		func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
			p := newProvider(a, name, pc.Pods)
			a.mu.Lock()
			a.providers = append(a.providers, p)
			a.mu.Unlock()
			return p, nil, nil
		},
		nodeutil.WithClient(a.client),
		func(c *nodeutil.NodeConfig) error {
			c.NumWorkers = 8
			c.SkipDownwardAPIResolution = true // the agent resolves env itself, with the pod IP
			configureNode(&c.NodeSpec, a.cfg.NodeIP, kubelet)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("failed to create node %s: %w", name, err)
	}
	return n, nil
}

// nodeCapacity is every node's capacity and allocatable.
func nodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("32Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}

// configureNode fills in the Node object VK registers. With a kubelet API, its address
// is the first InternalIP (the API server, with --kubelet-preferred-address-types=
// InternalIP, dials the first one) and its port the kubelet endpoint; NodeIP, the
// pods' hostIP, follows.
func configureNode(n *corev1.Node, nodeIP string, kubelet kubeletEndpoint) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[corev1.LabelOSStable] = "linux"
	n.Labels[corev1.LabelArchStable] = runtime.GOARCH
	n.Labels["beta.kubernetes.io/os"] = "linux"
	n.Labels["beta.kubernetes.io/arch"] = runtime.GOARCH
	n.Status.Capacity = nodeCapacity()
	n.Status.Allocatable = nodeCapacity()
	n.Status.Addresses = nil
	if kubelet.ip != "" && kubelet.ip != nodeIP {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: kubelet.ip})
	}
	n.Status.Addresses = append(n.Status.Addresses,
		corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: nodeIP},
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.Name})
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = kubelet.port
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		OperatingSystem:         "linux",
		Architecture:            runtime.GOARCH,
		KubeletVersion:          "v1.37.2",
		ContainerRuntimeVersion: "rig://local-processes",
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: now}}
	for _, c := range []struct {
		t      corev1.NodeConditionType
		reason string
	}{
		{corev1.NodeMemoryPressure, "KubeletHasSufficientMemory"},
		{corev1.NodeDiskPressure, "KubeletHasNoDiskPressure"},
		{corev1.NodePIDPressure, "KubeletHasSufficientPID"},
		{corev1.NodeNetworkUnavailable, "RouteCreated"},
	} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
			Type: c.t, Status: corev1.ConditionFalse, Reason: c.reason, LastHeartbeatTime: now, LastTransitionTime: now,
		})
	}
}

func (a *agent) isStopping() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopping
}

func (a *agent) register(pr *podRuntime) {
	a.mu.Lock()
	a.pods[pr.uid] = pr
	a.mu.Unlock()
}

func (a *agent) unregister(pr *podRuntime) {
	a.mu.Lock()
	if a.pods[pr.uid] == pr {
		delete(a.pods, pr.uid)
	}
	a.mu.Unlock()
}

// nodeProviders returns the providers of the nodes created so far.
func (a *agent) nodeProviders() []*provider {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*provider(nil), a.providers...)
}

func (a *agent) allPods() []*podRuntime {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*podRuntime, 0, len(a.pods))
	for _, pr := range a.pods {
		out = append(out, pr)
	}
	return out
}

func (a *agent) kickVolumes() {
	for _, pr := range a.allPods() {
		kickChan(pr.volKick)
	}
}

func (a *agent) recordFile() string { return filepath.Join(a.cfg.StateDir, "created-mountpoints.txt") }

// shutdown stops every pod (grace capped at maxShutdownGrace) and waits for them.
func (a *agent) shutdown() {
	a.mu.Lock()
	a.stopping = true
	a.mu.Unlock()
	pods := a.allPods()
	for _, pr := range pods {
		grace := min(specGrace(&pr.podSpecCopy().Spec), maxShutdownGrace)
		pr.terminate(reasonShutdown, grace)
	}
	for _, pr := range pods {
		<-pr.done
	}
	a.log.Info("All pods stopped", "count", len(pods))
}

// hostsLoop rewrites every pod's hosts file on Service and EndpointSlice events and
// every hostsRefresh.
func (a *agent) hostsLoop(ctx context.Context) {
	tick := time.NewTicker(hostsRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-a.hostsKick:
		}
		for _, pr := range a.allPods() {
			pr.refreshHosts()
		}
	}
}

// serviceView lists all Services and EndpointSlices from the informer caches.
func (a *agent) serviceView() ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	svcs, err := a.services.List(labels.Everything())
	if err != nil {
		a.log.Error(err, "Failed to list Services")
	}
	sls, err := a.slices.List(labels.Everything())
	if err != nil {
		a.log.Error(err, "Failed to list EndpointSlices")
	}
	return svcs, sls
}

// Secret implements objectReader from the informer cache.
func (a *agent) Secret(namespace, name string) (*corev1.Secret, error) {
	return a.secrets.Secrets(namespace).Get(name)
}

// ConfigMap implements objectReader from the informer cache.
func (a *agent) ConfigMap(namespace, name string) (*corev1.ConfigMap, error) {
	return a.cms.ConfigMaps(namespace).Get(name)
}

// RequestToken implements tokenRequester with the TokenRequest API.
func (a *agent) RequestToken(ctx context.Context, namespace, serviceAccount, audience string, expirationSeconds int64, podName string, podUID types.UID) (string, time.Time, time.Time, error) {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: podName, UID: podUID},
	}}
	if audience != "" {
		tr.Spec.Audiences = []string{audience}
	}
	issued := time.Now()
	out, err := a.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, tr, metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, time.Time{}, err
	}
	return out.Status.Token, issued, out.Status.ExpirationTimestamp.Time, nil
}

// ClaimPath implements claimResolver: the hostPath or local path of the claim's bound
// PersistentVolume.
func (a *agent) ClaimPath(namespace, claim string) (string, error) {
	pvc, err := a.pvcs.PersistentVolumeClaims(namespace).Get(claim)
	if apierrors.IsNotFound(err) {
		return "", &waitError{msg: fmt.Sprintf("persistentvolumeclaim %q not found", claim)}
	}
	if err != nil {
		return "", fmt.Errorf("failed to read PersistentVolumeClaim %s/%s: %w", namespace, claim, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", &waitError{msg: fmt.Sprintf("waiting for PersistentVolumeClaim %q to be bound (phase %s)", claim, pvc.Status.Phase)}
	}
	pv, err := a.pvs.Get(pvc.Spec.VolumeName)
	if err != nil {
		return "", &waitError{msg: fmt.Sprintf("PersistentVolume %q of claim %q: %v", pvc.Spec.VolumeName, claim, err)}
	}
	switch {
	case pv.Spec.HostPath != nil:
		p := pv.Spec.HostPath.Path
		if err := os.MkdirAll(p, 0o755); err != nil {
			return "", fmt.Errorf("failed to create PersistentVolume directory %s: %w", p, err)
		}
		return p, nil
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	default:
		return "", fmt.Errorf("PersistentVolume %s has neither hostPath nor local: the rig can only bind local directories", pv.Name)
	}
}
