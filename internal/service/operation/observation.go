package operation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Member is what one pass observed about one member: its pod, what its OpenBao
// reports, and its place in Raft. Strategies decide from Members only, never from
// the API server or OpenBao directly.
type Member struct {
	// Name is the pod name, for example bao-1.
	Name string
	// Ordinal is the StatefulSet ordinal.
	Ordinal int

	// PodExists is false while the pod is deleted and not yet re-created.
	PodExists bool
	// UID is the pod's UID; empty without a pod.
	UID string
	// Node is the node the pod is scheduled to; empty while it is not.
	Node string
	// PodTerminating is true while the pod has a deletion timestamp.
	PodTerminating bool
	// PodReady is the pod's Ready condition.
	PodReady bool
	// Image is the image of the pod's OpenBao container.
	Image string
	// Revision is the StatefulSet revision the pod was created from (its
	// controller-revision-hash label); empty when unknown.
	Revision string
	// Problem is what the pod itself says keeps it from running, in words: a
	// scheduling failure (Unschedulable: 0/3 nodes are available: ...) or a container
	// waiting reason (ImagePullBackOff, CrashLoopBackOff, ...) with its message; ""
	// when it says nothing.
	Problem string
	// NeverStarted is true when the pod exists but its OpenBao container has never
	// run: its image could not be pulled (or it was never scheduled), it was never
	// restarted and never terminated. Such a member has served nothing on its image,
	// and its data was never opened by it.
	NeverStarted bool
	// Template holds the pod's baokeeper.dev annotations that say why a template
	// changed (configuration, certificate, restart token), for the words of a rollout.
	Template map[string]string

	// Initialized, Sealed and Version come from the member's sys/health; Version is
	// empty when the member could not be read.
	Initialized bool
	Sealed      bool
	Version     string

	// CommittedIndex is the Raft index the member reports committed (sys/leader);
	// read only while autopilot cannot be read, for the quorum watch; 0 otherwise.
	CommittedIndex uint64

	// InRaft is true when the member is in the Raft configuration.
	InRaft bool
	// Voter is true when it is a voter there.
	Voter bool
	// Healthy is autopilot's verdict on the member.
	Healthy bool
	// LastIndex is the member's last Raft index according to autopilot.
	LastIndex uint64
	// LastContact is how long before this pass's autopilot read the leader last
	// heard from the member (autopilot's last_contact; 0 for the leader).
	LastContact time.Duration
	// StableSince is when autopilot last saw the member become healthy; zero when
	// unknown.
	StableSince time.Time
	// ReadySince is when its pod last turned Ready (the Ready condition's last
	// transition); zero when the pod is not Ready or does not say.
	ReadySince time.Time
	// Replication is what the member's own metrics said about the Raft replication
	// its process received; read only where NeedsReplicationRead asks for it.
	Replication Replication
	// ClockOffset is how far the member's clock is ahead of baokeeper's (negative:
	// behind), from its sys/health answer; zero when unknown or within
	// ClockTolerance.
	ClockOffset time.Duration

	// LeaderAddress and AppliedIndex come from the member's own sys/leader: the API
	// address of the active node it follows and its Raft applied index. They are read
	// only while autopilot calls the cluster unhealthy (see Cluster.Follows); empty
	// otherwise, or when the member did not answer.
	LeaderAddress string
	AppliedIndex  uint64
}

// ClockTolerance is how far a member's clock may be off baokeeper's before status
// messages say so: the estimate's own error (sys/health gives whole seconds, and a
// request takes up to its timeout) is far below it, and a clock that time sync keeps
// is within a second.
const ClockTolerance = 30 * time.Second

