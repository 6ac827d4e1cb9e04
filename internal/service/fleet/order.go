package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	goversion "github.com/hashicorp/go-version"
	"k8s.io/apimachinery/pkg/api/meta"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// OrderPrecheck is the UpgradeOrder precheck of an upgrade of c to target, judged
// over the clusters the reconciler read (view); ok is false when spec.upgrade.after
// is empty. It passes once every named cluster has run target or a later version,
// Available, with no operation in progress, no failure and no break-glass, for its
// soak. Pending while one is on its way (wake says when to look again, for a soak
// that ends); Failed while one holds it: a cycle, a cluster that does not exist or
// cannot be read, a failed or rolled-back upgrade, break-glass.
func OrderPrecheck(c *baov1.OpenBaoCluster, target string, view operation.Fleet, now time.Time) (pc baov1.Precheck, wake time.Duration, ok bool) {
	after := c.Spec.Upgrade.After
	if len(after) == 0 {
		return baov1.Precheck{}, 0, false
	}
	pc.Name = PrecheckOrder
	if cyc := Cycle(c, view); cyc != nil {
		pc.Result, pc.Message = baov1.PrecheckFailed, fmt.Sprintf("spec.upgrade.after forms a cycle (%s): no cluster in it could ever start; remove one of these from spec.upgrade.after",
			strings.Join(cyc, " → "))
		return pc, 0, true
	}
	want, err := goversion.NewVersion(target)
	if err != nil {
		pc.Result, pc.Message = baov1.PrecheckFailed, fmt.Sprintf("the target %q is not a version", target)
		return pc, 0, true
	}
	var passed []string
	var pending []string
	seen := map[string]bool{}
	for _, a := range after {
		key := keyOf(c.Namespace, a)
		if seen[key] {
			// The API refuses duplicates; one stored before that rule counts once.
			continue
		}
		seen[key] = true
		j := judge(view, key, a, want, now, c.Namespace)
		switch j.result {
		case baov1.PrecheckFailed:
			pc.Result, pc.Message = baov1.PrecheckFailed, j.message
			return pc, 0, true
		case baov1.PrecheckPending:
			pending = append(pending, j.message)
			if j.wake > 0 && (wake == 0 || j.wake < wake) {
				wake = j.wake
			}
		default:
			passed = append(passed, j.message)
		}
	}
	if len(pending) > 0 {
		pc.Result, pc.Message = baov1.PrecheckPending, "waits for "+strings.Join(pending, "; and for ")
		if wake == 0 {
			wake = maxWake
		}
		return pc, min(wake, maxWake), true
	}
	pc.Result, pc.Message = baov1.PrecheckPassed, strings.Join(passed, "; ")
	return pc, 0, true
}

type judgement struct {
	result  baov1.PrecheckResult
	message string
	wake    time.Duration
}

// maxEmbedded bounds the text of another cluster's status that a judgement quotes:
// a chain of orders would otherwise nest each cluster's waitingFor in the next.
const maxEmbedded = 160

