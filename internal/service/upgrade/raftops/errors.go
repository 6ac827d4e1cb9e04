package raftops

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	baoapi "github.com/openbao/openbao/api/v2"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// ErrAlreadyMoved reports that the member asked to give up leadership is not
// the active node (any more). The goal of a step-down already holds, so it is
// benign: nothing was, or needs to be, stepped down.
var ErrAlreadyMoved = errors.New("raftops: the member is not the active node; leadership already moved")

// ErrNotActive reports that the addressed node is not the active node although
// the request needs the active node: OpenBao answered 500 "local node not
// active but active cluster node not found", redirected the request (307), or
// reported itself standby. It happens while leadership changes; retry after
// finding the active node again.
var ErrNotActive = errors.New("raftops: the addressed node is not the active node")

// ErrNoLeader reports that no member named an active node, for example during
// an election. Retry.
var ErrNoLeader = errors.New("raftops: no active node found")

// ErrLeaderUnchanged reports that after a step-down no other member became the
// active node within the poll timeout. Retry after OpenBao's step-down cooldown.
var ErrLeaderUnchanged = errors.New("raftops: leadership did not move to another member")

// ErrLoginFailed reports that the executor could not obtain a client token
// from the JWT auth method. Whether retrying helps depends on the cause;
// Classify tells.
var ErrLoginFailed = errors.New("raftops: login failed")

// ErrPermissionDenied reports an HTTP 403 that persisted after a fresh login:
// the executor role's policy or bindings need fixing. Fatal.
var ErrPermissionDenied = errors.New("raftops: permission denied")

// ErrBadRequest reports an HTTP 400: OpenBao refused the request as malformed
// (for a login: an unknown role or an unacceptable service-account token).
// Fatal.
var ErrBadRequest = errors.New("raftops: bad request")

// ErrIncompleteSnapshot reports a snapshot stream that did not end with a
// non-empty SHA256SUMS.sealed file: the server failed midstream. Retry.
var ErrIncompleteSnapshot = errors.New("raftops: incomplete snapshot")

// ErrNotNonVoter reports OpenBao's answer "server is not a non-voter" to a
// promote: the node is not on autopilot's list of permanent non-voters, so a
// promote has nothing to lift. The answer says nothing about the node's voter
// flag (it may be a voter already, a promotion may be pending, or it may have
// joined normally and wait for autopilot), so the caller reads the Raft
// configuration back and decides from that. Benign for the request itself.
var ErrNotNonVoter = errors.New("raftops: the server is not a non-voter")

// ErrAlreadyNonVoter reports OpenBao's answer "server is already a non-voter"
// to a demote: the node is on autopilot's list of permanent non-voters
// already, so a demotion is pending or done. As for ErrNotNonVoter, the caller
// reads the Raft configuration back. Benign for the request itself.
var ErrAlreadyNonVoter = errors.New("raftops: the server is already a non-voter")

// ErrNotJoined reports that the member to promote is not in the Raft
// configuration: it has not joined. Joining is the member's own doing (its
// retry_join), so waiting inside one executor Job does not help. Fatal.
var ErrNotJoined = errors.New("raftops: the member is not in the Raft configuration")

// ErrRemovingLeader reports that the member to remove is the active node.
// Demoting or removing a leader is not a leadership transfer: OpenBao either
// ignores it or steps down after committing the change, and an uncontrolled
// election follows. The leader must step down first. Fatal.
var ErrRemovingLeader = errors.New("raftops: the member is the active node and must step down before it is removed")

// ErrDemotingLeader reports that the member to demote is the active node. As
// for ErrRemovingLeader, demoting a leader starts an uncontrolled election:
// the leader must step down first. Fatal.
var ErrDemotingLeader = errors.New("raftops: the member is the active node and must step down before it is demoted")

// ErrNotApplied reports that a requested promotion, demotion or removal did
// not show in the Raft configuration within the wait. Autopilot applies
// promotions and demotions asynchronously, in later reconcile rounds; retry.
var ErrNotApplied = errors.New("raftops: the membership change was not applied in time")

