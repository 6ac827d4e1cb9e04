package openbao

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
)

// authedCall is one token-protected Reader method.
type authedCall struct {
	name string
	path string
	call func(context.Context, Reader) error
}

var authedCalls = []authedCall{
	{name: "raft configuration", path: pathRaftConfiguration, call: func(ctx context.Context, c Reader) error {
		_, err := c.RaftConfiguration(ctx)
		return err
	}},
	{name: "autopilot state", path: pathAutopilotState, call: func(ctx context.Context, c Reader) error {
		_, err := c.AutopilotState(ctx)
		return err
	}},
}

func TestLoginOnceAndReuseToken(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, _, _ := newTestClient(t, b, nil)

	for range 3 {
		for _, ac := range authedCalls {
			g.Expect(ac.call(t.Context(), c)).To(Succeed())
		}
	}

	g.Expect(b.logins()).To(Equal(1))
	g.Expect(b.jwts()).To(Equal([]string{jwtA}))
	b.mu.Lock()
	g.Expect(b.roles).To(Equal([]string{testRole}))
	b.mu.Unlock()
	for _, ac := range authedCalls {
		g.Expect(b.tokens(ac.path)).To(Equal([]string{"t-1", "t-1", "t-1"}))
	}
}

func TestConcurrentCallsShareOneLogin(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	b.set(func(b *fakeBao) { b.loginDelay = 100 * time.Millisecond })
	c, _, _ := newTestClient(t, b, nil)

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() { errs <- authedCalls[i%2].call(t.Context(), c) })
	}
	wg.Wait()
	close(errs)

	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(b.logins()).To(Equal(1))
}

func TestForbiddenTriggersOneReloginAndRetry(t *testing.T) {
	for _, ac := range authedCalls {
		t.Run(ac.name+"/revoked token is replaced", func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			c, _, _ := newTestClient(t, b, nil)
			g.Expect(ac.call(t.Context(), c)).To(Succeed())
			b.revokeAll()

			err := ac.call(t.Context(), c)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b.logins()).To(Equal(2))
			g.Expect(b.tokens(ac.path)).To(Equal([]string{"t-1", "t-1", "t-2"}))

			// The new token is cached.
			g.Expect(ac.call(t.Context(), c)).To(Succeed())
			g.Expect(b.logins()).To(Equal(2))
			g.Expect(b.tokens(ac.path)).To(Equal([]string{"t-1", "t-1", "t-2", "t-2"}))
		})

		t.Run(ac.name+"/still forbidden after fresh login", func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			b.set(func(b *fakeBao) { b.forbid[ac.path] = true })
			c, _, _ := newTestClient(t, b, nil)

			err := ac.call(t.Context(), c)

			g.Expect(err).To(MatchError(ErrPermissionDenied))
			g.Expect(err).NotTo(MatchError(ErrLoginFailed))
			g.Expect(err.Error()).To(ContainSubstring("OpenBao answered HTTP 403 (permission denied)"))
			g.Expect(err.Error()).To(ContainSubstring(
				`check that the policies of role "baokeeper-controller" on auth/baokeeper-jwt allow read on ` + ac.path))
			g.Expect(b.logins()).To(Equal(2), "exactly one re-login")
			g.Expect(b.tokens(ac.path)).To(Equal([]string{"t-1", "t-2"}), "exactly one retry")
		})
	}
}

func TestTokenFileIsReadOnEveryLogin(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, tokenPath, _ := newTestClient(t, b, nil)
	g.Expect(c.RaftConfiguration(t.Context())).Error().NotTo(HaveOccurred())

	// kubelet rotates the projected token; the old one stops working.
	writeJWT(t, tokenPath, jwtB)
	b.set(func(b *fakeBao) { b.acceptJWT = jwtB })
	b.revokeAll()

	g.Expect(c.RaftConfiguration(t.Context())).Error().NotTo(HaveOccurred())
	g.Expect(b.jwts()).To(Equal([]string{jwtA, jwtB}))
	g.Expect(b.tokens(pathRaftConfiguration)).To(Equal([]string{"t-1", "t-1", "t-2"}))
}

