package raftops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Defaults of Options.
const (
	// DefaultPollTimeout bounds the wait for another active node after one
	// step-down. OpenBao elects a new one within 1-3 s; 30 s covers a loaded
	// cluster and one election that picks the node in cooldown.
	DefaultPollTimeout = 30 * time.Second
	// DefaultPollInterval is how often sys/leader is read while waiting.
	DefaultPollInterval = 500 * time.Millisecond
	// DefaultRetryInterval is the pause before a retryable failure is retried.
	DefaultRetryInterval = time.Second
	// DefaultCooldown is OpenBao's manualStepDownSleepPeriod: a node that
	// stepped down does not take the active role again for 10 s, so a second
	// step-down of it within that window is wasted or, if it was re-elected
	// meanwhile, premature.
	DefaultCooldown = operation.StepDownCooldown
)

// Options tune TransferLeadership. Zero values take the defaults.
type Options struct {
	// PollTimeout bounds the wait for another active node after a step-down.
	PollTimeout time.Duration
	// PollInterval is the pause between two reads of sys/leader while waiting.
	PollInterval time.Duration
	// RetryFor is how long retryable failures are retried, counted from the
	// start; it also caps PollTimeout. Zero means a single attempt.
	RetryFor time.Duration
	// RetryInterval is the pause before a retry.
	RetryInterval time.Duration
	// Cooldown is the least time between two step-down requests to the same
	// node.
	Cooldown time.Duration
	// Clock measures and waits; nil means the real clock.
	Clock clock.Clock
}

