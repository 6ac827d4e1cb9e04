package openbao

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
)

// ErrLoginFailed reports that no client token could be obtained from
// OpenBao's JWT auth method: the service-account token file could not be
// read, OpenBao refused the login, or the login answer carried no token.
// Check the projected token volume, the auth mount, the role and its bound
// audiences and claims. Whether retrying helps depends on the cause;
// TransienceOf tells.
var ErrLoginFailed = errors.New("openbao: login failed")

// ErrPermissionDenied reports that OpenBao answered 403 even though the
// client had just logged in: either the login itself was refused with 403, or
// a request was refused with 403 again after a fresh login and one retry.
// Re-trying soon will not help; the role's policies or bindings need fixing.
var ErrPermissionDenied = errors.New("openbao: permission denied")

// ErrBadRequest reports an HTTP 400: OpenBao refused the request as malformed
// (for a login: an unknown role or an unacceptable service-account token).
// Re-trying will not help.
var ErrBadRequest = errors.New("openbao: bad request")

// ErrNotFound reports that OpenBao has no such endpoint or returned no data
// (HTTP 404), for example the Raft endpoints on a cluster that does not use
// Raft integrated storage.
var ErrNotFound = errors.New("openbao: not found")

// ErrNotActive reports that the addressed node is not the active node although
// the request needs the active node: OpenBao answered 500 "local node not
// active but active cluster node not found", redirected the request (307), or
// reported itself standby. It happens while leadership changes; retry after
// finding the active node again.
var ErrNotActive = errors.New("openbao: the addressed node is not the active node")

// ErrNotNonVoter reports OpenBao's answer "server is not a non-voter" to a
// promote: the node is not on autopilot's list of permanent non-voters, so a
// promote has nothing to lift. The answer says nothing about the node's voter
// flag (it may be a voter already, a promotion may be pending, or it may have
// joined normally and wait for autopilot), so the caller reads the Raft
// configuration back and decides from that.
var ErrNotNonVoter = errors.New("openbao: the server is not a non-voter")

// ErrAlreadyNonVoter reports OpenBao's answer "server is already a non-voter"
// to a demote: the node is on autopilot's list of permanent non-voters
// already, so a demotion is pending or done. As for ErrNotNonVoter, the caller
// reads the Raft configuration back.
var ErrAlreadyNonVoter = errors.New("openbao: the server is already a non-voter")

// ErrIncompleteSnapshot reports a snapshot stream that did not end with a
// non-empty SHA256SUMS.sealed file: the server failed midstream. Retry.
var ErrIncompleteSnapshot = errors.New("openbao: incomplete snapshot")

// answerKinds maps texts of OpenBao error answers to the sentinels they stand
// for. Only a caller's decision to read state back depends on them, never an
// outcome.
var answerKinds = []struct {
	text string
	kind error
}{
	{text: "local node not active", kind: ErrNotActive},
	{text: "server is not a non-voter", kind: ErrNotNonVoter},
	{text: "server is already a non-voter", kind: ErrAlreadyNonVoter},
}

// sentinels are the package's error kinds, kept when a cause whose text holds
// a secret is dropped from an error.
var sentinels = []error{
	ErrLoginFailed, ErrPermissionDenied, ErrBadRequest, ErrNotFound,
	ErrNotActive, ErrNotNonVoter, ErrAlreadyNonVoter, ErrIncompleteSnapshot,
	context.DeadlineExceeded, context.Canceled,
}

// Transience says whether sending a failed request again, unchanged, may
// succeed.
type Transience int

const (
	// TransienceUnknown means the error does not say: nobody anticipated it.
	TransienceUnknown Transience = iota
	// Transient means the failure may heal by itself: a 5xx, 429 or 412
	// answer (including 500 "local node not active" and 503 sealed), a node
	// that is not the active one, an incomplete snapshot, a refused or reset
	// connection, a DNS name that is briefly gone, a timeout, a context that
	// ended, or another failure in transport.
	Transient
	// Permanent means repeating the request will not help: another 4xx (403,
	// 400, 404, 405, ...), a failed TLS verification, or an unreadable
	// service-account token file.
	Permanent
)

// String returns the name of t.
func (t Transience) String() string {
	switch t {
	case TransienceUnknown:
		return "unknown"
	case Transient:
		return "transient"
	case Permanent:
		return "permanent"
	}
	return fmt.Sprintf("Transience(%d)", int(t))
}