func TestTokenIsReplacedWithin20PercentOfExpiry(t *testing.T) {
	tests := []struct {
		name         string
		leaseSeconds int
		advance      time.Duration
		wantLogins   int
	}{
		{name: "fresh token is reused", leaseSeconds: 60, advance: 47 * time.Second, wantLogins: 1},
		{name: "token at 80% of TTL is replaced", leaseSeconds: 60, advance: 48 * time.Second, wantLogins: 2},
		{name: "expired token is replaced", leaseSeconds: 60, advance: 2 * time.Minute, wantLogins: 2},
		{name: "longer TTL scales", leaseSeconds: 3600, advance: 47 * time.Minute, wantLogins: 1},
		{name: "token without TTL is kept", leaseSeconds: 0, advance: 24 * time.Hour, wantLogins: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			b.set(func(b *fakeBao) { b.leaseSeconds = tt.leaseSeconds })
			c, _, clock := newTestClient(t, b, nil)
			g.Expect(c.AutopilotState(t.Context())).Error().NotTo(HaveOccurred())

			clock.Advance(tt.advance)
			g.Expect(c.AutopilotState(t.Context())).Error().NotTo(HaveOccurred())

			g.Expect(b.logins()).To(Equal(tt.wantLogins))
			// No request was ever refused: the renewal happened up front.
			g.Expect(b.requestCount(pathAutopilotState)).To(Equal(2))
		})
	}
}

func TestLoginFailures(t *testing.T) {
	tests := []struct {
		name          string
		setup         func(t *testing.T, b *fakeBao, tokenPath string)
		role          string
		wantDenied    bool
		wantLoginHits int
		wantText      string
	}{
		{
			name:          "unknown role",
			role:          "someone-else",
			wantLoginHits: 1,
			wantText:      `role "someone-else" could not be found`,
		},
		{
			name:          "JWT not accepted",
			setup:         func(_ *testing.T, b *fakeBao, _ string) { b.set(func(b *fakeBao) { b.acceptJWT = jwtB }) },
			wantLoginHits: 1,
			wantText:      "bound_audiences and bound_claims",
		},
		{
			name: "login refused with 403",
			setup: func(_ *testing.T, b *fakeBao, _ string) {
				b.set(func(b *fakeBao) {
					b.loginStatus = http.StatusForbidden
					b.loginBody = `{"errors":["permission denied"]}`
				})
			},
			wantDenied:    true,
			wantLoginHits: 1,
			wantText:      "check that a JWT auth method is enabled at auth/baokeeper-jwt",
		},
		{
			name:          "login answer without token",
			setup:         func(_ *testing.T, b *fakeBao, _ string) { b.set(func(b *fakeBao) { b.loginNoAuth = true }) },
			wantLoginHits: 1,
			wantText:      "the answer carried no client token",
		},
		{
			name: "token file missing",
			setup: func(t *testing.T, _ *fakeBao, tokenPath string) {
				if err := os.Remove(tokenPath); err != nil {
					t.Fatal(err)
				}
			},
			wantText: "check the projected service-account token volume",
		},
		{
			name:     "token file empty",
			setup:    func(t *testing.T, _ *fakeBao, tokenPath string) { writeJWT(t, tokenPath, "  ") },
			wantText: "is empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			c, tokenPath, _ := newTestClient(t, b, func(c *Config) {
				if tt.role != "" {
					c.Role = tt.role
				}
			})
			if tt.setup != nil {
				tt.setup(t, b, tokenPath)
			}

			_, err := c.AutopilotState(t.Context())

			g.Expect(err).To(MatchError(ErrLoginFailed))
			if tt.wantDenied {
				g.Expect(err).To(MatchError(ErrPermissionDenied))
			} else {
				g.Expect(err).NotTo(MatchError(ErrPermissionDenied))
			}
			g.Expect(err.Error()).To(HavePrefix("failed to read autopilot state from " + b.srv.URL + ": failed to log in"))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantText))
			g.Expect(b.logins()).To(Equal(tt.wantLoginHits))
			g.Expect(b.requestCount(pathAutopilotState)).To(Equal(0))
			for _, text := range errorTexts(err) {
				g.Expect(text).NotTo(ContainSubstring(jwtA))
			}
		})
	}
}

