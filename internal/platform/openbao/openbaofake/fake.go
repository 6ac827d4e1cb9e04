// Package openbaofake provides Fake, an in-memory openbao.Reader for unit
// tests of packages that read OpenBao cluster state.
package openbaofake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// Method names one openbao.Reader method, for error injection and call
// counting.
type Method string

// The methods of openbao.Reader.
const (
	// MethodHealth is openbao.Reader.Health.
	MethodHealth Method = "Health"
	// MethodLeader is openbao.Reader.Leader.
	MethodLeader Method = "Leader"
	// MethodMemberLeader is openbao.Reader.MemberLeader.
	MethodMemberLeader Method = "MemberLeader"
	// MethodMemberReplication is openbao.Reader.MemberReplication.
	MethodMemberReplication Method = "MemberReplication"
	// MethodRaftConfiguration is openbao.Reader.RaftConfiguration.
	MethodRaftConfiguration Method = "RaftConfiguration"
	// MethodAutopilotState is openbao.Reader.AutopilotState.
	MethodAutopilotState Method = "AutopilotState"
)

// Fake is an in-memory openbao.Reader. The zero value is ready to use and
// answers every call with an error until a result is set. All methods are
// safe for concurrent use; results are copied in and out, so neither the
// test nor the code under test can change the other's values.
//
// For each call, an injected error wins over a result; a context that has
// already ended wins over both.
type Fake struct {
	mu sync.Mutex

	health        map[string]openbao.Health
	defaultHealth *openbao.Health
	leader        *openbao.Leader
	memberLeader  map[string]openbao.Leader
	replication   map[string]openbao.Replication
	defaultRepl   *openbao.Replication
	raftConfig    *openbao.RaftConfiguration
	autopilot     *openbao.AutopilotState

	errs       map[Method]error
	healthErrs map[string]error

	calls       map[Method]int
	healthAddrs []string
}

var _ openbao.Reader = (*Fake)(nil)

// SetHealth sets the Health answer for the member at addr.
func (f *Fake) SetHealth(addr string, h openbao.Health) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.health == nil {
		f.health = make(map[string]openbao.Health)
	}
	f.health[addr] = h
}

// SetDefaultHealth sets the Health answer for members without their own
// SetHealth answer.
func (f *Fake) SetDefaultHealth(h openbao.Health) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaultHealth = &h
}

// SetLeader sets the Leader answer.
func (f *Fake) SetLeader(l openbao.Leader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leader = &l
}

// SetRaftConfiguration sets the RaftConfiguration answer.
func (f *Fake) SetRaftConfiguration(rc openbao.RaftConfiguration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.raftConfig = copyRaftConfiguration(&rc)
}

// SetAutopilotState sets the AutopilotState answer.
func (f *Fake) SetAutopilotState(s openbao.AutopilotState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.autopilot = copyAutopilotState(&s)
}

// SetError makes every call of m return err; nil clears it. For Health it
// applies to all addresses and wins over SetHealthError.
func (f *Fake) SetError(m Method, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = make(map[Method]error)
	}
	if err == nil {
		delete(f.errs, m)
		return
	}
	f.errs[m] = err
}

// SetHealthError makes Health for the member at addr return err; nil clears
// it.
func (f *Fake) SetHealthError(addr string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.healthErrs == nil {
		f.healthErrs = make(map[string]error)
	}
	if err == nil {
		delete(f.healthErrs, addr)
		return
	}
	f.healthErrs[addr] = err
}

// Calls returns how many times m has been called.
func (f *Fake) Calls(m Method) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[m]
}

// HealthAddrs returns the addresses Health was called with, in call order.
func (f *Fake) HealthAddrs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.healthAddrs)
}

// begin records a call of m and returns the error it must fail with, if any.
// f.mu must be held.
func (f *Fake) begin(ctx context.Context, m Method) error {
	if f.calls == nil {
		f.calls = make(map[Method]int)
	}
	f.calls[m]++
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.errs[m]
}

