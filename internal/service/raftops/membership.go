package raftops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// Defaults of MembershipOptions.
const (
	// DefaultPromoteTimeout bounds the wait for a promoted member's voter
	// flag. Autopilot sets it 3-5 s after the request for a healthy member; a
	// member that joined moments ago waits for server_stabilization_time
	// (10 s) of health first.
	DefaultPromoteTimeout = 30 * time.Second
	// DefaultDemoteTimeout bounds the wait for a demoted member's voter flag
	// to clear: observed 9-10 s, since autopilot applies demotions in a later
	// round than promotions.
	DefaultDemoteTimeout = 45 * time.Second
	// DefaultRemoveTimeout bounds the wait for a removed member to leave the
	// configuration. remove-peer takes effect at once; this covers a slow
	// commit.
	DefaultRemoveTimeout = 15 * time.Second
	// DefaultMembershipPollInterval is how often the Raft configuration is
	// read while waiting.
	DefaultMembershipPollInterval = 500 * time.Millisecond
)

// MembershipOptions tune PromoteMember, DemoteMember and RemoveMember. Zero
// values take the defaults.
type MembershipOptions struct {
	// PromoteTimeout bounds the wait for the voter flag after a promote.
	PromoteTimeout time.Duration
	// DemoteTimeout bounds the wait for the voter flag to clear after a
	// demote.
	DemoteTimeout time.Duration
	// RemoveTimeout bounds the wait for the member to leave the configuration
	// after a remove-peer.
	RemoveTimeout time.Duration
	// PollInterval is the pause between two reads of the configuration while
	// waiting.
	PollInterval time.Duration
	// RetryFor is how long retryable failures are retried, counted from the
	// start; it also caps every wait. Zero means a single attempt.
	RetryFor time.Duration
	// RetryInterval is the pause before a retry.
	RetryInterval time.Duration
	// Clock measures and waits; nil means the real clock.
	Clock clock.Clock
}