// answerKinds maps texts of OpenBao error answers to the sentinels they stand
// for. Only the decision to read state back depends on them, never an outcome.
var answerKinds = []struct {
	text string
	kind error
}{
	{text: "local node not active", kind: ErrNotActive},
	{text: "server is not a non-voter", kind: ErrNotNonVoter},
	{text: "server is already a non-voter", kind: ErrAlreadyNonVoter},
}

// Class says what a caller should do about an error.
type Class int

const (
	// ClassNone is the class of a nil error.
	ClassNone Class = iota
	// ClassBenign means the goal already holds, or the request has nothing
	// to do (a promote of a node that is not a permanent non-voter, a demote
	// of one that is): nothing is left to request, though a caller that
	// verifies reads the state back.
	ClassBenign
	// ClassRetryable means a transient condition: an election in progress, a
	// node that is not (or no longer) active, a 5xx or 429 answer, a refused or
	// reset connection, a timeout, a membership change autopilot has not
	// applied yet. The same request may succeed later.
	ClassRetryable
	// ClassFatal means retrying will not help: permission denied (403), a bad
	// request (400) or another 4xx, a failed TLS verification, an unreadable
	// token file, invalid input, a member to promote that has not joined, a
	// member to remove that leads, or an error nobody anticipated.
	ClassFatal
)

// String returns the class name.
func (c Class) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassBenign:
		return "benign"
	case ClassRetryable:
		return "retryable"
	case ClassFatal:
		return "fatal"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Classify sorts an error into benign, retryable or fatal.
//
// Why fatal wins over retryable: an error that carries both (say a 403 joined
// with a timeout from another member) will not heal by waiting, and a caller
// that retries it only burns its deadline. Why unknown errors are fatal: the
// executor runs a disruptive operation, and an error nobody anticipated
// should stop it and reach a person rather than be retried blindly; the
// operator still retries the whole Job a bounded number of times.
func Classify(err error) Class {
	switch {
	case err == nil:
		return ClassNone
	case errors.Is(err, ErrAlreadyMoved), errors.Is(err, ErrNotNonVoter), errors.Is(err, ErrAlreadyNonVoter):
		return ClassBenign
	case isFatal(err):
		return ClassFatal
	case isRetryable(err):
		return ClassRetryable
	}
	return ClassFatal
}

func isFatal(err error) bool {
	for _, target := range []error{ErrPermissionDenied, ErrBadRequest, ErrNotJoined, ErrRemovingLeader, ErrDemotingLeader} {
		if errors.Is(err, target) {
			return true
		}
	}
	var se *statusError
	if errors.As(err, &se) && !retryableStatus(se.code) {
		return true
	}
	if code := openbao.StatusCode(err); code != 0 && !retryableStatus(code) {
		return true
	}
	var m classMarker
	if errors.As(err, &m) && m.class == ClassFatal {
		return true
	}
	return isTLSVerifyError(err)
}

func isRetryable(err error) bool {
	for _, target := range []error{
		ErrNotActive, ErrNoLeader, ErrLeaderUnchanged, ErrIncompleteSnapshot, ErrNotApplied,
		context.DeadlineExceeded, context.Canceled,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT,
		io.EOF, io.ErrUnexpectedEOF,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var (
		se     *statusError
		m      classMarker
		netErr net.Error
		dnsErr *net.DNSError
		opErr  *net.OpError
		urlErr *url.Error
	)
	switch {
	case errors.As(err, &se):
		return retryableStatus(se.code)
	case openbao.StatusCode(err) != 0:
		return retryableStatus(openbao.StatusCode(err))
	case errors.As(err, &m):
		return m.class == ClassRetryable
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case errors.As(err, &dnsErr), errors.As(err, &opErr):
		// A member's DNS name disappears briefly while its pod is recreated.
		return true
	case errors.As(err, &urlErr):
		// The request failed in transport, not in OpenBao; TLS verification
		// failures were sorted out as fatal before.
		return true
	}
	return false
}

// retryableStatus reports whether an HTTP error status may heal by itself:
// 5xx (including 500 "local node not active", 503 sealed or no leader) and 429
// (rate limited). 412 is what a standby answers while it catches up with the
// index a request needs.
func retryableStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusPreconditionFailed
}

