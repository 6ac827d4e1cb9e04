package raftops

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

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// httpErrors returns a function that makes the error the platform's member
// client returns when a step-down is answered with code and msgs, as the
// executor sees it.
func httpErrors(t *testing.T) func(code int, msgs ...string) error {
	t.Helper()
	f := newFakeCluster(t, 1)
	c := f.newTestClient(t, tokenFile(t, jwtA))
	return func(code int, msgs ...string) error {
		t.Helper()
		// Twice: a 403 is retried once after a fresh login.
		f.set(func(f *fakeCluster) { f.script, f.scriptBody = []int{code, code}, strings.Join(msgs, "; ") })
		defer f.set(func(f *fakeCluster) { f.script = nil })
		err := c.StepDown(t.Context(), f.addrs[0])
		if err == nil {
			t.Fatalf("a step-down answered with HTTP %d succeeded", code)
		}
		return err
	}
}

func transportErr(err error) error {
	return &url.Error{Op: "Put", URL: "https://bao-0.bao-internal.ns.svc:8200/v1/sys/step-down", Err: err}
}

func TestClassify(t *testing.T) {
	httpErr := httpErrors(t)
	tests := []struct {
		reason string
		err    error
		want   Class
	}{
		{reason: "no error", err: nil, want: ClassNone},
		{reason: "leadership already moved is the goal", err: ErrAlreadyMoved, want: ClassBenign},
		{reason: "already moved, wrapped", err: fmt.Errorf("bao-0: %w", ErrAlreadyMoved), want: ClassBenign},

		{reason: "403 needs a policy fix", err: httpErr(403, "permission denied"), want: ClassFatal},
		{reason: "openbao.ErrPermissionDenied alone", err: fmt.Errorf("x: %w", openbao.ErrPermissionDenied), want: ClassFatal},
		{reason: "400 is a malformed request", err: httpErr(400, "invalid role"), want: ClassFatal},
		{reason: "404: the endpoint does not exist here", err: httpErr(404), want: ClassFatal},
		{reason: "405 will not change by waiting", err: httpErr(405), want: ClassFatal},
		{reason: "a raw api 403, not yet wrapped", err: &baoapi.ResponseError{StatusCode: 403}, want: ClassFatal},

		{reason: "500 local node not active: the step-down races an election", err: httpErr(500, notActiveText), want: ClassRetryable},
		{reason: "other 500s may heal", err: httpErr(500, "internal error"), want: ClassRetryable},
		{reason: "503: sealed or no leader", err: httpErr(503), want: ClassRetryable},
		{reason: "429: rate limited", err: httpErr(429), want: ClassRetryable},
		{reason: "412: a standby catching up", err: httpErr(412), want: ClassRetryable},
		{reason: "a raw api 502", err: &baoapi.ResponseError{StatusCode: 502}, want: ClassRetryable},

		{reason: "connection refused: the pod restarts", err: transportErr(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), want: ClassRetryable},
		{reason: "connection reset", err: transportErr(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), want: ClassRetryable},
		{reason: "an unexpected EOF mid-answer", err: transportErr(io.ErrUnexpectedEOF), want: ClassRetryable},
		{reason: "a member's DNS name is briefly gone", err: transportErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "bao-1.bao-internal.ns.svc", IsNotFound: true}}), want: ClassRetryable},
		{reason: "a deadline", err: fmt.Errorf("x: %w", context.DeadlineExceeded), want: ClassRetryable},
		{reason: "a cancellation can be tried again later", err: context.Canceled, want: ClassRetryable},
		{reason: "no leader elected yet", err: fmt.Errorf("%w: every member names none", ErrNoLeader), want: ClassRetryable},
		{reason: "the poll gave up", err: ErrLeaderUnchanged, want: ClassRetryable},
		{reason: "not the active node", err: openbao.ErrNotActive, want: ClassRetryable},
		{reason: "a snapshot cut short", err: openbao.ErrIncompleteSnapshot, want: ClassRetryable},

		{reason: "promote: 'server is not a non-voter' asks for a read-back, not a retry", err: httpErr(500, "server is not a non-voter"), want: ClassBenign},
		{reason: "demote: 'server is already a non-voter', whatever the status", err: httpErr(400, "server is already a non-voter"), want: ClassBenign},
		{reason: "a member that has not joined", err: fmt.Errorf("x: %w", ErrNotJoined), want: ClassFatal},
		{reason: "removing the leader is refused", err: fmt.Errorf("x: %w", ErrRemovingLeader), want: ClassFatal},
		{reason: "demoting the leader is refused", err: fmt.Errorf("x: %w", ErrDemotingLeader), want: ClassFatal},
		{reason: "autopilot has not applied the change yet", err: fmt.Errorf("x: %w", ErrNotApplied), want: ClassRetryable},
		{reason: "'local node not active' counts only on a 500", err: httpErr(400, notActiveText), want: ClassFatal},

		{reason: "an unknown CA will not become known", err: transportErr(x509.UnknownAuthorityError{}), want: ClassFatal},
		{reason: "a host name the certificate does not cover", err: transportErr(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.0.0.1"}), want: ClassFatal},
		{reason: "fatal wins over retryable in one error", err: errors.Join(httpErr(403), context.DeadlineExceeded), want: ClassFatal},
		{reason: "fatal wins whatever the order", err: errors.Join(ErrNoLeader, httpErr(400)), want: ClassFatal},
		{reason: "an error nobody anticipated stops the operation", err: errors.New("something odd"), want: ClassFatal},
		{reason: "openbao.ErrLoginFailed alone says nothing about retrying: fatal", err: openbao.ErrLoginFailed, want: ClassFatal},
		// A cause dropped for holding a secret keeps its class: see
		// TestTransienceOf in package openbao.
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			NewWithT(t).Expect(Classify(tt.err)).To(Equal(tt.want), "%s: %v", tt.reason, tt.err)
		})
	}
}

func TestClassString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ClassNone.String()).To(Equal("none"))
	g.Expect(ClassBenign.String()).To(Equal("benign"))
	g.Expect(ClassRetryable.String()).To(Equal("retryable"))
	g.Expect(ClassFatal.String()).To(Equal("fatal"))
	g.Expect(Class(9).String()).To(Equal("Class(9)"))
}
