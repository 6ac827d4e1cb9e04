package openbaofake

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

const (
	addr0 = "https://bao-0.bao-internal.ns.svc:8200"
	addr1 = "https://bao-1.bao-internal.ns.svc:8200"
)

func TestZeroFakeAnswersWithErrors(t *testing.T) {
	g := NewWithT(t)
	var f Fake
	ctx := t.Context()

	_, err := f.Health(ctx, addr0)
	g.Expect(err).To(MatchError(ContainSubstring("no Health set for " + addr0)))
	_, err = f.Leader(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("no Leader set")))
	_, err = f.RaftConfiguration(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("no RaftConfiguration set")))
	_, err = f.AutopilotState(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("no AutopilotState set")))
}

func TestFakeReturnsWhatWasSet(t *testing.T) {
	g := NewWithT(t)
	f := &Fake{}
	ctx := t.Context()
	f.SetHealth(addr0, openbao.Health{Initialized: true, Version: "2.4.0"})
	f.SetDefaultHealth(openbao.Health{Initialized: true, Sealed: true})
	f.SetLeader(openbao.Leader{LeaderAddress: addr0, RaftCommittedIndex: 7})
	f.SetRaftConfiguration(openbao.RaftConfiguration{Servers: []openbao.RaftServer{
		{NodeID: "bao-0", Leader: true, Voter: true},
	}})
	f.SetAutopilotState(openbao.AutopilotState{
		Healthy: true,
		Leader:  "bao-0",
		Voters:  []string{"bao-0"},
		Servers: map[string]openbao.AutopilotServer{"bao-0": {ID: "bao-0", LastContact: time.Second}},
	})

	h, err := f.Health(ctx, addr0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*h).To(Equal(openbao.Health{Initialized: true, Version: "2.4.0"}))
	h, err = f.Health(ctx, addr1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Sealed).To(BeTrue(), "addr1 falls back to the default")

	l, err := f.Leader(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.RaftCommittedIndex).To(Equal(uint64(7)))

	rc, err := f.RaftConfiguration(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rc.Servers).To(HaveLen(1))

	as, err := f.AutopilotState(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(as.Servers["bao-0"].LastContact).To(Equal(time.Second))

	g.Expect(f.Calls(MethodHealth)).To(Equal(2))
	g.Expect(f.Calls(MethodLeader)).To(Equal(1))
	g.Expect(f.Calls(MethodRaftConfiguration)).To(Equal(1))
	g.Expect(f.Calls(MethodAutopilotState)).To(Equal(1))
	g.Expect(f.HealthAddrs()).To(Equal([]string{addr0, addr1}))
}

func TestFakeErrorInjection(t *testing.T) {
	boom := errors.New("boom")
	calls := []struct {
		method Method
		call   func(context.Context, *Fake) error
	}{
		{MethodHealth, func(ctx context.Context, f *Fake) error { _, err := f.Health(ctx, addr0); return err }},
		{MethodLeader, func(ctx context.Context, f *Fake) error { _, err := f.Leader(ctx); return err }},
		{MethodRaftConfiguration, func(ctx context.Context, f *Fake) error { _, err := f.RaftConfiguration(ctx); return err }},
		{MethodAutopilotState, func(ctx context.Context, f *Fake) error { _, err := f.AutopilotState(ctx); return err }},
	}
	for _, tt := range calls {
		t.Run(string(tt.method), func(t *testing.T) {
			g := NewWithT(t)
			f := &Fake{}
			f.SetDefaultHealth(openbao.Health{Initialized: true})
			f.SetLeader(openbao.Leader{})
			f.SetRaftConfiguration(openbao.RaftConfiguration{})
			f.SetAutopilotState(openbao.AutopilotState{})

			f.SetError(tt.method, boom)
			g.Expect(tt.call(t.Context(), f)).To(MatchError(boom))
			for _, other := range calls {
				if other.method != tt.method {
					g.Expect(other.call(t.Context(), f)).To(Succeed(), "only %s fails", tt.method)
				}
			}

			f.SetError(tt.method, nil)
			g.Expect(tt.call(t.Context(), f)).To(Succeed())

			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			g.Expect(tt.call(ctx, f)).To(MatchError(context.Canceled))
			g.Expect(f.Calls(tt.method)).To(Equal(3))
		})
	}
}

func TestFakeHealthErrorPerMember(t *testing.T) {
	g := NewWithT(t)
	f := &Fake{}
	f.SetDefaultHealth(openbao.Health{Initialized: true})
	unreachable := errors.New("dial tcp: connection refused")
	f.SetHealthError(addr1, unreachable)

	_, err := f.Health(t.Context(), addr0)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.Health(t.Context(), addr1)
	g.Expect(err).To(MatchError(unreachable))

	f.SetHealthError(addr1, nil)
	_, err = f.Health(t.Context(), addr1)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestFakeCopiesValuesInAndOut(t *testing.T) {
	g := NewWithT(t)
	f := &Fake{}
	servers := []openbao.RaftServer{{NodeID: "bao-0"}}
	voters := []string{"bao-0"}
	apServers := map[string]openbao.AutopilotServer{"bao-0": {ID: "bao-0"}}
	f.SetRaftConfiguration(openbao.RaftConfiguration{Servers: servers})
	f.SetAutopilotState(openbao.AutopilotState{Voters: voters, Servers: apServers})

	// The test changes its values after setting them.
	servers[0].NodeID = "changed"
	voters[0] = "changed"
	apServers["changed"] = openbao.AutopilotServer{}

	rc, err := f.RaftConfiguration(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rc.Servers[0].NodeID).To(Equal("bao-0"))
	as, err := f.AutopilotState(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(as.Voters).To(Equal([]string{"bao-0"}))
	g.Expect(as.Servers).To(HaveLen(1))

	// The code under test changes what it got.
	rc.Servers[0].NodeID = "changed"
	as.Voters[0] = "changed"
	delete(as.Servers, "bao-0")

	rc, _ = f.RaftConfiguration(t.Context())
	as, _ = f.AutopilotState(t.Context())
	g.Expect(rc.Servers[0].NodeID).To(Equal("bao-0"))
	g.Expect(as.Voters).To(Equal([]string{"bao-0"}))
	g.Expect(as.Servers).To(HaveKey("bao-0"))
}

func TestFakeIsSafeForConcurrentUse(t *testing.T) {
	g := NewWithT(t)
	f := &Fake{}
	f.SetLeader(openbao.Leader{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			f.SetLeader(openbao.Leader{RaftAppliedIndex: uint64(i)})
		}
	}()
	for range 100 {
		_, err := f.Leader(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
	}
	<-done
	g.Expect(f.Calls(MethodLeader)).To(Equal(100))
}