func isTLSVerifyError(err error) bool {
	var (
		verifyErr   *tls.CertificateVerificationError
		unknownCA   x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidErr  x509.CertificateInvalidError
	)
	return errors.As(err, &verifyErr) || errors.As(err, &unknownCA) ||
		errors.As(err, &hostnameErr) || errors.As(err, &invalidErr)
}

// statusError is an HTTP error answer, kept in an opError's chain so that
// Classify can branch on the status code. Its text is already redacted.
type statusError struct {
	code int
	text string
}

func (e *statusError) Error() string {
	if e.text == "" {
		return fmt.Sprintf("HTTP %d", e.code)
	}
	return fmt.Sprintf("HTTP %d (%s)", e.code, e.text)
}

// classMarker stands in for a cause that was dropped from an opError because
// its text held a secret, so that Classify still sees what the cause was.
type classMarker struct{ class Class }

func (m classMarker) Error() string { return "error class " + m.class.String() }

// opError is the error type the client returns. Its message has every known
// secret removed. Unwrap exposes the sentinels that apply, a statusError for
// HTTP errors and, only if its text holds no secret, the original cause.
type opError struct {
	msg   string
	kinds []error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return e.kinds }

// newOpError builds the error for a failed action ("failed to step down
// https://bao-0...:8200"). The message is "<action>: <cause>[; <hint>]" with
// every secret replaced.
func newOpError(action string, cause error, hint string, kinds []error, secrets ...string) error {
	msg := action + ": " + describe(cause, secrets)
	if hint != "" {
		msg += "; " + hint
	}
	all := append([]error(nil), kinds...)
	var re *baoapi.ResponseError
	if errors.As(cause, &re) {
		all = append(all, &statusError{code: re.StatusCode, text: openbao.StatusText(re, secrets...)})
		all = append(all, answerSentinels(re)...)
	}
	if openbao.ContainsAny(cause.Error(), secrets) {
		// Keep the cause out of reach, since callers may print it; keep what
		// they need to branch on.
		all = append(all, classMarker{class: Classify(cause)})
		for _, ctxErr := range []error{context.DeadlineExceeded, context.Canceled} {
			if errors.Is(cause, ctxErr) {
				all = append(all, ctxErr)
			}
		}
	} else {
		all = append(all, cause)
	}
	return &opError{msg: openbao.Redact(msg, secrets...), kinds: all}
}

// answerSentinels returns the sentinels the error texts of an HTTP error
// answer stand for. "local node not active" counts only on a 500, the status
// OpenBao gives it; the membership answers count whatever the status, since
// OpenBao versions differ in it.
func answerSentinels(re *baoapi.ResponseError) []error {
	text := strings.Join(re.Errors, " ")
	var out []error
	for _, a := range answerKinds {
		if !strings.Contains(text, a.text) {
			continue
		}
		if errors.Is(a.kind, ErrNotActive) && re.StatusCode != http.StatusInternalServerError {
			continue
		}
		out = append(out, a.kind)
	}
	return out
}

// kindsFor returns the sentinels that apply to a failed request.
func kindsFor(err error) []error {
	switch openbao.StatusCode(err) {
	case http.StatusForbidden:
		return []error{ErrPermissionDenied}
	case http.StatusBadRequest:
		return []error{ErrBadRequest}
	}
	return nil
}

// describe renders a cause compactly, secrets replaced before anything is
// shortened (so that no part of a secret survives a cut). The api client's
// ResponseError is multi-line and repeats the URL; one line reads better in
// Job messages.
func describe(cause error, secrets []string) string {
	var re *baoapi.ResponseError
	if errors.As(cause, &re) {
		s := fmt.Sprintf("OpenBao answered HTTP %d", re.StatusCode)
		if text := openbao.StatusText(re, secrets...); text != "" {
			s += " (" + text + ")"
		}
		return s
	}
	return openbao.OneLine(openbao.Redact(cause.Error(), secrets...))
}
