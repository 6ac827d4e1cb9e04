package quorum

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// lostCluster is a 3-member cluster in break-glass MajorityLost: bao-0 survives
// (committed index 90, the last leader), bao-1's data is gone (committed 0), bao-2
// survives too but holds less (committed 80) in the cases that want it.
func lostCluster() *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{}
	c.Name, c.Namespace, c.UID = "bao", "ns", "cluster-uid"
	c.Spec.Replicas = ptr(int32(3))
	c.Status.Quorum = record("bao-0", nil, "bao-0", "bao-1", "bao-2")
	t := metav1.NewTime(now.Add(-time.Minute))
	c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassMajorityLost, Nonce: "n1", Survivor: "bao-0", EnteredAt: &t,
		Loss:    "nothing acknowledged is lost",
		Members: []baov1.BreakGlassMember{{Name: "bao-0", CommittedIndex: 90}, {Name: "bao-1", Lost: "its volume claim data-bao-1 is deleted"}, {Name: "bao-2", CommittedIndex: 80}}}
	return c
}

func ptr[T any](v T) *T { return &v }

func withUID(m operation.Member, uid, node string) operation.Member {
	m.UID, m.Node = uid, node
	return m
}

func TestJudgeRecovery(t *testing.T) {
	answering := func() *operation.Cluster {
		return &operation.Cluster{Now: now, Members: []operation.Member{
			withUID(member("bao-0", 0, true, 90), "pod-0", "node-a"), member("bao-1", 1, false, 0), member("bao-2", 2, false, 80)}}
	}
	cases := []struct {
		name   string
		change func(c *baov1.OpenBaoCluster, obs *operation.Cluster)
		value  string
		noObs  bool // as the plugin judges: from status alone
		want   string
	}{
		{name: "the survivor with the current nonce: accepted", value: "bao-0:n1"},
		{name: "from status alone (the plugin): accepted", value: "bao-0:n1", noObs: true},
		{name: "no member or no nonce", value: "n1", want: "the value must be MEMBER:NONCE"},
		{name: "a stale nonce", value: "bao-0:n0", want: `"n0" is not the current nonce`},
		{name: "not the most up-to-date survivor", value: "bao-2:n1",
			want: "bao-2 is not the most up-to-date survivor: bao-0 holds committed index 90 (bao-2: 80)"},
		{name: "while a majority answers (no break-glass)", value: "bao-0:n1",
			change: func(c *baov1.OpenBaoCluster, _ *operation.Cluster) { c.Status.BreakGlass = nil },
			want:   "no majority of voters is known lost (break-glass is not active)"},
		{name: "break-glass of another reason", value: "bao-0:n1",
			change: func(c *baov1.OpenBaoCluster, _ *operation.Cluster) {
				c.Status.BreakGlass.Reason = baov1.BreakGlassQuorumLost
			},
			want: "recover-quorum is only for break-glass MajorityLost"},
		{name: "during an upgrade", value: "bao-0:n1",
			change: func(c *baov1.OpenBaoCluster, _ *operation.Cluster) {
				c.Status.Upgrade = &baov1.UpgradeStatus{TargetVersion: "2.5.0"}
			},
			want: "an upgrade to 2.5.0 is in progress"},
		{name: "twice at once", value: "bao-0:n1",
			change: func(c *baov1.OpenBaoCluster, _ *operation.Cluster) {
				c.Status.QuorumRecovery = &baov1.QuorumRecoveryStatus{Survivor: "bao-0", Step: baov1.QuorumRecoveryWaitSoleVoter}
			},
			want: "a recovery from bao-0 runs already (step WaitSoleVoter)"},
		{name: "after a finished recovery, a new break-glass: accepted", value: "bao-0:n1",
			change: func(c *baov1.OpenBaoCluster, _ *operation.Cluster) {
				c.Status.QuorumRecovery = &baov1.QuorumRecoveryStatus{Survivor: "bao-0", Step: baov1.QuorumRecoveryFailed}
			}},
		{name: "a voter silent at break-glass answers again", value: "bao-0:n1",
			change: func(_ *baov1.OpenBaoCluster, obs *operation.Cluster) { obs.Members[1] = member("bao-1", 1, true, 0) },
			want:   "bao-1 answers again, so a majority may come back by itself"},
		{name: "another survivor that answered all along (three of five lost: two answer): accepted", value: "bao-0:n1",
			change: func(c *baov1.OpenBaoCluster, obs *operation.Cluster) {
				c.Status.Quorum = record("bao-0", nil, "bao-0", "bao-1", "bao-2", "bao-3", "bao-4")
				obs.Members[2] = member("bao-2", 2, true, 80)
			}},
		{name: "survivors that answer are a majority", value: "bao-0:n1",
			change: func(_ *baov1.OpenBaoCluster, obs *operation.Cluster) { obs.Members[2] = member("bao-2", 2, true, 80) },
			want:   "2 of the 3 last voters answer, a majority"},
		{name: "the survivor does not answer now", value: "bao-0:n1",
			change: func(_ *baov1.OpenBaoCluster, obs *operation.Cluster) { obs.Members[0].PodTerminating = true },
			want:   "the survivor bao-0 does not answer now"},
		{name: "no survivor at all", value: "bao-0:n1",
			change: func(c *baov1.OpenBaoCluster, _ *operation.Cluster) { c.Status.BreakGlass.Survivor = "" },
			want:   "restore the latest snapshot instead"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, obs := lostCluster(), answering()
			if tc.change != nil {
				tc.change(c, obs)
			}
			if tc.noObs {
				obs = nil
			}
			ok, why := JudgeRecovery(c, obs, tc.value)
			if tc.want == "" {
				g.Expect(ok).To(BeTrue(), why)
				return
			}
			g.Expect(ok).To(BeFalse())
			g.Expect(why).To(ContainSubstring(tc.want))
		})
	}
}

