package upgrade

import (
	"fmt"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/schedule"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// SpecRefusal says why baokeeper refuses a spec that the API server accepted, or
// that it stored before the API server validated it.
type SpecRefusal struct {
	// Reason is the SpecValid condition's reason.
	Reason baov1.Reason
	// Message names the field and says what to change.
	Message string
}

// CheckSpec applies the checks that come before the version and image policy, in
// order; the first refusal wins. It is pure.
//
//  1. Every duration field parses, with a unit, and is positive where 0 makes no
//     sense: an object stored before the CRD validated durations reaches the
//     operator with such a value, and only that cluster must stop.
//  2. The executor and validation-hook images are pinned (a tag other than latest,
//     or a digest): they run with the executor's OpenBao role, or hold the
//     decision to promote, and must not change under a restart.
//  3. spec.snapshots.schedule parses, in a time zone that exists
//     (snapshot.ParseSchedule): the API server checks its shape only.
//  4. Every maintenance window parses, in a time zone that exists, and opens
//     at some time (schedule.ParseWindows).
//  5. A custom seal stanza holds seal blocks only (workload.SealStanzaProblem):
//     it is pasted into config.hcl, where anything else would reconfigure the
//     server (a listener without TLS).
func CheckSpec(c *baov1.OpenBaoCluster) *SpecRefusal {
	if err := c.ValidateDurations(); err != nil {
		return &SpecRefusal{Reason: baov1.ReasonInvalidDuration,
			Message: fmt.Sprintf("%v; nothing was changed for this cluster until the field is fixed", err)}
	}
	for _, img := range []struct{ field, ref string }{
		{"spec.upgrade.executor.image", c.Spec.Upgrade.Executor.Image},
		{"spec.upgrade.blueGreen.validationHook.image", hookImage(c)},
	} {
		if msg := floatingImage(img.field, img.ref); msg != "" {
			return &SpecRefusal{Reason: baov1.Reason(ReasonFloatingImage), Message: msg}
		}
	}
	if sn := c.Spec.Snapshots; sn.Schedule != "" || sn.TimeZone != "" {
		if _, err := schedule.Parse(sn.Schedule, sn.TimeZone); err != nil && sn.Schedule != "" {
			return &SpecRefusal{Reason: baov1.ReasonInvalidSchedule, Message: fmt.Sprintf("%v; nothing was changed for this cluster until the field is fixed", err)}
		}
	}
	if v := c.Spec.Snapshots.Verify; v != nil {
		if _, err := schedule.ParseField("spec.snapshots.verify.schedule", v.Schedule, c.Spec.Snapshots.TimeZone); err != nil {
			return &SpecRefusal{Reason: baov1.ReasonInvalidSchedule, Message: fmt.Sprintf("%v; nothing was changed for this cluster until the field is fixed", err)}
		}
	}
	if _, err := schedule.ParseWindows(c.Spec.Upgrade.Windows, windowCheckFrom()); err != nil {
		return &SpecRefusal{Reason: baov1.ReasonInvalidWindow, Message: fmt.Sprintf("%v; nothing was changed for this cluster until the field is fixed", err)}
	}
	if msg := bootstrapProblem(c); msg != "" {
		return &SpecRefusal{Reason: baov1.ReasonSnapshotNewerThanVersion, Message: msg}
	}
	if c.GetSealType() == baov1.CustomSeal {
		if problem := workload.SealStanzaProblem(c.Spec.Seal.CustomStanza); problem != "" {
			return &SpecRefusal{Reason: baov1.ReasonInvalidSealStanza,
				Message: problem + "; nothing was changed for this cluster until the field is fixed"}
		}
	}
	return nil
}

// windowCheckFrom is when a window's start is looked for to find one that never
// comes (30 February): any fixed time does, and keeps CheckSpec pure.
func windowCheckFrom() time.Time { return time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC) }

// bootstrapProblem says why a cluster cannot start from its bootstrap snapshot:
// the snapshot was taken on a version newer than spec.version (OpenBao does not
// read data a newer version wrote). "" when it can, or once it was restored.
func bootstrapProblem(c *baov1.OpenBaoCluster) string {
	b := c.Spec.Bootstrap
	if b == nil || b.FromSnapshot.Version == "" || c.Restored() {
		return ""
	}
	snap, err := ParseVersion(b.FromSnapshot.Version)
	if err != nil {
		return fmt.Sprintf("spec.bootstrap.fromSnapshot.version %q is not a semantic version (%v): give the receipt's version, for example 2.4.0; nothing was created", b.FromSnapshot.Version, err)
	}
	want, err := ParseVersion(c.Spec.Version)
	if err != nil || !want.LessThan(snap) {
		return ""
	}
	return fmt.Sprintf("the snapshot %s was taken on OpenBao %s, newer than spec.version %s: OpenBao does not read data a newer version wrote. "+
		"Set spec.version to %s or later (delete this cluster and create it again: spec.bootstrap cannot change); nothing was restored",
		b.FromSnapshot.Key, strings.TrimPrefix(b.FromSnapshot.Version, "v"), strings.TrimPrefix(c.Spec.Version, "v"), strings.TrimPrefix(b.FromSnapshot.Version, "v"))
}

func hookImage(c *baov1.OpenBaoCluster) string {
	if h := c.Spec.Upgrade.BlueGreen.ValidationHook; h != nil {
		return h.Image
	}
	return ""
}

// floatingImage says why ref, the image of field, is refused: no tag, or latest,
// and no digest. "" when it is pinned (or empty: the default applies).
func floatingImage(field, ref string) string {
	if ref == "" {
		return ""
	}
	_, tag, digest, err := ParseImage(ref)
	if err != nil {
		return fmt.Sprintf("%s %q is not a valid image reference (%v); set it to REPOSITORY:TAG or REPOSITORY@sha256:...; nothing was changed for this cluster until the field is fixed", field, ref, err)
	}
	if digest == "" && (tag == "" || tag == "latest") {
		return fmt.Sprintf("%s %q is not pinned (a missing tag is latest), so its Jobs could run another build from one attempt to the next; "+
			"pin it to a version tag or a digest (@sha256:...), or leave it empty to use the default; nothing was changed for this cluster until the field is fixed", field, ref)
	}
	return ""
}
