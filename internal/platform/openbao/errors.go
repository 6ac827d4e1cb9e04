package openbao

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	baoapi "github.com/openbao/openbao/api/v2"
)

// ErrLoginFailed reports that the controller could not obtain a client token
// from OpenBao's JWT auth method: the service-account token file could not be
// read, OpenBao refused the login, or the login answer carried no token.
// Check the projected token volume, the auth mount, the role and its bound
// audiences and claims.
var ErrLoginFailed = errors.New("openbao: login failed")

// ErrPermissionDenied reports that OpenBao answered 403 even though the
// controller had just logged in: either the login itself was refused with
// 403, or a read was refused with 403 again after a fresh login and one
// retry. Re-trying soon will not help; the role's policies or bindings need
// fixing.
var ErrPermissionDenied = errors.New("openbao: permission denied")

// ErrNotFound reports that OpenBao has no such endpoint or returned no data
// (HTTP 404), for example the Raft endpoints on a cluster that does not use
// Raft integrated storage.
var ErrNotFound = errors.New("openbao: not found")

// RedactedText replaces every secret found in an error message.
const RedactedText = "[redacted]"

// MaxServerText bounds how much server-supplied text goes into one error.
const MaxServerText = 512

// opError is the error type every Client method returns. Its message has all
// known secrets removed. Unwrap exposes the sentinels that apply and, only if
// its text holds no secret, the original cause (so errors.Is works for
// context.DeadlineExceeded and errors.As for *baoapi.ResponseError).
type opError struct {
	msg   string
	kinds []error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return e.kinds }

// newOpError builds the error for a failed action, for example
// "failed to read autopilot state from https://bao:8200". The message is
// "<action>: <cause>[; <hint>]" with every secret replaced.
func newOpError(action string, cause error, hint string, kinds []error, secrets ...string) error {
	msg := action + ": " + describe(cause, secrets...)
	if hint != "" {
		msg += "; " + hint
	}
	all := append([]error(nil), kinds...)
	if ContainsAny(cause.Error(), secrets) {
		// Keep the cause out of reach: callers could print it. Keep only
		// what they need to branch on.
		for _, ctxErr := range []error{context.DeadlineExceeded, context.Canceled} {
			if errors.Is(cause, ctxErr) {
				all = append(all, ctxErr)
			}
		}
	} else {
		all = append(all, cause)
	}
	return &opError{msg: Redact(msg, secrets...), kinds: all}
}

// wrapOpError prefixes an error that is already redacted (for example a login
// failure) with the action that needed it, keeping its chain.
func wrapOpError(action string, err error) error {
	return fmt.Errorf("%s: %w", action, err)
}

// describe renders a cause compactly. The api client's ResponseError is
// multi-line and repeats the URL; a one-line form reads better in status
// conditions and logs. Secrets are removed before the text is shortened, so a
// secret cut in half by the length limit cannot leave a prefix behind.
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

// StatusCode returns the HTTP status of an api ResponseError, or 0.
func StatusCode(err error) int {
	var re *baoapi.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
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

// readHint tells a person what to check after a failed request to path.
func (c *client) readHint(cause error, path string) string {
	if hint := c.transportHint(cause); hint != "" {
		return hint
	}
	switch code := StatusCode(cause); {
	case code == http.StatusForbidden:
		return fmt.Sprintf("check that the policies of role %q on auth/%s allow read on %s",
			c.cfg.Role, c.authMount, path)
	case code == http.StatusNotFound || errors.Is(cause, ErrNotFound):
		return fmt.Sprintf("check that %s exists on this server; it requires Raft integrated storage", path)
	case code == http.StatusServiceUnavailable:
		return "check whether the node is sealed or the cluster has no active leader"
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
		return fmt.Sprintf("check that a JWT auth method is enabled at auth/%s, that role %q exists there, "+
			"and that its bound_audiences and bound_claims match the service-account token in %s",
			c.authMount, c.cfg.Role, c.cfg.TokenPath)
	}
	return ""
}

func (c *client) transportHint(cause error) string {
	var urlErr *url.Error
	switch {
	case isTLSVerifyError(cause):
		return "check that CACertPEM holds the CA that issued the OpenBao serving certificate " +
			"and that the certificate is valid for this host name"
	case errors.Is(cause, context.DeadlineExceeded):
		return fmt.Sprintf("no answer before the deadline (per-call timeout %s); "+
			"check that the address is reachable and OpenBao is responsive", c.timeout)
	case errors.Is(cause, context.Canceled):
		return ""
	case errors.As(cause, &urlErr):
		return "check that the address resolves and OpenBao is listening on it"
	}
	return ""
}