// TestRecover walks a recovery from bao-0 through its steps, one pass at a time,
// each pass deciding from the status the previous one left (as after a crash).
func TestRecover(t *testing.T) {
	g := NewWithT(t)
	c := lostCluster()
	members := []operation.Member{withUID(member("bao-0", 0, true, 90), "pod-0", "node-a"),
		withUID(member("bao-1", 1, false, 0), "pod-1", "node-b"), member("bao-2", 2, false, 80)}
	obs := &operation.Cluster{Now: now, Members: members}
	g.Expect(JudgeRecovery(c, obs, "bao-0:n1")).To(BeTrue())
	c.Status.BreakGlass.Active = false
	c.Status.QuorumRecovery = AcceptRecovery(c, obs, "bao-0:n1")
	r := c.Status.QuorumRecovery
	g.Expect(r.Survivor).To(Equal("bao-0"))
	g.Expect(r.SurvivorPod).To(Equal("pod-0"))
	g.Expect(r.Node).To(Equal("node-a"))
	g.Expect(r.Step).To(Equal(baov1.QuorumRecoveryWritePeers))
	g.Expect(RecoveryRunning(&c.Status)).To(BeTrue())

	volumes := claims("bao-0", "bao-1", "bao-2")
	jobs := map[string]operation.ObservedJob{}
	pass := func() operation.Plan {
		s := &operation.Snapshot{Cluster: &operation.Cluster{Now: now, Members: members, AutopilotKnown: obs.AutopilotKnown, Leader: obs.Leader},
			Object: c.DeepCopy(), VolumeUIDs: volumes, Jobs: jobs, ExecutorImage: "tenant/image:1", OperatorExecutorImage: "baokeeper:1"}
		p := RecoverOperation{}.Decide(s)
		if p.Status != nil {
			c.Status = *p.Status
		}
		return p
	}

	// the first pass records the survivor's claim and the first attempt, and changes nothing.
	p := pass()
	g.Expect(p.Kind).To(Equal(operation.KindPersist))
	g.Expect(c.Status.QuorumRecovery.SurvivorVolumeClaim).To(Equal("uid-bao-0"))
	g.Expect(c.Status.QuorumRecovery.Attempts).To(Equal(int32(1)))

	// then the Job on the survivor's node, with its claim, in the operator's own image.
	p = pass()
	g.Expect(p.Kind).To(Equal(operation.KindCreateJob))
	g.Expect(p.Job).NotTo(BeNil())
	pod := p.Job.Spec.Template.Spec
	g.Expect(pod.NodeName).To(Equal("node-a"))
	g.Expect(pod.Containers[0].Image).To(Equal("baokeeper:1"), "never the image a tenant names in spec.upgrade.executor.image")
	g.Expect(pod.Containers[0].Args).To(Equal([]string{"executor", "write-peers", "--raft-dir", "/openbao/data/raft", "--id", "bao-0",
		"--address", "bao-0.bao-internal.ns.svc:8201"}))
	g.Expect(pod.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ClaimName", "data-bao-0")))
	g.Expect(*pod.SecurityContext.RunAsUser).To(Equal(int64(100)), "OpenBao's user owns the Raft directory")
	g.Expect(pod.Volumes).To(HaveLen(1), "the survivor's claim only: no OpenBao token, no CA")
	g.Expect(pod.Containers[0].VolumeMounts).To(HaveLen(1))

	// a failed Job is tried again under a new name, then the recovery fails.
	jobs[p.Job.Name] = operation.ObservedJob{Operation: r.ID, Job: operation.Job{Phase: operation.JobFailed, Message: "boom"}}
	p = pass()
	g.Expect(p.Kind).To(Equal(operation.KindPersist))
	g.Expect(c.Status.QuorumRecovery.Attempts).To(Equal(int32(2)))
	p = pass()
	g.Expect(p.Kind).To(Equal(operation.KindCreateJob))
	g.Expect(p.Job.Name).To(Equal(executorjob.JobName(c, executorjob.StepWritePeers, r.ID, "bao-0", 2)))
	jobs[p.Job.Name] = operation.ObservedJob{Operation: r.ID, Job: operation.Job{Phase: operation.JobSucceeded}}

	// the Job succeeded: the survivor's restart is recorded, then its pod (the UID recorded) deleted.
	p = pass()
	g.Expect(p.Kind).To(Equal(operation.KindPersist))
	g.Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryRestartSurvivor))
	p = pass()
	g.Expect(p.Kind).To(Equal(operation.KindDelete))
	g.Expect(p.Object).To(Equal(operation.ObjectMemberData))
	g.Expect(p.Members).To(Equal([]string{"bao-0"}))
	g.Expect(p.Preconditions).To(Equal(map[string]string{"bao-0": "pod-0"}), "the pod only, never the survivor's claim")

	// a new pod: wait until it leads alone.
	members[0].UID, members[0].PodReady = "pod-0b", false
	p = pass()
	g.Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryWaitSoleVoter))
	p = pass()
	g.Expect(p.Kind).To(Equal(operation.KindWait))
	g.Expect(p.Disruptive()).To(BeFalse())

	// it leads: the others' pods and claims are recorded, then deleted with those UIDs.
	obs.AutopilotKnown, obs.Leader = true, "bao-0"
	p = pass()
	g.Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryReplaceOthers))
	g.Expect(c.Status.QuorumRecovery.Others).To(Equal([]baov1.RecoveredMember{
		{Name: "bao-1", Pod: "pod-1", VolumeClaim: "uid-bao-1"}, {Name: "bao-2", VolumeClaim: "uid-bao-2"}}))
	p = pass()
	g.Expect(p.Kind).To(Equal(operation.KindDelete))
	g.Expect(p.Members).To(Equal([]string{"bao-1", "bao-2"}))
	g.Expect(p.Preconditions).To(Equal(map[string]string{"data-bao-1": "uid-bao-1", "bao-1": "pod-1", "data-bao-2": "uid-bao-2"}))

	// gone (or replaced by new ones): done, with a history entry and an event.
	delete(volumes, "data-bao-1")
	volumes["data-bao-2"] = "uid-new"
	members[1].UID = "pod-1b"
	p = pass()
	g.Expect(p.Kind).To(Equal(operation.KindPersist))
	g.Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryDone))
	g.Expect(RecoveryRunning(&c.Status)).To(BeFalse())
	g.Expect(p.Events).To(HaveLen(1))
	g.Expect(p.Events[0].Reason).To(Equal(EventQuorumRecovered))
	g.Expect(c.Status.History).To(HaveLen(1))
	g.Expect(c.Status.History[0].Kind).To(Equal(baov1.HistoryQuorumRecovery))
	g.Expect(c.Status.History[0].Outcome).To(Equal(baov1.OutcomeSucceeded))
}

