package raftops

// These tests drive the platform's member client (openbao.NewMemberClient)
// as the executor configures it, against the fake cluster the procedures are
// tested on, and check what the procedures rely on: which member each request
// reaches, the token cache, and how Classify sorts every failure.

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

func TestClientReadsLeaderAndHealthWithoutToken(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	f.set(func(f *fakeCluster) { f.active = 1 })
	c := f.newTestClient(t, tokenFile(t, jwtA))
	ctx := context.Background()

	l, err := c.Leader(ctx, f.addrs[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.IsSelf).To(BeFalse())
	g.Expect(l.LeaderAddress).To(Equal(f.addrs[1]))
	g.Expect(l.RaftCommittedIndex).To(Equal(uint64(120)))

	l, err = c.Leader(ctx, f.addrs[1])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.IsSelf).To(BeTrue())

	h, err := c.Health(ctx, f.addrs[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Standby).To(BeTrue())
	g.Expect(h.Initialized).To(BeTrue())
	g.Expect(h.Version).To(Equal("2.4.0"))
	h, err = c.Health(ctx, f.addrs[1])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Standby).To(BeFalse())

	g.Expect(f.logins()).To(BeZero(), "sys/leader and sys/health need no token")
}

func TestClientAutopilotStateLogsInOnceAndCachesTheToken(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	c := f.newTestClient(t, tokenFile(t, jwtA))
	ctx := context.Background()

	s, err := c.AutopilotState(ctx, f.addrs[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Healthy).To(BeTrue())
	g.Expect(s.FailureTolerance).To(Equal(1))
	g.Expect(s.Leader).To(Equal("bao-0"))
	g.Expect(s.Voters).To(ConsistOf("bao-0", "bao-1", "bao-2"))
	g.Expect(s.Servers).To(HaveLen(3))
	g.Expect(s.Servers["bao-2"].LastIndex).To(Equal(uint64(122)))
	g.Expect(s.Servers["bao-2"].LastContact).To(Equal(1500 * time.Millisecond))
	g.Expect(s.Servers["bao-0"].Status).To(Equal("leader"))

	_, err = c.AutopilotState(ctx, f.addrs[1])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.logins()).To(Equal(1), "the cached token serves every member")

	f.mu.Lock()
	roles := append([]string(nil), f.roles...)
	f.mu.Unlock()
	g.Expect(roles).To(Equal([]string{workload.ExecutorRole}))
}

func TestClientRereadsTheTokenFileOnEveryLogin(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	path := tokenFile(t, jwtA)
	c := f.newTestClient(t, path)
	ctx := context.Background()

	_, err := c.AutopilotState(ctx, f.addrs[0])
	g.Expect(err).NotTo(HaveOccurred())

	// Kubelet rotates the projected token; OpenBao's token expires.
	writeFile(t, path, jwtB)
	f.set(func(f *fakeCluster) { f.acceptJWT = jwtB })
	f.revokeAll()

	_, err = c.AutopilotState(ctx, f.addrs[0])
	g.Expect(err).NotTo(HaveOccurred(), "a refused token leads to a fresh login with the rotated file")
	g.Expect(f.jwts()).To(Equal([]string{jwtA, jwtB}))
}

func TestClientStepDown(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	c := f.newTestClient(t, tokenFile(t, jwtA))

	g.Expect(c.StepDown(context.Background(), f.addrs[0])).To(Succeed())
	g.Expect(f.stepDownCalls()).To(HaveLen(1))
	g.Expect(f.stepDownCalls()[0].node).To(Equal("bao-0"))
	g.Eventually(f.activeName).WithTimeout(2 * time.Second).Should(Equal("bao-1"))

	err := c.StepDown(context.Background(), f.addrs[0])
	g.Expect(err).To(HaveOccurred(), "bao-0 is not active any more")
	g.Expect(errors.Is(err, openbao.ErrNotActive)).To(BeTrue(), "500 %q is openbao.ErrNotActive: %v", notActiveText, err)
	g.Expect(Classify(err)).To(Equal(ClassRetryable))
	g.Expect(err.Error()).To(ContainSubstring(notActiveText))
}