// ClockOffset estimates how far a member's clock is ahead of baokeeper's from one
// sys/health answer: serverTime is the member's clock in whole seconds, sent and
// received are baokeeper's clock around the request. It returns zero within
// ClockTolerance, and the estimate rounded to the second beyond it.
func ClockOffset(serverTime, sent, received time.Time) time.Duration {
	if serverTime.IsZero() || received.Before(sent) {
		return 0
	}
	mid := sent.Add(received.Sub(sent) / 2)
	// The member truncated its clock to the second: on average it read half a second more.
	d := serverTime.Add(500 * time.Millisecond).Sub(mid)
	if d.Abs() <= ClockTolerance {
		return 0
	}
	return d.Round(time.Second)
}

// ClockSays is how far the member's clock is off, with what to do, in parentheses
// after its name in a status message; "" when it is not off.
func (m Member) ClockSays() string { return ClockSays(m.ClockOffset) }

// ClockSays is ClockOffset offset in words, in parentheses after a member's name in
// a status message; "" for zero.
func ClockSays(offset time.Duration) string {
	if offset == 0 {
		return ""
	}
	dir := "ahead of"
	if offset < 0 {
		dir = "behind"
	}
	return fmt.Sprintf(" (its clock is %s %s baokeeper's: OpenBao checks certificate and token lifetimes against it; fix the time synchronization of its node)",
		offset.Abs(), dir)
}

// ClockSkewed names the members whose clocks are off by more than ClockTolerance, a
// reason to take no member down (see the MemberClocks precheck).
func (c *Cluster) ClockSkewed() []string {
	var out []string
	for _, m := range c.AllServers() {
		if m.ClockOffset != 0 {
			out = append(out, m.Name)
		}
	}
	return out
}

// Names joins member names for a status message, each member whose clock is off
// followed by ClockSays.
func (c *Cluster) Names(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if m := c.Member(n); m != nil {
			out[i] += m.ClockSays()
		}
	}
	return strings.Join(out, ", ")
}

// PodSays is "; the pod says: <problem>" when the pod reports why it does not run,
// else "": appended to what a step waits for, and so to a StepTimeout's message.
func (m Member) PodSays() string {
	if m.Problem == "" {
		return ""
	}
	return "; the pod says: " + m.Problem
}

// Responsive reports whether the member answered sys/health as an initialized,
// unsealed node with a Ready pod: what can be said of it without autopilot.
func (m Member) Responsive() bool {
	return m.PodExists && !m.PodTerminating && m.PodReady && m.Initialized && !m.Sealed && m.Version != ""
}

// Cluster is what one pass observed about the whole cluster.
type Cluster struct {
	// Now is the pass's single clock reading.
	Now time.Time
	// Members are sorted by ordinal.
	Members []Member
	// Leader is the member autopilot names as leader; empty when unknown.
	Leader string
	// AutopilotKnown is false when autopilot state could not be read, or was read
	// too soon after an election to be trusted.
	AutopilotKnown bool
	// AutopilotHealthy and FailureTolerance are autopilot's cluster verdict.
	AutopilotHealthy bool
	FailureTolerance int
	// LeaderIndex is the leader's last Raft index.
	LeaderIndex uint64
	// Term is the highest Raft term autopilot reports of any server; 0 when
	// unknown. An operation's elections are the terms it saw go by.
	Term uint64
	// LeaderAddress and LeaderCommitted are the autopilot leader's own sys/leader
	// answer (it names itself): its API address and Raft committed index. Read with
	// the members' LeaderAddress; empty otherwise.
	LeaderAddress   string
	LeaderCommitted uint64
	// StatefulSet is the members' StatefulSet; nil before it exists.
	StatefulSet *appsv1.StatefulSet
	// Green are the members of green's StatefulSet during a blue-green upgrade
	// (Members are blue's then), sorted by ordinal; empty otherwise.
	Green []Member
	// GreenStatefulSet is green's StatefulSet; nil before it exists.
	GreenStatefulSet *appsv1.StatefulSet
	// Canary is the restore canary as read this pass (only while a restore is
	// verified and its snapshot holds one); nil when it was not read.
	Canary *CanaryRead
	// Extra are Raft servers that match no member of Members or Green (a voter left behind by
	// a StatefulSet scaled down by hand, a node ID of another naming): InRaft is true,
	// PodExists false. Sorted by name.
	Extra []Member
}

