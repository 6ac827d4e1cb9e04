package raftops

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// fastMembershipOptions are short waits for the fake cluster, whose autopilot
// applies a promote after 40 ms and a demote after 80 ms.
func fastMembershipOptions() MembershipOptions {
	return MembershipOptions{
		PromoteTimeout: 2 * time.Second,
		DemoteTimeout:  2 * time.Second,
		RemoveTimeout:  2 * time.Second,
		PollInterval:   10 * time.Millisecond,
		RetryInterval:  20 * time.Millisecond,
	}
}

// membershipCase is one scenario of PromoteMember or RemoveMember against the
// fake cluster, judged by the requests the fake received and the Raft
// configuration it ends with.
type membershipCase struct {
	reason  string
	members int
	setup   func(f *fakeCluster)
	node    string
	opts    func(o *MembershipOptions)

	wantClass Class
	wantIs    error
	wantInErr string
	// wantResult is compared when no error is expected; Member and
	// LeaderAddress are filled in.
	wantResult MembershipResult
	// wantCalls are the membership requests, as op@receiver=status.
	wantCalls []membershipCall
	// wantPeers is the final Raft configuration.
	wantPeers   []raftPeer
	wantLogins  int
	maxDuration time.Duration
}

func runMembershipCase(t *testing.T, tt membershipCase, op func(context.Context, openbao.Membership, []string, string, MembershipOptions) (MembershipResult, error)) {
	t.Helper()
	g := NewWithT(t)
	f := newFakeCluster(t, tt.members)
	if tt.setup != nil {
		f.set(tt.setup)
	}
	opts := fastMembershipOptions()
	if tt.opts != nil {
		tt.opts(&opts)
	}
	c := f.newTestClient(t, tokenFile(t, jwtA))

	start := time.Now()
	res, err := op(context.Background(), c, f.addrs, tt.node, opts)
	elapsed := time.Since(start)

	g.Expect(Classify(err)).To(Equal(tt.wantClass), "%s: %v", tt.reason, err)
	if tt.wantIs != nil {
		g.Expect(errors.Is(err, tt.wantIs)).To(BeTrue(), "%s: %v is not %v", tt.reason, err, tt.wantIs)
	}
	if tt.wantInErr != "" {
		g.Expect(err).To(MatchError(ContainSubstring(tt.wantInErr)), tt.reason)
	}
	if err == nil {
		want := tt.wantResult
		want.Member = tt.node
		want.LeaderAddress = f.addrs[nodeIndex(want.Leader)]
		g.Expect(res).To(Equal(want), tt.reason)
	} else {
		g.Expect(res).To(Equal(MembershipResult{}), "no result with an error")
	}
	calls := f.membershipRequests()
	for i := range calls {
		calls[i].voter = false // compared separately where it matters
	}
	g.Expect(calls).To(Equal(tt.wantCalls), "%s: membership requests", tt.reason)
	g.Expect(f.peerList()).To(Equal(tt.wantPeers), "%s: final Raft configuration", tt.reason)
	if tt.wantLogins > 0 {
		g.Expect(f.logins()).To(Equal(tt.wantLogins), "%s: logins", tt.reason)
	}
	if tt.maxDuration > 0 {
		g.Expect(elapsed).To(BeNumerically("<", tt.maxDuration), tt.reason)
	}
}

func voters(ids ...string) []raftPeer {
	out := make([]raftPeer, 0, len(ids))
	for _, id := range ids {
		out = append(out, raftPeer{id: id, voter: true})
	}
	return out
}

func call(op, node, id string, status int) membershipCall {
	return membershipCall{op: op, node: node, id: id, status: status}
}

