package upgrade

import (
	"fmt"
	"time"

	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// Gate is one condition a replaced member must meet before the next step starts.
type Gate struct {
	// Name is a short CamelCase identifier.
	Name string
	// Passed reports whether the gate holds.
	Passed bool
	// WaitingFor says in words what is missing, for the status message.
	WaitingFor string
}

// MemberGates evaluates, in order, the gates of brief invariant 3 for a member that
// was replaced: pod Ready on the target image, OpenBao initialized, unsealed and on
// the target version, back in the Raft configuration as a voter, autopilot healthy,
// reached by the leader's Raft since it restarted (its own metrics,
// operation.Cluster.LeaderReaches), and its index within maxLag of the leader's.
// Where autopilot has not yet caught up after an election, a member's own read
// proves health and catch-up instead (operation.Cluster.Follows), never the leader's
// reach. The first gate that fails says what the step waits for; the settle time is
// measured by the caller.
func MemberGates(c *operation.Cluster, name, targetImage, targetVersion string, maxLag uint64) []Gate {
	m := c.Member(name)
	if m == nil {
		return []Gate{{Name: "PodExists", WaitingFor: fmt.Sprintf("waiting for %s to be observed", name)}}
	}
	// who names the member in the gates a running member can fail, with its clock
	// when it is off: a member whose clock runs minutes off refuses its peers'
	// certificates and never rejoins, and the hold must say why.
	who := name + m.ClockSays()
	lag := uint64(0)
	if c.LeaderIndex > m.LastIndex {
		lag = c.LeaderIndex - m.LastIndex
	}
	return []Gate{
		{Name: "PodRecreated", Passed: m.PodExists && !m.PodTerminating,
			WaitingFor: fmt.Sprintf("waiting for %s to be re-created by the StatefulSet controller", name)},
		{Name: "PodOnTargetImage", Passed: m.PodExists && m.Image == targetImage,
			WaitingFor: fmt.Sprintf("waiting for %s to run image %s (it runs %s)", name, targetImage, orNone(m.Image))},
		{Name: "PodOnTemplate", Passed: c.OnTemplate(m), WaitingFor: templateWait(c, m)},
		{Name: "PodReady", Passed: m.PodReady,
			WaitingFor: fmt.Sprintf("waiting for %s to become Ready (initialized and unsealed)%s", name, m.PodSays())},
		{Name: "Unsealed", Passed: m.Initialized && !m.Sealed,
			WaitingFor: fmt.Sprintf("waiting for %s to unseal", who)},
		{Name: "TargetVersion", Passed: SameVersion(m.Version, targetVersion),
			WaitingFor: fmt.Sprintf("waiting for %s to report version %s (it reports %s)", name, targetVersion, orNone(m.Version))},
		{Name: "AutopilotKnown", Passed: c.AutopilotKnown,
			WaitingFor: "waiting for a trustworthy read of autopilot state"},
		{Name: "Voter", Passed: m.InRaft && m.Voter,
			WaitingFor: fmt.Sprintf("waiting for %s to rejoin Raft as a voter", who)},
		{Name: "MemberHealthy", Passed: c.HealthyOrFollows(m, maxLag),
			WaitingFor: fmt.Sprintf("waiting for autopilot to report %s healthy", who)},
		{Name: "LeaderContact", Passed: c.LeaderReaches(m), WaitingFor: contactWait(m, who)},
		{Name: "ClusterHealthy", Passed: c.AutopilotHealthy || c.VotersHealthyOrFollow(maxLag),
			WaitingFor: "waiting for autopilot to report the cluster healthy"},
		{Name: "CaughtUp", Passed: lag <= maxLag || c.Follows(m, maxLag),
			WaitingFor: fmt.Sprintf("waiting for %s to catch up (index %d behind, limit %d)", who, lag, maxLag)},
	}
}

// contactWait says what the LeaderContact gate waits for.
func contactWait(m *operation.Member, who string) string {
	switch m.Replication {
	case operation.ReplicationNone:
		return fmt.Sprintf("waiting for the leader's Raft to reach %s since it restarted (its metrics show no replication received yet)", who)
	case operation.ReplicationUnknown:
		return fmt.Sprintf("waiting for the leader's Raft to reach %s since it restarted (its metrics did not answer: baokeeper reads /v1/sys/metrics on the member's API port, as it reads sys/health; if this lasts, check what blocks that path)", who)
	default:
		return fmt.Sprintf("waiting for the leader to hear from %s since it restarted (autopilot last heard from it %s before its read)", who, m.LastContact.Round(time.Millisecond))
	}
}

func templateWait(c *operation.Cluster, m *operation.Member) string {
	if !c.StatefulSetCurrent() {
		return fmt.Sprintf("waiting for the StatefulSet controller to see the latest pod template before judging %s", m.Name)
	}
	return fmt.Sprintf("waiting for %s to run the current pod template (revision %s; it runs %s)", m.Name, c.UpdateRevision(), orNone(m.Revision))
}

// FirstFailing returns the first gate that does not hold, or nil when all hold.
func FirstFailing(gates []Gate) *Gate {
	for i := range gates {
		if !gates[i].Passed {
			return &gates[i]
		}
	}
	return nil
}

// SameVersion compares two versions ignoring a leading v; autopilot and health may
// differ in that prefix. Unparsable versions compare as strings.
func SameVersion(a, b string) bool {
	va, errA := ParseVersion(a)
	vb, errB := ParseVersion(b)
	if errA != nil || errB != nil {
		return a != "" && a == b
	}
	return va.Equal(vb)
}

func orNone(s string) string {
	if s == "" {
		return "nothing yet"
	}
	return s
}

// ImageChanged reports whether a member runs an image other than image while every
// member's pod exists: spec.image changed at the same version (a mirror, a digest
// pin), which is rolled out like an upgrade. With a pod missing it says false: the
// image of that member is not known yet.
func ImageChanged(c *operation.Cluster, image string) bool {
	changed := false
	for _, m := range c.Members {
		if !m.PodExists || m.Image == "" {
			return false
		}
		if m.Image != image {
			changed = true
		}
	}
	return changed
}

// RunningImage is the image the first member with a pod runs, for messages.
func RunningImage(c *operation.Cluster) string {
	for _, m := range c.Members {
		if m.Image != "" {
			return m.Image
		}
	}
	return "unknown"
}
