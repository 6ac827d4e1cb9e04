package openbao

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// newMemberTestClient returns a member client for b that logs in with jwtA
// from a fresh token file, and the clock it uses.
func newMemberTestClient(t *testing.T, b *fakeBao, mutate func(*MemberConfig)) (*client, *fakeClock) {
	t.Helper()
	tokenFile, clock := newTokenAndClock(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	writeJWT(t, caFile, string(b.caPEM()))
	cfg := MemberConfig{CAFile: caFile, AuthMount: testMount, Role: testRole, TokenFile: tokenFile, Timeout: 5 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := newMemberClient(cfg, clock.Now)
	if err != nil {
		t.Fatalf("newMemberClient: %v", err)
	}
	return c, clock
}

func TestNewMemberClientValidatesConfig(t *testing.T) {
	dir := t.TempDir()
	b := newFakeBao(t)
	caFile := filepath.Join(dir, "ca.crt")
	writeJWT(t, caFile, string(b.caPEM()))
	notPEM := filepath.Join(dir, "not-pem")
	writeJWT(t, notPEM, "hello")
	valid := MemberConfig{CAFile: caFile, TokenFile: "/t", AuthMount: testMount, Role: testRole}

	tests := []struct {
		reason  string
		mutate  func(*MemberConfig)
		wantErr string
	}{
		{reason: "a CA file, a token file, a mount and a role are enough", mutate: func(*MemberConfig) {}},
		{reason: "without a CA there is nothing to verify against", mutate: func(c *MemberConfig) { c.CAFile = "" }, wantErr: "invalid OpenBao CAFile"},
		{reason: "a missing CA file is reported", mutate: func(c *MemberConfig) { c.CAFile = filepath.Join(dir, "missing") }, wantErr: "failed to read the cluster CA"},
		{reason: "a CA file without PEM is refused", mutate: func(c *MemberConfig) { c.CAFile = notPEM }, wantErr: "holds no PEM-encoded certificate"},
		{reason: "a token file is needed to log in", mutate: func(c *MemberConfig) { c.TokenFile = "" }, wantErr: "invalid OpenBao TokenFile"},
		{reason: "a mount of only slashes is no mount", mutate: func(c *MemberConfig) { c.AuthMount = "//" }, wantErr: "invalid OpenBao AuthMount"},
		{reason: "a role is needed to log in", mutate: func(c *MemberConfig) { c.Role = "" }, wantErr: "invalid OpenBao Role"},
		{reason: "a negative timeout is a mistake", mutate: func(c *MemberConfig) { c.Timeout = -time.Second }, wantErr: "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			cfg := valid
			tt.mutate(&cfg)
			c, err := NewMemberClient(cfg)
			expectNew(t, c == nil, err, tt.wantErr)
		})
	}
}

func TestMemberClientDefaultsTimeout(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	c, _ := newMemberTestClient(t, b, func(c *MemberConfig) { c.Timeout = 0 })
	g.Expect(c.s.timeout).To(Equal(DefaultTimeout))
	c, _ = newMemberTestClient(t, b, nil)
	g.Expect(c.s.timeout).To(Equal(5 * time.Second))
}

func TestMemberClientLogsInAgainWhenTheTokenNearsExpiry(t *testing.T) {
	g := NewWithT(t)
	b := newFakeBao(t)
	b.set(func(b *fakeBao) { b.leaseSeconds = 100 })
	c, clock := newMemberTestClient(t, b, nil)
	ctx := t.Context()

	_, err := c.AutopilotState(ctx, b.srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	clock.Advance(79 * time.Second)
	_, err = c.AutopilotState(ctx, b.srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.logins()).To(Equal(1), "79%% of the TTL has passed: the token is still good")

	clock.Advance(2 * time.Second)
	_, err = c.AutopilotState(ctx, b.srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.logins()).To(Equal(2), "past 80%% of the TTL the token is replaced")
}
