package openbaocluster_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	app "github.com/baokeeper/baokeeper/internal/app/openbaocluster"
	"github.com/baokeeper/baokeeper/internal/app/openbaocluster/adminops"
	controller "github.com/baokeeper/baokeeper/internal/controller/openbaocluster"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/openbao/openbaofake"
	"github.com/baokeeper/baokeeper/internal/platform/saissuer"
	"github.com/baokeeper/baokeeper/test/testenv"
)

var (
	cfg       *rest.Config
	k8s       client.Client
	testEnv   *envtest.Environment
	scheme    = runtime.NewScheme()
	bao       = &openbaofake.Fake{}
	cancelMgr context.CancelFunc
	// newReconciler builds a reconciler with the same dependencies as the manager's,
	// for tests that call Reconcile directly.
	newReconciler func() *app.Reconciler
	operatorSA    = types.NamespacedName{Namespace: "baokeeper-system", Name: "baokeeper"}
)

// fakeFactory hands every cluster the same fake OpenBao: the API server is real in
// this suite, OpenBao is not (the real-OpenBao tests live in internal/service/workload).
type fakeFactory struct{}

func (fakeFactory) ForCluster(*baov1.OpenBaoCluster, []byte) (openbao.Reader, error) { return bao, nil }

func TestOpenBaoClusterEnvtest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "OpenBaoCluster envtest suite")
}

var _ = BeforeSuite(func() {
	assets, skip := testenv.Assets()
	if skip != "" {
		if testenv.Required() {
			Fail(skip)
		}
		Skip(skip)
	}
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(baov1.AddToScheme(scheme)).To(Succeed())
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controller.CacheOptions(),
	})
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	issuer := saissuer.NewCachedSource(saissuer.RESTGetter{Client: cs.Discovery().RESTClient()}, clock.RealClock{}, time.Minute)
	newReconciler = func() *app.Reconciler {
		return &app.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder("baokeeper"),
			Clock:     clock.RealClock{},
			Rand:      rand.Reader,
			Issuer:    issuer,
			OpenBao:   fakeFactory{},
			Config:    app.Config{ControllerServiceAccount: operatorSA},
		}
	}
	Expect(controller.SetupWithManager(mgr, newReconciler(), controller.DefaultWorkers)).To(Succeed())
	Expect(controller.SetupUpgradeWithManager(mgr, &adminops.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("baokeeper-upgrade"),
		Clock: clock.RealClock{}, OpenBao: fakeFactory{},
	}, controller.DefaultWorkers)).To(Succeed())

	var ctx context.Context
	ctx, cancelMgr = context.WithCancel(context.Background())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
})

var _ = AfterSuite(func() {
	if cancelMgr != nil {
		cancelMgr()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
