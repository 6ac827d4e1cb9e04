//go:build scale

// Package scale_test is the idle-cost benchmark (`make bench-scale`): the operator's
// two controllers, wired as cmd/baokeeper wires them, over many clusters on envtest (a
// real kube-apiserver and etcd) with simulated members. It prints how long the
// operator takes to bring every cluster to Running, how many reconciles and OpenBao
// requests idle clusters cost per minute (the bound: one status refresh per cluster every 30 s), the operator's memory
// over the idle window, and how long a restarted operator takes to reconcile every
// cluster once.
package scale_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	app "github.com/baokeeper/baokeeper/internal/app/openbaocluster"
	"github.com/baokeeper/baokeeper/internal/app/openbaocluster/adminops"
	controller "github.com/baokeeper/baokeeper/internal/controller/openbaocluster"
	"github.com/baokeeper/baokeeper/internal/metrics"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/saissuer"
	"github.com/baokeeper/baokeeper/internal/service/workload"
	"github.com/baokeeper/baokeeper/test/testenv"
)

const (
	// clustersEnv and idleEnv shrink the run for a quick try:
	// BENCH_SCALE_CLUSTERS=20 BENCH_SCALE_IDLE=1m make bench-scale.
	clustersEnv     = "BENCH_SCALE_CLUSTERS"
	idleEnv         = "BENCH_SCALE_IDLE"
	defaultClusters = 200
	defaultIdle     = 10 * time.Minute
	// sampleEvery is the idle window's sampling period.
	sampleEvery = time.Minute
	// members is each cluster's size.
	members = 3
	// quiet is how long the upgrade manager's reconcile counter must stand still
	// before the idle window starts: the clusters have settled.
	quiet = 15 * time.Second
	// version is what every simulated member runs.
	version = "2.4.0"
)

func TestScale(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Idle cost and start-up over many clusters (envtest)")
}

