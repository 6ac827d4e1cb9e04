package quorum

import (
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

var now = time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)

// member is a member of the observation: answering (unsealed on a Ready pod) or
// not, with the committed index its sys/leader reports.
func member(name string, ordinal int, answers bool, committed uint64) operation.Member {
	m := operation.Member{Name: name, Ordinal: ordinal, PodExists: true, CommittedIndex: committed}
	if answers {
		m.PodReady, m.Initialized, m.Version = true, true, "2.4.0"
	}
	return m
}

// record is a quorum record of three voters, each with the claim UID uid-<name>.
func record(leader string, lostSince *time.Time, voters ...string) *baov1.QuorumStatus {
	r := &baov1.QuorumStatus{LastLeader: leader}
	for _, v := range voters {
		r.LastVoters = append(r.LastVoters, baov1.QuorumVoter{Name: v, VolumeClaimUID: "uid-" + v})
	}
	if lostSince != nil {
		t := metav1.NewTime(*lostSince)
		r.LostSince = &t
	}
	return r
}

func claims(names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out["data-"+n] = "uid-" + n
	}
	return out
}

func ago(d time.Duration) *time.Time { t := now.Add(-d); return &t }

func TestWatch(t *testing.T) {
	three := []string{"bao-0", "bao-1", "bao-2"}
	cases := []struct {
		name, reason string
		rec          *baov1.QuorumStatus
		members      []operation.Member
		autopilot    bool
		volumes      map[string]string

		wantLost, wantForGood, wantBreakGlass bool
		wantBest                              string
		wantGone                              []string
		wantMsg, wantLoss                     []string
	}{
		{
			name: "autopilot readable", reason: "a readable autopilot has a leader, so a majority: nothing to judge",
			rec: record("bao-0", nil, three...), autopilot: true,
			members: []operation.Member{member("bao-0", 0, true, 0), member("bao-1", 1, false, 0), member("bao-2", 2, false, 0)},
			volumes: claims(three...),
		},
		{
			name: "nothing recorded", reason: "a cluster that never had a readable autopilot (it forms) is not judged",
			members: []operation.Member{member("bao-0", 0, false, 0)},
		},
		{
			name: "a majority answers", reason: "one follower down: autopilot may be unreadable for a read, quorum holds",
			rec:     record("bao-0", nil, three...),
			members: []operation.Member{member("bao-0", 0, true, 90), member("bao-1", 1, true, 90), member("bao-2", 2, false, 0)},
			volumes: claims(three...),
		},
		{
			name: "two silent with their volumes, just now", reason: "nodes that reboot come back with their data: hold, break-glass in 5 min",
			rec:      record("bao-0", nil, three...),
			members:  []operation.Member{member("bao-0", 0, true, 120), member("bao-1", 1, false, 0), member("bao-2", 2, false, 0)},
			volumes:  claims(three...),
			wantLost: true, wantBest: "bao-0",
			wantMsg: []string{"Quorum lost: 2 of 3 voters do not answer (bao-1; bao-2) since 2026-12-07T03:00:00Z", "break-glass follows in 5m0s",
				"The survivor to recover from is bao-0"},
			wantLoss: []string{"committed index 120", "nothing acknowledged is lost"},
		},
		{
			name: "two silent with their volumes, for 5 min", reason: "past MajorityLostAfter a person must decide",
			rec:      record("bao-0", ago(MajorityLostAfter), three...),
			members:  []operation.Member{member("bao-0", 0, true, 120), member("bao-1", 1, false, 0), member("bao-2", 2, false, 0)},
			volumes:  claims(three...),
			wantLost: true, wantBreakGlass: true, wantBest: "bao-0",
			wantMsg: []string{"for 5m0s or longer"},
		},
		{
			name: "both followers' claims deleted", reason: "issue 39: the volumes of two of three are gone; no majority can come back, at once",
			rec:      record("bao-0", nil, three...),
			members:  []operation.Member{member("bao-0", 0, true, 120), member("bao-1", 1, false, 0)},
			volumes:  claims("bao-0"),
			wantLost: true, wantForGood: true, wantBreakGlass: true, wantBest: "bao-0", wantGone: []string{"bao-1", "bao-2"},
			wantMsg: []string{"bao-1: its volume claim data-bao-1 is deleted", "a majority of 2 cannot come back, since the data of bao-1, bao-2 is gone"},
		},
		{
			name: "both followers' claims replaced by new ones", reason: "the StatefulSet re-created the claims: another UID holds none of the voter's data",
			rec:      record("bao-0", nil, three...),
			members:  []operation.Member{member("bao-0", 0, true, 120), member("bao-1", 1, false, 0)},
			volumes:  map[string]string{"data-bao-0": "uid-bao-0", "data-bao-1": "new-1", "data-bao-2": "new-2"},
			wantLost: true, wantForGood: true, wantBreakGlass: true, wantBest: "bao-0", wantGone: []string{"bao-1", "bao-2"},
			wantMsg: []string{"bao-2: its volume claim data-bao-2 was replaced by a new, empty one"},
		},
		{
			name: "one claim lost, one node silent", reason: "the silent one may come back and make a majority with the survivor: wait",
			rec:      record("bao-0", nil, three...),
			members:  []operation.Member{member("bao-0", 0, true, 120), member("bao-1", 1, false, 0), member("bao-2", 2, false, 0)},
			volumes:  claims("bao-0", "bao-2"),
			wantLost: true, wantBest: "bao-0", wantGone: []string{"bao-1"},
		},
		{
			name: "the survivor followed", reason: "the leader lost with a follower: a write acknowledged last may be missing, and status says so",
			rec:      record("bao-1", nil, three...),
			members:  []operation.Member{member("bao-0", 0, true, 118)},
			volumes:  claims("bao-0"),
			wantLost: true, wantForGood: true, wantBreakGlass: true, wantBest: "bao-0", wantGone: []string{"bao-1", "bao-2"},
			wantLoss: []string{"committed index 118; it followed bao-1", "may be missing"},
		},
		{
			name: "3 of 5 lost, two survivors", reason: "the survivor with the highest committed index is named",
			rec: record("bao-4", nil, "bao-0", "bao-1", "bao-2", "bao-3", "bao-4"),
			members: []operation.Member{member("bao-0", 0, true, 500), member("bao-1", 1, true, 512), member("bao-2", 2, false, 0),
				member("bao-3", 3, false, 0), member("bao-4", 4, false, 0)},
			volumes:  claims("bao-0", "bao-1"),
			wantLost: true, wantForGood: true, wantBreakGlass: true, wantBest: "bao-1", wantGone: []string{"bao-2", "bao-3", "bao-4"},
			wantMsg: []string{"3 of 5 voters do not answer", "a majority of 3 cannot come back"},
		},
		{
			name: "a tie goes to the last leader", reason: "equal committed indexes: the last leader holds every write it acknowledged",
			rec: record("bao-1", nil, "bao-0", "bao-1", "bao-2", "bao-3", "bao-4"),
			members: []operation.Member{member("bao-0", 0, true, 512), member("bao-1", 1, true, 512), member("bao-2", 2, false, 0),
				member("bao-3", 3, false, 0), member("bao-4", 4, false, 0)},
			volumes:  claims("bao-0", "bao-1"),
			wantLost: true, wantForGood: true, wantBreakGlass: true, wantBest: "bao-1", wantGone: []string{"bao-2", "bao-3", "bao-4"},
			wantLoss: []string{"nothing acknowledged is lost"},
		},
		{
			name: "no survivor", reason: "every volume gone: only a snapshot brings the data back",
			rec:      record("bao-0", nil, three...),
			members:  []operation.Member{member("bao-0", 0, false, 0)},
			wantLost: true, wantForGood: true, wantBreakGlass: true, wantGone: three,
			wantMsg: []string{"No voter survives: restore the latest snapshot"},
		},
		{
			name: "a voter recorded without a claim", reason: "a server of no claim of this cluster says nothing of its data: not counted gone",
			rec: &baov1.QuorumStatus{LastLeader: "bao-0", LastVoters: []baov1.QuorumVoter{
				{Name: "bao-0", VolumeClaimUID: "uid-bao-0"}, {Name: "bao-1", VolumeClaimUID: "uid-bao-1"}, {Name: "ghost"}}},
			members:  []operation.Member{member("bao-0", 0, true, 120), member("bao-1", 1, false, 0)},
			volumes:  claims("bao-0"),
			wantLost: true, wantBest: "bao-0", wantGone: []string{"bao-1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &operation.Cluster{Now: now, Members: tc.members, AutopilotKnown: tc.autopilot}
			v := Watch(tc.rec, c, tc.volumes)
			g.Expect(v.Lost).To(Equal(tc.wantLost), tc.reason)
			g.Expect(v.ForGood).To(Equal(tc.wantForGood), tc.reason)
			g.Expect(v.BreakGlass).To(Equal(tc.wantBreakGlass), tc.reason)
			g.Expect(v.Best).To(Equal(tc.wantBest), tc.reason)
			gone := slices.Sorted(maps.Keys(v.Gone))
			g.Expect(gone).To(Equal(tc.wantGone), tc.reason)
			for _, s := range tc.wantMsg {
				g.Expect(v.Message).To(ContainSubstring(s), tc.reason)
			}
			for _, s := range tc.wantLoss {
				g.Expect(v.Loss).To(ContainSubstring(s), tc.reason)
			}
			if v.Lost {
				g.Expect(v.LostSince).NotTo(BeNil())
				if tc.rec.LostSince != nil {
					g.Expect(*v.LostSince).To(Equal(tc.rec.LostSince.Time), "the loss keeps its start")
				} else {
					g.Expect(*v.LostSince).To(Equal(now), "the loss starts now")
				}
			}
			if v.Lost && !v.BreakGlass {
				g.Expect(v.RequeueAfter).To(BeNumerically(">", 0), "a hold looks again")
			}
		})
	}
}

