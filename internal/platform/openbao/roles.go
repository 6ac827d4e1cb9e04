package openbao

import (
	"context"
	"fmt"
	"strings"

	baoapi "github.com/openbao/openbao/api/v2"
)

// WriteRole implements Roles.
func (c *client) WriteRole(ctx context.Context, addr, mount, role string, data map[string]any) error {
	ctx, cancel := context.WithTimeout(ctx, c.s.timeout)
	defer cancel()

	mount = strings.Trim(mount, "/")
	path := "auth/" + mount + "/role/" + role
	action := fmt.Sprintf("failed to write the JWT auth role %s through %s", path, addr)
	switch {
	case mount == "":
		return fmt.Errorf("%s: invalid auth mount: it is empty", action)
	case role == "" || strings.Contains(role, "/"):
		return fmt.Errorf("%s: invalid role name %q: give one path segment", action, role)
	}
	return c.withToken(ctx, action, addr, path, "update", func(cl *baoapi.Client) error {
		_, err := cl.Logical().WriteWithContext(ctx, path, data)
		return err
	})
}
