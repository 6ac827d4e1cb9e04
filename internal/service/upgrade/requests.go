package upgrade

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// RequestKind names a manual control annotation.
type RequestKind string

// The manual controls, each an annotation on the OpenBaoCluster.
const (
	RequestPromote       RequestKind = baov1.AnnotationPromote
	RequestRollback      RequestKind = baov1.AnnotationRollback
	RequestRetry         RequestKind = baov1.AnnotationRetry
	RequestBreakGlassAck RequestKind = baov1.AnnotationBreakGlassAck
	RequestRestart       RequestKind = baov1.AnnotationRestart
	RequestSnapshot      RequestKind = baov1.AnnotationSnapshot
	RequestRestore       RequestKind = baov1.AnnotationRestore
	RequestRehearse      RequestKind = baov1.AnnotationRehearse
	RequestRecoverQuorum RequestKind = baov1.AnnotationRecoverQuorum
)

// Request is one new (not yet handled) value of a control annotation.
type Request struct {
	Kind  RequestKind
	Value string
}

// MaxRequestValueLength bounds an annotation value: a token, a timestamp or a nonce.
const MaxRequestValueLength = 128

var requestValue = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:+-]*$`)

// PendingRequests returns the control annotations whose value differs from the last
// handled one in status.requests, in a fixed order. Controls are edge-triggered: the
// operator acts once per new value. An invalid value is returned as an error, naming
// the annotation and what a valid value looks like, and is not acted on.
//
// An invalid value is reported once: the caller records it as handled with
// MarkInvalidHandled (a short hash, since the value itself may be long), so a value
// such as the output of date (with spaces) gives one warning, not one per pass.
func PendingRequests(annotations map[string]string, handled baov1.RequestsStatus) ([]Request, []InvalidRequest) {
	kinds := []struct {
		kind    RequestKind
		handled string
	}{
		{RequestBreakGlassAck, handled.BreakGlassAck},
		{RequestRecoverQuorum, handled.RecoverQuorum},
		{RequestRetry, handled.Retry},
		{RequestRollback, handled.Rollback},
		{RequestPromote, handled.Promote},
		{RequestRestart, handled.Restart},
		{RequestSnapshot, handled.Snapshot},
		{RequestRestore, handled.Restore},
		{RequestRehearse, handled.Rehearse},
	}
	var out []Request
	var errs []InvalidRequest
	for _, k := range kinds {
		v, ok := annotations[string(k.kind)]
		if !ok || v == k.handled || invalidMarker(v) == k.handled {
			continue
		}
		if err := ValidateRequestValue(v); err != nil {
			errs = append(errs, InvalidRequest{Kind: k.kind, Value: v, Err: err})
			continue
		}
		out = append(out, Request{Kind: k.kind, Value: v})
	}
	return out, errs
}

// ValidateRequestValue accepts a short token of letters, digits and . _ : + -, such
// as a timestamp (2026-11-29T10:00:00Z) or a counter.
func ValidateRequestValue(v string) error {
	if v == "" {
		return fmt.Errorf("the value is empty: set it to a new token, for example the current time")
	}
	if len(v) > MaxRequestValueLength {
		return fmt.Errorf("the value has %d characters; use at most %d", len(v), MaxRequestValueLength)
	}
	if !requestValue.MatchString(v) {
		return fmt.Errorf("the value %q has characters other than letters, digits and . _ : + -; use a token such as $(date +%%s)", v)
	}
	return nil
}

// MarkHandled records a request's value as handled in status.requests.
func MarkHandled(st *baov1.RequestsStatus, r Request) {
	switch r.Kind {
	case RequestPromote:
		st.Promote = r.Value
	case RequestRollback:
		st.Rollback = r.Value
	case RequestRetry:
		st.Retry = r.Value
	case RequestBreakGlassAck:
		st.BreakGlassAck = r.Value
	case RequestRestart:
		st.Restart = r.Value
	case RequestSnapshot:
		st.Snapshot = r.Value
	case RequestRestore:
		st.Restore = r.Value
	case RequestRehearse:
		st.Rehearse = r.Value
	case RequestRecoverQuorum:
		st.RecoverQuorum = r.Value
	}
}

// InvalidRequest is a new value of a control annotation that is not valid.
type InvalidRequest struct {
	Kind  RequestKind
	Value string
	Err   error
}

// Error names the annotation and says what a valid value looks like.
func (e InvalidRequest) Error() string { return fmt.Sprintf("annotation %s: %v", e.Kind, e.Err) }

// Unwrap returns the validation error.
func (e InvalidRequest) Unwrap() error { return e.Err }

// invalidMarker is what status.requests records for an invalid value: "invalid-"
// and 12 hex digits of its SHA-256, which a valid token never equals.
func invalidMarker(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "invalid-" + hex.EncodeToString(sum[:6])
}

// MarkInvalidHandled records an invalid value as handled, so it is reported once.
func MarkInvalidHandled(st *baov1.RequestsStatus, e InvalidRequest) {
	MarkHandled(st, Request{Kind: e.Kind, Value: invalidMarker(e.Value)})
}

// RequestRefusal says why a valid request does nothing in the cluster's current
// state, in words that fit the request: promote and rollback belong to blue-green
// upgrades, retry to a failed step, break-glass-ack to an active break-glass. A
// rollback of a running blue-green upgrade is decided by bluegreen.AcceptsRollback.
func RequestRefusal(r Request, c *baov1.OpenBaoCluster) string {
	prefix := fmt.Sprintf("Ignoring %s=%s: ", r.Kind, r.Value)
	up := c.Status.Upgrade
	switch r.Kind {
	case RequestPromote, RequestRollback:
		if bg := c.Status.BlueGreen; r.Kind == RequestPromote && bg != nil {
			if bg.Promotion == baov1.PromotionRequested || bg.Promotion == baov1.PromotionAutomatic {
				return prefix + fmt.Sprintf("green %s is already released for promotion (%s); the value is recorded as handled and does nothing", bg.Green.StatefulSet, bg.Promotion)
			}
			return prefix + fmt.Sprintf("the blue-green upgrade is in phase %s and does not wait for promotion yet; a value set before the hold, or left from an earlier upgrade, "+
				"releases nothing: once status.blueGreen.promotion is Waiting, set baokeeper.dev/promote to a new value", bg.Phase)
		}
		if up != nil && up.Strategy != baov1.BlueGreenStrategy {
			return prefix + fmt.Sprintf("it applies to blue-green upgrades only, and the upgrade in progress (%s to %s) is a rolling upgrade; "+
				"a rolling upgrade needs no promotion, and to undo it set spec.version back before the first member is replaced (see status.upgrade.plan.undoPath)",
				up.FromVersion, up.TargetVersion)
		}
		return prefix + "it applies to a blue-green upgrade that waits for it, and none runs"
	case RequestRetry:
		if up != nil || c.Status.Scaling != nil {
			return prefix + "nothing has failed: the operation in progress goes on by itself; retry applies after a failure (status.upgrade.failure or status.scaling.failure)"
		}
		return prefix + "no upgrade or scaling runs, so there is nothing to retry"
	default:
		return prefix + "break-glass is not active, so there is nothing to acknowledge"
	}
}

// Sentence starts a message with a capital letter, unless its first word is a name
// (a member, a StatefulSet, a Job: names keep their case, "bao-0 is a non-voter").
func Sentence(s string) string {
	if s == "" {
		return s
	}
	first, _, _ := strings.Cut(s, " ")
	if strings.ContainsAny(first, "-/.0123456789") {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// RestartDecision is what the operator does with a new baokeeper.dev/restart value,
// in words that fit the cluster's state; the operator and kubectl bao both decide
// with it.
type RestartDecision struct {
	// Accept is false while break-glass is active: nothing of the cluster changes
	// until a person acknowledged it.
	Accept bool
	// Message is the event's text: why it is refused, or what happens.
	Message string
}

// DecideRestart decides a restart request: accepted (its token goes onto the pod
// template and the rollout restarts every member, followers first, the leader last),
// queued behind an operation in progress (the template changes now), or refused
// while break-glass is active.
func DecideRestart(c *baov1.OpenBaoCluster, value string) RestartDecision {
	if bg := c.Status.BreakGlass; bg != nil && bg.Active {
		return RestartDecision{Message: fmt.Sprintf("%s=%s refused: break-glass is active (%s) and every automation of this cluster is stopped; "+
			"acknowledge it first (%s), then set %s to a new value; nothing was done", baov1.AnnotationRestart, value, bg.Reason, baov1.AnnotationBreakGlassAck, baov1.AnnotationRestart)}
	}
	msg := fmt.Sprintf("Restarting every member (%s=%s): one at a time, followers first, the leader last", baov1.AnnotationRestart, value)
	if l := c.Status.OperationLock; l != nil {
		msg += fmt.Sprintf("; queued after the operation in progress (%s: %s)", l.Operation, l.Message)
	}
	return RestartDecision{Accept: true, Message: msg}
}
