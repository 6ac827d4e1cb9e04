// Package control holds the one set of rules for the manual controls of a cluster
// (baokeeper.dev/promote, rollback, retry, restart, snapshot, restore and
// break-glass-ack): whether
// the operator acts on a new value in the cluster's current state, and in whose
// words it refuses one. The operator (adminops) acts on what Judge accepts and
// announces its refusals; kubectl bao writes only what Judge accepts and prints
// the same refusals. One agreement test runs both over the same table, so the two
// cannot drift apart again. Pure: no I/O, no clock.
package control

import (
	"fmt"
	"strings"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/breakglass"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/quorum"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
)

// Retry says what a retry that is accepted retries.
type Retry string

// What a retry acts on.
const (
	// RetryRollback lets a rolled-back target be planned again.
	RetryRollback Retry = "Rollback"
	// RetryUpgrade clears a failed upgrade's failure.
	RetryUpgrade Retry = "Upgrade"
	// RetryScaling clears a failed scaling's failure.
	RetryScaling Retry = "Scaling"
	// RetryRehearsal drops a failed rehearsal: the upgrade is rehearsed again.
	RetryRehearsal Retry = "Rehearsal"
)

// Event reasons of refusals.
const (
	// EventRequestRefused is the refusal of a request that does not fit the state.
	EventRequestRefused baov1.Reason = "RequestRefused"
	// EventRollbackRefused is the refusal of a rollback.
	EventRollbackRefused baov1.Reason = "RollbackRefused"
	// EventBreakGlassAckRefused is the refusal of a break-glass acknowledgement.
	EventBreakGlassAckRefused baov1.Reason = "BreakGlassAckRefused"
)

// Verdict is the operator's answer to a new control value.
type Verdict struct {
	// Accept is true when the operator acts on the value.
	Accept bool
	// Why says, when it does not, why: the operator's own words, without the name
	// and value of the annotation.
	Why string
	// Event is the refusal as the operator announces it (Warning), with the
	// annotation, the value, and "nothing was done" where it applies.
	Event baov1.Reason
	// Message is that event's text.
	Message string
	// Retry is what an accepted retry acts on.
	Retry Retry
	// PastPointOfNoReturn is true for a rollback refused because green has led.
	PastPointOfNoReturn bool
}