func TestTrack(t *testing.T) {
	g := NewWithT(t)
	c := &operation.Cluster{Now: now, AutopilotKnown: true, Leader: "bao-1", Members: []operation.Member{
		{Name: "bao-0", InRaft: true, Voter: true}, {Name: "bao-1", InRaft: true, Voter: true}, {Name: "bao-2", InRaft: true}}}
	rec := Track(nil, c, claims("bao-0", "bao-1", "bao-2"))
	g.Expect(rec).To(Equal(&baov1.QuorumStatus{LastLeader: "bao-1", LastVoters: []baov1.QuorumVoter{
		{Name: "bao-0", VolumeClaimUID: "uid-bao-0"}, {Name: "bao-1", VolumeClaimUID: "uid-bao-1"}}}), "voters only, with their claims")

	c.AutopilotKnown = false
	g.Expect(Track(rec, c, nil)).To(BeIdenticalTo(rec), "an unreadable autopilot forgets nothing")

	// The followers' claims are deleted while the leader still answers: the record
	// keeps the claims they had, so that the loss after it is seen as for good.
	going := &operation.Cluster{Now: now, AutopilotKnown: true, Leader: "bao-1", Members: []operation.Member{
		{Name: "bao-0", InRaft: true, Voter: true}, {Name: "bao-1", InRaft: true, Voter: true, Healthy: true}}}
	kept := Track(rec, going, map[string]string{"data-bao-1": "uid-bao-1"})
	g.Expect(kept.LastVoters).To(Equal([]baov1.QuorumVoter{{Name: "bao-0", VolumeClaimUID: "uid-bao-0"}, {Name: "bao-1", VolumeClaimUID: "uid-bao-1"}}))
	// Found on the rig: autopilot still calls a voter healthy a heartbeat after its
	// claim was deleted; the claim it had is kept.
	going.Members[0].Healthy = true
	g.Expect(Track(rec, going, map[string]string{"data-bao-1": "uid-bao-1"}).LastVoters[0]).To(Equal(baov1.QuorumVoter{Name: "bao-0", VolumeClaimUID: "uid-bao-0"}))
	going.Members[0].Healthy = false
	// A healthy voter on a new claim (it rejoined with fresh data and was promoted)
	// is recorded with it.
	going.Members[0].Healthy = true
	renewed := Track(kept, going, map[string]string{"data-bao-0": "new-0", "data-bao-1": "uid-bao-1"})
	g.Expect(renewed.LastVoters[0]).To(Equal(baov1.QuorumVoter{Name: "bao-0", VolumeClaimUID: "new-0"}))

	lost := Watch(rec, &operation.Cluster{Now: now, Members: []operation.Member{member("bao-0", 0, false, 0), member("bao-1", 1, true, 9)}},
		claims("bao-0", "bao-1"))
	g.Expect(lost.Lost).To(BeTrue())
	after := Record(rec, c, nil, lost)
	g.Expect(after.LostSince).NotTo(BeNil())
	g.Expect(after.LostSince.Time).To(Equal(now))
	g.Expect(rec.LostSince).To(BeNil(), "the previous record is not changed")

	c.AutopilotKnown = true
	g.Expect(Record(after, c, claims("bao-0", "bao-1", "bao-2"), Verdict{}).LostSince).To(BeNil(), "a readable autopilot ends the loss")
}