func TestPromoteMember(t *testing.T) {
	const (
		accepted  = http.StatusNoContent
		notActive = http.StatusInternalServerError
	)
	threeAnd := func(p raftPeer) []raftPeer { return append(voters("bao-0", "bao-1", "bao-2"), p) }
	tests := []membershipCase{
		{
			reason:     "a permanent non-voter is promoted on the active node and verified once autopilot applies it",
			members:    3,
			setup:      func(f *fakeCluster) { f.addNonVoter("bao-3") },
			node:       "bao-3",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Present: true, Voter: true, Requests: 1},
			wantCalls:  []membershipCall{call("promote", "bao-0", "bao-3", accepted)},
			wantPeers:  voters("bao-0", "bao-1", "bao-2", "bao-3"),
			wantLogins: 1,
		},
		{
			reason:     "the active node in the middle of the list receives the promote",
			members:    5,
			setup:      func(f *fakeCluster) { f.active = 3; f.addNonVoter("bao-5") },
			node:       "bao-5",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-3", Present: true, Voter: true, Requests: 1},
			wantCalls:  []membershipCall{call("promote", "bao-3", "bao-5", accepted)},
			wantPeers:  voters("bao-0", "bao-1", "bao-2", "bao-3", "bao-4", "bao-5"),
		},
		{
			reason:     "already a voter: benign, nothing sent",
			members:    3,
			node:       "bao-2",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Present: true, Voter: true, Benign: true},
			wantPeers:  voters("bao-0", "bao-1", "bao-2"),
		},
		{
			reason:  "a promotion pending from an earlier Job: 'server is not a non-voter' leads to reading back, and the voter flag decides",
			members: 3,
			setup: func(f *fakeCluster) {
				f.peers = append(f.peers, raftPeer{id: "bao-3"})
				f.due["bao-3"] = time.Now().Add(f.promoteDelay)
			},
			node:       "bao-3",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Present: true, Voter: true, Benign: true},
			wantCalls:  []membershipCall{call("promote", "bao-0", "bao-3", http.StatusInternalServerError)},
			wantPeers:  voters("bao-0", "bao-1", "bao-2", "bao-3"),
		},
		{
			reason:    "a member that has not joined: fatal, nothing sent",
			members:   3,
			node:      "bao-7",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: ErrNotJoined,
			wantInErr:   "bao-7 is not in the Raft configuration: it has not joined (peers: bao-0 (voter, leader), bao-1 (voter), bao-2 (voter))",
			wantPeers:   voters("bao-0", "bao-1", "bao-2"),
			maxDuration: time.Second,
		},
		{
			reason:    "autopilot never applies the promotion: retryable, and the error says what was seen last",
			members:   3,
			setup:     func(f *fakeCluster) { f.addNonVoter("bao-3"); f.autopilotStalled = true },
			node:      "bao-3",
			opts:      func(o *MembershipOptions) { o.PromoteTimeout = 150 * time.Millisecond },
			wantClass: ClassRetryable, wantIs: ErrNotApplied,
			wantInErr:   "for bao-3 to become a voter; last observation: bao-3 is a non-voter",
			wantCalls:   []membershipCall{call("promote", "bao-0", "bao-3", accepted)},
			wantPeers:   threeAnd(raftPeer{id: "bao-3"}),
			maxDuration: time.Second,
		},
		{
			reason:  "500 local node not active (an election) is retried and the second promote is accepted",
			members: 3,
			setup: func(f *fakeCluster) {
				f.addNonVoter("bao-3")
				f.membershipScript = []int{notActive}
				f.scriptBody = notActiveText
			},
			node:       "bao-3",
			opts:       func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Present: true, Voter: true, Requests: 1},
			wantCalls: []membershipCall{
				call("promote", "bao-0", "bao-3", notActive),
				call("promote", "bao-0", "bao-3", accepted),
			},
			wantPeers: voters("bao-0", "bao-1", "bao-2", "bao-3"),
		},
		{
			reason:    "403 on promote is fatal, even with retries allowed, after one fresh login",
			members:   3,
			setup:     func(f *fakeCluster) { f.addNonVoter("bao-3"); f.forbidMembership = true },
			node:      "bao-3",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: openbao.ErrPermissionDenied,
			wantCalls: []membershipCall{
				call("promote", "bao-0", "bao-3", http.StatusForbidden),
				call("promote", "bao-0", "bao-3", http.StatusForbidden),
			},
			wantPeers:   threeAnd(raftPeer{id: "bao-3"}),
			wantLogins:  2,
			maxDuration: time.Second,
		},
		{
			reason:  "the member leaves the configuration while it is promoted: fatal",
			members: 3,
			setup: func(f *fakeCluster) {
				f.addNonVoter("bao-3")
				f.autopilotStalled = true
				f.onConfigRead = func(f *fakeCluster, n int) {
					if n == 3 {
						f.peers = f.peers[:3]
					}
				}
			},
			node:      "bao-3",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: ErrNotJoined,
			wantCalls:   []membershipCall{call("promote", "bao-0", "bao-3", accepted)},
			wantPeers:   voters("bao-0", "bao-1", "bao-2"),
			maxDuration: time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) { runMembershipCase(t, tt, PromoteMember) })
	}
}

