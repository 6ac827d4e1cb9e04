// Package offline is the Offline upgrade strategy: every member stops at once and
// starts again on the target version on its own volume.
//
// It exists for the version pairs that cannot run side by side (the
// VersionCompatibility precheck: a member before 2.6 and one on 2.6.0-2.6.2 cannot
// forward requests to each other). A rolling or blue-green upgrade always runs
// both versions at once; this one never does. Raft keeps every acknowledged write:
// a write was acknowledged only once a majority of voters held it on their
// volumes, and the target starts from those volumes. The price is a window in
// which no member answers, recorded in status.upgrade.offline and in the
// completion event. docs/design/restore.md says why this, and not a
// snapshot-and-restore migration, is the way across a boundary.
//
// The steps, each persisted before it is taken:
//
//  1. The pod template is set to the target image (OnDelete: nothing restarts).
//  2. Once every member is a Ready, healthy voter and the StatefulSet controller
//     has seen the template: status.upgrade.offline.stoppedAt, the leader and its
//     committed index are recorded.
//  3. Every member's pod not on the target is deleted, together and directly (no
//     eviction: no PodDisruptionBudget admits a full stop). OpenBao shuts down
//     gracefully; the StatefulSet controller starts the members again on the
//     target, in order.
//  4. The first pass that sees a leader on the target records servingAt (the
//     window is servingAt minus stoppedAt). The upgrade completes once every
//     member runs the target, Ready and a healthy voter, and the leader's
//     committed index is at least the one recorded in step 2.
//
// The quorum watch that turns a loss of quorum into break-glass does not apply
// between steps 3 and 4: the outage is the plan. spec.upgrade.rolling.stepTimeout
// bounds it; past it the upgrade fails and says what to do.
package offline

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/fleet"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Poll is how often an offline upgrade looks again while members start.
const Poll = 2 * time.Second

// Operation is an offline upgrade whose snapshot (if any) is taken.
type Operation struct{}

// Name implements operation.Operation.
func (Operation) Name() string { return "OfflineUpgrade" }

// Stopping reports whether the upgrade in st stopped its members and has not seen
// a leader on the target since: the quorum watch must not count that outage.
func Stopping(st *baov1.OpenBaoClusterStatus) bool {
	up := st.Upgrade
	return up != nil && up.Strategy == baov1.OfflineStrategy && up.Offline != nil && up.Offline.StoppedAt != nil && up.Failure == nil
}

// Decide implements operation.Operation.
func (Operation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	up := st.Upgrade
	cl := s.Cluster
	plan := func(a operation.Action) operation.Plan {
		up.WaitingFor = a.WaitingFor
		up.Progress = progress(up, cl)
		p := upgrade.PlanOf(st, a, s.Now, nil)
		if a.Kind == operation.KindApply && a.Object == operation.ObjectPodTemplate {
			p.Image = up.TargetImage
		}
		return p
	}
	wait := func(what string) operation.Plan {
		return plan(operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: what})
	}
	if up.Failure != nil {
		return plan(operation.Action{Kind: operation.KindWait,
			WaitingFor: fmt.Sprintf("upgrade failed (%s): fix the cause, then set the %s annotation to a new value", up.Failure.Reason, baov1.AnnotationRetry)})
	}
	templateImage := ""
	if s.StatefulSet != nil {
		templateImage = workload.ContainerImage(&s.StatefulSet.Spec.Template.Spec)
	}
	off := up.Offline
	if off == nil || off.StoppedAt == nil {
		if templateImage != up.TargetImage {
			return plan(operation.Action{Kind: operation.KindApply, Object: operation.ObjectPodTemplate, Image: up.TargetImage,
				WaitingFor: "setting the pod template to " + up.TargetImage + " (nothing restarts until the stop)",
				Event:      fmt.Sprintf("Pod template set to %s; every member stops together next", up.TargetImage)})
		}
		if why := notReadyToStop(cl); why != "" {
			return wait("waiting to stop every member: " + why)
		}
		if why := fleet.Hold(s, up); why != "" {
			return plan(operation.Action{Kind: operation.KindHold, WaitingFor: why + ", before every member stops"})
		}
		t := metav1.NewTime(s.Now)
		up.Offline = &baov1.OfflineUpgradeStatus{StoppedAt: &t, LeaderBefore: cl.Leader, CommittedIndex: int64(committed(cl))}
		return plan(operation.Action{Kind: operation.KindPersist, RequeueAfter: time.Millisecond,
			WaitingFor: fmt.Sprintf("stopping every member at once (leader %s, committed index %d): no member answers until they run %s", cl.Leader, committed(cl), up.TargetVersion),
			Event: fmt.Sprintf("Stopping every member of %s at once to start them on %s (offline upgrade from %s): the cluster answers no request until a leader on %s is elected",
				c.Name, up.TargetVersion, up.FromVersion, up.TargetVersion)})
	}
	if stale := stalePods(cl, up.TargetImage); len(stale) > 0 {
		return plan(operation.Action{Kind: operation.KindDelete, Object: operation.ObjectPods, Members: stale, RequeueAfter: Poll,
			WaitingFor: fmt.Sprintf("deleting %v so that every member starts on %s", stale, up.TargetImage)})
	}
	if off.ServingAt == nil && cl.Leader != "" {
		if l := cl.Member(cl.Leader); l != nil && l.Responsive() && upgrade.SameVersion(l.Version, up.TargetVersion) {
			t := metav1.NewTime(s.Now)
			off.ServingAt = &t
			return plan(operation.Action{Kind: operation.KindPersist,
				WaitingFor: fmt.Sprintf("%s leads on %s after %s; waiting for every member", cl.Leader, up.TargetVersion, off.Window()),
				Event:      fmt.Sprintf("%s leads on %s: the cluster answered no request for %s", cl.Leader, up.TargetVersion, off.Window())})
		}
	}
	if why := notDone(cl, up, off); why != "" {
		if timeout := c.GetStepTimeout(); timeout > 0 && s.Now.Sub(off.StoppedAt.Time) > timeout {
			return plan(operation.Action{Kind: operation.KindFail, Reason: baov1.FailureStepTimeout,
				Message: fmt.Sprintf("the members did not all come back on %s within %s (spec.upgrade.rolling.stepTimeout) after the stop: waiting for %s. "+
					"Fix what keeps them from starting (kubectl bao status %s -n %s, the members' logs), then kubectl bao retry %s -n %s; "+
					"if %s cannot run this data, the way back is the pre-upgrade snapshot, restored into a new cluster at %s: %s",
					up.TargetVersion, timeout, why, c.Name, c.Namespace, c.Name, c.Namespace, up.TargetVersion, up.FromVersion, upgrade.RestoreCommand(c.Name, c.Namespace, up.FromVersion))})
		}
		return wait(why)
	}
	return plan(operation.Action{Kind: operation.KindComplete, WaitingFor: "every member runs " + up.TargetVersion,
		Event: fmt.Sprintf("Every member runs %s (from %s, offline): no member answered for %s; the leader's committed index is %d (%d before the stop)",
			up.TargetVersion, up.FromVersion, orUnknown(off.Window()), committed(cl), off.CommittedIndex)})
}

