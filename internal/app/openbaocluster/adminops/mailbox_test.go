package adminops

import (
	"testing"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestTendDecision(t *testing.T) {
	tests := []struct {
		name   string
		cur    servingExecutor
		exists bool
		want   tend
	}{
		{"no executor for an operation with a pending request: start one", servingExecutor{}, false, tendCreate},
		{"it runs: keep it", servingExecutor{phase: operation.JobRunning}, true, tendKeep},
		{"it exited when idle: delete it, the next pass starts it again", servingExecutor{phase: operation.JobSucceeded}, true, tendDelete},
		{"it ran out of restarts: delete it", servingExecutor{phase: operation.JobFailed}, true, tendDelete},
		{"a finished one already being deleted: wait for it to go", servingExecutor{phase: operation.JobSucceeded, deleting: true}, true, tendKeep},
		{"one of an earlier baokeeper that cannot sign: replace it", servingExecutor{phase: operation.JobRunning, unsigned: true}, true, tendDelete},
		{"one of an earlier baokeeper being deleted: wait for it to go", servingExecutor{phase: operation.JobRunning, unsigned: true, deleting: true}, true, tendKeep},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tendDecision(tc.cur, tc.exists); got != tc.want {
				t.Errorf("tendDecision = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPrestartFor(t *testing.T) {
	cluster := func(auto bool, phase baov1.BlueGreenPhase, id string) *baov1.OpenBaoCluster {
		c := &baov1.OpenBaoCluster{}
		c.Spec.Upgrade.BlueGreen.AutoPromote = auto
		if id != "" {
			c.Status.Upgrade = &baov1.UpgradeStatus{ID: id}
		}
		if phase != "" {
			c.Status.BlueGreen = &baov1.BlueGreenStatus{Phase: phase}
		}
		return c
	}
	tests := []struct {
		name string
		c    *baov1.OpenBaoCluster
		want string
	}{
		{"green deploys and promotes on its own: start the executor now", cluster(true, baov1.BlueGreenDeployGreen, "u1"), "u1"},
		{"green syncs", cluster(true, baov1.BlueGreenSync, "u1"), "u1"},
		{"green is validated", cluster(true, baov1.BlueGreenValidate, "u1"), "u1"},
		{"a person promotes: nothing to start until they do", cluster(false, baov1.BlueGreenDeployGreen, "u1"), ""},
		{"promotions run: the requests keep it", cluster(true, baov1.BlueGreenPromoteGreen, "u1"), ""},
		{"waiting for a person", cluster(true, baov1.BlueGreenAwaitPromotion, "u1"), ""},
		{"a rolling upgrade", cluster(true, "", "u1"), ""},
		{"no upgrade", cluster(true, baov1.BlueGreenDeployGreen, ""), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := prestartFor(tc.c); got != tc.want {
				t.Errorf("prestartFor = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestServedOperations(t *testing.T) {
	withUpgrade := func(c *baov1.OpenBaoCluster) { c.Status.Upgrade = &baov1.UpgradeStatus{ID: "up1"} }
	req := func(op string) executorjob.Request { return executorjob.Request{Operation: op} }
	tests := []struct {
		name string
		c    func(*baov1.OpenBaoCluster)
		m    executorjob.Mailbox
		want []string
	}{
		{"an idle cluster serves nothing", nil, executorjob.Mailbox{}, nil},
		{"a pending request of the status's operation", withUpgrade,
			executorjob.Mailbox{Requests: map[string]executorjob.Request{"a": req("up1")}}, []string{"up1"}},
		{"an answered request needs no executor", withUpgrade,
			executorjob.Mailbox{Requests: map[string]executorjob.Request{"a": req("up1")}, Results: map[string]executorjob.Result{"a": {}}}, nil},
		{"an operation only the mailbox names gets none (issue 38)", withUpgrade,
			executorjob.Mailbox{Requests: map[string]executorjob.Request{"a": req("zz1"), "b": req("up1")}}, []string{"up1"}},
		{"without an operation in status, none at all", nil,
			executorjob.Mailbox{Requests: map[string]executorjob.Request{"a": req("zz1")}}, nil},
		{"a blue-green upgrade that promotes on its own starts its executor early", func(c *baov1.OpenBaoCluster) {
			withUpgrade(c)
			c.Spec.Upgrade.BlueGreen.AutoPromote = true
			c.Status.BlueGreen = &baov1.BlueGreenStatus{Phase: baov1.BlueGreenSync}
		}, executorjob.Mailbox{}, []string{"up1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &baov1.OpenBaoCluster{}
			if tc.c != nil {
				tc.c(c)
			}
			NewWithT(t).Expect(servedOperations(c, tc.m)).To(Equal(tc.want))
		})
	}
}
