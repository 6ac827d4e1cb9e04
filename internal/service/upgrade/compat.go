package upgrade

import (
	"fmt"
)

// VersionBoundary is a version that members on either side of cannot run together
// in one cluster. Both strategies run such a mixed cluster while they change it
// (rolling: old and new members; blue-green: blue and green), so an upgrade
// across a boundary is refused before anything changes, unless its target carries
// the upstream fix.
type VersionBoundary struct {
	// At is the first version of the new side.
	At string
	// FixedIn is the first version of the new side that runs beside the old side
	// again (the fix is on the new side: the old side's releases are what they
	// are); empty when no fix is known. Targets from At up to FixedIn stay refused.
	FixedIn string
	// Why says what breaks, in a sentence.
	Why string
	// Source is where the fact comes from (upstream issues and pull requests).
	Source string
}

// VersionBoundaries is the table of known-bad version pairs, oldest first. Each
// entry's source is listed in docs/upgrades.md ("Versions that cannot run side by
// side"). It returns a new slice each time: there is no package-level state.
func VersionBoundaries() []VersionBoundary {
	return []VersionBoundary{{
		At: "2.6.0",
		// openbao/openbao#3900 (main, so 2.7.0 on) and its backport #3922 to
		// release/2.6.x, merged 2026-09-02, after v2.6.2 (tagged from a commit of
		// 2026-08-18): the next 2.6 patch release is the first of the line with it.
		FixedIn: "2.6.3",
		Why: "OpenBao 2.6.0 renamed its request-forwarding service, so a member before 2.6 and a member on 2.6.0 to 2.6.2 cannot forward requests to each other " +
			"(a standby answers Unimplemented: unknown service forwarding.RequestForwarding) and autopilot's health across the two breaks",
		Source: "openbao/openbao#3899, openbao/openbao#3676; fixed by openbao/openbao#3900 and #3922",
	}}
}

// CheckVersionPair says why from and to cannot run side by side, or "" when no
// known boundary lies between them or the target carries the boundary's fix.
// Unparsable versions are left to the version policy.
func CheckVersionPair(from, to string) string {
	vf, err1 := ParseVersion(from)
	vt, err2 := ParseVersion(to)
	if err1 != nil || err2 != nil {
		return ""
	}
	for _, b := range VersionBoundaries() {
		at, err := ParseVersion(b.At)
		if err != nil {
			continue
		}
		// Pre-releases are on the side of their release: compare the cores.
		if !vf.Core().LessThan(at) || vt.Core().LessThan(at) {
			continue
		}
		if b.FixedIn != "" {
			if fixed, err := ParseVersion(b.FixedIn); err == nil && !vt.Core().LessThan(fixed) {
				continue
			}
		}
		way := fmt.Sprintf("set spec.upgrade.strategy to Offline, which stops every member at once and starts each on %s from its own volume "+
			"(no member answers meanwhile; docs/upgrades.md), or restore a snapshot into a new cluster at %s (kubectl bao restore CLUSTER --into NEW --version %s; docs/restore.md)",
			to, to, to)
		if b.FixedIn != "" {
			way = fmt.Sprintf("set spec.version to %s or later instead, which carries the fix and runs beside %s; or %s", b.FixedIn, from, way)
		}
		return fmt.Sprintf("%s and %s cannot run in one cluster: %s (%s). A rolling or blue-green upgrade runs both for a while, so this one is refused before anything changes: %s",
			from, to, b.Why, b.Source, way)
	}
	return ""
}
