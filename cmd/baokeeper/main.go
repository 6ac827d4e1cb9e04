// Command baokeeper is the baokeeper operator. Its default mode, "manager", runs the
// controllers; "executor" is the mode executor Jobs run in.
package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	// The image has no CA files: when the system offers none, Go uses these
	// (Mozilla's roots, as golang.org/x/crypto ships them) for S3 over https.
	_ "golang.org/x/crypto/x509roots/fallback"
	// The IANA time zones of spec.snapshots.timeZone, for an image without them.
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	_ "time/tzdata"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	app "github.com/baokeeper/baokeeper/internal/app/openbaocluster"
	"github.com/baokeeper/baokeeper/internal/app/openbaocluster/adminops"
	controller "github.com/baokeeper/baokeeper/internal/controller/openbaocluster"
	"github.com/baokeeper/baokeeper/internal/metrics"
	"github.com/baokeeper/baokeeper/internal/platform/eventnote"
	"github.com/baokeeper/baokeeper/internal/platform/saissuer"
	"github.com/baokeeper/baokeeper/internal/platform/satoken"
)

// version is the release, set at link time by make image (-X main.version=...).
var version = "dev"

func main() {
	args := os.Args[1:]
	mode := "manager"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode, args = args[0], args[1:]
	}
	var err error
	switch mode {
	case "manager":
		err = runManager(args)
	case "executor":
		os.Exit(executorMain(args))
	case "version":
		fmt.Println(version)
	default:
		err = fmt.Errorf("unknown mode %q: use manager (default), executor or version", mode)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "baokeeper: %v\n", err)
		os.Exit(1)
	}
}