// TestPromoteMemberRetriesAStalledPromotion lets autopilot never apply a
// promotion: every attempt waits PromoteTimeout and fails, the retries go on
// within RetryFor, and every promote after the first is answered "server is
// not a non-voter" without ending the wait early.
func TestPromoteMemberRetriesAStalledPromotion(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	f.set(func(f *fakeCluster) { f.addNonVoter("bao-3"); f.autopilotStalled = true })
	c := f.newTestClient(t, tokenFile(t, jwtA))
	opts := fastMembershipOptions()
	opts.PromoteTimeout = 100 * time.Millisecond
	opts.RetryFor = 400 * time.Millisecond

	start := time.Now()
	_, err := PromoteMember(context.Background(), c, f.addrs, "bao-3", opts)
	elapsed := time.Since(start)
	g.Expect(Classify(err)).To(Equal(ClassRetryable), "%v", err)
	g.Expect(errors.Is(err, ErrNotApplied)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("failed to promote bao-3 within 400ms")))
	g.Expect(err).To(MatchError(ContainSubstring("last observation: bao-3 is a non-voter")))
	g.Expect(elapsed).To(BeNumerically(">=", 350*time.Millisecond), "the budget is used (up to one poll interval and one retry pause)")
	g.Expect(elapsed).To(BeNumerically("<", 2*time.Second), "and not much more")

	calls := f.membershipRequests()
	g.Expect(len(calls)).To(BeNumerically(">=", 2), "retried")
	g.Expect(calls[0].status).To(Equal(http.StatusNoContent))
	for _, c := range calls[1:] {
		g.Expect(c).To(Equal(membershipCall{op: "promote", node: "bao-0", id: "bao-3", status: http.StatusInternalServerError}),
			"bao-3 is off the non-voter list: OpenBao answers 'server is not a non-voter'")
	}
}