func TestTokensNeverAppearInErrors(t *testing.T) {
	// Servers and proxies may echo what they were sent; every such echo
	// must be redacted, in the message and in everything it wraps.
	tests := []struct {
		name  string
		setup func(b *fakeBao)
	}{
		{
			name: "server error echoing the client token",
			setup: func(b *fakeBao) {
				b.failStatus[pathAutopilotState] = http.StatusInternalServerError
				b.failBody = `{"errors":["internal error serving token %TOKEN%"]}`
			},
		},
		{
			name: "raw non-JSON body echoing the client token",
			setup: func(b *fakeBao) {
				b.failStatus[pathAutopilotState] = http.StatusBadGateway
				b.failBody = "<html>upstream rejected X-Vault-Token: %TOKEN%</html>"
			},
		},
		{
			name: "undecodable answer echoing the client token",
			setup: func(b *fakeBao) {
				b.failStatus[pathAutopilotState] = http.StatusOK
				b.failBody = `{"data":{"healthy":true,"servers":{"n1":{"id":"n1","last_contact":"%TOKEN%"}}}}`
			},
		},
		{
			name: "403 after re-login echoing nothing",
			setup: func(b *fakeBao) {
				b.forbid[pathAutopilotState] = true
			},
		},
		{
			name: "login refusal echoing the service-account token",
			setup: func(b *fakeBao) {
				b.loginStatus = http.StatusBadRequest
				b.loginBody = `{"errors":["error validating token %JWT%: audience mismatch"]}`
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			b.set(tt.setup)
			c, _, _ := newTestClient(t, b, nil)

			_, err := c.AutopilotState(t.Context())

			g.Expect(err).To(HaveOccurred())
			texts := errorTexts(err)
			for _, text := range texts {
				g.Expect(text).NotTo(ContainSubstring("t-1"))
				g.Expect(text).NotTo(ContainSubstring("t-2"))
				g.Expect(text).NotTo(ContainSubstring(jwtA))
			}
			// The echo reached the client, so the redaction was exercised.
			if b.failBody != "" || b.loginBody != "" {
				g.Expect(err.Error()).To(ContainSubstring(RedactedText))
			}
		})
	}
}

func TestTokensAreNeverLogged(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, tokenPath, _ := newTestClient(t, b, nil)

	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
	ctx := logr.NewContext(t.Context(), logger)

	g.Expect(c.AutopilotState(ctx)).Error().NotTo(HaveOccurred())
	writeJWT(t, tokenPath, jwtB)
	b.set(func(b *fakeBao) { b.acceptJWT = jwtB })
	b.revokeAll()
	g.Expect(c.AutopilotState(ctx)).Error().NotTo(HaveOccurred())

	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(lines, "\n")
	g.Expect(all).To(ContainSubstring("Logged in to OpenBao"))
	g.Expect(all).To(ContainSubstring("logging in again"))
	for _, secret := range []string{"t-1", "t-2", jwtA, jwtB} {
		g.Expect(all).NotTo(ContainSubstring(secret))
	}
}

func TestEnvironmentCannotInjectTokenOrSkipVerify(t *testing.T) {
	t.Setenv("BAO_TOKEN", "env-root-token")
	t.Setenv("VAULT_TOKEN", "env-root-token")
	t.Setenv("BAO_SKIP_VERIFY", "true")
	t.Setenv("BAO_NAMESPACE", "env-ns")
	g := NewWithT(t)
	b := newFakeBao(t)

	c, _, _ := newTestClient(t, b, nil)
	_, err := c.Leader(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.tokens(pathLeader)).To(Equal([]string{""}))

	untrusted, _, _ := newTestClient(t, b, func(c *Config) { c.CACertPEM = unrelatedCAPEM(t) })
	_, err = untrusted.Leader(t.Context())
	g.Expect(err).To(MatchError(ContainSubstring("check that CACertPEM holds the CA")))
}

func TestLoginWaitHonoursContext(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, _, _ := newTestClient(t, b, nil)

	// Another caller holds the login slot.
	c.c.loginSlot <- struct{}{}
	defer func() { <-c.c.loginSlot }()

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := c.RaftConfiguration(ctx)

	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(b.logins()).To(Equal(0))
}
