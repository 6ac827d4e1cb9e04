package openbao

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/time/rate"
)

func TestNewValidatesConfig(t *testing.T) {
	b := newFakeBao(t)
	valid := Config{
		Address:   "https://bao.ns.svc:8200",
		CACertPEM: b.caPEM(),
		AuthMount: "baokeeper-jwt",
		Role:      "baokeeper-controller",
		TokenPath: "/var/run/secrets/baokeeper/token",
		Timeout:   5 * time.Second,
	}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{name: "valid", mutate: func(*Config) {}},
		{name: "zero timeout takes the default", mutate: func(c *Config) { c.Timeout = 0 }},
		{name: "mount with slashes", mutate: func(c *Config) { c.AuthMount = "/baokeeper-jwt/" }},
		{name: "empty address", mutate: func(c *Config) { c.Address = "" }, wantErr: "scheme must be https"},
		{name: "plain http", mutate: func(c *Config) { c.Address = "http://bao.ns.svc:8200" }, wantErr: "scheme must be https"},
		{name: "no host", mutate: func(c *Config) { c.Address = "https://" }, wantErr: "host is missing"},
		{name: "no CA", mutate: func(c *Config) { c.CACertPEM = nil }, wantErr: "CACertPEM"},
		{name: "garbage CA", mutate: func(c *Config) { c.CACertPEM = []byte("not a pem") }, wantErr: "CACertPEM"},
		{name: "empty mount", mutate: func(c *Config) { c.AuthMount = "/" }, wantErr: "AuthMount"},
		{name: "empty role", mutate: func(c *Config) { c.Role = "" }, wantErr: "Role"},
		{name: "empty token path", mutate: func(c *Config) { c.TokenPath = "" }, wantErr: "TokenPath"},
		{name: "negative timeout", mutate: func(c *Config) { c.Timeout = -time.Second }, wantErr: "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.mutate(&cfg)
			c, err := New(cfg)
			expectNew(t, c == nil, err, tt.wantErr)
		})
	}
}

// expectNew checks what a constructor returned: an error with wantErr in it
// and no client, or a client and no error when wantErr is empty.
func expectNew(t *testing.T, isNil bool, err error, wantErr string) {
	t.Helper()
	g := NewWithT(t)
	if wantErr != "" {
		g.Expect(err).To(MatchError(ContainSubstring(wantErr)))
		g.Expect(isNil).To(BeTrue(), "no client comes with an error")
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(isNil).To(BeFalse())
}

func TestNewDefaultsTimeout(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, _, _ := newTestClient(t, b, func(c *Config) { c.Timeout = 0 })
	g.Expect(c.c.s.timeout).To(Equal(DefaultTimeout))
}

func TestHealthTargetsTheMemberAndReportsEveryState(t *testing.T) {
	tests := []struct {
		name  string
		state healthState
		want  Health
	}{
		{
			name:  "active",
			state: healthState{initialized: true},
			want: Health{Initialized: true, Version: "2.4.0",
				ClusterID: "0d1b8a2e-6c3f-4e59-9b7a-1f2d3c4b5a69", ClusterName: "vault-cluster-5a2f1c9e"},
		},
		{
			name:  "standby (429 by default)",
			state: healthState{initialized: true, standby: true},
			want: Health{Initialized: true, Standby: true, Version: "2.4.0",
				ClusterID: "0d1b8a2e-6c3f-4e59-9b7a-1f2d3c4b5a69", ClusterName: "vault-cluster-5a2f1c9e"},
		},
		{
			name:  "sealed (503 by default)",
			state: healthState{initialized: true, sealed: true},
			want:  Health{Initialized: true, Sealed: true, Standby: true, Version: "2.4.0"},
		},
		{
			name:  "uninitialized (501 by default)",
			state: healthState{sealed: true},
			want:  Health{Sealed: true, Standby: true, Version: "2.4.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			service := newFakeBao(t)
			member := newFakeBao(t)
			member.set(func(b *fakeBao) { b.health = tt.state })
			c, _, _ := newTestClient(t, service, nil)

			got, err := c.Health(t.Context(), member.srv.URL)

			g.Expect(err).NotTo(HaveOccurred())
			served := got.Certificate
			got.Certificate = nil
			g.Expect(got.ServerTime).To(Equal(time.Unix(1764404473, 0).UTC()), "server_time_utc, the member's clock")
			g.Expect(got.AskedAt).NotTo(BeZero(), "the client's clock as it asked")
			g.Expect(got.AnsweredAt).NotTo(BeTemporally("<", got.AskedAt), "and as the answer came")
			got.ServerTime, got.AskedAt, got.AnsweredAt = time.Time{}, time.Time{}, time.Time{}
			g.Expect(*got).To(Equal(tt.want))
			g.Expect(served).NotTo(BeNil(), "the certificate the member presented is reported")
			leaf := member.srv.Certificate()
			sum := sha256.Sum256(leaf.Raw)
			g.Expect(served.SHA256).To(Equal(hex.EncodeToString(sum[:])), "the fingerprint of the certificate the member presented")
			g.Expect(served.NotAfter).To(BeTemporally("==", leaf.NotAfter))
			g.Expect(member.requestCount(pathHealth)).To(Equal(1))
			g.Expect(service.requestCount(pathHealth)).To(Equal(0), "health must go to the member, not the Service")
			g.Expect(member.tokens(pathHealth)).To(Equal([]string{""}), "health needs no token")
			g.Expect(service.logins()).To(Equal(0))
			member.mu.Lock()
			sent := member.healthStatusSent
			member.mu.Unlock()
			g.Expect(sent).To(HaveLen(1))
			g.Expect(sent[0]).To(BeNumerically("<", 300), "the query must override the non-active status codes")
		})
	}
}

func TestHealthRejectsBadMemberAddress(t *testing.T) {
	tests := []struct{ name, addr string }{
		{name: "plain http", addr: "http://bao-0.bao-internal.ns.svc:8200"},
		{name: "no scheme", addr: "bao-0.bao-internal.ns.svc:8200"},
		{name: "empty", addr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			c, _, _ := newTestClient(t, b, nil)
			_, err := c.Health(t.Context(), tt.addr)
			g.Expect(err).To(MatchError(ContainSubstring("invalid member address")))
			g.Expect(b.requestCount(pathHealth)).To(Equal(0))
		})
	}
}