var _ = Describe("Many idle clusters", Ordered, func() {
	var (
		cfg     *rest.Config
		k8s     client.Client
		sim     *simulation
		n       int
		idle    time.Duration
		report  strings.Builder
		stopOps context.CancelFunc
	)

	BeforeAll(func() {
		// Errors only: 200 clusters' info logs would be the run's main cost.
		logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.Level(zapcore.ErrorLevel)))
		n = envInt(clustersEnv, defaultClusters)
		idle = envDuration(idleEnv, defaultIdle)
		assets, skip := testenv.Assets()
		if skip != "" {
			Fail(skip)
		}
		env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
			ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets}
		// Two ClusterIP Services per cluster: envtest's default range (a /24) holds
		// 127 clusters.
		env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
		var err error
		cfg, err = env.Start()
		Expect(err).NotTo(HaveOccurred(), "starting envtest from %s", assets)
		DeferCleanup(env.Stop)
		// Many clusters' writes at once: the defaults (QPS 5, burst 10) would measure
		// the test's client-side throttling, not the operator.
		cfg.QPS, cfg.Burst = 500, 1000
		scheme := clientgoscheme.Scheme
		Expect(baov1.AddToScheme(scheme)).To(Succeed())
		k8s, err = client.New(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		sim = &simulation{k8s: k8s, clusters: map[string]*simCluster{}}
		fmt.Fprintf(&report, "\n==== idle cost over %d clusters of %d simulated members (envtest; %d CPUs, Go %s) ====\n", n, members, runtime.NumCPU(), runtime.Version())
	})

	AfterAll(func() {
		if stopOps != nil {
			stopOps()
		}
		AddReportEntry("idle cost", report.String())
		fmt.Fprint(os.Stdout, report.String()+"\n")
	})

	It("brings every cluster to Running", func(ctx SpecContext) {
		stopOps = startOperator(cfg, sim)
		start := time.Now()
		for i := range n {
			ns := fmt.Sprintf("scale-%03d", i)
			Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			replicas := int32(members)
			Expect(k8s.Create(ctx, &baov1.OpenBaoCluster{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bao"},
				Spec:       baov1.OpenBaoClusterSpec{Version: version, Replicas: &replicas},
			})).To(Succeed())
		}
		created := time.Since(start)
		kctx, stopKubelet := context.WithCancel(ctx)
		go sim.kubelet(kctx)
		Eventually(func(g Gomega) {
			list := &baov1.OpenBaoClusterList{}
			g.Expect(k8s.List(ctx, list)).To(Succeed())
			running := 0
			for _, c := range list.Items {
				if c.Status.Phase == baov1.PhaseRunning && c.Status.CurrentVersion == version {
					running++
				}
			}
			g.Expect(running).To(Equal(n), "clusters Running on %s", version)
		}, 15*time.Minute, time.Second).Should(Succeed())
		stopKubelet()
		fmt.Fprintf(&report, "bring-up: %d clusters created in %s; every one Running on %s %s after the first create (simulated kubelet: pods Ready as soon as they exist)\n",
			n, created.Round(time.Millisecond), version, time.Since(start).Round(time.Second))
	}, SpecTimeout(20*time.Minute))

	It("costs nothing while the clusters are idle, and its memory stays flat", func(ctx SpecContext) {
		settled := waitQuiet(ctx)
		fmt.Fprintf(&report, "settled (reconcile counters still for %s) %s after Running\n", quiet, settled.Round(time.Second))
		fmt.Fprintf(&report, "\n| minute | reconciles (workload) | reconciles (upgrade) | OpenBao requests | heap in use after GC | RSS |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n")
		prev := sample(sim)
		fmt.Fprintf(&report, "| 0 | | | | %s | %s |\n", mib(prev.heap), mib(prev.rss))
		var heaps []uint64
		total := sampleCounts{}
		for minute := 1; time.Duration(minute-1)*sampleEvery < idle; minute++ {
			select {
			case <-ctx.Done():
				Fail("the idle window was cut short")
			case <-time.After(min(sampleEvery, idle-time.Duration(minute-1)*sampleEvery)):
			}
			cur := sample(sim)
			d := cur.minus(prev)
			total = total.plus(d)
			heaps = append(heaps, cur.heap)
			fmt.Fprintf(&report, "| %d | %d | %d | %d | %s | %s |\n", minute, d.workload, d.upgrade, d.requests, mib(cur.heap), mib(cur.rss))
			prev = cur
		}
		minutes := idle.Minutes()
		fmt.Fprintf(&report, "\nidle over %s: %.1f reconciles/min (workload %d, upgrade %d in all), %.1f OpenBao requests/min; heap in use after GC min %s, max %s\n",
			idle, float64(total.workload+total.upgrade)/minutes, total.workload, total.upgrade, float64(total.requests)/minutes,
			mib(slices.Min(heaps)), mib(slices.Max(heaps)))
		// The workload loop observes every cluster every app.StatusRefresh (one
		// sys/health per member and one autopilot read), so that no status is older
		// than that bound (docs/design/day-two.md); the upgrade manager costs nothing
		// while every member votes. 10 % over the bound allows for a refresh that
		// falls on both edges of the window.
		perMinute := float64(time.Minute) / float64(app.StatusRefresh)
		Expect(total.upgrade).To(BeZero(), "idle clusters whose members all vote cost the upgrade manager no reconcile")
		Expect(float64(total.workload)/minutes/float64(n)).To(BeNumerically("<=", perMinute*1.1), "one workload reconcile per cluster per refresh")
		Expect(float64(total.requests)/minutes/float64(n)).To(BeNumerically("<=", perMinute*(members+1)*1.1), "members + 1 OpenBao requests per cluster per refresh")
	}, SpecTimeout(30*time.Minute))

	It("reconciles every cluster once soon after a restart", func(ctx SpecContext) {
		stopOps()
		before := sample(sim)
		sim.resetFirstCalls()
		start := time.Now()
		stopOps = startOperator(cfg, sim)
		var all time.Duration
		Eventually(func(g Gomega) {
			d := sample(sim).minus(before)
			g.Expect(d.workload).To(BeNumerically(">=", n), "workload reconciles")
			g.Expect(d.upgrade).To(BeNumerically(">=", n), "upgrade reconciles")
			last, seen := sim.lastFirstCall()
			g.Expect(seen).To(Equal(n), "clusters whose OpenBao was read since the restart")
			all = last.Sub(start)
		}, 10*time.Minute, 100*time.Millisecond).Should(Succeed())
		settled := waitQuiet(ctx)
		d := sample(sim).minus(before)
		fmt.Fprintf(&report, "restart: every cluster reconciled (its OpenBao read) %s after the new manager started; settled %s later, after %d workload and %d upgrade reconciles and %d OpenBao requests (%.1f per cluster)\n",
			all.Round(time.Millisecond), settled.Round(time.Second), d.workload, d.upgrade, d.requests, float64(d.requests)/float64(n))
	}, SpecTimeout(15*time.Minute))
})

// startOperator starts a manager with both controllers, as cmd/baokeeper does, over
// the simulation's OpenBao, and returns its stop.
func startOperator(cfg *rest.Config, sim *simulation) context.CancelFunc {
	GinkgoHelper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  clientgoscheme.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controller.CacheOptions(),
		// A restart in the same process registers the same controller names again.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	clk := clock.RealClock{}
	Expect(controller.SetupWithManager(mgr, &app.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("baokeeper"),
		Clock: clk, Rand: rand.Reader,
		Issuer:  saissuer.NewCachedSource(saissuer.RESTGetter{Client: cs.Discovery().RESTClient()}, clk, 10*time.Minute),
		OpenBao: sim,
		Config:  app.Config{ControllerServiceAccount: types.NamespacedName{Namespace: "baokeeper-system", Name: "baokeeper"}},
	}, controller.DefaultWorkers)).To(Succeed())
	Expect(controller.SetupUpgradeWithManager(mgr, &adminops.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("baokeeper-upgrade"),
		Clock: clk, OpenBao: sim, Metrics: metrics.New(),
	}, controller.DefaultWorkers)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() {
		cancel()
		<-done
	}
}

