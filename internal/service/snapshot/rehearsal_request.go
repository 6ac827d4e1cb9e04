package snapshot

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-version"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// A rehearsal on request (baokeeper.dev/rehearse=VERSION[+TOKEN], kubectl bao
// rehearse --to VERSION) runs the upgrade of the cluster to VERSION on a copy
// restored from the newest verified snapshot, exactly as the rehearsal of an
// upgrade does (rehearseStep), but with no upgrade: nothing of the cluster
// changes, the verdict is in status.rehearsal, and an upgrade between the same
// two versions within RehearsalValidFor counts it for spec.upgrade.rehearsal
// Required. It runs under the operation lock (Rehearsal), so a snapshot, a
// drill, a restore, a scaling or an upgrade waits for it, and it for them.

// RehearseRequestVersion is the version a baokeeper.dev/rehearse value names: the
// part before an optional "+TOKEN", without a leading v.
func RehearseRequestVersion(value string) string {
	v, _, _ := strings.Cut(value, "+")
	return strings.TrimPrefix(v, "v")
}

// RehearsalRunning reports whether a requested rehearsal was accepted and has not
// ended.
func RehearsalRunning(st *baov1.OpenBaoClusterStatus) bool {
	r := st.Rehearsal
	return r != nil && r.Step != baov1.RehearsalStepDone
}

// DecideRehearse decides a baokeeper.dev/rehearse value: accepted (the rehearsal
// runs as soon as it holds the operation lock) or refused, with what to do
// instead. Whether the two versions can be upgraded between at all is the
// caller's to check first (package control, with the upgrade's own rule). The
// operator and kubectl bao both decide with it.
func DecideRehearse(c *baov1.OpenBaoCluster, value string) RequestDecision {
	refuse := func(why string) RequestDecision {
		return RequestDecision{Message: fmt.Sprintf("%s=%s refused: %s; nothing was done", baov1.AnnotationRehearse, value, why)}
	}
	st := &c.Status
	target := RehearseRequestVersion(value)
	to, err := version.NewSemver(target)
	switch {
	case err != nil:
		return refuse(fmt.Sprintf("%q is not a version: the value must be the version to rehearse (such as 2.5.1), optionally followed by + and a token of your own", target))
	case st.BreakGlass != nil && st.BreakGlass.Active:
		return refuse(fmt.Sprintf("break-glass is active (%s) and every automation of this cluster is stopped; acknowledge it first (%s), then ask again with a new value",
			st.BreakGlass.Reason, baov1.AnnotationBreakGlassAck))
	case RestorePending(c):
		return refuse("the cluster is still restoring spec.bootstrap.fromSnapshot (status.restore); a rehearsal can be asked for once that one is done")
	case st.CurrentVersion == "":
		return refuse("the cluster has not reported the version its members run yet (status.currentVersion); ask again once it is Running")
	case st.Upgrade != nil:
		return refuse(fmt.Sprintf("the cluster is upgrading from %s to %s; set spec.upgrade.rehearsal to Required to rehearse an upgrade before it changes anything",
			st.Upgrade.FromVersion, st.Upgrade.TargetVersion))
	case RehearsalRunning(st):
		r := st.Rehearsal
		return refuse(fmt.Sprintf("the rehearsal of the upgrade to %s (%s=%s) is at step %s; wait until it ended (status.rehearsal)", r.TargetVersion, baov1.AnnotationRehearse, r.Request, r.Step))
	}
	from, err := version.NewSemver(st.CurrentVersion)
	if err == nil && !from.LessThan(to) {
		return refuse(fmt.Sprintf("the cluster runs %s: rehearse a later version (OpenBao does not read data back into an older one)", st.CurrentVersion))
	}
	newest := Newest(st)
	if newest == nil || newest.SHA256 == "" {
		return refuse(fmt.Sprintf("%s has no verified snapshot to rehearse on: take one first (kubectl bao snapshot %s -n %s --wait)", c.Name, c.Name, c.Namespace))
	}
	if _, _, err := TargetFor(c, newest.Location); err != nil {
		return refuse(err.Error() + ": name that bucket in spec.snapshots.s3 again so that the copy can read the object")
	}
	image, err := RehearsalImage(c, target)
	if err != nil {
		return refuse(err.Error())
	}
	what := "the default image of " + target
	if image != "" {
		what = image
	}
	msg := fmt.Sprintf("Rehearsing the upgrade of %s from %s to %s (%s) on a copy restored from %s (sha256 %s); nothing of %s changes",
		c.Name, st.CurrentVersion, target, what, newest.Location, newest.SHA256, c.Name)
	if l := st.OperationLock; l != nil && l.Operation != operation.OperationRehearsal {
		msg += fmt.Sprintf("; queued after the operation in progress (%s: %s)", l.Operation, l.Message)
	}
	return RequestDecision{Accept: true, Message: msg}
}