func TestLeader(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, _, _ := newTestClient(t, b, nil)

	got, err := c.Leader(t.Context())

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*got).To(Equal(Leader{
		IsSelf:               false,
		LeaderAddress:        "https://bao-0.bao-internal.ns.svc:8200",
		LeaderClusterAddress: "https://bao-0.bao-internal.ns.svc:8201",
		RaftCommittedIndex:   1234,
		RaftAppliedIndex:     1230,
	}))
	g.Expect(b.tokens(pathLeader)).To(Equal([]string{""}), "sys/leader needs no token")
	g.Expect(b.logins()).To(Equal(0))
}

func TestRaftConfiguration(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, _, _ := newTestClient(t, b, nil)

	got, err := c.RaftConfiguration(t.Context())

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Servers).To(Equal([]RaftServer{
		{NodeID: "bao-0", Address: "bao-0.bao-internal.ns.svc:8201", Leader: true, Voter: true},
		{NodeID: "bao-1", Address: "bao-1.bao-internal.ns.svc:8201", Leader: false, Voter: true},
		{NodeID: "bao-2", Address: "bao-2.bao-internal.ns.svc:8201", Leader: false, Voter: false},
	}))
	g.Expect(b.tokens(pathRaftConfiguration)).To(Equal([]string{"t-1"}))
}

