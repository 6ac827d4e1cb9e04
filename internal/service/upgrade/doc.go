// Package upgrade is the shared root of the upgrade service: the code that
// decides whether, and how, an OpenBao cluster moves from the version it runs
// to the version its spec asks for. It holds the pieces the rest of the
// service builds on: request parsing, the version and image policy, the
// upgrade plan and the metrics types. Everything here is pure (no I/O, no
// logging, no clock) so that controllers, webhooks and tests can all call it
// and get the same answer.
//
// # Version and image policy
//
// [EvaluateVersion] judges a [VersionRequest] (spec.version, spec.image and
// status.currentVersion) and returns a [Decision]. It runs these steps in
// order and stops at the first refusal, so a person fixes the most basic
// problem first:
//
//  1. spec.version must be a strict semantic version, MAJOR.MINOR.PATCH with
//     optional -prerelease and +build metadata and an optional leading "v"
//     ([ParseVersion]). Otherwise the request is refused with
//     [ReasonInvalidVersion].
//  2. If status.currentVersion is set and parses, spec.version must not be
//     older than it, using semantic-version ordering where a prerelease sorts
//     before its release (2.5.0-rc1 < 2.5.0). An older version is refused
//     with [ReasonDowngrade]; the same version is allowed and is not an
//     upgrade. A status.currentVersion that does not parse skips this check
//     and adds a [WarningUnknownCurrentVersion] warning.
//  3. spec.image must be a valid image reference ([ParseImage]), refused with
//     [ReasonInvalidImage] otherwise. When it is empty, the default image
//     ([DefaultImage]) is used and must itself be valid. When its tag looks
//     like a semantic version, the tag must equal spec.version, even if the
//     image is also pinned by digest; otherwise the request is refused with
//     [ReasonImageMismatch]. A digest without a tag, and tags that are not
//     semantic versions ("latest", "2.4", "main-abc"), are accepted because
//     there is no version in them to compare.
//  4. An allowed upgrade that skips at least one minor version, or that
//     changes the major version, carries a [WarningMinorVersionSkip] warning:
//     it is allowed, but the release notes of every skipped version matter.
package upgrade
