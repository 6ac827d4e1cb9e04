package kubectlbao

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestWaitVerdict(t *testing.T) {
	running := func(mutate func(c *baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
		c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "vault", Name: "bao", Generation: 2},
			Spec: baov1.OpenBaoClusterSpec{Version: "2.4.1"},
			Status: baov1.OpenBaoClusterStatus{CurrentVersion: "2.4.1", Phase: baov1.PhaseRunning, ObservedGeneration: 2,
				Message: "3 of 3 members Ready, running 2.4.1"}}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	cases := []struct {
		name     string
		c        *baov1.OpenBaoCluster
		done     bool
		failed   string
		progress string
	}{
		{name: "settled", c: running(nil), done: true},
		{name: "upgrading", c: running(func(c *baov1.OpenBaoCluster) {
			c.Status.CurrentVersion = "2.4.0"
			c.Status.Upgrade = &baov1.UpgradeStatus{TargetVersion: "2.4.1"}
			c.Status.Message = "upgrading 2.4.0 to 2.4.1 (1 of 3 members done): replacing bao-1"
		}), progress: "upgrading 2.4.0 to 2.4.1 (1 of 3 members done): replacing bao-1"},
		{name: "not planned yet", c: running(func(c *baov1.OpenBaoCluster) { c.Status.CurrentVersion = "2.4.0" }), progress: "runs 2.4.0, spec.version is 2.4.1"},
		{name: "a rollout in progress", c: running(func(c *baov1.OpenBaoCluster) {
			c.Status.Upgrade = &baov1.UpgradeStatus{Kind: baov1.OperationRollout}
		}), progress: "3 of 3 members Ready"},
		{name: "the spec not observed yet", c: running(func(c *baov1.OpenBaoCluster) { c.Generation = 3 }), progress: "has not observed the latest spec"},
		{name: "failed", c: running(func(c *baov1.OpenBaoCluster) {
			c.Status.Upgrade = &baov1.UpgradeStatus{TargetVersion: "2.4.1", Failure: &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout, Message: "bao-1 did not become Ready"}}
		}), failed: "the upgrade to 2.4.1 failed (StepTimeout): bao-1 did not become Ready; fix the cause, then kubectl bao retry bao -n vault"},
		{name: "rolled back", c: running(func(c *baov1.OpenBaoCluster) {
			c.Status.CurrentVersion = "2.4.0"
			c.Status.LastRollback = &baov1.RollbackRecord{TargetVersion: "2.4.1", Reason: "the validation hook failed"}
		}), failed: "the upgrade to 2.4.1 was rolled back (the validation hook failed); it runs 2.4.0"},
		{name: "break-glass", c: running(func(c *baov1.OpenBaoCluster) {
			c.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost, Message: "2 of 3 voters lost"}
		}), failed: "break-glass (QuorumLost): 2 of 3 voters lost"},
		{name: "a refused spec", c: running(func(c *baov1.OpenBaoCluster) {
			c.Status.Conditions = []metav1.Condition{{Type: string(baov1.ConditionSpecValid), Status: metav1.ConditionFalse, Reason: "DowngradeRefused",
				Message: "2.4.1 is older than the running version 2.5.0", ObservedGeneration: 2}}
		}), failed: "the spec is refused (DowngradeRefused)"},
		{name: "a scaling failed", c: running(func(c *baov1.OpenBaoCluster) {
			c.Status.Scaling = &baov1.ScalingStatus{TargetReplicas: 5, Failure: &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout}}
		}), failed: "the scaling to 5 members failed (StepTimeout)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			done, progress, err := WaitVerdict(tc.c)
			if tc.failed != "" {
				g.Expect(errors.Is(err, ErrOperationFailed)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tc.failed))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(done).To(Equal(tc.done))
			g.Expect(progress).To(ContainSubstring(tc.progress))
		})
	}
}
