package openbao

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// logFrom returns the debug logger of ctx. Tokens never go into it.
func logFrom(ctx context.Context) logr.Logger {
	return logr.FromContextOrDiscard(ctx).V(1)
}

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
		err := ctx.Err()
		return "", newOpError(c.loginAction(addr), err, c.loginHint(err), []error{ErrLoginFailed})
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
	return fmt.Sprintf("failed to log in at %s with role %q on auth/%s", addr, c.s.role, c.s.authMount)
}

// login reads the service-account token file, logs in to the JWT auth method
// at addr and caches the client token it gets. Neither token is logged or put
// into an error.
func (c *client) login(ctx context.Context, addr string) (string, error) {
	// A login is bounded like any call, also when it serves a Snapshot,
	// which only ctx bounds.
	ctx, cancel := context.WithTimeout(ctx, c.s.timeout)
	defer cancel()
	action := c.loginAction(addr)

	var jwt string
	var err error
	if c.s.tokenSource != nil {
		if jwt, err = c.s.tokenSource(ctx); err != nil {
			// The Kubernetes API did not issue a token: it may answer next time.
			return "", newOpError(action, err,
				"check that the operator may create tokens of its own service account (serviceaccounts/token)",
				[]error{ErrLoginFailed})
		}
	} else if jwt, err = readServiceAccountToken(c.s.tokenPath); err != nil {
		// An unreadable token file is a broken deployment; no retry mends it.
		return "", newOpError(action, err,
			fmt.Sprintf("check the projected service-account token volume at %s", c.s.tokenPath),
			[]error{ErrLoginFailed, transienceMarker{Permanent}})
	}
	cl, _, err := c.apiClient(addr, "")
	if err != nil {
		return "", newOpError(action, err, "", []error{ErrLoginFailed}, jwt)
	}

	start := c.now()
	secret, err := cl.Logical().WriteWithContext(ctx, "auth/"+c.s.authMount+"/login", map[string]any{
		"role": c.s.role,
		"jwt":  jwt,
	})
	if err != nil {
		return "", newOpError(action, err, c.loginHint(err), append([]error{ErrLoginFailed}, kindsFor(err)...), jwt)
	}
	if secret == nil || secret.Auth == nil || secret.Auth.ClientToken == "" {
		return "", newOpError(action, errors.New("the answer carried no client token"),
			fmt.Sprintf("check that auth/%s is a JWT auth method and that %s is the active node or can forward to it", c.s.authMount, addr),
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

	logFrom(ctx).Info("Logged in to OpenBao",
		"address", addr, "authMount", c.s.authMount, "role", c.s.role, "ttl", ttl)
	return token, nil
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