func TestClientRaftConfiguration(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	f.set(func(f *fakeCluster) { f.active = 1; f.addNonVoter("bao-3") })
	c := f.newTestClient(t, tokenFile(t, jwtA))

	cfg, err := c.RaftConfiguration(context.Background(), f.addrs[1])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Servers).To(Equal([]openbao.RaftServer{
		{NodeID: "bao-0", Address: "bao-0.bao-internal.ns.svc:8201", Voter: true},
		{NodeID: "bao-1", Address: "bao-1.bao-internal.ns.svc:8201", Leader: true, Voter: true},
		{NodeID: "bao-2", Address: "bao-2.bao-internal.ns.svc:8201", Voter: true},
		{NodeID: "bao-3", Address: "bao-3.bao-internal.ns.svc:8201"},
	}))
	g.Expect(f.logins()).To(Equal(1), "the configuration needs a token")
}

// TestClientMembershipRequests checks what each request sends and how the
// answers OpenBao gives are sorted.
func TestClientMembershipRequests(t *testing.T) {
	tests := []struct {
		reason    string
		setup     func(f *fakeCluster)
		call      func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error
		wantCall  membershipCall
		wantIs    error
		wantClass Class
	}{
		{
			reason: "promote sends the server ID to the addressed node",
			setup:  func(f *fakeCluster) { f.addNonVoter("bao-3") },
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.Promote(ctx, f.addrs[0], "bao-3")
			},
			wantCall:  membershipCall{op: "promote", node: "bao-0", id: "bao-3", status: http.StatusNoContent},
			wantClass: ClassNone,
		},
		{
			reason: "'server is not a non-voter' is openbao.ErrNotNonVoter, benign for the request",
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.Promote(ctx, f.addrs[0], "bao-2")
			},
			wantCall:  membershipCall{op: "promote", node: "bao-0", id: "bao-2", status: http.StatusInternalServerError, voter: true},
			wantIs:    openbao.ErrNotNonVoter,
			wantClass: ClassBenign,
		},
		{
			reason: "demote sends the server ID",
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.Demote(ctx, f.addrs[0], "bao-2")
			},
			wantCall:  membershipCall{op: "demote", node: "bao-0", id: "bao-2", status: http.StatusNoContent, voter: true},
			wantClass: ClassNone,
		},
		{
			reason: "'server is already a non-voter' is openbao.ErrAlreadyNonVoter, benign for the request",
			setup:  func(f *fakeCluster) { f.nonVoters["bao-2"] = true },
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.Demote(ctx, f.addrs[0], "bao-2")
			},
			wantCall:  membershipCall{op: "demote", node: "bao-0", id: "bao-2", status: http.StatusInternalServerError, voter: true},
			wantIs:    openbao.ErrAlreadyNonVoter,
			wantClass: ClassBenign,
		},
		{
			reason: "remove-peer sends the server ID",
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.RemovePeer(ctx, f.addrs[0], "bao-2")
			},
			wantCall:  membershipCall{op: "remove-peer", node: "bao-0", id: "bao-2", status: http.StatusNoContent, voter: true},
			wantClass: ClassNone,
		},
		{
			reason: "a standby that is not active: retryable openbao.ErrNotActive",
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.RemovePeer(ctx, f.addrs[1], "bao-2")
			},
			wantCall:  membershipCall{op: "remove-peer", node: "bao-1", id: "bao-2", status: http.StatusInternalServerError, voter: true},
			wantIs:    openbao.ErrNotActive,
			wantClass: ClassRetryable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeCluster(t, 3)
			if tt.setup != nil {
				f.set(tt.setup)
			}
			c := f.newTestClient(t, tokenFile(t, jwtA))
			err := tt.call(context.Background(), c, f)
			g.Expect(Classify(err)).To(Equal(tt.wantClass), "%s: %v", tt.reason, err)
			if tt.wantIs != nil {
				g.Expect(errors.Is(err, tt.wantIs)).To(BeTrue(), "%s: %v is not %v", tt.reason, err, tt.wantIs)
			}
			g.Expect(f.membershipRequests()).To(Equal([]membershipCall{tt.wantCall}), tt.reason)
		})
	}

	t.Run("an empty node ID is refused before anything is sent", func(t *testing.T) {
		g := NewWithT(t)
		f := newFakeCluster(t, 1)
		c := f.newTestClient(t, tokenFile(t, jwtA))
		err := c.Promote(context.Background(), f.addrs[0], "")
		g.Expect(err).To(MatchError(ContainSubstring("invalid node ID: it is empty")))
		g.Expect(Classify(err)).To(Equal(ClassFatal))
		g.Expect(f.logins()).To(BeZero())
	})
}

