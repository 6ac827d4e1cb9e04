package openbaocluster

import (
	"context"
	"errors"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/saissuer"
	"github.com/baokeeper/baokeeper/internal/platform/statusapply"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// ClientFactory returns the controller's read-only OpenBao client for one cluster.
type ClientFactory interface {
	// ForCluster returns a client for the cluster, verifying TLS against caPEM.
	ForCluster(c *baov1.OpenBaoCluster, caPEM []byte) (openbao.Reader, error)
}

// Config is the static configuration of the reconciler.
type Config struct {
	// ControllerServiceAccount is the operator's own service account, bound to the
	// read-only OpenBao role.
	ControllerServiceAccount types.NamespacedName
	// HealthTimeout bounds the sys/health read of one member.
	HealthTimeout time.Duration
}

// Reconciler reconciles the workload of OpenBaoClusters.
type Reconciler struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	// APIReader reads objects baokeeper does not label (a user-provided TLS Secret).
	APIReader client.Reader
	// Recorder emits events at transitions a person cares about.
	Recorder events.EventRecorder
	// Clock is read once per pass.
	Clock clock.PassiveClock
	// Rand is the source of keys and serial numbers.
	Rand io.Reader
	// Issuer gives the service-account issuer and keys for the JWT auth method.
	Issuer saissuer.Source
	// OpenBao builds read-only OpenBao clients.
	OpenBao ClientFactory
	// Config is the static configuration.
	Config Config
}

// Reconcile runs one pass; see the package documentation for its steps.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	cluster := &baov1.OpenBaoCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("OpenBaoCluster", klog.KObj(cluster)))

	before := cluster.Status.DeepCopy()
	obs, err := r.observe(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := &pass{cluster: cluster, obs: obs}

	defer func() {
		computeStatus(cluster, obs, p, reterr == nil)
		if _, err := statusapply.Apply(ctx, r.Client, statusapply.Workload(), cluster, before); err != nil {
			reterr = errors.Join(reterr, err)
			return
		}
		r.emitTransitionEvents(cluster, before, p)
	}()

	if res, err := r.validate(ctx, p); err != nil || !res.IsZero() {
		return res, err
	}
	if bg := cluster.Status.BreakGlass; bg != nil && bg.Active {
		// Invariant 7: no object of the cluster changes while a person decides; the
		// status above still reports what is observed.
		ctrl.LoggerFrom(ctx).V(1).Info("Break-glass is active: leaving the workload objects alone", "reason", string(bg.Reason))
		return ctrl.Result{}, nil
	}
	if conflicts := workload.Conflicts(cluster, obs.existing); len(conflicts) > 0 {
		// Never take over what baokeeper did not create: writing any of these would
		// overwrite another application's data or make the cluster its owner. The
		// other objects are not watched, so the check runs again on a timer.
		p.refusal, p.refusalReason = workload.ConflictMessage(cluster, conflicts, ConflictRecheck), baov1.ReasonNameConflict
		ctrl.LoggerFrom(ctx).Info("Refusing to take over objects the cluster did not create", "conflicts", len(conflicts))
		return ctrl.Result{RequeueAfter: ConflictRecheck}, nil
	}
	if res, err := r.reconcileWorkload(ctx, p); err != nil || !res.IsZero() {
		return res, err
	}
	return r.requeueAfter(p), nil
}

// Status freshness: OpenBao's state has no watch, so a cluster whose Kubernetes
// objects do not change is observed again on a timer (one sys/health read per Ready
// member and one autopilot read), and sooner after a read that failed (a member's
// DNS name not resolving yet right after it started, a timeout). No status is older
// than StatusRefresh, idle or not.
const (
	// StatusRefresh bounds how old an idle cluster's status may be.
	StatusRefresh = 30 * time.Second
	// ConflictRecheck is how soon a cluster refused for a name conflict looks
	// again: the objects in its way are not baokeeper's, so no watch reports their
	// removal. A check reads only the names still missing from the cache.
	ConflictRecheck = 10 * time.Second
	// ReadRetry is how soon a pass whose OpenBao read failed looks again.
	ReadRetry = 5 * time.Second
)

// requeueAfter is the workload loop's timer: the renewal of an operator-issued
// certificate, and the status refresh of a cluster that exists. Everything else is
// driven by watches.
func (r *Reconciler) requeueAfter(p *pass) ctrl.Result {
	d := time.Duration(0)
	if p.obs.sts != nil || p.createdSTS {
		d = StatusRefresh
		if p.obs.readFailed() {
			d = ReadRetry
		}
	}
	if !p.renewAt.IsZero() {
		renew := max(p.renewAt.Sub(p.obs.now), time.Second)
		if d == 0 || renew < d {
			d = renew
		}
	}
	return ctrl.Result{RequeueAfter: d}
}
