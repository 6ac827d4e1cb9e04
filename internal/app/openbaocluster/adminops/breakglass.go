package adminops

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/breakglass"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// QuorumLossGrace is how long a loss of quorum that an upgrade did not plan lasts
// before break-glass (operation.QuorumLossGrace).
const QuorumLossGrace = operation.QuorumLossGrace

// Event reasons of break-glass.
const (
	eventBreakGlassEntered      baov1.Reason = "BreakGlassEntered"
	eventBreakGlassAcknowledged baov1.Reason = "BreakGlassAcknowledged"
)

// enterBreakGlass stops every automation of the cluster: status.breakGlass with a
// fresh nonce, the reason and message, the Raft view of this pass and the recovery
// steps, and a Warning event. Both reconcilers leave the cluster alone while it is
// active.
func (r *Reconciler) enterBreakGlass(c *baov1.OpenBaoCluster, obs *operation.Cluster, reason baov1.BreakGlassReason, member, msg string, rec *operation.Recovery) error {
	nonce, err := newNonce(r.Rand)
	if err != nil {
		return fmt.Errorf("failed to draw a break-glass nonce for %s/%s (%s: %s): %w", c.Namespace, c.Name, reason, msg, err)
	}
	leader, members := breakglass.View(obs)
	in := breakglass.Input{Name: c.Name, Namespace: c.Namespace, Reason: reason, Nonce: nonce, Member: member, Leader: leader,
		Snapshot: c.Status.LastSnapshot}
	var survivor, loss string
	if rec != nil {
		members = breakglass.WithRecovery(members, rec)
		survivor, loss = rec.Survivor, rec.Loss
		in.Survivor, in.Others = rec.Survivor, breakglass.Others(rec)
		if m := obs.Member(rec.Survivor); m != nil {
			in.SurvivorAddress = fmt.Sprintf("%s:%d", workload.NamesFor(c).MemberHost(int32(m.Ordinal), c.Namespace), workload.ClusterPort)
		}
	}
	if bg := c.Status.BlueGreen; bg != nil {
		in.Green = bg.Green.StatefulSet
		if s := bg.CurrentStep; s != nil && s.Attempts > 0 && c.Status.Upgrade != nil {
			in.Job = bluegreen.StepJobName(c, c.Status.Upgrade.ID, s)
			if !r.StepJobs && executorjob.MailedStep(executorjob.StepLabelOf(s.Action)) {
				// The step ran in the operation's serving executor, which logs it.
				in.Job = executorjob.ServeJobName(c, c.Status.Upgrade.ID)
			}
		}
	}
	t := metav1.NewTime(obs.Now)
	c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: reason, Message: msg, Leader: leader, Members: members,
		Nonce: nonce, EnteredAt: &t, RecoverySteps: breakglass.RecoverySteps(in), Survivor: survivor, Loss: loss}
	if up := c.Status.Upgrade; up != nil {
		up.WaitingFor = fmt.Sprintf("break-glass (%s): every automation of this cluster stopped; see status.breakGlass and %s", reason, breakglass.Runbook(reason))
	}
	r.event(c, corev1.EventTypeWarning, eventBreakGlassEntered, fmt.Sprintf("Every automation of this cluster stopped (%s): %s. "+
		"Follow status.breakGlass.recoverySteps (%s), then set %s to status.breakGlass.nonce", reason, msg, breakglass.Runbook(reason), baov1.AnnotationBreakGlassAck))
	return nil
}

// acknowledgeBreakGlass leaves break-glass on the current nonce (control.Judge
// accepted it), recording who and when, and the operator goes on from what it
// observes (a step that failed gets a fresh budget of attempts and time).
func (r *Reconciler) acknowledgeBreakGlass(c *baov1.OpenBaoCluster, now time.Time) {
	bg := c.Status.BreakGlass
	t := metav1.NewTime(now)
	bg.Active, bg.AcknowledgedAt, bg.AcknowledgedBy = false, &t, ackManager(c)
	if q := c.Status.Quorum; q != nil {
		// A majority still silent after the acknowledgement is judged afresh: at once
		// when its data is gone, after MajorityLostAfter when it may come back.
		q.LostSince = nil
	}
	if up := c.Status.Upgrade; up != nil {
		up.QuorumLostSince = nil
		up.WaitingFor = "break-glass acknowledged: observing afresh"
		if st := c.Status.BlueGreen; st != nil {
			// The phase's clock starts again and its step gets more attempts; the
			// failed Job is seen as failed once more and the next attempt follows.
			bluegreen.Retry(st, now)
		}
	}
	r.event(c, corev1.EventTypeNormal, eventBreakGlassAcknowledged, fmt.Sprintf("Break-glass (%s) acknowledged by %s: automation goes on from what it observes", bg.Reason, orUnknown(bg.AcknowledgedBy)))
}

// watchQuorum is the break-glass trigger of an upgrade of either strategy: a
// majority of voters unhealthy or missing, which no step plans. It records the
// voters while autopilot can be read; once a loss lasted QuorumLossGrace it enters
// break-glass. stop reports that the pass must do nothing else.
func (r *Reconciler) watchQuorum(ctx context.Context, c *baov1.OpenBaoCluster, obs *operation.Cluster) (res ctrl.Result, stop bool, err error) {
	up := c.Status.Upgrade
	planned := ""
	if st := up.CurrentStep; st != nil && st.Action == baov1.StepReplaceMember {
		planned = st.Pod
	}
	var since *time.Time
	if up.QuorumLostSince != nil {
		since = &up.QuorumLostSince.Time
	}
	w := operation.WatchQuorum(obs, up.LastVoters, since, planned, QuorumLossGrace, openbaoPollInterval)
	up.LastVoters, up.QuorumLostSince = w.LastVoters, nil
	if w.LostSince != nil {
		t := metav1.NewTime(*w.LostSince)
		up.QuorumLostSince = &t
	}
	switch {
	case w.BreakGlass:
		ctrl.LoggerFrom(ctx).Info("Entering break-glass: quorum lost", "silent", w.Silent, "voters", w.Voters)
		return ctrl.Result{}, true, r.enterBreakGlass(c, obs, baov1.BreakGlassQuorumLost, "", w.Message, nil)
	case w.Hold:
		up.WaitingFor = w.WaitingFor
		return ctrl.Result{RequeueAfter: w.RequeueAfter}, true, nil
	}
	return ctrl.Result{}, false, nil
}

// ackManager is the field manager that last set the break-glass-ack annotation
// (kubectl annotate --field-manager=<name> names a person), from managedFields.
func ackManager(c *baov1.OpenBaoCluster) string {
	key := []byte(`"f:` + baov1.AnnotationBreakGlassAck + `"`)
	var who string
	var when time.Time
	for _, mf := range c.ManagedFields {
		if mf.FieldsV1 == nil || !bytes.Contains(mf.FieldsV1.Raw, key) {
			continue
		}
		if t := mf.Time; who == "" || (t != nil && t.After(when)) {
			who = mf.Manager
			if t != nil {
				when = t.Time
			}
		}
	}
	return who
}

// newNonce draws 16 random bytes, hex-encoded.
func newNonce(src io.Reader) (string, error) {
	if src == nil {
		src = rand.Reader
	}
	b := make([]byte, 16)
	if _, err := io.ReadFull(src, b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func orUnknown(s string) string {
	if s == "" {
		return "an unnamed field manager"
	}
	return s
}