// CanaryRead is one read of the restore canary with the controller's role.
type CanaryRead struct {
	// Value is what it holds; Found is false when there is no canary entry.
	Value string
	Found bool
	// Err says why it could not be read (a policy without the read, no answer);
	// empty when it was.
	Err string
}

// AllServers is Members, Green and Extra: every member and every Raft server.
func (c *Cluster) AllServers() []Member {
	return slices.Concat(c.Members, c.Green, c.Extra)
}

// Member returns the named member (or Raft server without a member), or nil.
func (c *Cluster) Member(name string) *Member {
	for i := range c.Members {
		if c.Members[i].Name == name {
			return &c.Members[i]
		}
	}
	for i := range c.Green {
		if c.Green[i].Name == name {
			return &c.Green[i]
		}
	}
	for i := range c.Extra {
		if c.Extra[i].Name == name {
			return &c.Extra[i]
		}
	}
	return nil
}

// SortMembers orders members by ordinal, so decisions never depend on map order.
func SortMembers(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int { return a.Ordinal - b.Ordinal })
}

// Replicas is the StatefulSet's replicas, 0 without one.
func (c *Cluster) Replicas() int32 {
	if c.StatefulSet == nil || c.StatefulSet.Spec.Replicas == nil {
		return 0
	}
	return *c.StatefulSet.Spec.Replicas
}

// StatefulSetCurrent reports whether the StatefulSet controller has seen the
// StatefulSet's latest spec (invariant 9: its status counts only then).
func (c *Cluster) StatefulSetCurrent() bool {
	return c.StatefulSet != nil && c.StatefulSet.Status.ObservedGeneration >= c.StatefulSet.Generation
}

// UpdateRevision is the StatefulSet's revision of its current pod template, once
// the StatefulSet controller has seen that template (invariant 9); "" before.
func (c *Cluster) UpdateRevision() string {
	if !c.StatefulSetCurrent() {
		return ""
	}
	return c.StatefulSet.Status.UpdateRevision
}

// OnTemplate reports whether a member's pod was created from the StatefulSet's
// current pod template. While the StatefulSet controller has not seen the latest
// template, no pod is proven on it (invariant 9). A pod without a revision label,
// or a StatefulSet status without an update revision, tells nothing: the image and
// the version still gate.
func (c *Cluster) OnTemplate(m *Member) bool {
	if c.StatefulSet == nil {
		return true
	}
	if !c.StatefulSetCurrent() {
		return false
	}
	rev := c.StatefulSet.Status.UpdateRevision
	return rev == "" || m.Revision == "" || m.Revision == rev
}

// OnTarget reports whether a member's pod exists, is not being deleted, and runs
// image on the current pod template.
func (c *Cluster) OnTarget(m *Member, image string) bool {
	return m != nil && m.PodExists && !m.PodTerminating && m.Image == image && c.OnTemplate(m)
}

// OffTemplate lists, by ordinal, the members whose pods exist on a revision other
// than the StatefulSet's current one: the members a rollout of the pod template
// restarts. It is empty while any member's pod is missing or terminating, or while
// the StatefulSet controller has not seen the latest template: what the members run
// is not known then.
func (c *Cluster) OffTemplate() []string {
	rev := c.UpdateRevision()
	if rev == "" {
		return nil
	}
	var out []string
	for i := range c.Members {
		m := &c.Members[i]
		if !m.PodExists || m.PodTerminating || m.Revision == "" {
			return nil
		}
		if m.Revision != rev {
			out = append(out, m.Name)
		}
	}
	return out
}