// waitQuiet waits until neither controller has reconciled for `quiet` and returns
// how long that took.
func waitQuiet(ctx context.Context) time.Duration {
	GinkgoHelper()
	start := time.Now()
	// The workload loop refreshes every cluster on a timer (app.StatusRefresh): the
	// clusters have settled once the upgrade manager stands still.
	total := func() int64 { return reconciles()["openbaocluster-upgrade"] }
	last, lastChange := total(), time.Now()
	Eventually(func() time.Duration {
		if cur := total(); cur != last {
			last, lastChange = cur, time.Now()
		}
		return time.Since(lastChange)
	}).WithContext(ctx).WithTimeout(10 * time.Minute).WithPolling(time.Second).Should(BeNumerically(">=", quiet))
	return lastChange.Sub(start)
}

// sampleCounts are cumulative counts and the memory at one moment.
type sampleCounts struct {
	workload, upgrade, requests int64
	heap, rss                   uint64
}

func (a sampleCounts) minus(b sampleCounts) sampleCounts {
	return sampleCounts{workload: a.workload - b.workload, upgrade: a.upgrade - b.upgrade, requests: a.requests - b.requests}
}

func (a sampleCounts) plus(b sampleCounts) sampleCounts {
	return sampleCounts{workload: a.workload + b.workload, upgrade: a.upgrade + b.upgrade, requests: a.requests + b.requests}
}

func sample(sim *simulation) sampleCounts {
	GinkgoHelper()
	r := reconciles()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sampleCounts{workload: r["openbaocluster"], upgrade: r["openbaocluster-upgrade"], requests: sim.requests.Load(),
		heap: ms.HeapInuse, rss: rss()}
}

// reconciles reads controller-runtime's controller_runtime_reconcile_total, summed
// over results, by controller.
func reconciles() map[string]int64 {
	GinkgoHelper()
	mfs, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int64{}
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" {
					out[l.GetValue()] += int64(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}

// rss is the process's resident set (VmRSS of /proc/self/status), 0 when unknown.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// simulation stands in for the kubelet, the StatefulSet controller and every
// cluster's OpenBao: members are Ready as soon as their pods exist, and each cluster's
// OpenBao is a healthy 3-voter Raft cluster led by member 0.
type simulation struct {
	k8s      client.Client
	requests atomic.Int64

	mu       sync.Mutex
	clusters map[string]*simCluster // by namespace
}

// ForCluster implements app.ClientFactory and adminops' factory.
func (s *simulation) ForCluster(c *baov1.OpenBaoCluster, _ []byte) (openbao.Reader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.clusters[c.Namespace]
	if !ok {
		sc = newSimCluster(s, c)
		s.clusters[c.Namespace] = sc
	}
	return sc, nil
}

func (s *simulation) resetFirstCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clusters {
		c.mu.Lock()
		c.firstCall = time.Time{}
		c.mu.Unlock()
	}
}

// lastFirstCall is the latest of the clusters' first OpenBao calls since the last
// reset, and how many clusters made one.
func (s *simulation) lastFirstCall() (time.Time, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last time.Time
	seen := 0
	for _, c := range s.clusters {
		c.mu.Lock()
		if !c.firstCall.IsZero() {
			seen++
			if c.firstCall.After(last) {
				last = c.firstCall
			}
		}
		c.mu.Unlock()
	}
	return last, seen
}

