package upgrade

import (
	"fmt"
	"strings"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Precheck names, in the order they are evaluated and shown.
const (
	PrecheckMembersReady     = "MembersReady"
	PrecheckAutopilotHealthy = "AutopilotHealthy"
	PrecheckOneLeader        = "OneLeader"
	PrecheckMemberClocks     = "MemberClocks"
	PrecheckPolicy           = "VersionPolicy"
	PrecheckOperationLock    = "OperationLock"
	PrecheckSnapshotTarget   = "SnapshotTarget"
	PrecheckRedundancy       = "Redundancy"
	PrecheckCompatibility    = "VersionCompatibility"
)

// PrecheckInput is what the prechecks judge.
type PrecheckInput struct {
	Cluster *operation.Cluster
	// Replicas is spec.replicas.
	Replicas int32
	// Policy is the version and image policy's decision.
	Policy Decision
	// Snapshot is spec.upgrade.preUpgradeSnapshot.
	Snapshot baov1.PreUpgradeSnapshotSpec
	// LockHeldBy is the operation lock when another operation holds it, else nil.
	LockHeldBy *baov1.OperationLock
	// Copy is true for a rehearsal's copy: its data is a restored snapshot, deleted
	// after the rehearsal, so an offline upgrade of it needs no pre-upgrade snapshot.
	Copy bool
	// Strategy is the upgrade's strategy.
	Strategy baov1.UpgradeStrategyType
	// Kind is what the operation changes; a Rollout takes no snapshot.
	Kind baov1.OperationKind
	// From and To are the versions the upgrade runs side by side.
	From, To string
	// SnapshotTarget is the SnapshotTarget precheck as the check Job in the
	// cluster's namespace says it (snapshot.CheckTarget); nil shows a target that is
	// set as Pending: it is checked once every other precheck passes.
	SnapshotTarget *baov1.Precheck
}

// Prechecks evaluates every precheck of a version change, in a fixed order, each with
// a message a person can act on. None of them changes anything; a failing one blocks
// the start and is evaluated again on the next pass.
func Prechecks(in PrecheckInput) []baov1.Precheck {
	c := in.Cluster
	var out []baov1.Precheck
	add := func(name string, ok bool, pass, fail string) {
		r, msg := baov1.PrecheckPassed, pass
		if !ok {
			r, msg = baov1.PrecheckFailed, fail
		}
		out = append(out, baov1.Precheck{Name: name, Result: r, Message: msg})
	}

	var notReady []string
	for _, m := range c.Members {
		if !m.PodReady || !m.Initialized || m.Sealed {
			notReady = append(notReady, m.Name)
		}
	}
	membersOK := len(notReady) == 0 && int32(len(c.Members)) == in.Replicas
	add(PrecheckMembersReady, membersOK,
		fmt.Sprintf("all %d members are Ready, initialized and unsealed", len(c.Members)),
		fmt.Sprintf("members not Ready, initialized and unsealed: %s", joinOr(notReady, "some members are missing")))

	minTolerance := 1
	if in.Replicas < 3 {
		minTolerance = 0
	}
	apOK := c.AutopilotKnown && c.AutopilotHealthy && c.FailureTolerance >= minTolerance
	apFail := "autopilot state could not be read (or was read right after an election)"
	if c.AutopilotKnown {
		apFail = fmt.Sprintf("autopilot reports healthy=%t with failure tolerance %d; at least %d is needed", c.AutopilotHealthy, c.FailureTolerance, minTolerance)
		var unhealthy, nonVoters []string
		for _, m := range c.AllServers() {
			switch {
			case m.InRaft && !m.Healthy:
				unhealthy = append(unhealthy, m.Name)
			case m.InRaft && !m.Voter:
				nonVoters = append(nonVoters, m.Name)
			}
		}
		if len(unhealthy) > 0 {
			apFail += "; not healthy: " + c.Names(unhealthy)
		}
		if len(nonVoters) > 0 {
			apFail += "; non-voters (promoted once healthy for " + operation.NonVoterPromoteAfter.String() + "): " + strings.Join(nonVoters, ", ")
		}
	}
	add(PrecheckAutopilotHealthy, apOK, fmt.Sprintf("autopilot is healthy with failure tolerance %d", c.FailureTolerance), apFail)

	add(PrecheckOneLeader, c.AutopilotKnown && c.Leader != "" && c.Member(c.Leader) != nil,
		fmt.Sprintf("%s is the only leader", c.Leader), "no leader is known; wait for an election to settle")

	skewed := c.ClockSkewed()
	add(PrecheckMemberClocks, len(skewed) == 0,
		fmt.Sprintf("every member's clock is within %s of baokeeper's", operation.ClockTolerance),
		"members' clocks are off: "+c.Names(skewed))

	// A member's replacement takes it down; with a single voter that is the whole
	// cluster, and the quorum budget would hold the upgrade forever after the
	// template changed. Refuse before anything changes, and say how to go on.
	// Blue-green never takes a voter down before green votes: one member is enough.
	redundancyFail := fmt.Sprintf("a %d-member cluster cannot change version without taking down its only voter, so every request would fail while it restarts: "+
		"scale to 3 members first (spec.replicas: 3), let the new members join, then change spec.version", in.Replicas)
	if in.Kind == baov1.OperationRollout {
		redundancyFail = fmt.Sprintf("a %d-member cluster cannot restart a member without taking down its only voter, so every request would fail while it restarts: "+
			"scale to 3 members first (spec.replicas: 3), or restart it yourself, accepting the downtime (kubectl delete pod of each member)", in.Replicas)
	}
	redundancyOK := fmt.Sprintf("%d voters: replacing one at a time keeps a majority", in.Replicas)
	if in.Strategy == baov1.OfflineStrategy {
		// Every member stops anyway: the outage is the plan, at any size.
		redundancyOK = fmt.Sprintf("offline: all %d members stop together, whatever their number", in.Replicas)
	}
	add(PrecheckRedundancy, in.Replicas >= 3 || in.Strategy == baov1.BlueGreenStrategy || in.Strategy == baov1.OfflineStrategy, redundancyOK, redundancyFail)

	incompatible := CheckVersionPair(in.From, in.To)
	compatible := fmt.Sprintf("%s and %s can run side by side while the cluster changes", orNone(in.From), orNone(in.To))
	if in.Strategy == baov1.OfflineStrategy {
		compatible = fmt.Sprintf("offline: %s and %s never run side by side (every member stops, then starts on %s)", orNone(in.From), orNone(in.To), orNone(in.To))
		incompatible = ""
	}
	add(PrecheckCompatibility, incompatible == "", compatible, incompatible)

	add(PrecheckPolicy, in.Policy.Allowed, "spec.version and spec.image pass the version and image policy", in.Policy.Message)

	lockFail := ""
	if l := in.LockHeldBy; l != nil {
		lockFail = fmt.Sprintf("operation %s holds the cluster (%s); the upgrade starts when it ends", l.Operation, l.Message)
	}
	add(PrecheckOperationLock, in.LockHeldBy == nil, "no other operation holds the cluster", lockFail)

	switch {
	case in.Kind == baov1.OperationRollout:
		add(PrecheckSnapshotTarget, true, "no snapshot: a rollout restarts members on the same version and changes no data", "")
	case in.Snapshot.Policy == baov1.SnapshotNever && in.Strategy == baov1.OfflineStrategy && !in.Copy:
		add(PrecheckSnapshotTarget, false, "",
			"an offline upgrade needs a pre-upgrade snapshot, the way back if the target cannot read the data: set spec.upgrade.preUpgradeSnapshot.policy to Always (or IfOlderThan) with its s3 target")
	case in.Snapshot.Policy == baov1.SnapshotNever:
		add(PrecheckSnapshotTarget, true, "no snapshot (spec.upgrade.preUpgradeSnapshot.policy is Never)", "")
	default:
		switch {
		case in.Snapshot.S3 == nil:
			add(PrecheckSnapshotTarget, false, "",
				"spec.upgrade.preUpgradeSnapshot.policy asks for a snapshot but no target is set: add spec.upgrade.preUpgradeSnapshot.s3, or set policy: Never")
		case in.SnapshotTarget != nil:
			pc := *in.SnapshotTarget
			pc.Name = PrecheckSnapshotTarget
			out = append(out, pc)
		default:
			out = append(out, baov1.Precheck{Name: PrecheckSnapshotTarget, Result: baov1.PrecheckPending,
				Message: fmt.Sprintf("snapshots go to %s; an executor Job checks that it is reachable from the cluster's namespace once every other precheck passes",
					SnapshotLocation(in.Snapshot))})
		}
	}
	return out
}

// FirstUnpassedPrecheck returns the first failed precheck, else the first pending
// one, or nil when all passed: an upgrade starts only then.
func FirstUnpassedPrecheck(pcs []baov1.Precheck) *baov1.Precheck {
	if f := FirstFailedPrecheck(pcs); f != nil {
		return f
	}
	for i := range pcs {
		if pcs[i].Result != baov1.PrecheckPassed {
			return &pcs[i]
		}
	}
	return nil
}

// FirstFailedPrecheck returns the first failed precheck, or nil.
func FirstFailedPrecheck(pcs []baov1.Precheck) *baov1.Precheck {
	for i := range pcs {
		if pcs[i].Result == baov1.PrecheckFailed {
			return &pcs[i]
		}
	}
	return nil
}

// SnapshotLocation is where the pre-upgrade snapshot goes, as a URL-like string.
func SnapshotLocation(s baov1.PreUpgradeSnapshotSpec) string { return s.Location() }

func joinOr(xs []string, empty string) string {
	if len(xs) == 0 {
		return empty
	}
	return strings.Join(xs, ", ")
}