func TestRemoveMember(t *testing.T) {
	const accepted = http.StatusNoContent
	three := voters("bao-0", "bao-1", "bao-2")
	tests := []membershipCase{
		{
			reason:     "a voter is demoted, then removed once the demotion shows, both through the active node",
			members:    3,
			node:       "bao-2",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Requests: 2},
			wantCalls:  []membershipCall{call("demote", "bao-0", "bao-2", accepted), call("remove-peer", "bao-0", "bao-2", accepted)},
			wantPeers:  voters("bao-0", "bao-1"),
			wantLogins: 1,
		},
		{
			reason:     "a non-voter (say a green member of a failed attempt) is removed without a demote",
			members:    3,
			setup:      func(f *fakeCluster) { f.addNonVoter("bao-3") },
			node:       "bao-3",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Requests: 1},
			wantCalls:  []membershipCall{call("remove-peer", "bao-0", "bao-3", accepted)},
			wantPeers:  three,
		},
		{
			reason:     "already gone: benign, nothing sent",
			members:    3,
			node:       "bao-3",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Benign: true},
			wantPeers:  three,
		},
		{
			reason:    "the active node is refused: it must step down first; nothing sent",
			members:   3,
			setup:     func(f *fakeCluster) { f.active = 2 },
			node:      "bao-2",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: ErrRemovingLeader,
			wantInErr:   "bao-2 leads the cluster; step it down",
			wantPeers:   three,
			maxDuration: time.Second,
		},
		{
			reason:  "an election while the demotion is applied: the removal goes to the new active node",
			members: 3,
			setup: func(f *fakeCluster) {
				f.onConfigRead = func(f *fakeCluster, n int) {
					if n == 2 {
						f.active = 1
					}
				}
			},
			node:       "bao-2",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-1", Requests: 2},
			wantCalls:  []membershipCall{call("demote", "bao-0", "bao-2", accepted), call("remove-peer", "bao-1", "bao-2", accepted)},
			wantPeers:  voters("bao-0", "bao-1"),
		},
		{
			reason:  "an election that makes the member being removed the leader: fatal, it is not removed",
			members: 3,
			setup: func(f *fakeCluster) {
				f.onConfigRead = func(f *fakeCluster, n int) {
					if n == 2 {
						f.active = 2
					}
				}
			},
			node:      "bao-2",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: ErrRemovingLeader,
			wantCalls:   []membershipCall{call("demote", "bao-0", "bao-2", accepted)},
			wantPeers:   three,
			maxDuration: time.Second,
		},
		{
			reason:  "a demotion pending from an earlier Job: 'server is already a non-voter' leads to reading back, then the removal",
			members: 3,
			setup: func(f *fakeCluster) {
				f.nonVoters["bao-2"] = true
				f.due["bao-2"] = time.Now().Add(f.demoteDelay)
			},
			node:       "bao-2",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Requests: 1},
			wantCalls: []membershipCall{
				call("demote", "bao-0", "bao-2", http.StatusInternalServerError),
				call("remove-peer", "bao-0", "bao-2", accepted),
			},
			wantPeers: voters("bao-0", "bao-1"),
		},
		{
			reason:    "autopilot never applies the demotion: retryable, and the voter is not removed",
			members:   3,
			setup:     func(f *fakeCluster) { f.autopilotStalled = true },
			node:      "bao-2",
			opts:      func(o *MembershipOptions) { o.DemoteTimeout = 150 * time.Millisecond },
			wantClass: ClassRetryable, wantIs: ErrNotApplied,
			wantInErr:   "for bao-2 to become a non-voter; last observation: bao-2 is a voter",
			wantCalls:   []membershipCall{call("demote", "bao-0", "bao-2", accepted)},
			wantPeers:   three,
			maxDuration: time.Second,
		},
		{
			reason:    "403 on demote is fatal after one fresh login; nothing removed",
			members:   3,
			setup:     func(f *fakeCluster) { f.forbidMembership = true },
			node:      "bao-2",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: openbao.ErrPermissionDenied,
			wantCalls: []membershipCall{
				call("demote", "bao-0", "bao-2", http.StatusForbidden),
				call("demote", "bao-0", "bao-2", http.StatusForbidden),
			},
			wantPeers:   three,
			wantLogins:  2,
			maxDuration: time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) { runMembershipCase(t, tt, RemoveMember) })
	}
}

