package raftops

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// fastOptions are short poll and retry settings for the fake cluster, whose
// elections take 50 ms.
func fastOptions() Options {
	return Options{
		PollTimeout:   2 * time.Second,
		PollInterval:  20 * time.Millisecond,
		RetryInterval: 20 * time.Millisecond,
	}
}

func TestTransferLeadership(t *testing.T) {
	type want struct {
		newLeader    string
		benign       bool
		stepDowns    int // accepted by OpenBao
		calls        int
		class        Class
		is           error
		logins       int
		maxDuration  time.Duration
		activeAtEnd  string
		prevLeader   string
		stepDownNode string
	}
	tests := []struct {
		reason   string
		members  int
		setup    func(f *fakeCluster)
		order    []int // member order given to TransferLeadership; nil means 0..n-1
		expected string
		opts     func(o *Options)
		want     want
	}{
		{
			reason:   "the active node steps down once and another member is confirmed active",
			members:  3,
			expected: "bao-0",
			want: want{newLeader: "bao-1", stepDowns: 1, calls: 1, class: ClassNone, logins: 1,
				activeAtEnd: "bao-1", prevLeader: "bao-0", stepDownNode: "bao-0"},
		},
		{
			reason:   "the leader in the middle of the list is found and stepped down",
			members:  5,
			setup:    func(f *fakeCluster) { f.active = 3; f.next = func(int) int { return 1 } },
			expected: "bao-3",
			want: want{newLeader: "bao-1", stepDowns: 1, calls: 1, class: ClassNone, logins: 1,
				activeAtEnd: "bao-1", prevLeader: "bao-3", stepDownNode: "bao-3"},
		},
		{
			reason:   "leadership already moved: benign, no login and no step-down",
			members:  3,
			setup:    func(f *fakeCluster) { f.active = 2 },
			expected: "bao-0",
			want:     want{newLeader: "bao-2", benign: true, class: ClassNone, activeAtEnd: "bao-2", prevLeader: "bao-2"},
		},
		{
			reason:   "an unreachable first member does not hide the active node",
			members:  3,
			setup:    func(f *fakeCluster) { f.active = 1; f.stop(0) },
			expected: "bao-1",
			want: want{newLeader: "bao-2", stepDowns: 1, calls: 1, class: ClassNone, logins: 1,
				activeAtEnd: "bao-2", prevLeader: "bao-1", stepDownNode: "bao-1"},
		},
		{
			reason: "a stale leader_address is not trusted: the named node must confirm it is active",
			// bao-1 still names bao-2, which is a standby; without the
			// confirmation this would be a benign "already moved".
			members:  3,
			setup:    func(f *fakeCluster) { f.active = 0; f.staleLeader[1] = 2 },
			order:    []int{1, 2, 0},
			expected: "bao-0",
			want: want{newLeader: "bao-1", stepDowns: 1, calls: 1, class: ClassNone, logins: 1,
				activeAtEnd: "bao-1", prevLeader: "bao-0", stepDownNode: "bao-0"},
		},
		{
			reason:   "403 on step-down is fatal, even with retries allowed, after one fresh login",
			members:  3,
			setup:    func(f *fakeCluster) { f.forbid = true },
			expected: "bao-0",
			opts:     func(o *Options) { o.RetryFor = 5 * time.Second },
			want: want{class: ClassFatal, is: openbao.ErrPermissionDenied, calls: 2, logins: 2,
				maxDuration: time.Second, activeAtEnd: "bao-0", stepDownNode: "bao-0"},
		},
		{
			reason:   "500 local node not active is retried and the second step-down succeeds",
			members:  3,
			setup:    func(f *fakeCluster) { f.script = []int{http.StatusInternalServerError}; f.scriptBody = notActiveText },
			expected: "bao-0",
			opts:     func(o *Options) { o.RetryFor = 5 * time.Second },
			want: want{newLeader: "bao-1", stepDowns: 1, calls: 2, class: ClassNone, logins: 1,
				activeAtEnd: "bao-1", prevLeader: "bao-0", stepDownNode: "bao-0"},
		},
		{
			reason:   "500 local node not active without retries is a retryable error",
			members:  3,
			setup:    func(f *fakeCluster) { f.script = []int{http.StatusInternalServerError}; f.scriptBody = notActiveText },
			expected: "bao-0",
			want: want{class: ClassRetryable, is: openbao.ErrNotActive, calls: 1, logins: 1,
				activeAtEnd: "bao-0", stepDownNode: "bao-0"},
		},
		{
			reason:   "no new leader within the poll timeout is retryable",
			members:  3,
			setup:    func(f *fakeCluster) { f.noElection = 1 },
			expected: "bao-0",
			opts:     func(o *Options) { o.PollTimeout = 300 * time.Millisecond },
			want: want{class: ClassRetryable, is: ErrLeaderUnchanged, calls: 1, stepDowns: 1, logins: 1,
				maxDuration: time.Second, activeAtEnd: "", stepDownNode: "bao-0"},
		},
		{
			reason:   "no member names an active node: retryable, nothing stepped down",
			members:  3,
			setup:    func(f *fakeCluster) { f.active = -1 },
			expected: "bao-0",
			opts:     func(o *Options) { o.RetryFor = 200 * time.Millisecond },
			want:     want{class: ClassRetryable, is: ErrNoLeader, maxDuration: time.Second, activeAtEnd: ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeCluster(t, tt.members)
			if tt.setup != nil {
				f.set(tt.setup)
			}
			members := f.addrs
			if tt.order != nil {
				members = nil
				for _, i := range tt.order {
					members = append(members, f.addrs[i])
				}
			}
			opts := fastOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			c := f.newTestClient(t, tokenFile(t, jwtA))

			start := time.Now()
			res, err := TransferLeadership(context.Background(), c, members, tt.expected, opts)
			elapsed := time.Since(start)

			g.Expect(Classify(err)).To(Equal(tt.want.class), "%s: %v", tt.reason, err)
			if tt.want.is != nil {
				g.Expect(errors.Is(err, tt.want.is)).To(BeTrue(), "%s: %v is not %v", tt.reason, err, tt.want.is)
			}
			if err == nil {
				g.Expect(res).To(Equal(Result{
					PreviousLeader:   tt.want.prevLeader,
					NewLeader:        tt.want.newLeader,
					NewLeaderAddress: f.addrs[nodeIndex(tt.want.newLeader)],
					Benign:           tt.want.benign,
					StepDowns:        tt.want.stepDowns,
				}), tt.reason)
			} else {
				g.Expect(res).To(Equal(Result{}), "no result with an error")
			}
			calls := f.stepDownCalls()
			g.Expect(calls).To(HaveLen(tt.want.calls), "%s: step-down calls", tt.reason)
			for _, call := range calls {
				g.Expect(call.node).To(Equal(tt.want.stepDownNode), "step-downs go to the expected leader only")
			}
			g.Expect(f.acceptedStepDowns()).To(Equal(tt.want.stepDowns), tt.reason)
			g.Expect(f.logins()).To(Equal(tt.want.logins), "%s: logins", tt.reason)
			g.Expect(f.cooldownViolations()).To(BeEmpty(), tt.reason)
			if tt.want.maxDuration > 0 {
				g.Expect(elapsed).To(BeNumerically("<", tt.want.maxDuration), tt.reason)
			}
			// Let a pending election land before reading the final state.
			time.Sleep(2 * f.electionDelay)
			g.Expect(f.activeName()).To(Equal(tt.want.activeAtEnd), tt.reason)
		})
	}
}

