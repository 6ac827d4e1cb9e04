// Package quorum holds the pure decisions of the quorum watch of a cluster at rest
// (issue 39): what a pass remembers of the Raft voters while autopilot can be read,
// and, once a majority of them stops answering, whether the loss may still heal by
// itself (a node that reboots) or is for good (their volumes lost), which survivor
// holds the most, what a recovery from it loses, and when every automation stops
// (break-glass MajorityLost). An upgrade watches its own quorum
// (operation.WatchQuorum); this watch covers every other time.
package quorum

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// MajorityLostAfter is how long a majority of voters may stay silent at rest, with
// data that may still come back (a node rebooting, a network split), before
// break-glass: longer than a node restart and a pod rescheduled with its volume
// (about 2 minutes on a slow cloud), short enough that the person on call hears of
// it within the time an alert waits. A loss whose data is known gone (a volume
// claim deleted or replaced) does not wait: nothing can bring it back.
const MajorityLostAfter = 5 * time.Minute

// Track returns the quorum record after this pass: the voters and leader of a
// readable autopilot, each voter with the UID of the volume claim that holds its
// data; the previous record otherwise. It never forgets voters while autopilot
// cannot be read. A healthy voter proves that its current claim holds its data; an
// unhealthy one, or one whose claim is gone, keeps the UID recorded before (found on
// the rig: claims deleted while the leader still answered, and autopilot still called
// the followers healthy, were recorded as no claim at all, and the loss that
// followed was not seen as for good).
func Track(prev *baov1.QuorumStatus, c *operation.Cluster, volumeUIDs map[string]string) *baov1.QuorumStatus {
	voters := operation.Voters(c)
	if voters == nil {
		return prev
	}
	before := map[string]string{}
	if prev != nil {
		for _, lv := range prev.LastVoters {
			before[lv.Name] = lv.VolumeClaimUID
		}
	}
	out := &baov1.QuorumStatus{LastLeader: c.Leader}
	for _, v := range voters {
		uid, exists := volumeUIDs[claimOf(v)]
		if old := before[v]; old != "" && (!exists || !healthy(c, v)) {
			// A claim deleted (or being deleted) is no place for the voter's data, even
			// while autopilot still calls it healthy for a heartbeat or two.
			uid = old
		}
		out.LastVoters = append(out.LastVoters, baov1.QuorumVoter{Name: v, VolumeClaimUID: uid})
	}
	return out
}

func healthy(c *operation.Cluster, name string) bool {
	for _, m := range c.AllServers() {
		if m.Name == name {
			return m.Healthy
		}
	}
	return false
}

func claimOf(member string) string { return workload.DataVolume + "-" + member }

// Verdict is what the quorum watch says after one pass.
type Verdict struct {
	// Lost is true when fewer than a majority of the last voters answer.
	Lost bool
	// LostSince is the new status.quorum.lostSince: when the loss began; nil when
	// there is none.
	LostSince *time.Time
	// ForGood is true when no majority can come back: the voters whose data is
	// gone (Gone) leave fewer than a majority.
	ForGood bool
	// BreakGlass is true once the loss is for good, or lasted MajorityLostAfter.
	BreakGlass bool
	// Survivors are the last voters that answer, unsealed on a Ready pod; Silent
	// the others; Gone those of them whose data is gone, with why.
	Survivors, Silent []string
	Gone              map[string]string
	// Best is the survivor to recover from (highest committed index, the last
	// leader on a tie, then the lowest name); empty without a survivor.
	Best string
	// Loss says what a recovery from Best loses, and why.
	Loss string
	// Message is the status message: what happened, what is known, what comes next.
	Message string
	// RequeueAfter is when to look again while the loss may still heal.
	RequeueAfter time.Duration
}

// Watch judges one pass: nothing when autopilot can be read or nothing was ever
// recorded; otherwise whether a majority of the recorded voters stopped answering,
// since when, and what follows. volumeUIDs are the cluster's live volume claims.
func Watch(rec *baov1.QuorumStatus, c *operation.Cluster, volumeUIDs map[string]string) Verdict {
	if c.AutopilotKnown || rec == nil || len(rec.LastVoters) == 0 {
		return Verdict{}
	}
	var v Verdict
	v.Gone = map[string]string{}
	for _, lv := range rec.LastVoters {
		m := c.Member(lv.Name)
		if m != nil && m.Responsive() {
			v.Survivors = append(v.Survivors, lv.Name)
			continue
		}
		v.Silent = append(v.Silent, lv.Name)
		if why := gone(lv, m, volumeUIDs); why != "" {
			v.Gone[lv.Name] = why
		}
	}
	n, majority := len(rec.LastVoters), len(rec.LastVoters)/2+1
	if len(v.Survivors) >= majority {
		return Verdict{}
	}
	v.Lost = true
	since := c.Now
	if rec.LostSince != nil {
		since = rec.LostSince.Time
	}
	v.LostSince = &since
	v.ForGood = n-len(v.Gone) < majority
	lasted := c.Now.Sub(since)
	v.BreakGlass = v.ForGood || lasted >= MajorityLostAfter
	v.Best = best(c, v.Survivors, rec.LastLeader)
	v.Loss = loss(c, v.Best, rec.LastLeader)

	what := fmt.Sprintf("Quorum lost: %d of %d voters do not answer (%s)", len(v.Silent), n, describeSilent(v.Silent, v.Gone))
	switch {
	case v.ForGood:
		v.Message = fmt.Sprintf("%s; a majority of %d cannot come back, since the data of %s is gone. The cluster cannot elect a leader by itself", what, majority,
			strings.Join(slices.Sorted(maps.Keys(v.Gone)), ", "))
	case v.BreakGlass:
		v.Message = fmt.Sprintf("%s for %s or longer", what, lasted.Round(time.Second))
	default:
		left := MajorityLostAfter - lasted
		v.Message = fmt.Sprintf("%s since %s; nothing is changed, and break-glass follows in %s unless a majority answers again",
			what, since.UTC().Format(time.RFC3339), left.Round(time.Second))
		v.RequeueAfter = min(left, 30*time.Second)
	}
	if v.Best != "" {
		v.Message += fmt.Sprintf(". The survivor to recover from is %s (%s)", v.Best, v.Loss)
	} else {
		v.Message += ". No voter survives: restore the latest snapshot (docs/restore.md)"
	}
	return v
}

