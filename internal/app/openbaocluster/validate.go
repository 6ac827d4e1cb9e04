package openbaocluster

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// validate runs the spec checks, then the version and image policy. A refusal
// changes nothing: the pass ends here with a terminal error (no retry until the spec
// changes), and the deferred status write carries the reason.
func (r *Reconciler) validate(ctx context.Context, p *pass) (ctrl.Result, error) {
	c := p.cluster
	if problem := workload.NamespaceProblem(c.Namespace, r.Config.ControllerServiceAccount.Namespace); problem != "" {
		p.refusal, p.refusalReason = problem, baov1.ReasonProtectedNamespace
		ctrl.LoggerFrom(ctx).Info("Refusing a cluster in a protected namespace")
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("spec refused (%s): %s", p.refusalReason, problem))
	}
	if ref := upgrade.CheckSpec(c); ref != nil {
		p.refusal, p.refusalReason = ref.Message, ref.Reason
		ctrl.LoggerFrom(ctx).Info("Refusing spec", "reason", string(ref.Reason))
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("spec refused (%s): %s", ref.Reason, ref.Message))
	}
	d := upgrade.EvaluateVersion(upgrade.VersionRequest{
		Desired:        c.Spec.Version,
		Image:          c.Spec.Image,
		CurrentVersion: c.Status.CurrentVersion,
	})
	p.decision = &d
	if d.Allowed {
		return ctrl.Result{}, nil
	}
	p.refusal, p.refusalReason = d.Message, baov1.Reason(d.Reason)
	ctrl.LoggerFrom(ctx).Info("Refusing spec", "reason", string(d.Reason), "version", c.Spec.Version, "image", c.Spec.Image)
	return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("spec refused (%s): %s", d.Reason, d.Message))
}