func TestRecoverFails(t *testing.T) {
	base := func() (*baov1.OpenBaoCluster, []operation.Member) {
		c := lostCluster()
		c.Status.BreakGlass.Active = false
		members := []operation.Member{withUID(member("bao-0", 0, true, 90), "pod-0", "node-a")}
		c.Status.QuorumRecovery = AcceptRecovery(c, &operation.Cluster{Now: now, Members: members}, "bao-0:n1")
		return c, members
	}
	decide := func(c *baov1.OpenBaoCluster, members []operation.Member, volumes map[string]string, at time.Time) operation.Plan {
		return RecoverOperation{}.Decide(&operation.Snapshot{Cluster: &operation.Cluster{Now: at, Members: members}, Object: c, VolumeUIDs: volumes})
	}
	t.Run("the survivor's pod was replaced before peers.json was written: nothing written, failed", func(t *testing.T) {
		g := NewWithT(t)
		c, members := base()
		members[0].UID = "pod-other"
		p := decide(c, members, claims("bao-0"), now)
		g.Expect(p.Disruptive()).To(BeFalse())
		g.Expect(p.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryFailed))
		g.Expect(p.Status.QuorumRecovery.Failure).To(ContainSubstring("nothing was written"))
		g.Expect(p.Events[0].Reason).To(Equal(EventQuorumRecoveryFailed))
	})
	t.Run("the survivor's claim was replaced after it was recorded", func(t *testing.T) {
		g := NewWithT(t)
		c, members := base()
		c.Status.QuorumRecovery.SurvivorVolumeClaim, c.Status.QuorumRecovery.Attempts = "uid-old", 1
		p := decide(c, members, claims("bao-0"), now)
		g.Expect(p.Disruptive()).To(BeFalse())
		g.Expect(p.Status.QuorumRecovery.Failure).To(ContainSubstring("no longer the one the recovery recorded"))
	})
	t.Run("the survivor does not lead within the bound", func(t *testing.T) {
		g := NewWithT(t)
		c, members := base()
		c.Status.QuorumRecovery.Step = baov1.QuorumRecoveryWaitSoleVoter
		members[0].UID = "pod-0b" // restarted
		p := decide(c, members, claims("bao-0"), now.Add(SoleVoterTimeout+time.Second))
		g.Expect(p.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryFailed))
		g.Expect(p.Status.QuorumRecovery.Failure).To(ContainSubstring("did not lead within 5m0s"))
	})
}

