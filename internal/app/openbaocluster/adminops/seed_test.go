package adminops

import (
	"time"

	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

func members(versions ...string) []operation.Member {
	var out []operation.Member
	for i, v := range versions {
		out = append(out, operation.Member{Name: "bao-" + string(rune('0'+i)), Ordinal: i, PodExists: true, PodReady: v != "", Version: v})
	}
	return out
}

func TestSeedCurrentVersion(t *testing.T) {
	cases := []struct {
		name    string
		reason  string
		current string
		upgrade *baov1.UpgradeStatus
		members []operation.Member
		// bootstrap: the cluster starts from a snapshot, with one member.
		bootstrap bool
		want      string
	}{
		{name: "all agree", reason: "every member Ready on one version seeds it", members: members("2.4.0", "2.4.0", "2.4.0"), want: "2.4.0"},
		{name: "one not ready", reason: "a member that is not Ready has not reported yet", members: members("2.4.0", "", "2.4.0")},
		{name: "disagree", reason: "mixed versions mean an unfinished change: seed nothing", members: members("2.4.0", "2.4.1", "2.4.0")},
		{name: "too few members", reason: "a missing member might run something else", members: members("2.4.0", "2.4.0")},
		{name: "already set", reason: "only a completed upgrade changes a seeded version", current: "2.4.0", members: members("2.4.1", "2.4.1", "2.4.1"), want: "2.4.0"},
		{name: "upgrade running", reason: "during an upgrade the version is the upgrade's to set", upgrade: &baov1.UpgradeStatus{}, members: members("2.4.1", "2.4.1", "2.4.1")},
		{name: "leading v", reason: "v2.4.0 and 2.4.0 are the same version", members: members("2.4.0", "v2.4.0", "2.4.0"), want: "2.4.0"},
		{name: "from a snapshot", reason: "a cluster that starts from a snapshot starts with one member, of the 3 observed (found on the rig: it never grew)",
			bootstrap: true, members: members("2.4.0", "", ""), want: "2.4.0"},
		{name: "from a snapshot, not ready", reason: "its one member has not reported yet", bootstrap: true, members: members("", "", "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao"}, Status: baov1.OpenBaoClusterStatus{CurrentVersion: tc.current, Upgrade: tc.upgrade}}
			if tc.bootstrap {
				c.Spec.Bootstrap = &baov1.BootstrapSpec{}
			}
			seedCurrentVersion(c, &operation.Cluster{Members: tc.members})
			g.Expect(c.Status.CurrentVersion).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestRetryRestartsTheStepClock(t *testing.T) {
	g := NewWithT(t)
	started := metav1.NewTime(time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC))
	now := started.Add(10 * time.Minute)
	up := &baov1.UpgradeStatus{
		Failure:     &baov1.UpgradeFailure{Reason: "StepTimeout", Pod: "bao-2"},
		CurrentStep: &baov1.UpgradeStep{Action: "ReplaceMember", Pod: "bao-2", StartedAt: &started, GatesPassedAt: &started, Attempts: 3},
	}
	upgrade.Retry(up, now)
	g.Expect(up.Failure).To(BeNil())
	g.Expect(up.CurrentStep.StartedAt.Time).To(Equal(now), "otherwise the step times out again at once")
	g.Expect(up.CurrentStep.GatesPassedAt).To(BeNil(), "the member is gated again from observed state")
	g.Expect(up.CurrentStep.Attempts).To(BeEquivalentTo(3), "attempts keep counting: Job names carry them, and a finished Job keeps its name")
	g.Expect(operation.AttemptsExhausted(up.CurrentStep)).To(BeFalse(), "a step with executor Jobs gets a fresh budget")
	g.Expect(up.CurrentStep.MaxAttempts).To(BeEquivalentTo(6))
	g.Expect(up.CurrentStep.Pod).To(Equal("bao-2"), "the retry continues with the same member")
}