func nodeIndex(name string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "bao-"))
	return i
}

// TestTransferLeadershipRespectsCooldown steps bao-0 down once without an
// election; bao-0 becomes active again quickly (as a node in a stale state
// could), and the retry must still wait out the cooldown before it sends the
// second step-down. The negative control shows that the fake catches a retry
// that does not wait.
func TestTransferLeadershipRespectsCooldown(t *testing.T) {
	const fakeCooldown = 700 * time.Millisecond
	tests := []struct {
		reason         string
		cooldown       time.Duration
		wantViolations bool
	}{
		{reason: "the second step-down waits for the cooldown", cooldown: fakeCooldown},
		{reason: "negative control: a retry without cooldown is caught", cooldown: time.Millisecond, wantViolations: true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			f := newFakeCluster(t, 3)
			f.set(func(f *fakeCluster) {
				f.cooldown = fakeCooldown
				f.noElection = 1
				f.reelectSelf = 100 * time.Millisecond
			})
			c := f.newTestClient(t, tokenFile(t, jwtA))
			opts := fastOptions()
			opts.PollTimeout = 200 * time.Millisecond
			opts.RetryFor = 5 * time.Second
			opts.Cooldown = tt.cooldown

			res, err := TransferLeadership(context.Background(), c, f.addrs, "bao-0", opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.NewLeader).To(Equal("bao-1"))
			g.Expect(res.StepDowns).To(Equal(2))
			g.Expect(res.Benign).To(BeFalse())

			calls := f.stepDownCalls()
			g.Expect(calls).To(HaveLen(2))
			if tt.wantViolations {
				g.Expect(f.cooldownViolations()).NotTo(BeEmpty(), tt.reason)
				return
			}
			g.Expect(f.cooldownViolations()).To(BeEmpty(), tt.reason)
			g.Expect(calls[1].at.Sub(calls[0].at)).To(BeNumerically(">=", fakeCooldown), tt.reason)
		})
	}
}

