package openbao

import (
	"context"
	"fmt"

	baoapi "github.com/openbao/openbao/api/v2"
)

// CanaryWriter writes the restore canary: one KV version 2 entry whose value a
// restore of the next snapshot must hold.
type CanaryWriter interface {
	// WriteCanary writes {"value": value} to the KV version 2 API path (for
	// example baokeeper/data/canary) through addr, the active node (a redirect is
	// ErrNotActive). A policy that does not grant it is ErrPermissionDenied; a
	// mount that does not exist (a cluster initialized before the canary) is
	// ErrNotFound.
	WriteCanary(ctx context.Context, addr, path, value string) error
}

// CanaryReader reads the restore canary.
type CanaryReader interface {
	// Canary reads the value of the KV version 2 entry at path through the
	// cluster Service with the controller's token: ErrNotFound when there is
	// none, ErrPermissionDenied when the policy does not grant the read.
	Canary(ctx context.Context, path string) (string, error)
}

var (
	_ CanaryWriter = (*client)(nil)
	_ CanaryReader = (*reader)(nil)
)

// WriteCanary implements CanaryWriter.
func (c *client) WriteCanary(ctx context.Context, addr, path, value string) error {
	ctx, cancel := context.WithTimeout(ctx, c.s.timeout)
	defer cancel()
	action := fmt.Sprintf("failed to write the restore canary %s through %s", path, addr)
	return c.withToken(ctx, action, addr, path, "create and update", func(cl *baoapi.Client) error {
		_, err := cl.Logical().WriteWithContext(ctx, path, map[string]any{"data": map[string]any{"value": value}})
		return err
	})
}

// Canary implements CanaryReader.
func (r *reader) Canary(ctx context.Context, path string) (string, error) {
	return r.c.canary(ctx, r.addr, path)
}

func (c *client) canary(ctx context.Context, addr, path string) (string, error) {
	action := fmt.Sprintf("failed to read the restore canary %s from %s", path, addr)
	v, err := read(ctx, c, action, addr, path, true, func(ctx context.Context, cl *baoapi.Client) (*string, error) {
		secret, err := cl.Logical().ReadWithContext(ctx, path)
		if err != nil {
			return nil, err
		}
		if secret == nil || secret.Data == nil { // the api client turns 404 into (nil, nil)
			return nil, ErrNotFound
		}
		data, _ := secret.Data["data"].(map[string]any)
		value, ok := data["value"].(string)
		if !ok {
			return nil, ErrNotFound
		}
		return &value, nil
	})
	if err != nil {
		return "", err
	}
	return *v, nil
}