// gone says why a silent voter's data is gone for good: its volume claim deleted,
// or replaced by one with another UID (a claim created after it was a voter holds
// none of its data); "" when its data may come back.
func gone(lv baov1.QuorumVoter, m *operation.Member, volumeUIDs map[string]string) string {
	if lv.VolumeClaimUID == "" {
		// A voter without a claim of this cluster when it was recorded (a server of
		// another StatefulSet, a ghost): nothing here says what became of its data.
		return ""
	}
	uid, ok := volumeUIDs[claimOf(lv.Name)]
	switch {
	case !ok:
		return "its volume claim " + claimOf(lv.Name) + " is deleted"
	case uid != lv.VolumeClaimUID:
		return "its volume claim " + claimOf(lv.Name) + " was replaced by a new, empty one"
	}
	return ""
}

// best is the survivor with the highest committed index, the last leader on a tie,
// then the lowest name.
func best(c *operation.Cluster, survivors []string, lastLeader string) string {
	out := ""
	var top uint64
	for _, s := range survivors {
		idx := c.Member(s).CommittedIndex
		switch {
		case out == "", idx > top, idx == top && s == lastLeader:
			out, top = s, idx
		}
	}
	return out
}

// loss says what a recovery from the survivor loses of the acknowledged writes.
// A leader acknowledges a write only once it is in its own log and a majority's, so
// a recovery from the last leader loses nothing acknowledged. A follower holds what
// the leader replicated to it; a write it was not among the majority for (the last
// moments before the loss) may be missing.
func loss(c *operation.Cluster, survivor, lastLeader string) string {
	if survivor == "" {
		return ""
	}
	idx := c.Member(survivor).CommittedIndex
	if survivor == lastLeader {
		return fmt.Sprintf("committed index %d; it led the last configuration, and a leader acknowledges a write only once the write is in its own log: nothing acknowledged is lost", idx)
	}
	return fmt.Sprintf("committed index %d; it followed %s, so a write acknowledged in the last moments before the loss, without it among the majority that stored it, may be missing",
		idx, orNone(lastLeader))
}

func describeSilent(silent []string, goneWhy map[string]string) string {
	out := make([]string, len(silent))
	for i, s := range silent {
		out[i] = s
		if why := goneWhy[s]; why != "" {
			out[i] += ": " + why
		}
	}
	return strings.Join(out, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "an unknown leader"
	}
	return s
}

// Record is the quorum record this pass leaves: Track's, with the loss's start.
func Record(prev *baov1.QuorumStatus, c *operation.Cluster, volumeUIDs map[string]string, v Verdict) *baov1.QuorumStatus {
	rec := Track(prev, c, volumeUIDs)
	if rec == nil {
		return nil
	}
	if v.LostSince == nil && rec.LostSince == nil {
		return rec
	}
	out := rec.DeepCopy()
	out.LostSince = nil
	if v.LostSince != nil {
		t := metav1.NewTime(*v.LostSince)
		out.LostSince = &t
	}
	return out
}

// Event reasons of the quorum watch.
const (
	// EventQuorumLost: a majority of the voters stopped answering at rest.
	EventQuorumLost baov1.Reason = "QuorumLost"
)

// Operation is the quorum watch as the one operation of a pass: chosen when a
// majority of the last voters does not answer and no upgrade watches its own quorum.
// It changes nothing of the cluster: it holds every other operation (none could
// pass its gates without a leader), says what it knows, and enters break-glass
// MajorityLost once the loss is for good or lasted MajorityLostAfter.
type Operation struct{}

// Name implements operation.Operation.
func (Operation) Name() string { return "QuorumWatch" }

// Lost reports whether the quorum watch decides this pass.
func Lost(s *operation.Snapshot) bool {
	return s.Object.Status.Upgrade == nil && Watch(s.Object.Status.Quorum, s.Cluster, s.VolumeUIDs).Lost
}

// Decide implements operation.Operation.
func (Operation) Decide(s *operation.Snapshot) operation.Plan {
	st := s.Object.Status.DeepCopy()
	rec := st.Quorum
	v := Watch(rec, s.Cluster, s.VolumeUIDs)
	if !v.Lost {
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist}}
	}
	if v.BreakGlass {
		var voters []string
		for _, lv := range rec.LastVoters {
			voters = append(voters, lv.Name)
		}
		return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindBreakGlass, BreakGlass: baov1.BreakGlassMajorityLost,
			Message: v.Message, Member: v.Best, Recovery: &operation.Recovery{Voters: voters, Survivor: v.Best, Loss: v.Loss, Gone: v.Gone}}}
	}
	p := operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, WaitingFor: v.Message, RequeueAfter: v.RequeueAfter}}
	if rec.LostSince != nil && rec.LostSince.Time.Equal(s.Now) {
		// The pass that saw the loss begin says so once.
		p.Events = append(p.Events, operation.Warning(EventQuorumLost, v.Message))
	}
	return p
}
