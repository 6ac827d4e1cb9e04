package openbao

import "context"

// reader is the Reader: the one client with every Service-bound read
// addressed at the cluster's client Service.
type reader struct {
	c *client
	// addr is Config.Address, the client Service.
	addr string
}

var _ Reader = (*reader)(nil)

// Health implements Reader.
func (r *reader) Health(ctx context.Context, addr string) (*Health, error) {
	return r.c.Health(ctx, addr)
}

// Leader implements Reader.
func (r *reader) Leader(ctx context.Context) (*Leader, error) {
	return r.c.Leader(ctx, r.addr)
}

// MemberLeader implements Reader.
func (r *reader) MemberLeader(ctx context.Context, addr string) (*Leader, error) {
	return r.c.Leader(ctx, addr)
}

// MemberReplication implements Reader.
func (r *reader) MemberReplication(ctx context.Context, addr string) (*Replication, error) {
	return r.c.Replication(ctx, addr)
}

// RaftConfiguration implements Reader.
func (r *reader) RaftConfiguration(ctx context.Context) (*RaftConfiguration, error) {
	return r.c.RaftConfiguration(ctx, r.addr)
}

// AutopilotState implements Reader.
func (r *reader) AutopilotState(ctx context.Context) (*AutopilotState, error) {
	return r.c.AutopilotState(ctx, r.addr)
}
