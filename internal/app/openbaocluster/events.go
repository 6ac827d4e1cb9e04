package openbaocluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Event actions (the events API's "action" field).
const (
	actionCreate   = "Create"
	actionObserve  = "Observe"
	actionValidate = "Validate"
	actionIssue    = "Issue"
)

// emitTransitionEvents emits one event per transition a person cares about, by
// comparing the status before and after the pass.
func (r *Reconciler) emitTransitionEvents(c *baov1.OpenBaoCluster, before *baov1.OpenBaoClusterStatus, p *pass) {
	if r.Recorder == nil {
		return
	}
	if p.createdSTS {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, string(baov1.EventCreated), actionCreate,
			"Created the workload of a %d-member cluster at image %s", c.GetReplicas(), p.runningImg)
	}
	if p.issuedCert {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, string(baov1.EventCertificateIssued), actionIssue, "%s", p.tlsMessage)
	}
	if c.Status.Phase != before.Phase {
		switch c.Status.Phase {
		case baov1.PhaseRunning:
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, string(baov1.EventRunning), actionObserve, "%s", c.Status.Message)
		case baov1.PhaseDegraded:
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, string(baov1.EventDegraded), actionObserve, "%s", c.Status.Message)
		}
	}
	if p.refusal != "" {
		old := meta.FindStatusCondition(before.Conditions, string(baov1.ConditionSpecValid))
		if old == nil || old.Message != p.refusal || old.ObservedGeneration != c.Generation {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, string(baov1.EventSpecRefused), actionValidate, "%s", p.refusal)
		}
	}
	if p.blockedReason == baov1.ReasonApplyFailed {
		old := meta.FindStatusCondition(before.Conditions, string(baov1.ConditionDegraded))
		if old == nil || old.Message != p.blocked {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, string(baov1.EventApplyFailed), actionCreate, "%s", p.blocked)
		}
	}
	if p.decision != nil && p.decision.Allowed && p.decision.IsUpgrade {
		old := meta.FindStatusCondition(before.Conditions, string(baov1.ConditionSpecValid))
		if old == nil || old.ObservedGeneration != c.Generation {
			for _, w := range p.decision.Warnings {
				r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, string(w.Reason), actionValidate, "%s", w.Message)
			}
		}
	}
	oldProg := meta.FindStatusCondition(before.Conditions, string(baov1.ConditionProgressing))
	newProg := meta.FindStatusCondition(c.Status.Conditions, string(baov1.ConditionProgressing))
	if newProg != nil && newProg.Reason == string(baov1.ReasonUpgradePending) && (oldProg == nil || oldProg.Message != newProg.Message) {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, string(baov1.EventUpgradePending), actionValidate, "%s", newProg.Message)
	}
}