func TestDemoteMember(t *testing.T) {
	const accepted = http.StatusNoContent
	three := voters("bao-0", "bao-1", "bao-2")
	demoted := func(id string) []raftPeer {
		out := append([]raftPeer(nil), three...)
		for i := range out {
			if out[i].id == id {
				out[i].voter = false
			}
		}
		return out
	}
	tests := []membershipCase{
		{
			reason:     "a voter is demoted through the active node and verified once autopilot applies it; it stays in the configuration",
			members:    3,
			node:       "bao-2",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Present: true, Voter: false, Requests: 1},
			wantCalls:  []membershipCall{call("demote", "bao-0", "bao-2", accepted)},
			wantPeers:  demoted("bao-2"),
			wantLogins: 1,
		},
		{
			reason:     "already a non-voter: benign, nothing sent",
			members:    3,
			setup:      func(f *fakeCluster) { f.addNonVoter("bao-3") },
			node:       "bao-3",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Present: true, Voter: false, Benign: true},
			wantPeers:  append(voters("bao-0", "bao-1", "bao-2"), raftPeer{id: "bao-3"}),
		},
		{
			reason:     "not in the configuration: nothing to demote, benign, nothing sent",
			members:    3,
			node:       "bao-7",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Present: false, Benign: true},
			wantPeers:  three,
		},
		{
			reason:    "the active node is refused: it must step down first; nothing sent",
			members:   3,
			setup:     func(f *fakeCluster) { f.active = 2 },
			node:      "bao-2",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: ErrDemotingLeader,
			wantInErr:   "bao-2 leads the cluster; step it down first",
			wantPeers:   three,
			maxDuration: time.Second,
		},
		{
			reason:  "an election while the demotion is applied: the new active node is followed and the demotion verified there",
			members: 3,
			setup: func(f *fakeCluster) {
				f.onConfigRead = func(f *fakeCluster, n int) {
					if n == 2 {
						f.active = 1
					}
				}
			},
			node:       "bao-2",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-1", Present: true, Voter: false, Requests: 1},
			wantCalls:  []membershipCall{call("demote", "bao-0", "bao-2", accepted)},
			wantPeers:  demoted("bao-2"),
		},
		{
			reason:  "an election that makes the member being demoted the leader: fatal",
			members: 3,
			setup: func(f *fakeCluster) {
				f.onConfigRead = func(f *fakeCluster, n int) {
					if n == 2 {
						f.active = 2
					}
				}
			},
			node:      "bao-2",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: ErrDemotingLeader,
			wantCalls:   []membershipCall{call("demote", "bao-0", "bao-2", accepted)},
			wantPeers:   three,
			maxDuration: time.Second,
		},
		{
			reason:  "a demotion pending from an earlier Job: 'server is already a non-voter' leads to reading back, and the voter flag decides",
			members: 3,
			setup: func(f *fakeCluster) {
				f.nonVoters["bao-2"] = true
				f.due["bao-2"] = time.Now().Add(f.demoteDelay)
			},
			node:       "bao-2",
			wantClass:  ClassNone,
			wantResult: MembershipResult{Leader: "bao-0", Present: true, Voter: false, Benign: true},
			wantCalls:  []membershipCall{call("demote", "bao-0", "bao-2", http.StatusInternalServerError)},
			wantPeers:  demoted("bao-2"),
		},
		{
			reason:    "autopilot never applies the demotion: retryable, and the error says what was seen last",
			members:   3,
			setup:     func(f *fakeCluster) { f.autopilotStalled = true },
			node:      "bao-2",
			opts:      func(o *MembershipOptions) { o.DemoteTimeout = 150 * time.Millisecond },
			wantClass: ClassRetryable, wantIs: ErrNotApplied,
			wantInErr:   "for bao-2 to become a non-voter; last observation: bao-2 is a voter",
			wantCalls:   []membershipCall{call("demote", "bao-0", "bao-2", accepted)},
			wantPeers:   three,
			maxDuration: time.Second,
		},
		{
			reason:    "403 on demote is fatal, even with retries allowed, after one fresh login",
			members:   3,
			setup:     func(f *fakeCluster) { f.forbidMembership = true },
			node:      "bao-2",
			opts:      func(o *MembershipOptions) { o.RetryFor = 5 * time.Second },
			wantClass: ClassFatal, wantIs: openbao.ErrPermissionDenied,
			wantCalls: []membershipCall{
				call("demote", "bao-0", "bao-2", http.StatusForbidden),
				call("demote", "bao-0", "bao-2", http.StatusForbidden),
			},
			wantPeers:   three,
			wantLogins:  2,
			maxDuration: time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) { runMembershipCase(t, tt, DemoteMember) })
	}
}

