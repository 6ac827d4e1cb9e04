package upgrade

import (
	"fmt"
)

// VersionBoundary is a version that members on either side of cannot run together
// in one cluster. Both strategies run such a mixed cluster while they change it
// (rolling: old and new members; blue-green: blue and green), so an upgrade
// across a boundary is refused before anything changes.
type VersionBoundary struct {
	// At is the first version of the new side.
	At string
	// Why says what breaks, in a sentence.
	Why string
	// Source is where the fact comes from (upstream issues).
	Source string
}

// VersionBoundaries is the table of known-bad version pairs, oldest first. Each
// entry's source is listed in docs/upgrades.md ("Versions that cannot run side by
// side"). It returns a new slice each time: there is no package-level state.
func VersionBoundaries() []VersionBoundary {
	return []VersionBoundary{{
		At: "2.6.0",
		Why: "OpenBao 2.6.0 renamed its request-forwarding service, so a member before 2.6 and a member from 2.6 on cannot forward requests to each other " +
			"(a standby answers Unimplemented: unknown service forwarding.RequestForwarding) and autopilot's health across the two breaks",
		Source: "openbao/openbao#3899, openbao/openbao#3676",
	}}
}

// CheckVersionPair says why from and to cannot run side by side, or "" when no
// known boundary lies between them. Unparsable versions are left to the version
// policy.
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
		// Pre-releases of the boundary are on its new side: compare the cores.
		if vf.Core().LessThan(at) && !vt.Core().LessThan(at) {
			return fmt.Sprintf("%s and %s cannot run in one cluster: %s (%s). Every upgrade runs both for a while, so this one is refused before anything changes: "+
				"upgrade to the last release before %s first if you are not on it, then move to %s by restoring a snapshot into a new cluster "+
				"(docs/runbooks/restore-from-snapshot.md), or wait for a baokeeper release that lists an OpenBao release with the upstream fix",
				from, to, b.Why, b.Source, b.At, to)
		}
	}
	return ""
}