// TestRecoverLeavesFreshMembers: members whose claims were lost (the usual case: the
// loss was their volumes) start empty already; the recovery deletes nothing of them
// and ends as soon as the survivor leads.
func TestRecoverLeavesFreshMembers(t *testing.T) {
	g := NewWithT(t)
	c := lostCluster()
	c.Status.BreakGlass.Active = false
	members := []operation.Member{withUID(member("bao-0", 0, true, 90), "pod-0b", "node-a"), withUID(member("bao-1", 1, false, 0), "pod-1new", "node-b")}
	c.Status.QuorumRecovery = AcceptRecovery(c, &operation.Cluster{Now: now, Members: members}, "bao-0:n1")
	g.Expect(c.Status.QuorumRecovery.Others).To(Equal([]baov1.RecoveredMember{{Name: "bao-1", VolumeClaim: "uid-bao-1"}, {Name: "bao-2", VolumeClaim: "uid-bao-2"}}),
		"the claims that held their data as voters")
	c.Status.QuorumRecovery.Step = baov1.QuorumRecoveryWaitSoleVoter
	volumes := map[string]string{"data-bao-0": "uid-bao-0", "data-bao-1": "uid-new"} // bao-1 re-created empty, bao-2 not yet
	decide := func() operation.Plan {
		p := RecoverOperation{}.Decide(&operation.Snapshot{Cluster: &operation.Cluster{Now: now, Members: members, AutopilotKnown: true, Leader: "bao-0"},
			Object: c, VolumeUIDs: volumes})
		c.Status = *p.Status
		return p
	}
	decide()
	g.Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryReplaceOthers))
	g.Expect(c.Status.QuorumRecovery.Others).To(Equal([]baov1.RecoveredMember{{Name: "bao-1"}, {Name: "bao-2"}}), "nothing of theirs to delete")
	p := decide()
	g.Expect(p.Disruptive()).To(BeFalse())
	g.Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryDone))
	g.Expect(p.Events[0].Message).To(ContainSubstring("bao-1, bao-2 join it with fresh data"))
}