// notReadyToStop says why the members cannot be stopped yet, or "": every member
// must be a Ready, healthy voter with a known leader, so that the volumes the
// target starts from hold every acknowledged write and a majority of them can
// elect a leader again; the StatefulSet controller must have seen the template,
// so that deleted pods come back on the target.
func notReadyToStop(cl *operation.Cluster) string {
	switch {
	case !cl.AutopilotKnown || cl.Leader == "":
		return "a trustworthy read of autopilot state with a leader"
	case !cl.AutopilotHealthy:
		return "autopilot reports the cluster unhealthy"
	case !cl.StatefulSetCurrent():
		return "the StatefulSet controller to see the new pod template"
	}
	for _, m := range cl.Members {
		if !m.PodReady || !m.Voter || !m.Healthy {
			return fmt.Sprintf("%s to be a Ready, healthy voter", m.Name)
		}
	}
	if len(cl.Members) == 0 {
		return "the members"
	}
	return ""
}

// stalePods are the members whose pod exists, is not terminating and runs an
// image other than the target.
func stalePods(cl *operation.Cluster, image string) []string {
	var out []string
	for _, m := range cl.Members {
		if m.PodExists && !m.PodTerminating && m.Image != image {
			out = append(out, m.Name)
		}
	}
	return out
}

// notDone says what the upgrade waits for after the stop, or "".
func notDone(cl *operation.Cluster, up *baov1.UpgradeStatus, off *baov1.OfflineUpgradeStatus) string {
	for _, m := range cl.Members {
		switch {
		case !cl.OnTarget(&m, up.TargetImage) || !m.PodReady:
			return fmt.Sprintf("%s to start on %s and be Ready", m.Name, up.TargetImage)
		case !upgrade.SameVersion(m.Version, up.TargetVersion):
			return fmt.Sprintf("%s to report %s", m.Name, up.TargetVersion)
		}
	}
	switch {
	case !cl.AutopilotKnown || cl.Leader == "":
		return "a leader on " + up.TargetVersion
	case !cl.AutopilotHealthy:
		return "every member to be a healthy voter (autopilot reports the cluster unhealthy)"
	case committed(cl) < uint64(off.CommittedIndex):
		return fmt.Sprintf("the leader's committed index (%d) to reach %d, where it was before the stop", committed(cl), off.CommittedIndex)
	}
	for _, m := range cl.Members {
		if !m.Voter || !m.Healthy {
			return fmt.Sprintf("%s to be a healthy voter", m.Name)
		}
	}
	return ""
}

// committed is the leader's committed Raft index as it answered, or its last index
// by autopilot when that answer is missing.
func committed(cl *operation.Cluster) uint64 {
	if cl.LeaderCommitted > 0 {
		return cl.LeaderCommitted
	}
	return cl.LeaderIndex
}

// progress counts the members on the target.
func progress(up *baov1.UpgradeStatus, cl *operation.Cluster) *baov1.UpgradeProgress {
	p := &baov1.UpgradeProgress{Stage: "Prepare", Total: int32(len(cl.Members))}
	if up.Offline != nil && up.Offline.StoppedAt != nil {
		p.Stage = "Stopped"
		if up.Offline.ServingAt != nil {
			p.Stage = "Serving"
		}
	}
	for _, m := range cl.Members {
		if cl.OnTarget(&m, up.TargetImage) && m.PodReady && upgrade.SameVersion(m.Version, up.TargetVersion) {
			p.Completed++
		}
	}
	return p
}

func orUnknown(s string) string {
	if s == "" {
		return "an unmeasured time"
	}
	return s
}
