package adminops

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// baokeeper.dev/restart is accepted once per value (its token goes to status.restart,
// and so onto the pod template), queued behind an operation in progress, and refused
// while break-glass is active, with nothing changed.
func TestRestartRequest(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name, reason string
		status       baov1.OpenBaoClusterStatus
		wantToken    string
		wantEvent    string
	}{
		{name: "accepted", reason: "at rest, the restart starts with the next rollout",
			wantToken: "t1", wantEvent: "Normal RestartRequested Restarting every member (baokeeper.dev/restart=t1): one at a time, followers first, the leader last"},
		{name: "queued behind an upgrade", reason: "the template changes now; the rollout restarts what the upgrade did not replace once it ends",
			status:    baov1.OpenBaoClusterStatus{OperationLock: &baov1.OperationLock{Operation: "RollingUpgrade", Message: "rolling upgrade from 2.4.0 to 2.4.1"}},
			wantToken: "t1", wantEvent: "queued after the operation in progress (RollingUpgrade: rolling upgrade from 2.4.0 to 2.4.1)"},
		{name: "refused during break-glass", reason: "invariant 7: nothing of the cluster changes until a person acknowledged",
			status:    baov1.OpenBaoClusterStatus{BreakGlass: &baov1.BreakGlassStatus{Active: true, Reason: "QuorumLost"}},
			wantEvent: "Warning RequestRefused baokeeper.dev/restart=t1 refused: break-glass is active (QuorumLost)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Recorder: rec}
			c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns",
				Annotations: map[string]string{baov1.AnnotationRestart: "t1"}}, Status: tc.status}
			r.handleRequests(c, &operation.Cluster{Now: at})
			g.Expect(c.Status.Requests.Restart).To(Equal("t1"), "handled once, whatever the answer")
			if tc.wantToken == "" {
				g.Expect(c.Status.Restart).To(BeNil(), tc.reason)
			} else {
				g.Expect(c.Status.Restart).NotTo(BeNil(), tc.reason)
				g.Expect(c.Status.Restart.Token).To(Equal(tc.wantToken), tc.reason)
			}
			g.Expect(rec.Events).To(Receive(ContainSubstring(tc.wantEvent)), tc.reason)

			By := "the same value again does nothing"
			r.handleRequests(c, &operation.Cluster{Now: at.Add(time.Minute)})
			g.Expect(rec.Events).NotTo(Receive(), By)
		})
	}
}