func TestDecide(t *testing.T) {
	three := []string{"bao-0", "bao-1", "bao-2"}
	snap := func(rec *baov1.QuorumStatus, volumes map[string]string, members ...operation.Member) *operation.Snapshot {
		o := &baov1.OpenBaoCluster{}
		o.Status.Quorum = rec
		return &operation.Snapshot{Cluster: &operation.Cluster{Now: now, Members: members}, Object: o, VolumeUIDs: volumes}
	}
	t.Run("the loss begins: a hold and one Warning event", func(t *testing.T) {
		g := NewWithT(t)
		s := snap(record("bao-0", &now, three...), claims(three...), member("bao-0", 0, true, 7))
		g.Expect(Lost(s)).To(BeTrue())
		p := Operation{}.Decide(s)
		g.Expect(p.Kind).To(Equal(operation.KindWait))
		g.Expect(p.WaitingFor).To(ContainSubstring("break-glass follows in 5m0s"))
		g.Expect(p.Events).To(HaveLen(1))
		g.Expect(p.Events[0].Reason).To(Equal(EventQuorumLost))
		g.Expect(p.Disruptive()).To(BeFalse())
	})
	t.Run("later passes of the hold say nothing new", func(t *testing.T) {
		g := NewWithT(t)
		p := Operation{}.Decide(snap(record("bao-0", ago(time.Minute), three...), claims(three...), member("bao-0", 0, true, 7)))
		g.Expect(p.Kind).To(Equal(operation.KindWait))
		g.Expect(p.Events).To(BeEmpty())
		g.Expect(p.RequeueAfter).To(Equal(30 * time.Second))
	})
	t.Run("for good: break-glass MajorityLost with the recovery", func(t *testing.T) {
		g := NewWithT(t)
		p := Operation{}.Decide(snap(record("bao-0", &now, three...), claims("bao-0"), member("bao-0", 0, true, 7)))
		g.Expect(p.Kind).To(Equal(operation.KindBreakGlass))
		g.Expect(p.BreakGlass).To(Equal(baov1.BreakGlassMajorityLost))
		g.Expect(p.Recovery).To(Equal(&operation.Recovery{Voters: three, Survivor: "bao-0", Loss: p.Recovery.Loss,
			Gone: map[string]string{"bao-1": "its volume claim data-bao-1 is deleted", "bao-2": "its volume claim data-bao-2 is deleted"}}))
		g.Expect(p.Recovery.Loss).To(ContainSubstring("nothing acknowledged is lost"))
	})
	t.Run("an upgrade watches its own quorum", func(t *testing.T) {
		g := NewWithT(t)
		s := snap(record("bao-0", &now, three...), claims("bao-0"), member("bao-0", 0, true, 7))
		s.Object.Status.Upgrade = &baov1.UpgradeStatus{}
		g.Expect(Lost(s)).To(BeFalse())
	})
}