func TestClientSnapshot(t *testing.T) {
	tests := []struct {
		reason     string
		from       int
		complete   bool
		wantErr    error
		wantNBytes bool
	}{
		{reason: "the active node streams a complete archive", from: 0, complete: true, wantNBytes: true},
		{reason: "a 2.4 standby redirects without a body: not the active node", from: 1, complete: true, wantErr: openbao.ErrNotActive},
		{reason: "an archive without SHA256SUMS.sealed failed midstream", from: 0, complete: false, wantErr: openbao.ErrIncompleteSnapshot},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeCluster(t, 3)
			archive := snapshotArchive(t, tt.complete)
			f.set(func(f *fakeCluster) { f.snapshot = archive })
			c := f.newTestClient(t, tokenFile(t, jwtA))

			var buf bytes.Buffer
			info, err := c.Snapshot(context.Background(), f.addrs[tt.from], &buf)
			n := info.Bytes
			if tt.wantErr == nil {
				g.Expect(err).NotTo(HaveOccurred(), tt.reason)
			} else {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "%s: got %v", tt.reason, err)
				g.Expect(Classify(err)).To(Equal(ClassRetryable), tt.reason)
			}
			g.Expect(n).To(Equal(int64(buf.Len())), "n counts the bytes written")
			if tt.wantNBytes {
				g.Expect(buf.Bytes()).To(Equal(archive), tt.reason)
				g.Expect(info.Index).To(BeEquivalentTo(120), "the index comes from meta.json")
				g.Expect(info.Term).To(BeEquivalentTo(4), "the term comes from meta.json")
			}
			if errors.Is(tt.wantErr, openbao.ErrNotActive) {
				g.Expect(n).To(BeZero(), "nothing of a redirect is written")
			}
		})
	}
}

func TestClientVerifiesTLS(t *testing.T) {
	f := newFakeCluster(t, 1)
	other := newFakeCluster(t, 1)

	tests := []struct {
		reason    string
		addr      string
		mutate    func(*openbao.MemberConfig)
		wantFatal bool
	}{
		{reason: "the member's DNS name is covered by the certificate", addr: f.addrs[0]},
		{reason: "another CA is not trusted", addr: f.addrs[0], mutate: func(c *openbao.MemberConfig) { c.CAFile = other.caFile }, wantFatal: true},
		{reason: "an IP address is not in the certificate", addr: f.ipAddr(0), wantFatal: true},
		{
			reason: "an IP address verifies against the TLS server name",
			addr:   f.ipAddr(0),
			mutate: func(c *openbao.MemberConfig) {
				c.TLSServerName = "bao-0." + testHeadless + "." + testNamespace + ".svc"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			var mutate []func(*openbao.MemberConfig)
			if tt.mutate != nil {
				mutate = append(mutate, tt.mutate)
			}
			c := f.newTestClient(t, tokenFile(t, jwtA), mutate...)
			_, err := c.Leader(context.Background(), tt.addr)
			if !tt.wantFatal {
				g.Expect(err).NotTo(HaveOccurred(), tt.reason)
				return
			}
			g.Expect(err).To(HaveOccurred(), tt.reason)
			g.Expect(Classify(err)).To(Equal(ClassFatal), "%s: %v", tt.reason, err)
			g.Expect(err.Error()).To(ContainSubstring("check that the CA file"))
		})
	}
}

func TestClientRefusesPlainHTTP(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 1)
	c := f.newTestClient(t, tokenFile(t, jwtA))
	err := c.StepDown(context.Background(), strings.Replace(f.addrs[0], "https://", "http://", 1))
	g.Expect(err).To(MatchError(ContainSubstring("the scheme must be https")))
	g.Expect(Classify(err)).To(Equal(ClassFatal))
	g.Expect(f.requestCount("step-down")).To(BeZero())
}

func TestClientRefusedConnectionIsRetryable(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 2)
	f.stop(1)
	c := f.newTestClient(t, tokenFile(t, jwtA))
	_, err := c.Leader(context.Background(), f.addrs[1])
	g.Expect(err).To(HaveOccurred())
	g.Expect(Classify(err)).To(Equal(ClassRetryable), "%v", err)
}