// Health implements openbao.Reader.
func (f *Fake) Health(ctx context.Context, addr string) (*openbao.Health, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.healthAddrs = append(f.healthAddrs, addr)
	if err := f.begin(ctx, MethodHealth); err != nil {
		return nil, err
	}
	if err := f.healthErrs[addr]; err != nil {
		return nil, err
	}
	if h, ok := f.health[addr]; ok {
		return &h, nil
	}
	if f.defaultHealth != nil {
		h := *f.defaultHealth
		return &h, nil
	}
	return nil, fmt.Errorf("openbaofake: no Health set for %s", addr)
}

// Leader implements openbao.Reader.
func (f *Fake) Leader(ctx context.Context) (*openbao.Leader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(ctx, MethodLeader); err != nil {
		return nil, err
	}
	if f.leader == nil {
		return nil, fmt.Errorf("openbaofake: no Leader set")
	}
	l := *f.leader
	return &l, nil
}

// SetReplication sets the MemberReplication answer for the member at addr.
func (f *Fake) SetReplication(addr string, r openbao.Replication) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.replication == nil {
		f.replication = map[string]openbao.Replication{}
	}
	f.replication[addr] = r
}

// SetDefaultReplication sets the MemberReplication answer for members without
// their own SetReplication answer.
func (f *Fake) SetDefaultReplication(r openbao.Replication) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defaultRepl = &r
}

// MemberReplication implements openbao.Reader. A member with no answer set fails,
// as a member that does not answer would.
func (f *Fake) MemberReplication(ctx context.Context, addr string) (*openbao.Replication, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(ctx, MethodMemberReplication); err != nil {
		return nil, err
	}
	if r, ok := f.replication[addr]; ok {
		return &r, nil
	}
	if f.defaultRepl != nil {
		r := *f.defaultRepl
		return &r, nil
	}
	return nil, fmt.Errorf("openbaofake: no MemberReplication set for %s", addr)
}

// SetMemberLeader sets the MemberLeader answer for the member at addr.
func (f *Fake) SetMemberLeader(addr string, l openbao.Leader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.memberLeader == nil {
		f.memberLeader = map[string]openbao.Leader{}
	}
	f.memberLeader[addr] = l
}

// MemberLeader implements openbao.Reader. A member with no answer set fails, as a
// member that does not answer would.
func (f *Fake) MemberLeader(ctx context.Context, addr string) (*openbao.Leader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(ctx, MethodMemberLeader); err != nil {
		return nil, err
	}
	l, ok := f.memberLeader[addr]
	if !ok {
		return nil, fmt.Errorf("openbaofake: no MemberLeader set for %s", addr)
	}
	return &l, nil
}

// RaftConfiguration implements openbao.Reader.
func (f *Fake) RaftConfiguration(ctx context.Context) (*openbao.RaftConfiguration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(ctx, MethodRaftConfiguration); err != nil {
		return nil, err
	}
	if f.raftConfig == nil {
		return nil, fmt.Errorf("openbaofake: no RaftConfiguration set")
	}
	return copyRaftConfiguration(f.raftConfig), nil
}

// AutopilotState implements openbao.Reader.
func (f *Fake) AutopilotState(ctx context.Context) (*openbao.AutopilotState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(ctx, MethodAutopilotState); err != nil {
		return nil, err
	}
	if f.autopilot == nil {
		return nil, fmt.Errorf("openbaofake: no AutopilotState set")
	}
	return copyAutopilotState(f.autopilot), nil
}

func copyRaftConfiguration(in *openbao.RaftConfiguration) *openbao.RaftConfiguration {
	return &openbao.RaftConfiguration{Servers: slices.Clone(in.Servers)}
}

func copyAutopilotState(in *openbao.AutopilotState) *openbao.AutopilotState {
	out := *in
	out.Voters = slices.Clone(in.Voters)
	out.NonVoters = slices.Clone(in.NonVoters)
	// AutopilotServer holds no references, so a shallow map copy is deep.
	out.Servers = maps.Clone(in.Servers)
	return &out
}
