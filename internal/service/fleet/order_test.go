package fleet

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func dur(s string) *baov1.Duration { d := baov1.Duration(s); return &d }

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }

// peer is a cluster that runs version, Available since availableFor ago.
func peer(ns, name, version string, availableFor time.Duration, after ...baov1.UpgradeOrder) baov1.OpenBaoCluster {
	c := baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	c.Spec.Version = version
	c.Spec.Upgrade.After = after
	c.Status.CurrentVersion = version
	c.Status.Conditions = []metav1.Condition{{Type: string(baov1.ConditionAvailable), Status: metav1.ConditionTrue,
		LastTransitionTime: *at(-availableFor), Message: "3 of 3 members serve"}}
	return c
}

func prod(after ...baov1.UpgradeOrder) *baov1.OpenBaoCluster {
	c := peer("prod", "bao", "2.4.0", 1000*time.Hour, after...)
	c.Spec.Version = "2.4.1"
	return &c
}

func TestOrderPrecheck(t *testing.T) {
	staging := baov1.UpgradeOrder{Name: "bao", Namespace: "staging", Soak: dur("1h")}
	withHistory := func(c baov1.OpenBaoCluster, endedAgo time.Duration) baov1.OpenBaoCluster {
		c.Status.History = []baov1.HistoryEntry{
			{Kind: baov1.HistoryRollout, Outcome: baov1.OutcomeSucceeded, TargetVersion: c.Status.CurrentVersion, EndedAt: at(-time.Minute)},
			{Kind: baov1.HistoryVersion, Outcome: baov1.OutcomeSucceeded, FromVersion: "2.4.0", TargetVersion: c.Status.CurrentVersion, EndedAt: at(-endedAgo)},
		}
		return c
	}
	cases := []struct {
		name     string
		c        *baov1.OpenBaoCluster
		fleet    operation.Fleet
		want     baov1.PrecheckResult
		contains []string
		wake     time.Duration
		// maxLen bounds the message when set.
		maxLen int
	}{
		{name: "soaked: passes", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{withHistory(peer("staging", "bao", "2.4.1", 100*time.Hour), 2*time.Hour)}},
			want:  baov1.PrecheckPassed, contains: []string{"staging/bao has run 2.4.1 healthily for 2h0m0s (soak 1h0m0s)"}},
		{name: "a later version counts", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{peer("staging", "bao", "2.5.0", 100*time.Hour)}},
			want:  baov1.PrecheckPassed},
		{name: "soaking: pending until the soak ends, and wakes then", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{withHistory(peer("staging", "bao", "2.4.1", 100*time.Hour), 20*time.Minute)}},
			want:  baov1.PrecheckPending, wake: maxWake,
			contains: []string{"waits for staging/bao to soak on 2.4.1: healthy for 20m0s of 1h0m0s, until 2026-12-06T12:40:00Z"}},
		{name: "a short soak left wakes at its end", c: prod(baov1.UpgradeOrder{Name: "bao", Namespace: "staging", Soak: dur("10m")}),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{withHistory(peer("staging", "bao", "2.4.1", 100*time.Hour), 8*time.Minute)}},
			want:  baov1.PrecheckPending, wake: 2 * time.Minute},
		{name: "Available again only lately: the soak counts from then", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{withHistory(peer("staging", "bao", "2.4.1", 5*time.Minute), 3*time.Hour)}},
			want:  baov1.PrecheckPending, contains: []string{"healthy for 5m0s of 1h0m0s"}},
		{name: "no soak: passes at once", c: prod(baov1.UpgradeOrder{Name: "bao", Namespace: "staging"}),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{withHistory(peer("staging", "bao", "2.4.1", 100*time.Hour), 0)}},
			want:  baov1.PrecheckPassed},
		{name: "still on the old version", c: prod(staging),
			fleet:    operation.Fleet{Clusters: []baov1.OpenBaoCluster{peer("staging", "bao", "2.4.0", 100*time.Hour)}},
			want:     baov1.PrecheckPending,
			contains: []string{"waits for staging/bao to run 2.4.1 (it runs 2.4.0; its spec.version is 2.4.0)"}},
		{name: "upgrading", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{func() baov1.OpenBaoCluster {
				p := peer("staging", "bao", "2.4.0", 100*time.Hour)
				p.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", WaitingFor: "replacing bao-1"}
				return p
			}()}},
			want: baov1.PrecheckPending, contains: []string{"staging/bao, upgrading from 2.4.0 to 2.4.1 (details are in its own namespace)"}},
		{name: "on the version, with a rollout running", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{func() baov1.OpenBaoCluster {
				p := peer("staging", "bao", "2.4.1", 100*time.Hour)
				p.Status.Upgrade = &baov1.UpgradeStatus{Kind: baov1.OperationRollout, FromVersion: "2.4.1", TargetVersion: "2.4.1"}
				return p
			}()}},
			want: baov1.PrecheckPending, contains: []string{"staging/bao to finish its rollout"}},
		{name: "not Available", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{func() baov1.OpenBaoCluster {
				p := peer("staging", "bao", "2.4.1", 100*time.Hour)
				p.Status.Conditions[0].Status, p.Status.Conditions[0].Message = metav1.ConditionFalse, "1 of 3 members are Ready"
				return p
			}()}},
			want: baov1.PrecheckPending, contains: []string{"staging/bao to be Available (details are in its own namespace)"}},
		{name: "its upgrade failed: holds, with the reason", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{func() baov1.OpenBaoCluster {
				p := peer("staging", "bao", "2.4.0", 100*time.Hour)
				p.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1",
					Failure: &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout, Message: "bao-1 did not become Ready within 10m"}}
				return p
			}()}},
			want: baov1.PrecheckFailed, contains: []string{"staging/bao's upgrade to 2.4.1 failed (StepTimeout: details are in its own namespace)"}},
		{name: "it rolled back: holds", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{func() baov1.OpenBaoCluster {
				p := peer("staging", "bao", "2.4.0", 100*time.Hour)
				p.Spec.Version = "2.4.1"
				p.Status.LastRollback = &baov1.RollbackRecord{FromVersion: "2.4.0", TargetVersion: "2.4.1", Reason: "the validation hook failed"}
				return p
			}()}},
			want: baov1.PrecheckFailed, contains: []string{"staging/bao rolled back its upgrade to 2.4.1 (details are in its own namespace)"}},
		{name: "break-glass: holds", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{func() baov1.OpenBaoCluster {
				p := peer("staging", "bao", "2.4.1", 100*time.Hour)
				p.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost}
				return p
			}()}},
			want: baov1.PrecheckFailed, contains: []string{"staging/bao is in break-glass (QuorumLost)"}},
		{name: "the same namespace: its messages are quoted", c: prod(baov1.UpgradeOrder{Name: "canary"}),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{func() baov1.OpenBaoCluster {
				p := peer("prod", "canary", "2.4.0", 100*time.Hour)
				p.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1",
					Failure: &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout, Message: "bao-1 did not become Ready within 10m"}}
				return p
			}()}},
			want: baov1.PrecheckFailed, contains: []string{"prod/canary's upgrade to 2.4.1 failed (StepTimeout: bao-1 did not become Ready within 10m)"}},
		{name: "the same namespace: a long waitingFor is cut, so chained orders do not nest it", c: prod(baov1.UpgradeOrder{Name: "canary"}),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{func() baov1.OpenBaoCluster {
				p := peer("prod", "canary", "2.4.0", 100*time.Hour)
				p.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", WaitingFor: "waits for " + strings.Repeat("x", 5000)}
				return p
			}()}},
			want: baov1.PrecheckPending, contains: []string{"prod/canary, upgrading from 2.4.0 to 2.4.1 (waits for xxx", "xxx...)"}, maxLen: 300},
		{name: "a cluster named twice counts once", c: prod(staging, staging, baov1.UpgradeOrder{Name: "bao", Namespace: "staging"}),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{peer("staging", "bao", "2.4.0", 100*time.Hour)}},
			want:  baov1.PrecheckPending, contains: []string{"waits for staging/bao to run 2.4.1 (it runs 2.4.0; its spec.version is 2.4.0)"}, maxLen: 90},
		{name: "a name that does not exist", c: prod(baov1.UpgradeOrder{Name: "nope"}),
			want: baov1.PrecheckFailed, contains: []string{"spec.upgrade.after names prod/nope, which does not exist: create it, or remove it from spec.upgrade.after"}},
		{name: "a namespace the operator does not watch", c: prod(staging),
			fleet: operation.Fleet{Watched: []string{"prod"}, Clusters: []baov1.OpenBaoCluster{peer("staging", "bao", "2.4.1", 100*time.Hour)}},
			want:  baov1.PrecheckFailed, contains: []string{"which baokeeper cannot read", "watches only the namespaces prod", "add staging to its watched namespaces"}},
		{name: "a cycle through two clusters", c: prod(staging),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{peer("staging", "bao", "2.4.1", 100*time.Hour, baov1.UpgradeOrder{Name: "bao", Namespace: "prod"})}},
			want:  baov1.PrecheckFailed, contains: []string{"spec.upgrade.after forms a cycle (prod/bao → staging/bao → prod/bao)"}},
		{name: "itself, by namespace", c: prod(baov1.UpgradeOrder{Name: "bao", Namespace: "prod"}),
			want: baov1.PrecheckFailed, contains: []string{"cycle (prod/bao → prod/bao)"}},
		{name: "the first that waits is said, all that wait are said", c: prod(staging, baov1.UpgradeOrder{Name: "dev", Namespace: "dev"}),
			fleet: operation.Fleet{Clusters: []baov1.OpenBaoCluster{peer("staging", "bao", "2.4.0", 100*time.Hour), peer("dev", "dev", "2.4.0", time.Hour)}},
			want:  baov1.PrecheckPending, contains: []string{"waits for staging/bao to run 2.4.1", "; and for dev/dev to run 2.4.1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pc, wake, ok := OrderPrecheck(tc.c, "2.4.1", tc.fleet, now)
			g.Expect(ok).To(BeTrue())
			g.Expect(pc.Name).To(Equal(PrecheckOrder))
			g.Expect(pc.Result).To(Equal(tc.want), pc.Message)
			for _, s := range tc.contains {
				g.Expect(pc.Message).To(ContainSubstring(s))
			}
			if tc.wake > 0 {
				g.Expect(wake).To(Equal(tc.wake))
			}
			if tc.maxLen > 0 {
				g.Expect(len(pc.Message)).To(BeNumerically("<=", tc.maxLen), pc.Message)
			}
			if tc.want == baov1.PrecheckPending {
				g.Expect(wake).To(BeNumerically(">", 0), "a pending order looks again")
			}
		})
	}
	t.Run("no order: no precheck", func(t *testing.T) {
		_, _, ok := OrderPrecheck(prod(), "2.4.1", operation.Fleet{}, now)
		NewWithT(t).Expect(ok).To(BeFalse())
	})
}

func TestCycle(t *testing.T) {
	g := NewWithT(t)
	dev := peer("dev", "bao", "2.4.0", time.Hour)
	staging := peer("staging", "bao", "2.4.0", time.Hour, baov1.UpgradeOrder{Name: "bao", Namespace: "dev"})
	c := prod(baov1.UpgradeOrder{Name: "bao", Namespace: "staging"})
	f := operation.Fleet{Clusters: []baov1.OpenBaoCluster{dev, staging, *c}}
	g.Expect(Cycle(c, f)).To(BeNil(), "a chain is no cycle")

	// dev after prod closes it: each of the three sees the cycle from itself.
	f.Clusters[0].Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "bao", Namespace: "prod"}}
	g.Expect(Cycle(c, f)).To(Equal([]string{"prod/bao", "staging/bao", "dev/bao", "prod/bao"}))
	g.Expect(Cycle(&f.Clusters[0], f)).To(Equal([]string{"dev/bao", "prod/bao", "staging/bao", "dev/bao"}))

	// A cycle downstream that does not pass through c is its members' to report.
	f.Clusters[0].Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "bao", Namespace: "staging"}}
	g.Expect(Cycle(c, f)).To(BeNil())
}
