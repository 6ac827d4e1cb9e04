package adminops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Input baokeeper did not write: entries of the executor mailbox that no operator or
// executor of the cluster signed (executorjob.Trusted). A pass that finds them acts
// on none of them, records them in status.refusedInput (the InputRefused condition
// follows), says so in one Warning event, and once its status write landed removes
// them from the mailbox and counts them (baokeeper_refused_inputs_total).

// refusedInputWindow is how long the InputRefused condition stays True after the last
// refusal.
const refusedInputWindow = time.Hour

// maxRefusedShown bounds the refusals status and an event name one by one.
const maxRefusedShown = 5

// refusedSourceMailbox is the source label of refused mailbox entries.
const refusedSourceMailbox = "Mailbox"

// recordRefused records the refused mailbox entries of cluster c in its status and
// returns the event that reports them ("" when there are none).
func recordRefused(c *baov1.OpenBaoCluster, refused []executorjob.Refusal, now time.Time) string {
	if len(refused) == 0 {
		return ""
	}
	st := c.Status.RefusedInput
	if st == nil {
		st = &baov1.RefusedInputStatus{}
		c.Status.RefusedInput = st
	}
	at := metav1.NewTime(now)
	st.Count += int64(len(refused))
	st.LastRefusedAt = &at
	mailbox := workload.NamesFor(c).ExecutorMailbox()
	var fresh []baov1.RefusedInput
	for _, f := range refused[:min(len(refused), maxRefusedShown)] {
		fresh = append(fresh, baov1.RefusedInput{
			Source: cut(fmt.Sprintf("ConfigMap %s, key %s", mailbox, f.Key), 320),
			Reason: cut(f.Reason, 512),
			At:     at,
		})
	}
	st.Last = append(fresh, st.Last...)[:min(len(fresh)+len(st.Last), maxRefusedShown)]

	var shown []string
	for _, f := range refused[:min(len(refused), maxRefusedShown)] {
		shown = append(shown, cut(f.String(), 200))
	}
	more := ""
	if n := len(refused) - maxRefusedShown; n > 0 {
		more = fmt.Sprintf(" (and %d more)", n)
	}
	return fmt.Sprintf("Refused and removed %d entries of the executor mailbox ConfigMap %s/%s that baokeeper did not write: %s%s. "+
		"None of them ran. Whoever wrote them may patch ConfigMaps in %s: check who holds that right (docs/security.md)",
		len(refused), c.Namespace, mailbox, strings.Join(shown, "; "), more, c.Namespace)
}

// cut is s, at most n bytes.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// refusedCondition is the InputRefused condition at now.
func refusedCondition(c *baov1.OpenBaoCluster, now time.Time) (bool, baov1.Reason, string) {
	st := c.Status.RefusedInput
	if st == nil || st.LastRefusedAt == nil || now.Sub(st.LastRefusedAt.Time) >= refusedInputWindow {
		return false, baov1.ReasonNoInputRefused, "baokeeper refused no input in the last hour"
	}
	msg := fmt.Sprintf("baokeeper refused %d inputs it did not write, the last at %s", st.Count, st.LastRefusedAt.UTC().Format(time.RFC3339))
	if len(st.Last) > 0 {
		msg += fmt.Sprintf(" (%s: %s)", st.Last[0].Source, st.Last[0].Reason)
	}
	return true, baov1.ReasonMailboxEntryRefused, msg + "; nothing of it ran (kubectl describe shows the MailboxEntryRefused events)"
}

// dropRefused removes the refused entries from the mailbox and counts them, once the
// pass's status (which records them) landed. A key rewritten in between is removed
// as well: it is not the operator's either (the operator's own keys are never
// refused), and the next pass would refuse it again.
func (r *Reconciler) dropRefused(ctx context.Context, c *baov1.OpenBaoCluster, v *executorView) error {
	if v == nil || len(v.refused) == 0 {
		return nil
	}
	data := map[string]any{}
	for _, f := range v.refused {
		data[f.Key] = nil
	}
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return fmt.Errorf("failed to encode the removal of refused mailbox entries: %w", err)
	}
	mailbox := workload.ExecutorMailbox(c)
	if err := r.Client.Patch(ctx, mailbox, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to remove %d refused entries from the executor mailbox %s/%s: %w", len(v.refused), c.Namespace, mailbox.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Removed mailbox entries baokeeper did not write", "ConfigMap", mailbox.Name, "entries", len(v.refused))
	if r.Metrics != nil {
		r.Metrics.InputsRefused(c.Namespace, c.Name, refusedSourceMailbox, len(v.refused))
	}
	return nil
}

// reportRefused records this pass's refusals in status and holds their event until
// the status write.
func (r *Reconciler) reportRefused(c *baov1.OpenBaoCluster, now time.Time) {
	if r.executors == nil {
		return
	}
	if msg := recordRefused(c, r.executors.refused, now); msg != "" {
		r.event(c, corev1.EventTypeWarning, baov1.ReasonMailboxEntryRefused, msg)
	}
}
