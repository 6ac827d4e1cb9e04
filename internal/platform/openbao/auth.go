package openbao

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	baoapi "github.com/openbao/openbao/api/v2"
)

// withToken runs call with a client that carries the controller's token,
// logging in first when no fresh token is cached. When OpenBao refuses the
// token with 403, it logs in again and runs call exactly once more; a second
// 403 yields ErrPermissionDenied. what names the action for error messages
// ("read autopilot state") and path the API path for hints.
func (c *client) withToken(ctx context.Context, what, path string, call func(*baoapi.Client) error) error {
	action := fmt.Sprintf("failed to %s from %s", what, c.cfg.Address)

	token, err := c.clientToken(ctx, "")
	if err != nil {
		return wrapOpError(action, err)
	}
	err = c.callWithToken(token, call)
	if err == nil {
		return nil
	}
	if StatusCode(err) != http.StatusForbidden {
		return newOpError(action, err, c.readHint(err, path), c.kindsFor(err), token)
	}

	logr.FromContextOrDiscard(ctx).V(1).Info("OpenBao refused the controller's token; logging in again",
		"address", c.cfg.Address, "path", path)
	fresh, err := c.clientToken(ctx, token)
	if err != nil {
		return wrapOpError(action, err)
	}
	err = c.callWithToken(fresh, call)
	if err == nil {
		return nil
	}
	return newOpError(action, err, c.readHint(err, path), c.kindsFor(err), token, fresh)
}

func (c *client) callWithToken(token string, call func(*baoapi.Client) error) error {
	cl, err := c.apiClient("", token)
	if err != nil {
		return err
	}
	return call(cl)
}

// clientToken returns a cached token that is not within 20% of its TTL of
// expiring and is not stale (the token a request was just refused with), or
// logs in for a new one. Only one login runs at a time; callers that wait for
// it give up when ctx ends.
func (c *client) clientToken(ctx context.Context, stale string) (string, error) {
	if token, ok := c.cachedToken(stale); ok {
		return token, nil
	}
	select {
	case c.loginSlot <- struct{}{}:
	case <-ctx.Done():
		err := ctx.Err()
		return "", newOpError(c.loginAction(), err, c.loginHint(err), nil)
	}
	defer func() { <-c.loginSlot }()

	// Another caller may have logged in while this one waited.
	if token, ok := c.cachedToken(stale); ok {
		return token, nil
	}
	return c.login(ctx)
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

func (c *client) loginAction() string {
	return fmt.Sprintf("failed to log in with role %q at auth/%s", c.cfg.Role, c.authMount)
}

// login reads the service-account token file, logs in to the JWT auth
// method and caches the client token it gets. Neither token is logged or
// put into an error.
func (c *client) login(ctx context.Context) (string, error) {
	action := c.loginAction()

	jwt, err := readServiceAccountToken(c.cfg.TokenPath)
	if err != nil {
		return "", newOpError(action, err,
			fmt.Sprintf("check the projected service-account token volume at %s", c.cfg.TokenPath),
			[]error{ErrLoginFailed})
	}
	cl, err := c.apiClient("", "")
	if err != nil {
		return "", newOpError(action, err, "", []error{ErrLoginFailed}, jwt)
	}

	start := c.now()
	secret, err := cl.Logical().WriteWithContext(ctx, "auth/"+c.authMount+"/login", map[string]any{
		"role": c.cfg.Role,
		"jwt":  jwt,
	})
	if err != nil {
		kinds := []error{ErrLoginFailed}
		if StatusCode(err) == http.StatusForbidden {
			kinds = append(kinds, ErrPermissionDenied)
		}
		return "", newOpError(action, err, c.loginHint(err), kinds, jwt)
	}
	if secret == nil || secret.Auth == nil || secret.Auth.ClientToken == "" {
		return "", newOpError(action, errors.New("the answer carried no client token"),
			fmt.Sprintf("check that auth/%s is a JWT auth method", c.authMount),
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
		"address", c.cfg.Address, "authMount", c.authMount, "role", c.cfg.Role, "ttl", ttl)
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