// TemplateChanges says in words why members are off the current pod template,
// from the baokeeper.dev annotations of the template and of their pods: a new
// configuration (or start script), a restart request, or else another field of the
// template (resources, placement, image pull secrets, member annotations).
func (c *Cluster) TemplateChanges() string {
	if c.StatefulSet == nil {
		return "the pod template changed"
	}
	want := c.StatefulSet.Spec.Template.Annotations
	seen := map[string]bool{}
	var words []string
	for _, name := range c.OffTemplate() {
		m := c.Member(name)
		for _, k := range []struct{ key, word string }{
			{baov1.TemplateAnnotationConfig, "new configuration"},
			{baov1.TemplateAnnotationRestart, "restart requested (" + baov1.AnnotationRestart + "=" + want[baov1.TemplateAnnotationRestart] + ")"},
		} {
			if m.Template[k.key] != want[k.key] && !seen[k.key] {
				seen[k.key] = true
				words = append(words, k.word)
			}
		}
	}
	if len(words) == 0 {
		return "the pod template changed (resources, placement, image pull secrets or member annotations)"
	}
	return "the pod template changed: " + strings.Join(words, ", ")
}

// RestartRequested reports whether a member off the pod template differs from it
// in the restart token (baokeeper.dev/restart, or the restart of members that did
// not reload a renewed certificate): a rollout a person or the certificate asked
// for now, which maintenance windows do not hold.
func (c *Cluster) RestartRequested() bool {
	if c.StatefulSet == nil {
		return false
	}
	want := c.StatefulSet.Spec.Template.Annotations[baov1.TemplateAnnotationRestart]
	for _, name := range c.OffTemplate() {
		if m := c.Member(name); m != nil && m.Template[baov1.TemplateAnnotationRestart] != want {
			return true
		}
	}
	return false
}

// StaleNeverStarted lists the members whose pods never started (NeverStarted) on an
// image or revision that is no longer the StatefulSet's template (image is the
// template's OpenBao image): left behind by a
// cancelled upgrade to an image that could not be pulled. They serve nothing and
// never opened their data on that image, so re-creating them on the current template
// is safe; with OnDelete nothing else would. Empty while the StatefulSet controller
// has not seen the latest template.
func (c *Cluster) StaleNeverStarted(image string) []Member {
	if !c.StatefulSetCurrent() {
		return nil
	}
	var out []Member
	for i := range c.Members {
		m := &c.Members[i]
		if m.PodExists && !m.PodTerminating && m.NeverStarted && (m.Image != image || !c.OnTemplate(m)) {
			out = append(out, *m)
		}
	}
	return out
}

// AutopilotLags reports whether a pass should read each member's own sys/leader for
// Follows: autopilot was read and names a leader, but calls the cluster unhealthy, as
// it does after an election until it heard from every standby. A healthy cluster, or
// one whose autopilot could not be read, costs no extra request.
func (c *Cluster) AutopilotLags() bool {
	return c.AutopilotKnown && !c.AutopilotHealthy && c.Leader != ""
}

// Follows reports whether a member proves, by its own sys/leader read in this pass,
// what autopilot's healthy verdict says of it: it runs (pod Ready, unsealed), it is a
// voter, it follows the active node that autopilot names leader, and its applied index
// is within maxLag of that leader's committed index.
//
// Following the leader is a proof of contact in the leader's term: a standby learns
// the active node's address from the entry that node wrote through Raft once it led,
// so it has applied an entry of the new term. Autopilot needs more time to say the
// same after an election: it learns a standby's term from the standby's Echo, sent
// every 5 s, and the new leader clears what it had learned while it set itself up
// (docs/design/autopilot-tail.md). Follows is used by the gates that end a member's
// step, never by the quorum budget that allows the next disruption.
func (c *Cluster) Follows(m *Member, maxLag uint64) bool {
	return c.FollowsLeader(m) && m.AppliedIndex+maxLag >= c.LeaderCommitted
}

// FollowsLeader is Follows without the lag: the member runs, votes and follows the
// leader autopilot names, by its own read in this pass.
func (c *Cluster) FollowsLeader(m *Member) bool {
	if m == nil || c.LeaderAddress == "" || c.LeaderCommitted == 0 || !m.Responsive() || !m.InRaft || !m.Voter {
		return false
	}
	return m.LeaderAddress == c.LeaderAddress
}