// TestRecoverInPlace: a survivor above a lower ordinal that is not Ready (three of
// five lost, the leader on bao-2) would not come back if its pod were deleted
// (OrderedReady); the recovery asks a person to restart it in place, deletes
// nothing, and goes on once it leads.
func TestRecoverInPlace(t *testing.T) {
	g := NewWithT(t)
	c := lostCluster()
	c.Spec.Replicas = ptr(int32(5))
	c.Status.BreakGlass.Active = false
	members := []operation.Member{withUID(member("bao-0", 0, false, 0), "pod-0new", "node-a"), withUID(member("bao-1", 1, false, 0), "pod-1new", "node-b"),
		withUID(member("bao-2", 2, true, 90), "pod-2", "node-c")}
	members[0].PodReady, members[1].PodExists = false, false
	c.Status.QuorumRecovery = AcceptRecovery(c, &operation.Cluster{Now: now, Members: members}, "bao-2:n1")
	c.Status.QuorumRecovery.Step = baov1.QuorumRecoveryRestartSurvivor
	decide := func(at time.Time, leader string) operation.Plan {
		p := RecoverOperation{}.Decide(&operation.Snapshot{Cluster: &operation.Cluster{Now: at, Members: members, AutopilotKnown: leader != "", Leader: leader},
			Object: c, VolumeUIDs: claims("bao-2")})
		c.Status = *p.Status
		return p
	}
	p := decide(now, "")
	g.Expect(p.Disruptive()).To(BeFalse(), "no pod deleted: it would not come back")
	g.Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryWaitSoleVoter))
	g.Expect(p.Events).To(HaveLen(1))
	g.Expect(p.Events[0].Reason).To(Equal(EventQuorumRecoveryNeedsRestart))
	g.Expect(p.Events[0].Message).To(ContainSubstring("kubectl exec -n ns bao-2 -c openbao -- kill 1"))
	g.Expect(p.Events[0].Message).To(ContainSubstring("once bao-0, bao-1 are Ready"))
	p = decide(now.Add(SoleVoterTimeout+time.Second), "")
	g.Expect(p.Kind).To(Equal(operation.KindWait), "a person gets longer than a pod restart")
	g.Expect(p.WaitingFor).To(ContainSubstring("kill 1"))
	decide(now.Add(SoleVoterTimeout+2*time.Second), "bao-2")
	g.Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryReplaceOthers), "restarted in place, it leads")
}