// TransienceOf sorts a failure of a request to OpenBao by whether repeating
// it may help. Permanent wins over transient: an error that carries both
// (say a 403 joined with a timeout from another member) will not heal by
// waiting.
func TransienceOf(err error) Transience {
	switch {
	case err == nil:
		return TransienceUnknown
	case isPermanent(err):
		return Permanent
	case isTransient(err):
		return Transient
	}
	return TransienceUnknown
}

func isPermanent(err error) bool {
	var se *statusError
	if errors.As(err, &se) && !retryableStatus(se.code) {
		return true
	}
	var re *baoapi.ResponseError
	if errors.As(err, &re) && !retryableStatus(re.StatusCode) {
		return true
	}
	var m transienceMarker
	if errors.As(err, &m) && m.t == Permanent {
		return true
	}
	return isTLSVerifyError(err)
}

func isTransient(err error) bool {
	for _, target := range []error{
		ErrNotActive, ErrIncompleteSnapshot,
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
		re     *baoapi.ResponseError
		m      transienceMarker
		netErr net.Error
		dnsErr *net.DNSError
		opErr  *net.OpError
		urlErr *url.Error
	)
	switch {
	case errors.As(err, &se):
		return retryableStatus(se.code)
	case errors.As(err, &re):
		return retryableStatus(re.StatusCode)
	case errors.As(err, &m):
		return m.t == Transient
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case errors.As(err, &dnsErr), errors.As(err, &opErr):
		// A member's DNS name disappears briefly while its pod is recreated.
		return true
	case errors.As(err, &urlErr):
		// The request failed in transport, not in OpenBao; TLS verification
		// failures were sorted out as permanent before.
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

// RedactedText replaces every secret found in an error message.
const RedactedText = "[redacted]"

// MaxServerText bounds how much server-supplied text goes into one error.
const MaxServerText = 512

// statusError is an HTTP error answer, kept in an opError's chain so that
// callers can branch on the status code also when the api error was dropped.
// Its text is already redacted.
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

// transienceMarker stands in for a cause that was dropped from an opError
// because its text held a secret (or for a cause whose transience its type
// does not show), so that TransienceOf still sees what the cause was.
type transienceMarker struct{ t Transience }

func (m transienceMarker) Error() string { return m.t.String() + " failure" }

// opError is the error type every client method returns. Its message has all
// known secrets removed. Unwrap exposes the sentinels that apply, a
// statusError for HTTP errors and, only if its text holds no secret, the
// original cause (so errors.Is works for context.DeadlineExceeded and
// errors.As for *baoapi.ResponseError).
type opError struct {
	msg   string
	kinds []error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return e.kinds }

// newOpError builds the error for a failed action, for example
// "failed to step down https://bao-0...:8200". The message is
// "<action>: <cause>[; <hint>]" with every secret replaced.
func newOpError(action string, cause error, hint string, kinds []error, secrets ...string) error {
	msg := action + ": " + describe(cause, secrets...)
	if hint != "" {
		msg += "; " + hint
	}
	all := append([]error(nil), kinds...)
	var re *baoapi.ResponseError
	if errors.As(cause, &re) {
		all = append(all, &statusError{code: re.StatusCode, text: StatusText(re, secrets...)})
		all = append(all, answerSentinels(re)...)
	}
	if ContainsAny(cause.Error(), secrets) {
		// Keep the cause out of reach: callers could print it. Keep only
		// what they need to branch on.
		if t := TransienceOf(cause); t != TransienceUnknown {
			all = append(all, transienceMarker{t})
		}
		for _, s := range sentinels {
			if errors.Is(cause, s) {
				all = append(all, s)
			}
		}
	} else {
		all = append(all, cause)
	}
	return &opError{msg: Redact(msg, secrets...), kinds: all}
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
	switch StatusCode(err) {
	case http.StatusForbidden:
		return []error{ErrPermissionDenied}
	case http.StatusBadRequest:
		return []error{ErrBadRequest}
	case http.StatusNotFound:
		return []error{ErrNotFound}
	}
	return nil
}

// describe renders a cause compactly. The api client's ResponseError is
// multi-line and repeats the URL; a one-line form reads better in status
// conditions, Job messages and logs. Secrets are removed before the text is
// shortened, so a secret cut in half by the length limit cannot leave a
// prefix behind.
func describe(cause error, secrets ...string) string {
	var re *baoapi.ResponseError
	switch {
	case errors.As(cause, &re):
		s := fmt.Sprintf("OpenBao answered HTTP %d", re.StatusCode)
		if text := StatusText(re, secrets...); text != "" {
			s += " (" + text + ")"
		}
		return s
	case errors.Is(cause, ErrNotFound):
		return "OpenBao returned no data (HTTP 404)"
	default:
		return OneLine(Redact(cause.Error(), secrets...))
	}
}

// StatusText is the server's error text of an api ResponseError, secrets removed
// and each message cut to one line of at most MaxServerText characters; the HTTP
// status text when the server said nothing.
func StatusText(re *baoapi.ResponseError, secrets ...string) string {
	parts := make([]string, 0, len(re.Errors))
	for _, e := range re.Errors {
		if e = OneLine(Redact(e, secrets...)); e != "" {
			parts = append(parts, e)
		}
	}
	if len(parts) == 0 {
		return strings.ToLower(http.StatusText(re.StatusCode))
	}
	return strings.Join(parts, "; ")
}

// OneLine folds server-supplied text to one line of at most MaxServerText
// characters. Remove secrets first (Redact): a cut can leave a prefix of one.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxServerText {
		s = s[:MaxServerText] + "..."
	}
	return s
}