// judge is one named cluster's part of the order, for a cluster in namespace home.
// Of a cluster in another namespace it says only what its versions, typed reasons and
// phase say: its messages (a failure's, a rollback's, Available's, what it waits for)
// are its tenant's, not this one's (issue 38). Of a cluster in the same namespace it
// quotes them, cut to maxEmbedded.
func judge(view operation.Fleet, key string, a baov1.UpgradeOrder, want *goversion.Version, now time.Time, home string) judgement {
	ns, name, _ := strings.Cut(key, "/")
	quote := func(s string) string {
		if ns != home {
			return "details are in its own namespace"
		}
		return cut(s, maxEmbedded)
	}
	if why := view.Unreadable(ns); why != "" {
		return judgement{result: baov1.PrecheckFailed, message: fmt.Sprintf("spec.upgrade.after names %s, which baokeeper cannot read: %s", key, why)}
	}
	p := view.Get(ns, name)
	if p == nil {
		return judgement{result: baov1.PrecheckFailed, message: fmt.Sprintf("spec.upgrade.after names %s, which does not exist: create it, or remove it from spec.upgrade.after", key)}
	}
	st := &p.Status
	if bg := st.BreakGlass; bg != nil && bg.Active {
		return judgement{result: baov1.PrecheckFailed, message: fmt.Sprintf("%s is in break-glass (%s): this upgrade holds until a person resolves it there (kubectl bao status %s -n %s)", key, bg.Reason, name, ns)}
	}
	if up := st.Upgrade; up != nil && up.Failure != nil {
		return judgement{result: baov1.PrecheckFailed, message: fmt.Sprintf("%s's upgrade to %s failed (%s: %s): this upgrade holds until it completes there", key, up.TargetVersion, up.Failure.Reason, quote(up.Failure.Message))}
	}
	cur := parse(st.CurrentVersion)
	if lr := st.LastRollback; lr != nil && (cur == nil || cur.LessThan(want)) {
		if v := parse(lr.TargetVersion); v != nil && !v.LessThan(want) {
			return judgement{result: baov1.PrecheckFailed, message: fmt.Sprintf("%s rolled back its upgrade to %s (%s): this upgrade holds until %s runs %s", key, lr.TargetVersion, quote(orNone(lr.Reason)), key, want.Original())}
		}
	}
	if cur == nil || cur.LessThan(want) {
		switch up := st.Upgrade; {
		case up != nil && up.Kind != baov1.OperationRollout:
			return judgement{result: baov1.PrecheckPending, message: fmt.Sprintf("%s, upgrading from %s to %s (%s)", key, up.FromVersion, up.TargetVersion, quote(orNone(up.WaitingFor)))}
		default:
			return judgement{result: baov1.PrecheckPending, message: fmt.Sprintf("%s to run %s (it runs %s; its spec.version is %s)", key, want.Original(), orNone(st.CurrentVersion), p.Spec.Version)}
		}
	}
	if up := st.Upgrade; up != nil {
		return judgement{result: baov1.PrecheckPending, message: fmt.Sprintf("%s to finish its %s (%s)", key, kindWord(up.Kind), quote(orNone(up.WaitingFor)))}
	}
	avail := meta.FindStatusCondition(st.Conditions, string(baov1.ConditionAvailable))
	if avail == nil || avail.Status != "True" {
		why := "no Available condition yet"
		if avail != nil {
			why = avail.Message
		}
		return judgement{result: baov1.PrecheckPending, message: fmt.Sprintf("%s to be Available (%s)", key, quote(why))}
	}
	since := avail.LastTransitionTime.Time
	if e := lastReached(st); e != nil && e.EndedAt != nil && e.EndedAt.After(since) {
		since = e.EndedAt.Time
	}
	soak := soakOf(a)
	ran := now.Sub(since)
	if ran < soak {
		return judgement{result: baov1.PrecheckPending, wake: soak - ran,
			message: fmt.Sprintf("%s to soak on %s: healthy for %s of %s, until %s", key, st.CurrentVersion, human(max(ran, 0)), soak, stamp(since.Add(soak)))}
	}
	return judgement{result: baov1.PrecheckPassed, message: fmt.Sprintf("%s has run %s healthily for %s (soak %s)", key, st.CurrentVersion, human(ran), soak)}
}

// lastReached is the history entry of the version change that brought st to the
// version it runs; nil when it started there.
func lastReached(st *baov1.OpenBaoClusterStatus) *baov1.HistoryEntry {
	for i := range st.History {
		e := &st.History[i]
		if e.Outcome == baov1.OutcomeSucceeded && (e.Kind == baov1.HistoryVersion || e.Kind == baov1.HistoryImage) && e.TargetVersion == st.CurrentVersion {
			return e
		}
	}
	return nil
}

// Cycle is the cycle of spec.upgrade.after that leads from c back to c, as
// namespace/name keys starting and ending with c; nil when there is none. Only
// clusters in view are followed.
func Cycle(c *baov1.OpenBaoCluster, view operation.Fleet) []string {
	self := c.Namespace + "/" + c.Name
	var path []string
	seen := map[string]bool{}
	var walk func(ns string, after []baov1.UpgradeOrder) []string
	walk = func(ns string, after []baov1.UpgradeOrder) []string {
		for _, a := range after {
			key := keyOf(ns, a)
			if key == self {
				return append(slices.Clone(path), key)
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			pns, pname, _ := strings.Cut(key, "/")
			p := view.Get(pns, pname)
			if p == nil {
				continue
			}
			path = append(path, key)
			if cyc := walk(pns, p.Spec.Upgrade.After); cyc != nil {
				return cyc
			}
			path = path[:len(path)-1]
		}
		return nil
	}
	path = []string{self}
	return walk(c.Namespace, c.Spec.Upgrade.After)
}

// Names is who a cluster's order names, as namespace/name keys.
func Names(c *baov1.OpenBaoCluster) []string {
	var out []string
	for _, a := range c.Spec.Upgrade.After {
		out = append(out, keyOf(c.Namespace, a))
	}
	return out
}

func keyOf(ns string, a baov1.UpgradeOrder) string {
	if a.Namespace != "" {
		ns = a.Namespace
	}
	return ns + "/" + a.Name
}

func soakOf(a baov1.UpgradeOrder) time.Duration {
	if a.Soak == nil {
		return 0
	}
	d, err := time.ParseDuration(string(*a.Soak))
	if err != nil || d < 0 {
		return 0
	}
	return d
}

func parse(v string) *goversion.Version {
	if v == "" {
		return nil
	}
	out, err := goversion.NewVersion(v)
	if err != nil {
		return nil
	}
	return out
}

func kindWord(k baov1.OperationKind) string {
	switch k {
	case baov1.OperationRollout:
		return "rollout"
	case baov1.OperationImage:
		return "image change"
	}
	return "upgrade"
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// cut is s, at most n bytes, ending in "..." when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