// kubelet creates the pods of every StatefulSet, Ready, and reports the
// StatefulSet's status, until ctx ends.
func (s *simulation) kubelet(ctx context.Context) {
	defer GinkgoRecover()
	for ctx.Err() == nil {
		list := &appsv1.StatefulSetList{}
		if err := s.k8s.List(ctx, list); err == nil {
			for i := range list.Items {
				sts := &list.Items[i]
				if ptr.Deref(sts.Spec.Replicas, 0) == sts.Status.ReadyReplicas && sts.Status.ObservedGeneration == sts.Generation {
					continue
				}
				s.runPods(ctx, sts)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *simulation) runPods(ctx context.Context, sts *appsv1.StatefulSet) {
	replicas := ptr.Deref(sts.Spec.Replicas, 0)
	for i := range replicas {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		pod := &corev1.Pod{}
		if err := s.k8s.Get(ctx, types.NamespacedName{Namespace: sts.Namespace, Name: name}, pod); err != nil {
			pod = &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: name, Labels: sts.Spec.Template.Labels,
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
				Spec: *sts.Spec.Template.Spec.DeepCopy(),
			}
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}})
			if err := s.k8s.Create(ctx, pod); err != nil {
				return
			}
		}
		if isReady(pod) {
			continue
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if err := s.k8s.Status().Update(ctx, pod); err != nil {
			return
		}
	}
	sts.Status.ObservedGeneration = sts.Generation
	sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.CurrentReplicas, sts.Status.UpdatedReplicas = replicas, replicas, replicas, replicas
	sts.Status.CurrentRevision, sts.Status.UpdateRevision = sts.Name+"-1", sts.Name+"-1"
	_ = s.k8s.Status().Update(ctx, sts)
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// simCluster is one cluster's OpenBao: a healthy Raft cluster of `members` voters
// on `version`, led by member 0. It counts every call.
type simCluster struct {
	sim     *simulation
	names   []string
	leader  openbao.Leader
	raft    openbao.RaftConfiguration
	pilot   openbao.AutopilotState
	pilotMu sync.Mutex

	mu        sync.Mutex
	firstCall time.Time
}

func newSimCluster(s *simulation, c *baov1.OpenBaoCluster) *simCluster {
	sc := &simCluster{sim: s}
	n := workload.NamesFor(c)
	addr := func(i int, port int) string {
		return fmt.Sprintf("https://%s:%d", n.MemberHost(int32(i), c.Namespace), port)
	}
	sc.pilot = openbao.AutopilotState{Healthy: true, FailureTolerance: (members - 1) / 2, Servers: map[string]openbao.AutopilotServer{}}
	for i := range members {
		name := n.Member(int32(i))
		sc.names = append(sc.names, name)
		sc.raft.Servers = append(sc.raft.Servers, openbao.RaftServer{NodeID: name, Address: strings.TrimPrefix(addr(i, workload.ClusterPort), "https://"), Leader: i == 0, Voter: true})
		status := openbao.AutopilotStatusVoter
		if i == 0 {
			status = openbao.AutopilotStatusLeader
		}
		sc.pilot.Voters = append(sc.pilot.Voters, name)
		sc.pilot.Servers[name] = openbao.AutopilotServer{ID: name, Name: name, NodeStatus: "alive", Status: status, NodeType: "voter",
			Healthy: true, Version: version, LastIndex: 100}
	}
	sc.pilot.Leader = sc.names[0]
	sc.leader = openbao.Leader{LeaderAddress: addr(0, workload.APIPort), LeaderClusterAddress: addr(0, workload.ClusterPort), RaftCommittedIndex: 100, RaftAppliedIndex: 100}
	return sc
}

func (c *simCluster) called() {
	c.sim.requests.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstCall.IsZero() {
		c.firstCall = time.Now()
	}
}

// Health implements openbao.Reader: member 0 is active, the others standbys.
func (c *simCluster) Health(_ context.Context, addr string) (*openbao.Health, error) {
	c.called()
	return &openbao.Health{Initialized: true, Standby: !strings.Contains(addr, "//"+c.names[0]+"."), Version: version, ClusterName: "sim"}, nil
}

// Leader implements openbao.Reader.
func (c *simCluster) Leader(context.Context) (*openbao.Leader, error) {
	c.called()
	l := c.leader
	return &l, nil
}

// MemberLeader implements openbao.Reader: every simulated member follows the leader,
// caught up.
func (c *simCluster) MemberLeader(context.Context, string) (*openbao.Leader, error) {
	c.called()
	l := c.leader
	l.IsSelf = false
	return &l, nil
}

// MemberReplication implements openbao.Reader: the leader replicates to every
// simulated member.
func (c *simCluster) MemberReplication(context.Context, string) (*openbao.Replication, error) {
	c.called()
	return &openbao.Replication{AppendEntries: 1}, nil
}

// RaftConfiguration implements openbao.Reader.
func (c *simCluster) RaftConfiguration(context.Context) (*openbao.RaftConfiguration, error) {
	c.called()
	return &openbao.RaftConfiguration{Servers: slices.Clone(c.raft.Servers)}, nil
}

// AutopilotState implements openbao.Reader.
func (c *simCluster) AutopilotState(context.Context) (*openbao.AutopilotState, error) {
	c.called()
	c.pilotMu.Lock()
	defer c.pilotMu.Unlock()
	st := c.pilot
	st.Voters = slices.Clone(c.pilot.Voters)
	st.Servers = make(map[string]openbao.AutopilotServer, len(c.pilot.Servers))
	for k, v := range c.pilot.Servers {
		st.Servers[k] = v
	}
	return &st, nil
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}
