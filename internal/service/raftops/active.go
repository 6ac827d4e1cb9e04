package raftops

import (
	"context"
	"errors"
	"fmt"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// node is a confirmed active node.
type node struct {
	id, addr string
}

// FindActive returns the node ID and member address of the active node (the
// leader), found by asking the members' sys/leader in order and confirmed on the
// active node's own address. The error wraps ErrNoLeader when none is confirmed.
func FindActive(ctx context.Context, c openbao.MemberReader, members []string) (id, addr string, err error) {
	if err := validateMembers(members); err != nil {
		return "", "", err
	}
	n, err := findActive(ctx, c, members)
	return n.id, n.addr, err
}

// validateMembers checks every member address.
func validateMembers(members []string) error {
	for _, m := range members {
		if err := openbao.ValidateAddress(m); err != nil {
			return fmt.Errorf("invalid member address %q: %w", m, err)
		}
	}
	return nil
}

// findActive asks the members in order for the active node and confirms it on
// the active node's own address. Why confirm: a member's answer may be stale,
// and a request meant for the active node that reaches a standby is forwarded
// by OpenBao to whichever node is active, which may not be the intended one.
func findActive(ctx context.Context, c openbao.MemberReader, members []string) (node, error) {
	var errs []error
	for _, m := range members {
		l, err := c.Leader(ctx, m)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if l.LeaderAddress == "" {
			errs = append(errs, fmt.Errorf("%s names no active node", m))
			continue
		}
		id := NodeID(l.LeaderAddress)
		addr := memberAddress(members, l.LeaderAddress)
		if l.IsSelf && addr == m {
			return node{id: id, addr: addr}, nil
		}
		h, err := c.Health(ctx, addr)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !h.Initialized || h.Sealed || h.Standby:
			errs = append(errs, fmt.Errorf("%w: %s, named active by %s, reports initialized=%t sealed=%t standby=%t",
				openbao.ErrNotActive, addr, m, h.Initialized, h.Sealed, h.Standby))
		default:
			return node{id: id, addr: addr}, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return node{}, fmt.Errorf("%w: %w", ErrNoLeader, errors.Join(errs...))
}

// memberAddress maps an active node's advertised API address to the member
// address the caller gave for the same node, so that requests go where the
// caller can reach and verify; an unknown node keeps its advertised address.
func memberAddress(members []string, advertised string) string {
	id := NodeID(advertised)
	for _, m := range members {
		if m == advertised {
			return m
		}
	}
	for _, m := range members {
		if id != "" && NodeID(m) == id {
			return m
		}
	}
	return advertised
}