func (o MembershipOptions) withDefaults() MembershipOptions {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&o.PromoteTimeout, DefaultPromoteTimeout},
		{&o.DemoteTimeout, DefaultDemoteTimeout},
		{&o.RemoveTimeout, DefaultRemoveTimeout},
		{&o.PollInterval, DefaultMembershipPollInterval},
		{&o.RetryInterval, DefaultRetryInterval},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if o.RetryFor < 0 {
		o.RetryFor = 0
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// MembershipResult is the outcome of PromoteMember, DemoteMember or
// RemoveMember, as the Raft configuration read back at the end shows it.
type MembershipResult struct {
	// Member is the node ID acted on.
	Member string
	// Leader is the node ID of the active node the configuration was read
	// from at the end; LeaderAddress is its member address.
	Leader, LeaderAddress string
	// Present is whether Member is in the Raft configuration at the end.
	Present bool
	// Voter is whether Member is a voter at the end.
	Voter bool
	// Benign is true when the goal already held: no request that could have
	// changed anything was sent (answers such as "server is not a non-voter"
	// changed nothing).
	Benign bool
	// Requests counts the membership requests (promote, demote, remove-peer)
	// OpenBao accepted.
	Requests int
}

// PromoteMember makes nodeID a voter and verifies it in the Raft
// configuration. It is idempotent.
//
// It finds the active node among members (as TransferLeadership does) and
// reads the configuration from it. A node that is not in the configuration
// has not joined: ErrNotJoined, fatal. A voter needs nothing: a Benign
// result. Otherwise it sends a promote to the active node and polls the
// configuration until the node is a voter, for at most PromoteTimeout.
//
// Why poll: OpenBao's promote only takes the node off autopilot's list of
// permanent non-voters, and autopilot promotes it in a later round, seconds
// later. Neither the 204 nor an error text says the node votes, so the answer
// "server is not a non-voter" (openbao.ErrNotNonVoter) only leads to reading the
// configuration again. A wait that ends with the node still a non-voter is
// ErrNotApplied, retryable, and names what was seen last.
//
// Retryable failures are retried until MembershipOptions.RetryFor has passed;
// fatal ones (ErrNotJoined, 403, 400, TLS) end it at once. The Result is zero
// whenever the error is not nil.
func PromoteMember(ctx context.Context, c openbao.Membership, members []string, nodeID string, opts MembershipOptions) (MembershipResult, error) {
	m, err := newMembershipOp(ctx, c, members, nodeID, opts, "promote")
	if err != nil {
		return MembershipResult{}, err
	}
	return m.run(ctx, "promote "+nodeID, m.promote)
}

// RemoveMember takes nodeID out of the Raft configuration and verifies it.
// It is idempotent.
//
// It finds the active node among members and reads the configuration from
// it. A node that is not in the configuration is gone already: a Benign
// result. If the node is the active node, it stops with ErrRemovingLeader
// (fatal): demoting or removing a leader starts an uncontrolled election, so
// the leader must step down first. A voter is demoted first, and the
// configuration polled until its voter flag clears (at most DemoteTimeout);
// then remove-peer goes to the active node and the configuration is polled
// until the node is gone (at most RemoveTimeout).
//
// Why demote first: a non-voter is outside the quorum, so the irreversible
// step (the removal, after which the node's data must never come back)
// changes no quorum, and the quorum change before it is verified on its own.
// An election while waiting is followed: the active node is found again, and
// if the node being removed has become it, the call stops with
// ErrRemovingLeader. Retries are as for PromoteMember.
func RemoveMember(ctx context.Context, c openbao.Membership, members []string, nodeID string, opts MembershipOptions) (MembershipResult, error) {
	m, err := newMembershipOp(ctx, c, members, nodeID, opts, "remove")
	if err != nil {
		return MembershipResult{}, err
	}
	m.refuseLeader = ErrRemovingLeader
	return m.run(ctx, "remove "+nodeID, m.remove)
}

// DemoteMember makes nodeID a non-voter and verifies it in the Raft
// configuration, leaving it in the configuration. It is idempotent.
//
// It finds the active node among members and reads the configuration from
// it. A node that is not in the configuration has nothing to demote, and a
// non-voter needs nothing: both are Benign results (Present tells them
// apart). If the node is the active node, it stops with ErrDemotingLeader
// (fatal): demoting a leader starts an uncontrolled election, so the leader
// must step down first. Otherwise it sends a demote to the active node and
// polls the configuration until the voter flag clears, for at most
// DemoteTimeout; this is the first phase of RemoveMember. An election while
// waiting is followed as there, and the node becoming the leader stops the
// call with ErrDemotingLeader. Retries are as for PromoteMember.
func DemoteMember(ctx context.Context, c openbao.Membership, members []string, nodeID string, opts MembershipOptions) (MembershipResult, error) {
	m, err := newMembershipOp(ctx, c, members, nodeID, opts, "demote")
	if err != nil {
		return MembershipResult{}, err
	}
	m.refuseLeader = ErrDemotingLeader
	return m.run(ctx, "demote "+nodeID, m.demoteOnly)
}

// membershipOp is the state of one PromoteMember, DemoteMember or
// RemoveMember call.
type membershipOp struct {
	c        openbao.Membership
	members  []string
	id       string
	opts     MembershipOptions
	clk      clock.Clock
	log      logr.Logger
	deadline time.Time
	// refuseLeader, when set (ErrRemovingLeader or ErrDemotingLeader), makes
	// every observation fail with it when the member is the active node.
	refuseLeader error

	// acted is true once a request was accepted or may have been (its answer
	// was lost).
	acted    bool
	accepted int
}

func newMembershipOp(ctx context.Context, c openbao.Membership, members []string, nodeID string, opts MembershipOptions, verb string) (*membershipOp, error) {
	if len(members) == 0 {
		return nil, errors.New("invalid members: the list of member API addresses is empty")
	}
	if err := validateMembers(members); err != nil {
		return nil, err
	}
	if nodeID == "" {
		return nil, fmt.Errorf("invalid node ID: it is empty; name the member to %s", verb)
	}
	opts = opts.withDefaults()
	m := &membershipOp{
		c:       c,
		members: members,
		id:      nodeID,
		opts:    opts,
		clk:     opts.Clock,
		log:     logr.FromContextOrDiscard(ctx).WithValues("member", nodeID),
	}
	m.deadline = m.clk.Now().Add(opts.RetryFor)
	return m, nil
}

func (m *membershipOp) run(ctx context.Context, goal string, attempt func(context.Context) (MembershipResult, error)) (MembershipResult, error) {
	rp := retryPolicy{clk: m.clk, deadline: m.deadline, retryFor: m.opts.RetryFor, interval: m.opts.RetryInterval, log: m.log}
	res, err := retryWithin(ctx, rp, goal, attempt)
	if err != nil {
		return MembershipResult{}, err
	}
	return res, nil
}

// promote is one pass of PromoteMember.
func (m *membershipOp) promote(ctx context.Context) (MembershipResult, error) {
	active, cfg, err := m.observe(ctx)
	if err != nil {
		return MembershipResult{}, err
	}
	peer := findPeer(cfg, m.id)
	if peer == nil {
		return MembershipResult{}, m.notJoined(cfg)
	}
	if peer.Voter {
		return m.result(active, cfg), nil
	}
	if err := m.request(ctx, "Promoting the member", active, m.c.Promote, openbao.ErrNotNonVoter); err != nil {
		return MembershipResult{}, err
	}
	active, cfg, err = m.await(ctx, active, m.opts.PromoteTimeout, "to become a voter", func(cfg *openbao.RaftConfiguration) (bool, error) {
		p := findPeer(cfg, m.id)
		if p == nil {
			return false, m.notJoined(cfg)
		}
		return p.Voter, nil
	})
	if err != nil {
		return MembershipResult{}, err
	}
	return m.result(active, cfg), nil
}

// remove is one pass of RemoveMember.
func (m *membershipOp) remove(ctx context.Context) (MembershipResult, error) {
	active, cfg, err := m.observe(ctx)
	if err != nil {
		return MembershipResult{}, err
	}
	peer := findPeer(cfg, m.id)
	if peer == nil {
		return m.result(active, cfg), nil
	}
	if peer.Voter {
		active, cfg, err = m.demote(ctx, active)
		if err != nil {
			return MembershipResult{}, err
		}
		if findPeer(cfg, m.id) == nil {
			return m.result(active, cfg), nil
		}
	}
	if err := m.request(ctx, "Removing the member", active, m.c.RemovePeer, nil); err != nil {
		return MembershipResult{}, err
	}
	active, cfg, err = m.await(ctx, active, m.opts.RemoveTimeout, "to leave the configuration", func(cfg *openbao.RaftConfiguration) (bool, error) {
		return findPeer(cfg, m.id) == nil, nil
	})
	if err != nil {
		return MembershipResult{}, err
	}
	return m.result(active, cfg), nil
}

// demoteOnly is one pass of DemoteMember.
func (m *membershipOp) demoteOnly(ctx context.Context) (MembershipResult, error) {
	active, cfg, err := m.observe(ctx)
	if err != nil {
		return MembershipResult{}, err
	}
	if peer := findPeer(cfg, m.id); peer == nil || !peer.Voter {
		return m.result(active, cfg), nil
	}
	active, cfg, err = m.demote(ctx, active)
	if err != nil {
		return MembershipResult{}, err
	}
	return m.result(active, cfg), nil
}

// demote sends a demote of the member, a voter, to the active node and polls
// the configuration until the member no longer votes (or has left it), for at
// most DemoteTimeout. It returns the active node and the configuration last
// read. Shared by DemoteMember and the first phase of RemoveMember.
func (m *membershipOp) demote(ctx context.Context, active node) (node, *openbao.RaftConfiguration, error) {
	if err := m.request(ctx, "Demoting the member", active, m.c.Demote, openbao.ErrAlreadyNonVoter); err != nil {
		return active, nil, err
	}
	return m.await(ctx, active, m.opts.DemoteTimeout, "to become a non-voter", func(cfg *openbao.RaftConfiguration) (bool, error) {
		p := findPeer(cfg, m.id)
		return p == nil || !p.Voter, nil
	})
}

// request sends one membership request to the active node. An error that
// is moot (the answer that the change is requested already) is not a failure:
// the caller reads the configuration back either way.
func (m *membershipOp) request(ctx context.Context, what string, active node, call func(ctx context.Context, addr, nodeID string) error, moot error) error {
	m.log.Info(what, "leader", active.id, "address", active.addr)
	err := call(ctx, active.addr, m.id)
	switch {
	case err == nil:
		m.acted = true
		m.accepted++
		return nil
	case moot != nil && errors.Is(err, moot):
		m.log.V(1).Info("OpenBao reports the change as requested already; reading the configuration back", "reason", err.Error())
		return nil
	}
	if !refusedBeforeActing(err) {
		// The request may have been carried out.
		m.acted = true
	}
	return err
}

// observe finds the active node and reads the configuration from it.
func (m *membershipOp) observe(ctx context.Context) (node, *openbao.RaftConfiguration, error) {
	active, err := findActive(ctx, m.c, m.members)
	if err != nil {
		return node{}, nil, err
	}
	cfg, err := m.c.RaftConfiguration(ctx, active.addr)
	if err != nil {
		return active, nil, err
	}
	return active, cfg, m.guard(active, cfg)
}

// reread reads the configuration from the active node again, and finds the
// active node anew when the read fails or the configuration names another
// leader (an election happened).
func (m *membershipOp) reread(ctx context.Context, active node) (node, *openbao.RaftConfiguration, error) {
	cfg, err := m.c.RaftConfiguration(ctx, active.addr)
	if err == nil && leaderOf(cfg) == active.id {
		return active, cfg, m.guard(active, cfg)
	}
	if err != nil && Classify(err) == ClassFatal {
		return active, nil, err
	}
	found, fcfg, ferr := m.observe(ctx)
	if ferr != nil {
		if err != nil {
			ferr = errors.Join(err, ferr)
		}
		return found, nil, ferr
	}
	if found.id != active.id {
		m.log.Info("Following the new active node", "leader", found.id, "previousLeader", active.id)
	}
	return found, fcfg, nil
}

// await polls the configuration until done says the change shows, for at
// most timeout (capped by the retry deadline when retrying), following the
// active node through elections. It returns the active node and the
// configuration last read. done may fail the wait with a fatal error, and so
// does a fatal read or the member becoming the leader while it is removed or
// demoted.
func (m *membershipOp) await(ctx context.Context, active node, timeout time.Duration, goal string,
	done func(*openbao.RaftConfiguration) (bool, error),
) (node, *openbao.RaftConfiguration, error) {
	start := m.clk.Now()
	until := start.Add(timeout)
	if m.opts.RetryFor > 0 && m.deadline.Before(until) {
		until = m.deadline
	}
	var last error
	for {
		if err := sleep(ctx, m.clk, m.opts.PollInterval); err != nil {
			return active, nil, fmt.Errorf("%w: stopped waiting for %s %s: %w", ErrNotApplied, m.id, goal, errors.Join(last, err))
		}
		found, cfg, err := m.reread(ctx, active)
		if found.id != "" {
			active = found
		}
		switch {
		case err != nil && Classify(err) == ClassFatal:
			return active, nil, err
		case err != nil:
			last = err
		default:
			ok, derr := done(cfg)
			if derr != nil {
				return active, nil, derr
			}
			if ok {
				return active, cfg, nil
			}
			last = errors.New(describePeer(cfg, m.id))
		}
		if !m.clk.Now().Add(m.opts.PollInterval).Before(until) {
			return active, nil, fmt.Errorf("%w: waited %s for %s %s; last observation: %w",
				ErrNotApplied, m.clk.Since(start).Round(time.Millisecond), m.id, goal, last)
		}
	}
}

// guard refuses, for RemoveMember and DemoteMember, a configuration or active
// node that says the member leads.
func (m *membershipOp) guard(active node, cfg *openbao.RaftConfiguration) error {
	if m.refuseLeader == nil || (active.id != m.id && leaderOf(cfg) != m.id) {
		return nil
	}
	if errors.Is(m.refuseLeader, ErrDemotingLeader) {
		return fmt.Errorf("%w: %s leads the cluster; step it down first (a leadership transfer): demoting a leader starts an uncontrolled election",
			ErrDemotingLeader, m.id)
	}
	return fmt.Errorf("%w: %s leads the cluster; step it down (a leadership transfer) and remove it afterwards",
		ErrRemovingLeader, m.id)
}

func (m *membershipOp) notJoined(cfg *openbao.RaftConfiguration) error {
	return fmt.Errorf("%w: %s is not in the Raft configuration: it has not joined (peers: %s)",
		ErrNotJoined, m.id, peerList(cfg))
}

func (m *membershipOp) result(active node, cfg *openbao.RaftConfiguration) MembershipResult {
	res := MembershipResult{
		Member:        m.id,
		Leader:        active.id,
		LeaderAddress: active.addr,
		Benign:        !m.acted,
		Requests:      m.accepted,
	}
	if p := findPeer(cfg, m.id); p != nil {
		res.Present, res.Voter = true, p.Voter
	}
	m.log.Info("Raft membership verified", "present", res.Present, "voter", res.Voter, "benign", res.Benign, "leader", res.Leader)
	return res
}

// findPeer returns the server nodeID of cfg, or nil.
func findPeer(cfg *openbao.RaftConfiguration, nodeID string) *openbao.RaftServer {
	if cfg == nil {
		return nil
	}
	for i := range cfg.Servers {
		if cfg.Servers[i].NodeID == nodeID {
			return &cfg.Servers[i]
		}
	}
	return nil
}

// leaderOf returns the node ID cfg marks as leader, or "".
func leaderOf(cfg *openbao.RaftConfiguration) string {
	if cfg == nil {
		return ""
	}
	for _, s := range cfg.Servers {
		if s.Leader {
			return s.NodeID
		}
	}
	return ""
}

// describePeer says what cfg shows of nodeID, for error messages.
func describePeer(cfg *openbao.RaftConfiguration, nodeID string) string {
	p := findPeer(cfg, nodeID)
	switch {
	case p == nil:
		return nodeID + " is not in the Raft configuration"
	case p.Voter:
		return nodeID + " is a voter"
	}
	return nodeID + " is a non-voter"
}

// peerList renders the peers of cfg as "bao-0 (voter, leader), bao-3 (non-voter)".
func peerList(cfg *openbao.RaftConfiguration) string {
	if cfg == nil || len(cfg.Servers) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		role := "non-voter"
		if s.Voter {
			role = "voter"
		}
		if s.Leader {
			role += ", leader"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", s.NodeID, role))
	}
	return strings.Join(parts, ", ")
}