// Judge decides a new value of a control over the cluster as observed (obs is what
// a blue-green rollback needs of the Raft view; the plugin passes what status
// reports).
func Judge(kind upgrade.RequestKind, value string, c *baov1.OpenBaoCluster, obs *operation.Cluster) Verdict {
	req := upgrade.Request{Kind: kind, Value: value}
	prefix := fmt.Sprintf("Ignoring %s=%s: ", kind, value)
	refused := func() Verdict {
		msg := upgrade.RequestRefusal(req, c)
		return Verdict{Event: EventRequestRefused, Message: msg, Why: msg[len(prefix):]}
	}
	st := &c.Status
	switch kind {
	case upgrade.RequestPromote:
		if bluegreen.AcceptsPromote(st.BlueGreen) {
			return Verdict{Accept: true}
		}
		return refused()
	case upgrade.RequestRollback:
		return judgeRollback(c, obs, value, refused)
	case upgrade.RequestBreakGlassAck:
		if ok, why := breakglass.Acknowledge(st.BreakGlass, value); !ok {
			return Verdict{Event: EventBreakGlassAckRefused, Why: why,
				Message: fmt.Sprintf("%s=%s refused: %s; nothing was done", baov1.AnnotationBreakGlassAck, value, why)}
		}
		return Verdict{Accept: true}
	case upgrade.RequestRetry:
		switch {
		case st.Upgrade == nil && st.LastRollback != nil && st.LastRollback.Retry == "":
			return Verdict{Accept: true, Retry: RetryRollback}
		case st.Upgrade != nil && st.Upgrade.Failure != nil:
			return Verdict{Accept: true, Retry: RetryUpgrade}
		case st.Scaling != nil && st.Scaling.Failure != nil:
			return Verdict{Accept: true, Retry: RetryScaling}
		case st.Upgrade != nil && st.Upgrade.Rehearsal != nil && st.Upgrade.Rehearsal.Step == baov1.RehearsalStepDone &&
			st.Upgrade.Rehearsal.Result != nil && st.Upgrade.Rehearsal.Result.Outcome == baov1.DrillFailed:
			return Verdict{Accept: true, Retry: RetryRehearsal}
		}
		return refused()
	case upgrade.RequestRestart:
		d := upgrade.DecideRestart(c, value)
		if !d.Accept {
			why := d.Message
			if p := fmt.Sprintf("%s=%s refused: ", baov1.AnnotationRestart, value); len(why) > len(p) && why[:len(p)] == p {
				why = why[len(p):]
			}
			return Verdict{Event: EventRequestRefused, Message: d.Message, Why: why}
		}
		return Verdict{Accept: true, Message: d.Message}
	case upgrade.RequestSnapshot:
		d := snapshot.DecideRequest(c, value)
		if !d.Accept {
			why := strings.TrimPrefix(d.Message, fmt.Sprintf("%s=%s refused: ", baov1.AnnotationSnapshot, value))
			return Verdict{Event: EventRequestRefused, Message: d.Message, Why: why}
		}
		return Verdict{Accept: true, Message: d.Message}
	case upgrade.RequestRehearse:
		d := snapshot.DecideRehearse(c, value)
		if d.Accept {
			// The pair must be one an upgrade could take: the same rule as the
			// upgrade's VersionCompatibility precheck.
			if why := upgrade.CheckVersionPair(c.Status.CurrentVersion, snapshot.RehearseRequestVersion(value)); why != "" {
				d = snapshot.RequestDecision{Message: fmt.Sprintf("%s=%s refused: %s; nothing was done", baov1.AnnotationRehearse, value, why)}
			}
		}
		if !d.Accept {
			why := strings.TrimSuffix(strings.TrimPrefix(d.Message, fmt.Sprintf("%s=%s refused: ", baov1.AnnotationRehearse, value)), "; nothing was done")
			return Verdict{Event: EventRequestRefused, Message: d.Message, Why: why}
		}
		return Verdict{Accept: true, Message: d.Message}
	case upgrade.RequestRecoverQuorum:
		if ok, why := quorum.JudgeRecovery(c, obs, value); !ok {
			return Verdict{Event: EventRequestRefused, Why: why,
				Message: fmt.Sprintf("%s=%s refused: %s; nothing was done", baov1.AnnotationRecoverQuorum, value, why)}
		}
		member, _, _ := quorum.ParseRecoverRequest(value)
		return Verdict{Accept: true, Message: fmt.Sprintf("Recovering the cluster from %s (%s=%s): peers.json names it the only voter, it restarts, "+
			"and the other members join it afresh; break-glass %s is acknowledged. %s", member, baov1.AnnotationRecoverQuorum, value, baov1.BreakGlassMajorityLost, c.Status.BreakGlass.Loss)}
	case upgrade.RequestRestore:
		d := snapshot.DecideRestore(c, value)
		if !d.Accept {
			why := strings.TrimSuffix(strings.TrimPrefix(d.Message, fmt.Sprintf("%s=%s refused: ", baov1.AnnotationRestore, value)), "; nothing was done")
			return Verdict{Event: EventRequestRefused, Message: d.Message, Why: why}
		}
		return Verdict{Accept: true, Message: d.Message}
	}
	return refused()
}

// judgeRollback accepts a rollback of a blue-green upgrade before its point of no
// return (failed or not); the refusal of one past it names the pre-upgrade snapshot,
// the way back.
func judgeRollback(c *baov1.OpenBaoCluster, obs *operation.Cluster, value string, refused func() Verdict) Verdict {
	bg := c.Status.BlueGreen
	if bg == nil {
		// No blue-green upgrade: the words of a rolling upgrade, or of none.
		v := refused()
		v.Event = EventRollbackRefused
		return v
	}
	rv := bluegreen.AcceptsRollback(bg, obs)
	if rv.OK {
		return Verdict{Accept: true}
	}
	why := rv.Why
	if rv.PastPointOfNoReturn {
		if s := c.Status.LastSnapshot; s != nil {
			why += fmt.Sprintf(" (the snapshot is %s, of %s on %s, Raft index %d)", s.Location, s.FromMember, s.Version, s.RaftIndex)
		} else {
			why += " (no pre-upgrade snapshot was taken: spec.upgrade.preUpgradeSnapshot.policy is Never)"
		}
	}
	return Verdict{Event: EventRollbackRefused, Why: why, PastPointOfNoReturn: rv.PastPointOfNoReturn,
		Message: fmt.Sprintf("%s=%s refused: %s; nothing was done", baov1.AnnotationRollback, value, why)}
}