// Redact replaces every non-empty secret in s with RedactedText.
func Redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, RedactedText)
		}
	}
	return s
}

// ContainsAny reports whether s contains one of the non-empty secrets.
func ContainsAny(s string, secrets []string) bool {
	for _, secret := range secrets {
		if secret != "" && strings.Contains(s, secret) {
			return true
		}
	}
	return false
}

// StatusCode returns the HTTP status of an OpenBao error answer in err's
// chain, also when the api error itself was dropped for holding a secret, or
// 0.
func StatusCode(err error) int {
	var re *baoapi.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	return 0
}

// hint tells a person what to check after a failed request to path, whose
// policy must grant capability.
func (c *client) hint(cause error, path, capability string) string {
	if hint := c.transportHint(cause); hint != "" {
		return hint
	}
	switch code := StatusCode(cause); {
	case code == http.StatusForbidden:
		return fmt.Sprintf("check that the policies of role %q on auth/%s allow %s on %s",
			c.s.role, c.s.authMount, capability, path)
	case (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) &&
		(path == pathRaftPromote || path == pathRaftDemote):
		return fmt.Sprintf("%s exists from OpenBao 2.2 on", path)
	case code == http.StatusNotFound || errors.Is(cause, ErrNotFound):
		return fmt.Sprintf("check that %s exists on this server; it requires Raft integrated storage", path)
	case code == http.StatusServiceUnavailable:
		return "check whether the node is sealed or the cluster has no active node"
	case code == http.StatusTooManyRequests:
		return "check OpenBao rate-limit quotas"
	}
	return ""
}

// loginHint tells a person what to check after a failed login.
func (c *client) loginHint(cause error) string {
	if hint := c.transportHint(cause); hint != "" {
		return hint
	}
	switch StatusCode(cause) {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound:
		source := "in " + c.s.tokenPath
		if c.s.tokenSource != nil {
			source = "the operator requested for this cluster"
		}
		return fmt.Sprintf("check that a JWT auth method is enabled at auth/%s, that role %q exists there, "+
			"and that its bound_audiences and bound_claims (or bound_subject) match the service-account token %s",
			c.s.authMount, c.s.role, source)
	}
	return ""
}

func (c *client) transportHint(cause error) string {
	var urlErr *url.Error
	switch {
	case isTLSVerifyError(cause):
		hint := "check that " + c.s.caSource + " holds the CA that issued the OpenBao serving certificate " +
			"and that the certificate is valid for this host name"
		if c.s.serverName != "" {
			hint += " (" + c.s.serverName + ")"
		} else if c.s.serverNameOption {
			hint += " (or set the TLS server name)"
		}
		return hint
	case errors.Is(cause, context.DeadlineExceeded):
		return fmt.Sprintf("no answer before the deadline (per-call timeout %s); "+
			"check that the address is reachable and OpenBao is responsive", c.s.timeout)
	case errors.Is(cause, context.Canceled):
		return ""
	case errors.As(cause, &urlErr):
		return "check that the address resolves and OpenBao is listening on it"
	}
	return ""
}