// Replication is what a member's own metrics say about the Raft replication its
// process received from the leader.
type Replication int

const (
	// ReplicationNotRead: not asked (see Cluster.NeedsReplicationRead).
	ReplicationNotRead Replication = iota
	// ReplicationUnknown: asked, and the member did not answer.
	ReplicationUnknown
	// ReplicationNone: the member's Raft handled no AppendEntries since its process
	// started (or within the metrics' retention, 30 s): the leader has not reached it.
	ReplicationNone
	// ReplicationSeen: the leader's Raft reached the member's process.
	ReplicationSeen
)

// ReplicationOf is the verdict on one read of a member's replication: the count of
// AppendEntries its process handled, or the error that kept it from answering.
func ReplicationOf(appendEntries uint64, err error) Replication {
	switch {
	case err != nil:
		return ReplicationUnknown
	case appendEntries > 0:
		return ReplicationSeen
	default:
		return ReplicationNone
	}
}

// ReplicationWindow is how long after its pod turned Ready a member's replication is
// read: long enough for any gate that judges a restarted member; after it, autopilot's
// verdict and the member's index (which lags when the leader does not reach it)
// suffice.
const ReplicationWindow = 10 * time.Minute

// NeedsReplicationRead reports whether a pass reads m's replication: a responsive
// member other than the leader whose pod turned Ready within ReplicationWindow.
func (c *Cluster) NeedsReplicationRead(m *Member) bool {
	return m != nil && m.Name != c.Leader && m.Responsive() && !m.ReadySince.IsZero() &&
		c.Now.Sub(m.ReadySince) < ReplicationWindow
}

// LeaderReaches reports whether the leader's Raft is known to reach m's current
// process: m leads, or its own metrics show AppendEntries handled since it started.
// A member whose replication was not read (Ready for longer than ReplicationWindow)
// is judged by HeardSince. Autopilot's contact alone never proves it: it counts the
// member's echoes to the active node, while the leader may still dial the member's
// old pod address (found on the rig: the next member's deletion lost the quorum 5 s
// after autopilot had heard from the restarted one).
func (c *Cluster) LeaderReaches(m *Member) bool {
	if m == nil || m.Name == c.Leader {
		return true
	}
	switch m.Replication {
	case ReplicationSeen:
		return true
	case ReplicationNotRead:
		return c.HeardSince(m)
	default:
		return false
	}
}

// HeardSince reports whether the leader has heard from m since its pod last turned
// Ready: autopilot's verdict on a member that restarted quickly is the old
// instance's until its contact threshold (10 s) passes, while the leader may not
// reach the new one yet (found on the rig: the leader dialled the old pod address for
// 2 s after the new pod was Ready, and the next member's deletion lost the quorum).
// True for the leader, and for a member whose pod does not say when it turned Ready.
func (c *Cluster) HeardSince(m *Member) bool {
	if m == nil || m.Name == c.Leader || m.ReadySince.IsZero() {
		return true
	}
	return !c.Now.Add(-m.LastContact).Before(m.ReadySince)
}

// HealthyOrFollows is autopilot's verdict on a member, or Follows where autopilot
// has not caught up.
func (c *Cluster) HealthyOrFollows(m *Member, maxLag uint64) bool {
	return m != nil && (m.Healthy || c.Follows(m, maxLag))
}

// VotersHealthyOrFollow reports whether every voter in Raft is healthy by autopilot or
// Follows: the cluster verdict autopilot would give once it heard from every standby.
// A voter with no pod (Extra) can only be judged by autopilot.
func (c *Cluster) VotersHealthyOrFollow(maxLag uint64) bool {
	voters := 0
	for _, m := range c.AllServers() {
		if !m.InRaft || !m.Voter {
			continue
		}
		voters++
		if !c.HealthyOrFollows(&m, maxLag) {
			return false
		}
	}
	return voters > 0
}
