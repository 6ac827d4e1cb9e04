package raftops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// clientToken returns a cached token that is not within 20% of its TTL of
// expiring and is not stale (the token a request was just refused with), or
// logs in at addr for a new one. Only one login runs at a time; callers that
// wait for it give up when ctx ends.
func (c *client) clientToken(ctx context.Context, addr, stale string) (string, error) {
	if token, ok := c.cachedToken(stale); ok {
		return token, nil
	}
	select {
	case c.loginSlot <- struct{}{}:
	case <-ctx.Done():
		return "", newOpError(c.loginAction(addr), ctx.Err(), "", []error{ErrLoginFailed})
	}
	defer func() { <-c.loginSlot }()

	// Another caller may have logged in while this one waited.
	if token, ok := c.cachedToken(stale); ok {
		return token, nil
	}
	return c.login(ctx, addr)
}

func (c *client) cachedToken(stale string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stale != "" && c.token == stale {
		c.token, c.refreshAt = "", time.Time{}
	}
	if c.token == "" {
		return "", false
	}
	if !c.refreshAt.IsZero() && !c.now().Before(c.refreshAt) {
		return "", false
	}
	return c.token, true
}

func (c *client) loginAction(addr string) string {
	return fmt.Sprintf("failed to log in at %s with role %q on auth/%s", addr, c.cfg.Role, c.authMount)
}

// login reads the service-account token file, logs in to the JWT auth method
// at addr and caches the client token it gets. Neither token is logged or put
// into an error.
func (c *client) login(ctx context.Context, addr string) (string, error) {
	// A login is bounded like any call, also when it serves a Snapshot,
	// which only ctx bounds.
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	action := c.loginAction(addr)

	jwt, err := readServiceAccountToken(c.cfg.TokenFile)
	if err != nil {
		// An unreadable token file is a broken Job spec; no retry mends it.
		return "", newOpError(action, err,
			fmt.Sprintf("check the projected service-account token volume at %s", c.cfg.TokenFile),
			[]error{ErrLoginFailed, classMarker{class: ClassFatal}})
	}
	cl, _, err := c.apiClient(addr, "")
	if err != nil {
		return "", newOpError(action, err, "", []error{ErrLoginFailed}, jwt)
	}

	start := c.now()
	secret, err := cl.Logical().WriteWithContext(ctx, "auth/"+c.authMount+"/login", map[string]any{
		"role": c.cfg.Role,
		"jwt":  jwt,
	})
	if err != nil {
		return "", newOpError(action, err, c.loginHint(err), append([]error{ErrLoginFailed}, kindsFor(err)...), jwt)
	}
	if secret == nil || secret.Auth == nil || secret.Auth.ClientToken == "" {
		return "", newOpError(action, errors.New("the answer carried no client token"),
			fmt.Sprintf("check that auth/%s is a JWT auth method and that %s is the active node or can forward to it", c.authMount, addr),
			[]error{ErrLoginFailed}, jwt)
	}

	token := secret.Auth.ClientToken
	ttl := time.Duration(secret.Auth.LeaseDuration) * time.Second
	c.mu.Lock()
	c.token = token
	c.refreshAt = time.Time{}
	if ttl > 0 {
		// Measured from before the request, so the token is replaced a
		// little early rather than late.
		c.refreshAt = start.Add(ttl - ttl/5)
	}
	c.mu.Unlock()

	logr.FromContextOrDiscard(ctx).V(1).Info("Logged in to OpenBao",
		"address", addr, "authMount", c.authMount, "role", c.cfg.Role, "ttl", ttl)
	return token, nil
}

// loginHint tells a person what to check after a failed login.
func (c *client) loginHint(cause error) string {
	if h := c.transportHint(cause); h != "" {
		return h
	}
	switch openbao.StatusCode(cause) {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound:
		return fmt.Sprintf("check that a JWT auth method is enabled at auth/%s, that role %q exists there, "+
			"and that its bound_audiences and bound_subject match the service-account token in %s",
			c.authMount, c.cfg.Role, c.cfg.TokenFile)
	}
	return ""
}

func readServiceAccountToken(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("failed to read the service-account token: %w", err)
	}
	jwt := strings.TrimSpace(string(raw))
	if jwt == "" {
		return "", fmt.Errorf("the service-account token file %s is empty", path)
	}
	return jwt, nil
}
