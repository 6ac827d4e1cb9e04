package openbao

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	baoapi "github.com/openbao/openbao/api/v2"
)

const notActiveText = "local node not active but active cluster node not found"

func httpErr(code int, msgs ...string) error {
	return newOpError("failed to step down https://bao-0.bao-internal.ns.svc:8200",
		&baoapi.ResponseError{HTTPMethod: "PUT", URL: "https://bao-0.bao-internal.ns.svc:8200/v1/sys/step-down", StatusCode: code, Errors: msgs},
		"", kindsFor(&baoapi.ResponseError{StatusCode: code}))
}

func transportErr(err error) error {
	return &url.Error{Op: "Put", URL: "https://bao-0.bao-internal.ns.svc:8200/v1/sys/step-down", Err: err}
}

func TestTransienceOf(t *testing.T) {
	const secret = "s.very-secret-token"
	tests := []struct {
		reason string
		err    error
		want   Transience
	}{
		{reason: "no error", err: nil, want: TransienceUnknown},

		// Package raftops's TestClassify goes through every status and
		// transport failure the executor meets; these are the categories.
		{reason: "a 4xx will not change by waiting", err: httpErr(405), want: Permanent},
		{reason: "a raw api 403, not yet wrapped", err: &baoapi.ResponseError{StatusCode: 403}, want: Permanent},
		{reason: "5xx, 429 and 412 may heal", err: errors.Join(httpErr(503), httpErr(429), httpErr(412)), want: Transient},
		{reason: "a refused connection: the pod restarts", err: transportErr(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), want: Transient},
		{reason: "an unexpected EOF mid-answer", err: transportErr(io.ErrUnexpectedEOF), want: Transient},
		{reason: "a context that ended", err: fmt.Errorf("x: %w", context.DeadlineExceeded), want: Transient},
		{reason: "the node is not the active one", err: ErrNotActive, want: Transient},
		{reason: "a snapshot cut short", err: ErrIncompleteSnapshot, want: Transient},
		{reason: "an unknown CA will not become known", err: transportErr(x509.UnknownAuthorityError{}), want: Permanent},
		{reason: "permanent wins over transient in one error", err: errors.Join(ErrNotActive, httpErr(400)), want: Permanent},
		{reason: "an error nobody anticipated says nothing", err: errors.New("something odd"), want: TransienceUnknown},
		{reason: "ErrLoginFailed alone says nothing about retrying", err: ErrLoginFailed, want: TransienceUnknown},
		{
			reason: "a transient cause dropped for holding a secret keeps its transience",
			err: newOpError("failed to log in", &url.Error{Op: "Put", URL: "https://bao-0:8200/v1/x?token=" + secret,
				Err: &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, "", nil, secret),
			want: Transient,
		},
		{
			reason: "an unknown cause dropped for holding a secret stays unknown",
			err:    newOpError("failed to log in", errors.New("bad "+secret), "", nil, secret),
			want:   TransienceUnknown,
		},
		{
			reason: "a permanent cause dropped for holding a secret stays permanent",
			err:    newOpError("failed to log in", transportErr(fmt.Errorf("%s: %w", secret, x509.UnknownAuthorityError{})), "", nil, secret),
			want:   Permanent,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			NewWithT(t).Expect(TransienceOf(tt.err)).To(Equal(tt.want), "%s: %v", tt.reason, tt.err)
		})
	}
}

func TestAnswerTextsAreSentinels(t *testing.T) {
	g := NewWithT(t)
	g.Expect(errors.Is(httpErr(500, notActiveText), ErrNotActive)).To(BeTrue())
	g.Expect(errors.Is(httpErr(400, notActiveText), ErrNotActive)).To(BeFalse(), "'local node not active' counts only on a 500")
	g.Expect(errors.Is(httpErr(500, "server is not a non-voter"), ErrNotNonVoter)).To(BeTrue())
	g.Expect(errors.Is(httpErr(400, "server is already a non-voter"), ErrAlreadyNonVoter)).To(BeTrue(), "whatever the status")
	g.Expect(errors.Is(httpErr(403), ErrPermissionDenied)).To(BeTrue())
	g.Expect(errors.Is(httpErr(400), ErrBadRequest)).To(BeTrue())
	g.Expect(errors.Is(httpErr(404), ErrNotFound)).To(BeTrue())
	g.Expect(StatusCode(httpErr(503))).To(Equal(503))
}

func TestTransienceString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(TransienceUnknown.String()).To(Equal("unknown"))
	g.Expect(Transient.String()).To(Equal("transient"))
	g.Expect(Permanent.String()).To(Equal("permanent"))
	g.Expect(Transience(9).String()).To(Equal("Transience(9)"))
}

func TestNewOpErrorRedactsAndKeepsWhatCallersBranchOn(t *testing.T) {
	const token = "s.abcdefghijklmnopqrstuvwx"
	tests := []struct {
		reason   string
		cause    error
		wantIs   []error
		wantText string
	}{
		{
			reason:   "a 500 that echoes the token is redacted and still ErrNotActive",
			cause:    &baoapi.ResponseError{StatusCode: 500, Errors: []string{"token " + token + ": " + notActiveText}},
			wantIs:   []error{ErrNotActive},
			wantText: "OpenBao answered HTTP 500 (token [redacted]: " + notActiveText + ")",
		},
		{
			reason:   "a deadline whose text holds the token stays a deadline",
			cause:    fmt.Errorf("waiting for %s: %w", token, context.DeadlineExceeded),
			wantIs:   []error{context.DeadlineExceeded},
			wantText: "waiting for [redacted]: context deadline exceeded",
		},
		{
			reason: "a secret cut by the length limit leaves no part behind",
			cause: &baoapi.ResponseError{StatusCode: 400, Errors: []string{
				strings.Repeat("x", 500) + token + " and more"}},
			wantIs:   []error{ErrBadRequest},
			wantText: "[redacted]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			err := newOpError("failed to act", tt.cause, "a hint", kindsFor(tt.cause), token)
			for _, text := range errorTexts(err) {
				g.Expect(text).NotTo(ContainSubstring(token), tt.reason)
				g.Expect(text).NotTo(ContainSubstring(token[:12]), "%s: no prefix of the secret", tt.reason)
			}
			for _, target := range tt.wantIs {
				g.Expect(errors.Is(err, target)).To(BeTrue(), "%s: %v is not %v", tt.reason, err, target)
			}
			g.Expect(err.Error()).To(ContainSubstring(tt.wantText), tt.reason)
			g.Expect(err.Error()).To(HavePrefix("failed to act: "))
			g.Expect(err.Error()).To(HaveSuffix("; a hint"))
		})
	}
}