func TestTransferLeadershipGivesUpWhenTheCooldownOutlastsTheBudget(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	f.set(func(f *fakeCluster) { f.noElection = 1; f.reelectSelf = 50 * time.Millisecond })
	c := f.newTestClient(t, tokenFile(t, jwtA))
	opts := fastOptions()
	opts.PollTimeout = 150 * time.Millisecond
	opts.RetryFor = 600 * time.Millisecond
	opts.Cooldown = 10 * time.Second

	start := time.Now()
	_, err := TransferLeadership(context.Background(), c, f.addrs, "bao-0", opts)
	g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second), "it does not sleep through a cooldown past its budget")
	g.Expect(Classify(err)).To(Equal(ClassRetryable), "%v", err)
	g.Expect(errors.Is(err, ErrLeaderUnchanged)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("cooldown"))
	g.Expect(f.stepDownCalls()).To(HaveLen(1))
}

func TestTransferLeadershipStopsWithTheContext(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	f.set(func(f *fakeCluster) { f.noElection = 1 })
	c := f.newTestClient(t, tokenFile(t, jwtA))
	opts := fastOptions()
	opts.PollTimeout = 10 * time.Second
	opts.RetryFor = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()

	start := time.Now()
	_, err := TransferLeadership(ctx, c, f.addrs, "bao-0", opts)
	g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "%v", err)
	g.Expect(Classify(err)).To(Equal(ClassRetryable))
}

func TestTransferLeadershipRefusesBadInput(t *testing.T) {
	f := newFakeCluster(t, 1)
	tests := []struct {
		reason   string
		members  []string
		expected string
		wantErr  string
	}{
		{reason: "no members", expected: "bao-0", wantErr: "list of member API addresses is empty"},
		{reason: "plain http", members: []string{"http://bao-0.bao-internal.ns.svc:8200"}, expected: "bao-0", wantErr: "scheme must be https"},
		{reason: "not a URL", members: []string{"https://bao-0:port:x"}, expected: "bao-0", wantErr: "not a URL"},
		{reason: "no expected leader", members: f.addrs, wantErr: "expected leader: it is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			c := f.newTestClient(t, tokenFile(t, jwtA))
			_, err := TransferLeadership(context.Background(), c, tt.members, tt.expected, fastOptions())
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)), tt.reason)
			g.Expect(Classify(err)).To(Equal(ClassFatal), "%s: bad input is fatal", tt.reason)
			g.Expect(f.requestCount("leader")).To(BeZero(), tt.reason)
		})
	}
}

func TestNodeID(t *testing.T) {
	tests := []struct {
		reason string
		addr   string
		want   string
	}{
		{reason: "the pod name is the first DNS label", addr: "https://bao-0.bao-internal.ns.svc:8200", want: "bao-0"},
		{reason: "a fully qualified name", addr: "https://my-bao-12.my-bao-internal.team-a.svc.cluster.local:8200", want: "my-bao-12"},
		{reason: "a short name without a port", addr: "https://bao-1", want: "bao-1"},
		{reason: "an IPv4 address stays whole", addr: "https://10.250.0.7:8200", want: "10.250.0.7"},
		{reason: "an IPv6 address stays whole", addr: "https://[fd00::7]:8200", want: "fd00::7"},
		{reason: "no host", addr: "bao-0", want: ""},
		{reason: "unparsable", addr: "https://bao-0:port:x", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			NewWithT(t).Expect(NodeID(tt.addr)).To(Equal(tt.want), tt.reason)
		})
	}
}