// RehearsalImage is the image a requested rehearsal upgrades its copy to: "" (the
// default image of target) without spec.image, else spec.image's repository with
// target as its tag. A spec.image pinned by digest, or whose tag is not the
// version the cluster runs, gives no image for another version: an error says
// how to rehearse instead.
func RehearsalImage(c *baov1.OpenBaoCluster, target string) (string, error) {
	img := c.Spec.Image
	if img == "" {
		return "", nil
	}
	if strings.Contains(img, "@") {
		return "", fmt.Errorf("spec.image pins a digest (%s), which names no image for %s: set spec.version and spec.image to the target with spec.upgrade.rehearsal Required instead, and the upgrade is rehearsed before it starts", img, target)
	}
	slash := strings.LastIndex(img, "/")
	colon := strings.LastIndex(img, ":")
	if colon <= slash || strings.TrimPrefix(img[colon+1:], "v") != strings.TrimPrefix(c.Spec.Version, "v") {
		return "", fmt.Errorf("spec.image (%s) is not tagged with spec.version (%s), so the image for %s is unknown: set spec.version and spec.image to the target with spec.upgrade.rehearsal Required instead", img, c.Spec.Version, target)
	}
	tag := target
	if strings.HasPrefix(img[colon+1:], "v") {
		tag = "v" + target
	}
	return img[:colon+1] + tag, nil
}

// RehearsalTargetImage is the image the copy of rehearsal r is upgraded to: the
// requested rehearsal's own (r.Image), or for the rehearsal of an upgrade
// spec.image, which names the target's. "" is the default image of the target.
func RehearsalTargetImage(c *baov1.OpenBaoCluster, r *baov1.RehearsalStatus) string {
	if r.Request != "" {
		return r.Image
	}
	return c.Spec.Image
}

// RequestRehearsal records an accepted rehearsal request in status.rehearsal: it
// starts as soon as it holds the operation lock. A value DecideRehearse would
// refuse records nothing.
func RequestRehearsal(c *baov1.OpenBaoCluster, st *baov1.OpenBaoClusterStatus, value string) {
	target := RehearseRequestVersion(value)
	image, err := RehearsalImage(c, target)
	if err != nil {
		return
	}
	st.Rehearsal = &baov1.RehearsalStatus{Request: value, FromVersion: st.CurrentVersion, TargetVersion: target, Image: image,
		Cluster: RehearsalClusterName(c), Step: baov1.RehearsalStepCreate, WaitingFor: "waiting for the operation lock"}
}

// RehearsalOperation runs a requested rehearsal: with the operation lock, from the
// newest verified snapshot, through the steps of every rehearsal, then releases
// the lock. Each step is persisted in status.rehearsal before it is taken.
type RehearsalOperation struct{}

// Name implements operation.Operation.
func (RehearsalOperation) Name() string { return "Rehearsal" }

// Decide implements operation.Operation.
func (RehearsalOperation) Decide(s *operation.Snapshot) operation.Plan {
	c := s.Object
	st := s.Status()
	r := st.Rehearsal
	if !RehearsalRunning(st) {
		return operation.Nothing()
	}
	if r.ID == "" {
		if err := operation.Acquire(st, operation.OperationRehearsal, operation.HolderUpgradeManager,
			fmt.Sprintf("rehearsing the upgrade from %s to %s on a copy", r.FromVersion, r.TargetVersion), s.Now); err != nil {
			r.WaitingFor = "the rehearsal waits: " + err.Error()
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindWait, RequeueAfter: Poll, WaitingFor: r.WaitingFor}}
		}
		newest := Newest(st)
		if newest == nil || newest.SHA256 == "" {
			// Accepted with one; only a status edited by hand loses it.
			r.Step, r.WaitingFor = baov1.RehearsalStepDone, ""
			r.Result = &baov1.DrillResult{Outcome: baov1.DrillFailed, FinishedAt: ptrTime(s.Now), Message: "no verified snapshot to rehearse on: take one (kubectl bao snapshot " + c.Name + " --wait)"}
			operation.Release(st, operation.OperationRehearsal)
			return operation.Plan{Status: st, Action: operation.Action{Kind: operation.KindPersist}}.Say(
				operation.Warning(EventRehearsalFailed, "Rehearsal of the upgrade to "+r.TargetVersion+" failed: "+r.Result.Message))
		}
		startRehearsal(c, r, newest, s.Now)
		return rehearsalStarted(c, r, st)
	}
	p := rehearseStep(s, st, r)
	if r.Step == baov1.RehearsalStepDone {
		operation.Release(st, operation.OperationRehearsal)
	}
	return p
}

// sameVersion compares two versions as versions (2.4.1 and v2.4.1 are the same),
// or as strings when one does not parse.
func sameVersion(a, b string) bool {
	va, errA := version.NewSemver(a)
	vb, errB := version.NewSemver(b)
	if errA != nil || errB != nil {
		return strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v")
	}
	return va.Equal(vb)
}

// RehearsalValidUntil is when a requested rehearsal that passed stops standing for
// an upgrade between its two versions; zero when it did not pass.
func RehearsalValidUntil(r *baov1.RehearsalStatus) time.Time {
	if r == nil || r.Result == nil || r.Result.Outcome != baov1.DrillPassed || r.Result.FinishedAt == nil {
		return time.Time{}
	}
	return r.Result.FinishedAt.Add(baov1.RehearsalValidFor)
}