func TestAutopilotState(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, _, _ := newTestClient(t, b, nil)

	got, err := c.AutopilotState(t.Context())

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Healthy).To(BeTrue())
	g.Expect(got.FailureTolerance).To(Equal(1))
	g.Expect(got.Leader).To(Equal("n1"))
	g.Expect(got.Voters).To(Equal([]string{"n1", "n2", "n3"}))
	g.Expect(got.NonVoters).To(Equal([]string{"n4"}))
	g.Expect(got.Servers).To(HaveLen(4))
	g.Expect(got.Servers["n2"]).To(Equal(AutopilotServer{
		ID:          "n2",
		Name:        "n2",
		Address:     "127.0.1.2:8201",
		NodeStatus:  "alive",
		Status:      AutopilotStatusVoter,
		NodeType:    "voter",
		Version:     "2.4.0",
		LastIndex:   820,
		LastTerm:    9,
		Healthy:     true,
		LastContact: 1900 * time.Millisecond,
		StableSince: time.Date(2026, 11, 29, 8, 21, 13, 0, time.UTC),
	}))
	g.Expect(got.Servers["n1"].Status).To(Equal(AutopilotStatusLeader))
	g.Expect(got.Servers["n1"].StableSince).To(Equal(time.Date(2026, 11, 29, 8, 20, 1, 500_000_000, time.UTC)))
	g.Expect(got.Servers["n3"].Healthy).To(BeFalse())
	g.Expect(got.Servers["n4"].Status).To(Equal(AutopilotStatusNonVoter))
	g.Expect(got.Servers["n4"].LastContact).To(Equal(800 * time.Millisecond))
	g.Expect(b.tokens(pathAutopilotState)).To(Equal([]string{"t-1"}))
}