func runManager(args []string) error {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	metricsAddr := fs.String("metrics-bind-address", ":8443", "Address of the Prometheus metrics endpoint; 0 disables it.")
	metricsSecure := fs.Bool("metrics-secure", true, "Serve metrics over HTTPS, to callers that the Kubernetes API authenticates (TokenReview) and authorizes (SubjectAccessReview for GET /metrics). false serves plain HTTP to anyone who can reach the port.")
	metricsCertDir := fs.String("metrics-cert-dir", "", "Directory with tls.crt and tls.key for the metrics endpoint; empty: a self-signed certificate generated at start.")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	leaderElect := fs.Bool("leader-elect", false, "Elect a leader so that only one replica reconciles.")
	leaderElectID := fs.String("leader-elect-id", "baokeeper.openbao.baokeeper.dev", "Name of the leader-election Lease in the operator's namespace; two installations in one namespace need different names (the chart uses <release>.openbao.baokeeper.dev).")
	leaseDuration := fs.Duration("leader-elect-lease-duration", 15*time.Second, "How long a standby replica waits before it takes over a lease that is no longer renewed: the takeover time after the leading replica dies.")
	renewDeadline := fs.Duration("leader-elect-renew-deadline", 10*time.Second, "How long the leading replica retries renewing its lease before it gives up leadership and exits; less than --leader-elect-lease-duration.")
	retryPeriod := fs.Duration("leader-elect-retry-period", 2*time.Second, "How often replicas try to take or renew the lease.")
	controllerSA := fs.String("controller-service-account", "", "namespace/name of the operator's service account, bound to the read-only OpenBao role. Defaults to $POD_NAMESPACE/$SERVICE_ACCOUNT_NAME.")
	workers := fs.Int("workers", controller.DefaultWorkers, "Clusters each controller reconciles at once; one cluster is never reconciled twice at the same time.")
	openbaoTimeout := fs.Duration("openbao-timeout", 5*time.Second, "Upper bound of one OpenBao API call.")
	executorImage := fs.String("executor-image", os.Getenv("BAOKEEPER_IMAGE"), "Image of executor Jobs (defaults to $BAOKEEPER_IMAGE, the operator's own image); spec.upgrade.executor.image overrides it per cluster.")
	stepJobs := fs.Bool("executor-step-jobs", false, "Run each membership step (step-down, promote, demote, remove-peer) as an executor Job of its own, as baokeeper did before the executor mailbox; by default one executor per operation answers every step (docs/design/persistent-executor.md).")
	excludeNamespaces := fs.String("exclude-namespaces", "", "Comma-separated namespaces this operator leaves alone while it watches every other one (for namespaces another installation manages); not with --watch-namespaces.")
	watchNamespaces := fs.String("watch-namespaces", "", "Comma-separated namespaces whose OpenBaoClusters this operator manages; empty: every namespace. With a list, the operator reads and writes only there (Roles suffice; see docs/install.md).")
	opts := zap.Options{}
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")
	log.Info("Starting baokeeper", "version", version)

	sa, err := controllerServiceAccount(*controllerSA)
	if err != nil {
		return err
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("failed to register Kubernetes types: %w", err)
	}
	if err := baov1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("failed to register OpenBaoCluster types: %w", err)
	}

	if *leaderElect && (*renewDeadline <= 0 || *retryPeriod <= 0 || *leaseDuration <= *renewDeadline) {
		return fmt.Errorf("leader election needs 0 < --leader-elect-retry-period, 0 < --leader-elect-renew-deadline < --leader-elect-lease-duration; got %s, %s and %s: set them so",
			*retryPeriod, *renewDeadline, *leaseDuration)
	}
	namespaces, err := parseNamespaces("--watch-namespaces", *watchNamespaces)
	if err != nil {
		return err
	}
	excluded, err := parseNamespaces("--exclude-namespaces", *excludeNamespaces)
	if err != nil {
		return err
	}
	switch {
	case len(namespaces) > 0 && len(excluded) > 0:
		return fmt.Errorf("--watch-namespaces and --exclude-namespaces are both set: watch a list of namespaces, or every namespace but some, not both")
	case len(namespaces) > 0:
		log.Info("Watching OpenBaoClusters in these namespaces only", "watchNamespaces", namespaces)
	case len(excluded) > 0:
		log.Info("Watching OpenBaoClusters in every namespace except these", "excludeNamespaces", excluded)
	default:
		log.Info("Watching OpenBaoClusters in every namespace")
	}
	cfg := ctrl.GetConfigOrDie()
	metricsOpts := metricsserver.Options{BindAddress: *metricsAddr, SecureServing: *metricsSecure, CertDir: *metricsCertDir}
	if *metricsSecure {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOpts,
		HealthProbeBindAddress: *probeAddr,
		LeaderElection:         *leaderElect,
		LeaderElectionID:       *leaderElectID,
		LeaseDuration:          leaseDuration,
		RenewDeadline:          renewDeadline,
		RetryPeriod:            retryPeriod,
		Cache:                  controller.CacheOptionsExcluding(namespaces, excluded),
	})
	if err != nil {
		return fmt.Errorf("failed to create the manager: %w", err)
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create a Kubernetes client: %w", err)
	}
	clk := clock.RealClock{}
	upgradeMetrics := metrics.New()
	r := &app.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  eventnote.Recorder{EventRecorder: mgr.GetEventRecorder("baokeeper")},
		Clock:     clk,
		Rand:      rand.Reader,
		Issuer:    saissuer.NewCachedSource(saissuer.RESTGetter{Client: cs.Discovery().RESTClient()}, clk, 10*time.Minute),
		OpenBao: &app.CachingClientFactory{
			// One token per cluster, for the cluster's own audience (status.jwtAudience).
			Tokens:     (&satoken.Source{Client: cs.CoreV1(), ServiceAccount: sa, Clock: clk}).Token,
			Timeout:    *openbaoTimeout,
			Instrument: upgradeMetrics.InstrumentOpenBao,
		},
		Config: app.Config{ControllerServiceAccount: sa, HealthTimeout: *openbaoTimeout},
	}
	if err := controller.SetupWithManager(mgr, r, *workers); err != nil {
		return fmt.Errorf("failed to set up the OpenBaoCluster controller: %w", err)
	}
	if err := upgradeMetrics.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("failed to register metrics: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(metrics.NewStatusCollector(mgr.GetCache(), *openbaoTimeout, ctrl.Log.WithName("metrics"))); err != nil {
		return fmt.Errorf("failed to register the status metrics: %w", err)
	}
	ops := &adminops.Reconciler{
		Metrics:       upgradeMetrics,
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      eventnote.Recorder{EventRecorder: mgr.GetEventRecorder("baokeeper-upgrade")},
		Clock:         clk,
		OpenBao:       r.OpenBao,
		HealthTimeout: *openbaoTimeout,
		ExecutorImage: *executorImage,
		StepJobs:      *stepJobs,
		// The order of upgrades across clusters reads only these.
		Namespaces:         namespaces,
		ExcludedNamespaces: excluded,
		// The operator's own account, which every cluster's controller role binds.
		ControllerServiceAccount: sa,
		Rand:                     rand.Reader,
	}
	if ops.ExecutorImage == "" {
		return errors.New("the executor image is unknown: pass --executor-image or set BAOKEEPER_IMAGE to the operator's own image")
	}
	if err := controller.SetupUpgradeWithManager(mgr, ops, *workers); err != nil {
		return fmt.Errorf("failed to set up the upgrade controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("Starting manager", "controllerServiceAccount", sa.String())
	return mgr.Start(ctrl.SetupSignalHandler())
}

func controllerServiceAccount(flagValue string) (types.NamespacedName, error) {
	v := flagValue
	if v == "" {
		ns, name := os.Getenv("POD_NAMESPACE"), os.Getenv("SERVICE_ACCOUNT_NAME")
		if ns == "" || name == "" {
			return types.NamespacedName{}, errors.New("the operator's service account is unknown: pass --controller-service-account=namespace/name or set POD_NAMESPACE and SERVICE_ACCOUNT_NAME")
		}
		v = ns + "/" + name
	}
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("--controller-service-account %q must be namespace/name", v)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// parseNamespaces reads --watch-namespaces: names separated by commas, each a valid
// namespace name, none twice.
func parseNamespaces(flag, v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for _, ns := range strings.Split(v, ",") {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: %q is not a namespace name (%s): list namespaces separated by commas, for example team-a,team-b", flag, v, ns, strings.Join(errs, "; "))
		}
		if slices.Contains(out, ns) {
			return nil, fmt.Errorf("%s %q names %s twice: list each namespace once", flag, v, ns)
		}
		out = append(out, ns)
	}
	return out, nil
}
