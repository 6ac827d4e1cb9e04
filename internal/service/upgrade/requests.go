package upgrade

import (
	"fmt"
	"regexp"

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
func PendingRequests(annotations map[string]string, handled baov1.RequestsStatus) ([]Request, []error) {
	kinds := []struct {
		kind    RequestKind
		handled string
	}{
		{RequestBreakGlassAck, handled.BreakGlassAck},
		{RequestRetry, handled.Retry},
		{RequestRollback, handled.Rollback},
		{RequestPromote, handled.Promote},
	}
	var out []Request
	var errs []error
	for _, k := range kinds {
		v, ok := annotations[string(k.kind)]
		if !ok || v == k.handled {
			continue
		}
		if err := ValidateRequestValue(v); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", k.kind, err))
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
	}
}