// TestClientNeverLeaksTokens makes OpenBao echo the secrets it was sent and
// checks every error in the chain and every log line.
func TestClientNeverLeaksTokens(t *testing.T) {
	tests := []struct {
		reason    string
		setup     func(f *fakeCluster)
		call      func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error
		wantClass Class
		wantIs    []error
	}{
		{
			reason: "a refused login that echoes the service-account token",
			setup: func(f *fakeCluster) {
				f.loginStatus = http.StatusBadRequest
				f.loginBody = "error validating token %JWT%: audience mismatch"
			},
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.StepDown(ctx, f.addrs[0])
			},
			wantClass: ClassFatal,
			wantIs:    []error{openbao.ErrLoginFailed, openbao.ErrBadRequest},
		},
		{
			reason: "a login that fails on the server side and echoes the token",
			setup: func(f *fakeCluster) {
				f.loginStatus = http.StatusInternalServerError
				f.loginBody = "internal error while checking %JWT%"
			},
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.StepDown(ctx, f.addrs[0])
			},
			wantClass: ClassRetryable,
			wantIs:    []error{openbao.ErrLoginFailed},
		},
		{
			reason: "a step-down that fails and echoes the client token",
			setup: func(f *fakeCluster) {
				f.script = []int{http.StatusInternalServerError}
				f.scriptBody = "request with token %TOKEN% failed: " + notActiveText
			},
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.StepDown(ctx, f.addrs[0])
			},
			wantClass: ClassRetryable,
			wantIs:    []error{openbao.ErrNotActive},
		},
		{
			reason: "a promote that fails and echoes the client token",
			setup: func(f *fakeCluster) {
				f.membershipScript = []int{http.StatusInternalServerError}
				f.scriptBody = "request with token %TOKEN% failed: server is not a non-voter"
			},
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				return c.Promote(ctx, f.addrs[0], "bao-0")
			},
			wantClass: ClassBenign,
			wantIs:    []error{openbao.ErrNotNonVoter},
		},
		{
			reason: "autopilot state refused twice, echoing the token each time",
			setup: func(f *fakeCluster) {
				f.autopilotStatus = http.StatusForbidden
				f.scriptBody = "permission denied for %TOKEN%"
			},
			call: func(ctx context.Context, c openbao.MemberClient, f *fakeCluster) error {
				_, err := c.AutopilotState(ctx, f.addrs[0])
				return err
			},
			wantClass: ClassFatal,
			wantIs:    []error{openbao.ErrPermissionDenied},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeCluster(t, 1)
			f.set(tt.setup)
			var logs bytes.Buffer
			ctx := logr.NewContext(context.Background(), funcr.New(func(prefix, args string) {
				logs.WriteString(prefix + " " + args + "\n")
			}, funcr.Options{Verbosity: 10}))
			c := f.newTestClient(t, tokenFile(t, jwtA))

			err := tt.call(ctx, c, f)
			g.Expect(err).To(HaveOccurred(), tt.reason)
			g.Expect(Classify(err)).To(Equal(tt.wantClass), "%s: %v", tt.reason, err)
			for _, target := range tt.wantIs {
				g.Expect(errors.Is(err, target)).To(BeTrue(), "%s: %v is not %v", tt.reason, err, target)
			}

			secrets := append([]string{jwtA}, f.tokens()...)
			g.Expect(f.jwts()).NotTo(BeEmpty(), "the scenario must send the JWT for the check to mean anything")
			for _, text := range errorTexts(err) {
				for _, s := range secrets {
					g.Expect(text).NotTo(ContainSubstring(s), "%s: a secret leaked into an error", tt.reason)
				}
			}
			for _, s := range secrets {
				g.Expect(logs.String()).NotTo(ContainSubstring(s), "%s: a secret leaked into the log", tt.reason)
			}
			g.Expect(err.Error()).To(ContainSubstring("[redacted]"), "%s: the echo is kept, redacted", tt.reason)
		})
	}
}

// errorTexts returns the text of err and of every error it wraps.
func errorTexts(err error) []string {
	if err == nil {
		return nil
	}
	out := []string{err.Error()}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, errorTexts(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, errorTexts(e)...)
		}
	}
	return out
}

func TestClientUnreadableTokenFileIsFatal(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 1)
	c := f.newTestClient(t, filepath.Join(t.TempDir(), "missing"))
	err := c.StepDown(context.Background(), f.addrs[0])
	g.Expect(errors.Is(err, openbao.ErrLoginFailed)).To(BeTrue(), "%v", err)
	g.Expect(Classify(err)).To(Equal(ClassFatal))
	g.Expect(err.Error()).To(ContainSubstring("check the projected service-account token volume"))
	g.Expect(f.requestCount("step-down")).To(BeZero())
}

func TestClientHonoursContext(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 1)
	c := f.newTestClient(t, tokenFile(t, jwtA))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := c.StepDown(ctx, f.addrs[0])
	g.Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "%v", err)
	g.Expect(f.requestCount("step-down")).To(BeZero())
}