func TestMapAutopilotStateRejectsUnreadableTimes(t *testing.T) {
	tests := []struct {
		name        string
		lastContact string
		stableSince string
		wantErr     string
	}{
		{name: "last_contact", lastContact: "soon", wantErr: "last_contact"},
		{name: "stable_since", lastContact: "1s", stableSince: "yesterday", wantErr: "stable_since"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			c, _, _ := newTestClient(t, b, nil)
			state := `{"healthy":true,"failure_tolerance":0,"leader":"n1","voters":["n1"],"servers":{"n1":` +
				`{"id":"n1","name":"n1","address":"127.0.1.1:8201","node_status":"alive","last_contact":"` +
				tt.lastContact + `","stable_since":"` + tt.stableSince + `","status":"leader"}}}`
			b.set(func(b *fakeBao) { b.body[pathAutopilotState] = state })

			_, err := c.AutopilotState(t.Context())

			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestNotFound(t *testing.T) {
	tests := []struct {
		name string
		path string
		call func(context.Context, Reader) error
	}{
		{name: "raft configuration", path: pathRaftConfiguration, call: func(ctx context.Context, c Reader) error {
			_, err := c.RaftConfiguration(ctx)
			return err
		}},
		{name: "autopilot state", path: pathAutopilotState, call: func(ctx context.Context, c Reader) error {
			_, err := c.AutopilotState(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			b.set(func(b *fakeBao) { b.notFound[tt.path] = true })
			c, _, _ := newTestClient(t, b, nil)

			err := tt.call(t.Context(), c)

			g.Expect(err).To(MatchError(ErrNotFound))
			g.Expect(err).NotTo(MatchError(ErrPermissionDenied))
			g.Expect(err.Error()).To(ContainSubstring("Raft integrated storage"))
		})
	}
}

func TestUnknownCAFailsVerification(t *testing.T) {
	tests := []struct {
		name string
		call func(context.Context, Reader, string) error
	}{
		{name: "health", call: func(ctx context.Context, c Reader, addr string) error {
			_, err := c.Health(ctx, addr)
			return err
		}},
		{name: "leader", call: func(ctx context.Context, c Reader, _ string) error {
			_, err := c.Leader(ctx)
			return err
		}},
		{name: "autopilot state (login)", call: func(ctx context.Context, c Reader, _ string) error {
			_, err := c.AutopilotState(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			c, _, _ := newTestClient(t, b, func(c *Config) { c.CACertPEM = unrelatedCAPEM(t) })

			err := tt.call(t.Context(), c, b.srv.URL)

			g.Expect(err).To(HaveOccurred())
			var verifyErr *tls.CertificateVerificationError
			g.Expect(errors.As(err, &verifyErr)).To(BeTrue(), "want a certificate verification error, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("check that CACertPEM holds the CA"))
			g.Expect(b.logins()).To(Equal(0))
			g.Expect(b.requestCount(pathHealth) + b.requestCount(pathLeader) +
				b.requestCount(pathAutopilotState)).To(Equal(0))
		})
	}
}

func TestDeadlineIsHonoured(t *testing.T) {
	calls := []struct {
		name string
		path string
		call func(context.Context, Reader, string) error
	}{
		{name: "health", path: pathHealth, call: func(ctx context.Context, c Reader, addr string) error {
			_, err := c.Health(ctx, addr)
			return err
		}},
		{name: "leader", path: pathLeader, call: func(ctx context.Context, c Reader, _ string) error {
			_, err := c.Leader(ctx)
			return err
		}},
		{name: "autopilot state", path: pathAutopilotState, call: func(ctx context.Context, c Reader, _ string) error {
			_, err := c.AutopilotState(ctx)
			return err
		}},
	}
	bounds := []struct {
		name        string
		cfgTimeout  time.Duration
		ctxDeadline time.Duration
	}{
		{name: "ctx deadline sooner", cfgTimeout: time.Minute, ctxDeadline: 200 * time.Millisecond},
		{name: "config timeout sooner", cfgTimeout: 200 * time.Millisecond},
	}
	for _, call := range calls {
		for _, bound := range bounds {
			t.Run(call.name+"/"+bound.name, func(t *testing.T) {
				g := NewWithT(t)
				b := newFakeBao(t)
				b.set(func(b *fakeBao) { b.delay[call.path] = 10 * time.Second })
				c, _, _ := newTestClient(t, b, func(c *Config) { c.Timeout = bound.cfgTimeout })
				ctx := t.Context()
				if bound.ctxDeadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, bound.ctxDeadline)
					defer cancel()
				}

				start := time.Now()
				err := call.call(ctx, c, b.srv.URL)
				elapsed := time.Since(start)

				g.Expect(err).To(MatchError(context.DeadlineExceeded))
				g.Expect(err.Error()).To(ContainSubstring("no answer before the deadline"))
				g.Expect(elapsed).To(BeNumerically("<", 3*time.Second))
				g.Expect(b.requestCount(call.path)).To(Equal(1), "the slow handler must have been reached")
			})
		}
	}
}

func TestDeadlineCoversLogin(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	b.set(func(b *fakeBao) { b.loginDelay = 10 * time.Second })
	c, _, _ := newTestClient(t, b, func(c *Config) { c.Timeout = 200 * time.Millisecond })

	start := time.Now()
	_, err := c.RaftConfiguration(t.Context())

	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(err).To(MatchError(ErrLoginFailed))
	g.Expect(time.Since(start)).To(BeNumerically("<", 3*time.Second))
	g.Expect(b.requestCount(pathRaftConfiguration)).To(Equal(0))
}

func TestErrorMessagesSayWhatToCheck(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, _, _ := newTestClient(t, b, nil)

	// A member that does not listen.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	deadAddr := "https://" + l.Addr().String()
	g.Expect(l.Close()).To(Succeed())

	_, err = c.Health(t.Context(), deadAddr)
	g.Expect(err).To(MatchError(ContainSubstring("failed to read health from " + deadAddr)))
	g.Expect(err).To(MatchError(ContainSubstring("check that the address resolves and OpenBao is listening")))

	// A Service that routes to a sealed node.
	b.set(func(b *fakeBao) { b.failStatus[pathLeader] = http.StatusServiceUnavailable })
	_, err = c.Leader(t.Context())
	g.Expect(err).To(MatchError(ContainSubstring("failed to read the leader from " + b.srv.URL)))
	g.Expect(err).To(MatchError(ContainSubstring("OpenBao answered HTTP 503 (Vault is sealed)")))
	g.Expect(err).To(MatchError(ContainSubstring("check whether the node is sealed")))
}

func TestWrapTransportSeesEveryRequest(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	var seen []string
	c, _, _ := newTestClient(t, b, func(cfg *Config) {
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				seen = append(seen, r.URL.Path)
				return rt.RoundTrip(r)
			})
		}
	})

	_, err := c.Leader(t.Context())

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(seen).To(Equal([]string{"/v1/" + pathLeader}), "the wrapped transport carried the request")
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestLimiterHoldsRequestsBeyondItsRate(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	// Two requests at once, then one per thousand seconds: the third must wait far
	// longer than its context allows.
	c, _, _ := newTestClient(t, b, func(cfg *Config) { cfg.Limiter = rate.NewLimiter(0.001, 2) })

	for range 2 {
		_, err := c.Leader(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := c.Leader(ctx)

	g.Expect(err).To(MatchError(ContainSubstring("OpenBao request rate limit")))
	g.Expect(b.requestCount(pathLeader)).To(Equal(2), "the held request was never sent")
}