func (o Options) withDefaults() Options {
	if o.PollTimeout <= 0 {
		o.PollTimeout = DefaultPollTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RetryFor < 0 {
		o.RetryFor = 0
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultCooldown
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Result is the outcome of TransferLeadership.
type Result struct {
	// PreviousLeader is the node ID of the active node found first.
	PreviousLeader string
	// NewLeader is the node ID of the active node at the end; never the
	// expected leader.
	NewLeader string
	// NewLeaderAddress is the API address NewLeader was confirmed at.
	NewLeaderAddress string
	// Benign is true when the expected leader was not the active node to
	// begin with: nothing was stepped down.
	Benign bool
	// StepDowns counts the step-down requests OpenBao accepted: 1 normally,
	// more only when leadership did not move after the first and a retry
	// followed the cooldown.
	StepDowns int
}

// NodeID returns the node ID a member address stands for: the first DNS label
// of its host, which is the pod name because baokeeper sets the Raft node ID
// and the API address from it (BAO_RAFT_NODE_ID, BAO_API_ADDR). For an IP
// address it returns the IP, and for an unparsable one "".
func NodeID(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return ""
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return host
	}
	id, _, _ := strings.Cut(host, ".")
	return id
}

// TransferLeadership moves the active role off expectedLeader (a node ID, which
// is the pod name) with exactly one accepted step-down in the normal case, and
// verifies the move.
//
// It finds the active node by asking sys/leader of the members in order until
// one names it, and confirms it on the active node's own address. If the
// active node is not expectedLeader, the goal already holds: it returns a
// Benign result and steps nothing down. Otherwise it asks the active node to
// step down and polls until a different node is confirmed active, within
// PollTimeout. Why confirm on the node itself: OpenBao forwards a standby's
// step-down to whichever node is active, so a request to a stale address
// could demote a member nobody meant to demote.
//
// Retryable failures (see Classify) are retried until Options.RetryFor has
// passed, never sending two step-downs to one node within Options.Cooldown
// (OpenBao ignores the first 10 s after a step-down for that node's
// re-election, and a step-down whose outcome is unknown counts as sent).
// Fatal errors end it at once. The returned error carries the last failure,
// and the Result is zero whenever the error is not nil.
func TransferLeadership(ctx context.Context, c openbao.Leadership, members []string, expectedLeader string, opts Options) (Result, error) {
	if len(members) == 0 {
		return Result{}, errors.New("invalid members: the list of member API addresses is empty")
	}
	if err := validateMembers(members); err != nil {
		return Result{}, err
	}
	if expectedLeader == "" {
		return Result{}, errors.New("invalid expected leader: it is empty; name the member to step down")
	}
	opts = opts.withDefaults()
	t := &transfer{
		c:        c,
		members:  members,
		expected: expectedLeader,
		opts:     opts,
		clk:      opts.Clock,
		log:      logr.FromContextOrDiscard(ctx).WithValues("member", expectedLeader),
		lastSent: map[string]time.Time{},
	}
	t.deadline = t.clk.Now().Add(opts.RetryFor)

	rp := retryPolicy{clk: t.clk, deadline: t.deadline, retryFor: opts.RetryFor, interval: opts.RetryInterval, log: t.log}
	res, err := retryWithin(ctx, rp, "move leadership off "+expectedLeader, t.attempt)
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// transfer is the state of one TransferLeadership call.
type transfer struct {
	c        openbao.Leadership
	members  []string
	expected string
	opts     Options
	clk      clock.Clock
	log      logr.Logger
	deadline time.Time

	// first is the node ID of the first active node found.
	first string
	// lastSent is when a step-down was last sent to each node ID, for the
	// cooldown.
	lastSent  map[string]time.Time
	stepDowns int
}

// attempt runs one pass: find the active node, step it down if it is the
// expected leader, and wait for another active node.
func (t *transfer) attempt(ctx context.Context) (Result, error) {
	active, err := t.findActive(ctx)
	if err != nil {
		return Result{}, err
	}
	if t.first == "" {
		t.first = active.id
	}
	if active.id != t.expected {
		return t.moved(active), nil
	}

	if wait := t.lastSent[active.id].Add(t.opts.Cooldown).Sub(t.clk.Now()); wait > 0 {
		if t.clk.Now().Add(wait).After(t.deadline) {
			return Result{}, fmt.Errorf("%w: %s is still active and in OpenBao's step-down cooldown for another %s",
				ErrLeaderUnchanged, active.id, wait.Round(time.Millisecond))
		}
		t.log.V(1).Info("Waiting for OpenBao's step-down cooldown", "node", active.id, "wait", wait)
		if err := t.sleep(ctx, wait); err != nil {
			return Result{}, err
		}
		// Leadership may have moved meanwhile; look again.
		if active, err = t.findActive(ctx); err != nil {
			return Result{}, err
		}
		if active.id != t.expected {
			return t.moved(active), nil
		}
	}

	t.log.Info("Stepping down the active node", "node", active.id, "address", active.addr)
	err = t.c.StepDown(ctx, active.addr)
	if err != nil {
		if !refusedBeforeActing(err) {
			// The node may have stepped down; the cooldown applies.
			t.lastSent[active.id] = t.clk.Now()
		}
		return Result{}, err
	}
	t.lastSent[active.id] = t.clk.Now()
	t.stepDowns++
	return t.awaitNewLeader(ctx, active)
}

// moved is the result once an active node other than the expected leader is
// confirmed: benign when this call has stepped nothing down.
func (t *transfer) moved(active node) Result {
	res := Result{
		PreviousLeader:   t.first,
		NewLeader:        active.id,
		NewLeaderAddress: active.addr,
		StepDowns:        t.stepDowns,
		// A step-down whose answer was lost may have worked: not benign.
		Benign: len(t.lastSent) == 0,
	}
	if res.Benign {
		t.log.Info("Leadership already moved; nothing to step down", "leader", active.id)
	} else {
		t.log.Info("Leadership moved", "leader", active.id)
		res.PreviousLeader = t.expected
	}
	return res
}

// refusedBeforeActing reports whether a failed step-down certainly did not
// step the node down: OpenBao answered with an HTTP error or a redirect, or
// the connection was refused before the request was sent.
func refusedBeforeActing(err error) bool {
	return openbao.StatusCode(err) != 0 || errors.Is(err, openbao.ErrNotActive) || errors.Is(err, syscall.ECONNREFUSED)
}

// awaitNewLeader polls until an active node other than old is confirmed, for
// at most PollTimeout (capped by the retry deadline when retrying).
func (t *transfer) awaitNewLeader(ctx context.Context, old node) (Result, error) {
	start := t.clk.Now()
	until := start.Add(t.opts.PollTimeout)
	if t.opts.RetryFor > 0 && t.deadline.Before(until) {
		until = t.deadline
	}
	var last error
	for {
		if err := t.sleep(ctx, t.opts.PollInterval); err != nil {
			return Result{}, fmt.Errorf("%w: stopped waiting: %w", ErrLeaderUnchanged, errors.Join(last, err))
		}
		active, err := t.findActive(ctx)
		switch {
		case err != nil:
			last = err
		case active.id != old.id:
			return t.moved(active), nil
		default:
			last = fmt.Errorf("%s is the active node again", old.id)
		}
		if !t.clk.Now().Add(t.opts.PollInterval).Before(until) {
			return Result{}, fmt.Errorf("%w: no other member became active within %s of the step-down of %s; last observation: %w",
				ErrLeaderUnchanged, t.clk.Since(start).Round(time.Millisecond), old.id, last)
		}
	}
}

// findActive finds and confirms the active node among the members.
func (t *transfer) findActive(ctx context.Context) (node, error) {
	return findActive(ctx, t.c, t.members)
}

// sleep waits for d on the injected clock, or until ctx ends.
func (t *transfer) sleep(ctx context.Context, d time.Duration) error {
	return sleep(ctx, t.clk, d)
}