// TestRemoveMemberRemovesOnlyANonVoter checks the order that matters: the
// remove-peer request reaches OpenBao only once the member no longer votes.
// The negative control shows the fake would see a removal of a voter.
func TestRemoveMemberRemovesOnlyANonVoter(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	c := f.newTestClient(t, tokenFile(t, jwtA))
	_, err := RemoveMember(context.Background(), c, f.addrs, "bao-1", fastMembershipOptions())
	g.Expect(err).NotTo(HaveOccurred())
	calls := f.membershipRequests()
	g.Expect(calls).To(HaveLen(2))
	g.Expect(calls[0].op).To(Equal("demote"))
	g.Expect(calls[0].voter).To(BeTrue(), "the demote finds a voter")
	g.Expect(calls[1].op).To(Equal("remove-peer"))
	g.Expect(calls[1].voter).To(BeFalse(), "the removal finds a non-voter")

	t.Run("negative control: a direct remove-peer of a voter is recorded as such", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.RemovePeer(context.Background(), f.addrs[0], "bao-2")).To(Succeed())
		calls := f.membershipRequests()
		g.Expect(calls[len(calls)-1].voter).To(BeTrue())
	})
}

func TestMembershipRefusesBadInput(t *testing.T) {
	f := newFakeCluster(t, 1)
	tests := []struct {
		reason  string
		members []string
		node    string
		wantErr string
	}{
		{reason: "no members", node: "bao-0", wantErr: "list of member API addresses is empty"},
		{reason: "plain http", members: []string{"http://bao-0.bao-internal.ns.svc:8200"}, node: "bao-0", wantErr: "scheme must be https"},
		{reason: "no node ID", members: f.addrs, wantErr: "invalid node ID: it is empty"},
	}
	for _, tt := range tests {
		for name, op := range map[string]func(context.Context, openbao.Membership, []string, string, MembershipOptions) (MembershipResult, error){
			"promote": PromoteMember, "remove": RemoveMember, "demote": DemoteMember,
		} {
			t.Run(name+": "+tt.reason, func(t *testing.T) {
				g := NewWithT(t)
				c := f.newTestClient(t, tokenFile(t, jwtA))
				_, err := op(context.Background(), c, tt.members, tt.node, fastMembershipOptions())
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)), tt.reason)
				g.Expect(Classify(err)).To(Equal(ClassFatal), "%s: bad input is fatal", tt.reason)
				g.Expect(f.requestCount("leader")).To(BeZero(), tt.reason)
			})
		}
	}
}

func TestMembershipStopsWithTheContext(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, 3)
	f.set(func(f *fakeCluster) { f.addNonVoter("bao-3"); f.autopilotStalled = true })
	c := f.newTestClient(t, tokenFile(t, jwtA))
	opts := fastMembershipOptions()
	opts.PromoteTimeout = 10 * time.Second
	opts.RetryFor = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()

	start := time.Now()
	_, err := PromoteMember(ctx, c, f.addrs, "bao-3", opts)
	g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "%v", err)
	g.Expect(Classify(err)).To(Equal(ClassRetryable))
}

func TestMembershipOptionsDefaults(t *testing.T) {
	g := NewWithT(t)
	o := MembershipOptions{RetryFor: -time.Second}.withDefaults()
	g.Expect(o.PollInterval).To(Equal(500*time.Millisecond), "the configuration is read every 500 ms")
	g.Expect(o.PromoteTimeout).To(Equal(30 * time.Second))
	g.Expect(o.DemoteTimeout).To(Equal(45*time.Second), "a demotion takes 9-10 s to apply")
	g.Expect(o.RemoveTimeout).To(Equal(15 * time.Second))
	g.Expect(o.RetryFor).To(BeZero(), "a negative budget is a single attempt")
	g.Expect(o.Clock).NotTo(BeNil())
}
