package upgrade_test

import (
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

const (
	sha256Digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sha512Digest = "sha512:" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestEvaluateVersion(t *testing.T) {
	type want struct {
		allowed bool
		reason  upgrade.PolicyReason
		// message substrings; refusals must name the field to change.
		message   []string
		upgrade   bool
		warnings  []upgrade.PolicyReason
		warnText  []string
		noDesired bool
	}
	cases := []struct {
		name   string
		reason string
		req    upgrade.VersionRequest
		want   want
	}{
		// Rule 1: spec.version must be strict semver.
		{
			name:   "new cluster with plain version",
			reason: "the common case must pass with no warnings and must not count as an upgrade",
			req:    upgrade.VersionRequest{Desired: "2.4.0"},
			want:   want{allowed: true},
		},
		{
			name:   "leading v on desired",
			reason: "users copy release names like v2.5.1; the v is allowed and ordering still works",
			req:    upgrade.VersionRequest{Desired: "v2.5.1", CurrentVersion: "2.4.0"},
			want:   want{allowed: true, upgrade: true},
		},
		{
			name:   "two segments",
			reason: "go-version accepts 2.4 as 2.4.0, but it names a range of releases, so it must be refused with a concrete suggestion",
			req:    upgrade.VersionRequest{Desired: "2.4"},
			want:   want{reason: upgrade.ReasonInvalidVersion, message: []string{`spec.version "2.4"`, "MAJOR.MINOR.PATCH", "for example 2.4.0"}, noDesired: true},
		},
		{
			name:   "one segment",
			reason: "a bare major is even less precise than 2.4 and go-version still accepts it",
			req:    upgrade.VersionRequest{Desired: "2"},
			want:   want{reason: upgrade.ReasonInvalidVersion, message: []string{"spec.version", "for example 2.0.0"}, noDesired: true},
		},
		{
			name:   "four segments",
			reason: "go-version accepts 2.4.0.1 but it is not semver and has no upstream image",
			req:    upgrade.VersionRequest{Desired: "2.4.0.1"},
			want:   want{reason: upgrade.ReasonInvalidVersion, message: []string{`spec.version "2.4.0.1"`, "for example 2.4.0"}, noDesired: true},
		},
		{
			name:   "latest",
			reason: "a moving target cannot be ordered against the running version",
			req:    upgrade.VersionRequest{Desired: "latest"},
			want:   want{reason: upgrade.ReasonInvalidVersion, message: []string{`spec.version "latest"`}, noDesired: true},
		},
		{
			name:   "empty desired",
			reason: "an empty spec.version gets its own wording instead of quoting an empty string",
			req:    upgrade.VersionRequest{Desired: ""},
			want:   want{reason: upgrade.ReasonInvalidVersion, message: []string{"spec.version is empty"}, noDesired: true},
		},
		{
			name:   "leading zero",
			reason: "02.4.0 is not strict semver; the suggestion must drop the zero",
			req:    upgrade.VersionRequest{Desired: "02.4.0"},
			want:   want{reason: upgrade.ReasonInvalidVersion, message: []string{"spec.version", "for example 2.4.0"}, noDesired: true},
		},
		{
			name:   "surrounding whitespace",
			reason: "whitespace from a YAML paste must not silently parse",
			req:    upgrade.VersionRequest{Desired: " 2.4.0"},
			want:   want{reason: upgrade.ReasonInvalidVersion, message: []string{"spec.version"}, noDesired: true},
		},
		{
			name:   "invalid desired wins over other problems",
			reason: "refusals are ordered so the most basic problem is reported first",
			req:    upgrade.VersionRequest{Desired: "2.4", Image: "NOT VALID", CurrentVersion: "9.9.9"},
			want:   want{reason: upgrade.ReasonInvalidVersion, message: []string{"spec.version"}, noDesired: true},
		},

		// Rule 2: no downgrades.
		{
			name:   "equal versions",
			reason: "re-applying the running version is allowed and is not an upgrade",
			req:    upgrade.VersionRequest{Desired: "2.4.0", CurrentVersion: "2.4.0"},
			want:   want{allowed: true},
		},
		{
			name:   "equal versions with and without v",
			reason: "v2.4.0 and 2.4.0 are the same version and must not look like a change",
			req:    upgrade.VersionRequest{Desired: "v2.4.0", CurrentVersion: "2.4.0"},
			want:   want{allowed: true},
		},
		{
			name:   "equal except build metadata",
			reason: "semver ignores build metadata for ordering, so this is neither an upgrade nor a downgrade",
			req:    upgrade.VersionRequest{Desired: "2.4.0", CurrentVersion: "2.4.0+build.7"},
			want:   want{allowed: true},
		},
		{
			name:   "patch upgrade",
			reason: "the simplest upgrade: allowed, flagged as an upgrade, no warning",
			req:    upgrade.VersionRequest{Desired: "2.4.1", CurrentVersion: "2.4.0"},
			want:   want{allowed: true, upgrade: true},
		},
		{
			name:   "patch downgrade",
			reason: "even one patch back is refused; message names both fields and the way out",
			req:    upgrade.VersionRequest{Desired: "2.4.0", CurrentVersion: "2.4.1"},
			want: want{reason: upgrade.ReasonDowngrade, message: []string{
				"spec.version 2.4.0 is older than the running version 2.4.1 (status.currentVersion)",
				"set spec.version to 2.4.1 or newer", "restore a snapshot into a new cluster",
			}},
		},
		{
			name:   "minor downgrade",
			reason: "the example from the design: 2.4.0 running, 2.3.0 requested",
			req:    upgrade.VersionRequest{Desired: "2.3.0", CurrentVersion: "2.4.0"},
			want:   want{reason: upgrade.ReasonDowngrade, message: []string{"spec.version 2.3.0", "status.currentVersion", "2.4.0 or newer"}},
		},
		{
			name:   "release to its own prerelease is a downgrade",
			reason: "2.5.0-rc1 < 2.5.0 in semver, so going back to the rc is refused",
			req:    upgrade.VersionRequest{Desired: "2.5.0-rc1", CurrentVersion: "2.5.0"},
			want:   want{reason: upgrade.ReasonDowngrade, message: []string{"spec.version 2.5.0-rc1", "status.currentVersion"}},
		},
		{
			name:   "prerelease to its release is an upgrade",
			reason: "finishing an rc rollout with the final release must work",
			req:    upgrade.VersionRequest{Desired: "2.5.0", CurrentVersion: "2.5.0-rc1"},
			want:   want{allowed: true, upgrade: true},
		},
		{
			name:   "later prerelease is an upgrade",
			reason: "rc1 to rc2 orders by the prerelease",
			req:    upgrade.VersionRequest{Desired: "2.5.0-rc2", CurrentVersion: "2.5.0-rc1"},
			want:   want{allowed: true, upgrade: true},
		},
		{
			name:   "earlier prerelease is a downgrade",
			reason: "rc2 back to rc1 is refused like any downgrade",
			req:    upgrade.VersionRequest{Desired: "2.5.0-rc1", CurrentVersion: "2.5.0-rc2"},
			want:   want{reason: upgrade.ReasonDowngrade, message: []string{"spec.version", "status.currentVersion"}},
		},
		{
			name:   "empty current",
			reason: "a new cluster has no status yet; any valid version, however old, is allowed",
			req:    upgrade.VersionRequest{Desired: "1.0.0", CurrentVersion: ""},
			want:   want{allowed: true},
		},
		{
			name:   "unparsable current",
			reason: "a corrupt status must not block every change; the skipped check is surfaced as a warning",
			req:    upgrade.VersionRequest{Desired: "2.3.0", CurrentVersion: "garbage"},
			want: want{allowed: true, warnings: []upgrade.PolicyReason{upgrade.WarningUnknownCurrentVersion},
				warnText: []string{`status.currentVersion "garbage"`, "downgrade check was skipped", "spec.version 2.3.0"}},
		},
		{
			name:   "non-strict current",
			reason: "current is parsed as strictly as desired, so 2.4 is unknown rather than guessed as 2.4.0",
			req:    upgrade.VersionRequest{Desired: "2.3.0", CurrentVersion: "2.4"},
			want:   want{allowed: true, warnings: []upgrade.PolicyReason{upgrade.WarningUnknownCurrentVersion}},
		},
		{
			name:   "downgrade wins over image mismatch",
			reason: "refusals are ordered: the downgrade is the deeper problem",
			req:    upgrade.VersionRequest{Desired: "2.3.0", Image: "openbao/openbao:2.9.0", CurrentVersion: "2.4.0"},
			want:   want{reason: upgrade.ReasonDowngrade, message: []string{"spec.version", "status.currentVersion"}},
		},

		// Rule 3: image.
		{
			name:   "tag matches",
			reason: "an explicit image whose tag is spec.version is the normal pinned setup",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "ghcr.io/openbao/openbao:2.4.0"},
			want:   want{allowed: true},
		},
		{
			name:   "tag with v matches desired without v",
			reason: "tags are compared as versions, not strings",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "quay.io/openbao/openbao:v2.4.0"},
			want:   want{allowed: true},
		},
		{
			name:   "desired with v matches tag without v",
			reason: "the comparison is symmetric in the leading v",
			req:    upgrade.VersionRequest{Desired: "v2.4.0", Image: "ghcr.io/openbao/openbao:2.4.0"},
			want:   want{allowed: true},
		},
		{
			name:   "tag mismatch",
			reason: "the operator would record 2.4.0 while pods run 2.4.1; message names both fields and the fixes",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "ghcr.io/openbao/openbao:2.4.1"},
			want: want{reason: upgrade.ReasonImageMismatch, message: []string{
				"spec.image tag 2.4.1 does not match spec.version 2.4.0", "change one so they agree", "pin the image by digest",
			}},
		},
		{
			name:   "prerelease tag for a release",
			reason: "2.5.0-rc1 is a different version than 2.5.0",
			req:    upgrade.VersionRequest{Desired: "2.5.0", Image: "ghcr.io/openbao/openbao:2.5.0-rc1"},
			want:   want{reason: upgrade.ReasonImageMismatch, message: []string{"spec.image tag 2.5.0-rc1", "spec.version 2.5.0"}},
		},
		{
			name:   "digest only",
			reason: "a digest pins content and carries no version to compare, so it is accepted",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "openbao/openbao@" + sha256Digest},
			want:   want{allowed: true},
		},
		{
			name:   "tag and digest that agree",
			reason: "the recommended fully pinned form",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "ghcr.io/openbao/openbao:2.4.0@" + sha256Digest},
			want:   want{allowed: true},
		},
		{
			name:   "tag and digest that disagree",
			reason: "a digest does not excuse a version tag that says something else; advice must not be 'pin by digest' again",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "ghcr.io/openbao/openbao:2.3.0@" + sha512Digest},
			want: want{reason: upgrade.ReasonImageMismatch, message: []string{
				"spec.image tag 2.3.0 does not match spec.version 2.4.0", "pinned by digest", "keep only the digest",
			}},
		},
		{
			name:   "non-semver tag with digest",
			reason: "a non-version tag next to a digest has nothing to compare",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "ghcr.io/openbao/openbao:latest@" + sha256Digest},
			want:   want{allowed: true},
		},
		{
			name:   "registry with port and matching tag",
			reason: "the port colon must not be taken for the tag colon",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "registry:5000/openbao/openbao:2.4.0"},
			want:   want{allowed: true},
		},
		{
			name:   "registry with port and mismatching tag",
			reason: "with a port present the real tag must still be found and compared",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "registry.local:5000/openbao/openbao:2.4.1"},
			want:   want{reason: upgrade.ReasonImageMismatch, message: []string{"spec.image tag 2.4.1"}},
		},
		{
			name:   "registry with port and no tag",
			reason: "5000/openbao/openbao is not a tag; an untagged image means latest, which floats, and is refused",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "registry:5000/openbao/openbao"},
			want:   want{reason: upgrade.ReasonFloatingImage, message: []string{`spec.image "registry:5000/openbao/openbao" has no tag`, "openbao/openbao:2.4.0"}},
		},
		{
			name:   "latest tag",
			reason: "latest moves: a member restarting for any reason could pull another build",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "openbao/openbao:latest"},
			want:   want{reason: upgrade.ReasonFloatingImage, message: []string{"is tagged latest", "pin it to a version tag"}},
		},
		{
			name:   "digest only",
			reason: "a digest pins the content even without a tag",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "openbao/openbao@" + sha256Digest},
			want:   want{allowed: true},
		},
		{
			name:   "two-segment tag",
			reason: "2.4 is a floating tag, not a version, so it is not compared",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "openbao/openbao:2.4"},
			want:   want{allowed: true},
		},
		{
			name:   "branch build tag",
			reason: "CI tags like main-abc are accepted",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "registry.example.com/team/openbao:main-abc123"},
			want:   want{allowed: true},
		},
		{
			name:   "uppercase repository path",
			reason: "runtimes refuse uppercase paths; catching it here beats InvalidImageName pods",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "OpenBao/openbao:2.4.0"},
			want:   want{reason: upgrade.ReasonInvalidImage, message: []string{`spec.image "OpenBao/openbao:2.4.0"`, "lowercase", "ghcr.io/openbao/openbao:2.4.0"}},
		},
		{
			name:   "whitespace in image",
			reason: "a stray space from editing YAML makes an unpullable reference",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "openbao/openbao :2.4.0"},
			want:   want{reason: upgrade.ReasonInvalidImage, message: []string{"spec.image", "whitespace"}},
		},
		{
			name:   "truncated digest",
			reason: "a digest must be complete; a short one would fail at pull time",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: "openbao/openbao@sha256:abc"},
			want:   want{reason: upgrade.ReasonInvalidImage, message: []string{"spec.image", `digest "sha256:abc" is not valid: want sha256: followed by 64 lowercase hex digits`}},
		},
		{
			name:   "empty repository",
			reason: "a bare tag is not an image",
			req:    upgrade.VersionRequest{Desired: "2.4.0", Image: ":2.4.0"},
			want:   want{reason: upgrade.ReasonInvalidImage, message: []string{"spec.image", "repository is empty", "leave it empty"}},
		},
		{
			name:   "invalid image example drops build metadata",
			reason: "the example in the message must itself be a valid image even when spec.version has +metadata",
			req:    upgrade.VersionRequest{Desired: "2.5.0-rc1+abc", Image: "Bad"},
			want:   want{reason: upgrade.ReasonInvalidImage, message: []string{"for example ghcr.io/openbao/openbao:2.5.0-rc1,"}},
		},
		{
			name:   "default image with build metadata",
			reason: "+metadata is valid semver but not a valid tag, so the default image would not pull",
			req:    upgrade.VersionRequest{Desired: "2.4.0+abc"},
			want:   want{reason: upgrade.ReasonInvalidImage, message: []string{"spec.image is empty", "ghcr.io/openbao/openbao:2.4.0+abc", "spec.version"}},
		},
		{
			name:   "build metadata with explicit image",
			reason: "with spec.image set, metadata on spec.version is harmless and ignored by the tag comparison",
			req:    upgrade.VersionRequest{Desired: "2.4.0+abc", Image: "ghcr.io/openbao/openbao:2.4.0"},
			want:   want{allowed: true},
		},
		{
			name:   "image mismatch still reports parsed desired and upgrade",
			reason: "callers may show the parsed version even for a refusal",
			req:    upgrade.VersionRequest{Desired: "2.5.0", Image: "openbao/openbao:2.4.0", CurrentVersion: "2.4.0"},
			want:   want{reason: upgrade.ReasonImageMismatch, upgrade: true, message: []string{"spec.image", "spec.version"}},
		},

		// Rule 4: skip warnings.
		{
			name:   "next minor",
			reason: "boundary: moving one minor version skips nothing and must not warn",
			req:    upgrade.VersionRequest{Desired: "2.4.0", CurrentVersion: "2.3.1"},
			want:   want{allowed: true, upgrade: true},
		},
		{
			name:   "skip one minor",
			reason: "boundary: two minors up skips exactly one, counted and named",
			req:    upgrade.VersionRequest{Desired: "2.5.0", CurrentVersion: "2.3.1"},
			want: want{allowed: true, upgrade: true, warnings: []upgrade.PolicyReason{upgrade.WarningMinorVersionSkip},
				warnText: []string{"upgrading from 2.3.1 to 2.5.0 skips 1 minor version (2.4);", "release notes"}},
		},
		{
			name:   "skip several minors",
			reason: "the count must be the number of minors in between, with a plural and a range",
			req:    upgrade.VersionRequest{Desired: "2.5.2", CurrentVersion: "2.1.0"},
			want: want{allowed: true, upgrade: true, warnings: []upgrade.PolicyReason{upgrade.WarningMinorVersionSkip},
				warnText: []string{"skips 3 minor versions (2.2 to 2.4);"}},
		},
		{
			name:   "skip counted on prerelease target",
			reason: "the prerelease part does not change which minors are skipped",
			req:    upgrade.VersionRequest{Desired: "2.5.0-rc1", CurrentVersion: "2.3.0"},
			want: want{allowed: true, upgrade: true, warnings: []upgrade.PolicyReason{upgrade.WarningMinorVersionSkip},
				warnText: []string{"skips 1 minor version"}},
		},
		{
			name:   "major bump",
			reason: "a major change warns even from the last minor, since no minor count describes it",
			req:    upgrade.VersionRequest{Desired: "3.0.0", CurrentVersion: "2.9.3"},
			want: want{allowed: true, upgrade: true, warnings: []upgrade.PolicyReason{upgrade.WarningMinorVersionSkip},
				warnText: []string{"upgrading from 2.9.3 to 3.0.0 crosses 1 major version;", "release notes"}},
		},
		{
			name:   "two major bumps",
			reason: "the number of majors is counted",
			req:    upgrade.VersionRequest{Desired: "v4.1.0", CurrentVersion: "2.0.0"},
			want: want{allowed: true, upgrade: true, warnings: []upgrade.PolicyReason{upgrade.WarningMinorVersionSkip},
				warnText: []string{"crosses 2 major versions"}},
		},
		{
			name:   "patch within a minor",
			reason: "patch jumps, however large, do not warn",
			req:    upgrade.VersionRequest{Desired: "2.4.9", CurrentVersion: "2.4.0"},
			want:   want{allowed: true, upgrade: true},
		},
		{
			name:   "warnings dropped on refusal",
			reason: "a refused request reports only the refusal so the person fixes that first",
			req:    upgrade.VersionRequest{Desired: "2.6.0", Image: "openbao/openbao:2.5.0", CurrentVersion: "2.3.0"},
			want:   want{reason: upgrade.ReasonImageMismatch, upgrade: true, message: []string{"spec.image"}},
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := upgrade.EvaluateVersion(tc.req)

			g.Expect(got.Allowed).To(Equal(tc.want.allowed), tc.reason)
			g.Expect(got.Reason).To(Equal(tc.want.reason), tc.reason)
			g.Expect(got.IsUpgrade).To(Equal(tc.want.upgrade), tc.reason)
			if tc.want.allowed {
				g.Expect(got.Message).To(BeEmpty(), tc.reason)
			} else {
				g.Expect(got.Message).NotTo(BeEmpty(), tc.reason)
				g.Expect(got.Warnings).To(BeEmpty(), tc.reason)
			}
			for _, s := range tc.want.message {
				g.Expect(got.Message).To(ContainSubstring(s), tc.reason)
			}
			if tc.want.noDesired {
				g.Expect(got.Desired).To(BeNil(), tc.reason)
			} else {
				g.Expect(got.Desired).NotTo(BeNil(), tc.reason)
				want, err := upgrade.ParseVersion(tc.req.Desired)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got.Desired.Equal(want)).To(BeTrue(), tc.reason)
			}

			var reasons []upgrade.PolicyReason
			var texts []string
			for _, w := range got.Warnings {
				reasons = append(reasons, w.Reason)
				texts = append(texts, w.Message)
			}
			if len(tc.want.warnings) == 0 {
				g.Expect(reasons).To(BeEmpty(), tc.reason)
			} else {
				g.Expect(reasons).To(Equal(tc.want.warnings), tc.reason)
			}
			joined := strings.Join(texts, "\n")
			for _, s := range tc.want.warnText {
				g.Expect(joined).To(ContainSubstring(s), tc.reason)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		in     string
		want   string // canonical String(); empty means an error is expected
	}{
		{name: "plain", reason: "the basic form", in: "2.4.0", want: "2.4.0"},
		{name: "leading v", reason: "the v is allowed and dropped from the canonical form", in: "v2.4.0", want: "2.4.0"},
		{name: "zeros", reason: "0 is a valid number in every position", in: "0.0.0", want: "0.0.0"},
		{name: "prerelease", reason: "rc builds are real versions", in: "2.5.0-rc1", want: "2.5.0-rc1"},
		{name: "dotted prerelease", reason: "dotted identifiers are semver", in: "2.5.0-beta.2", want: "2.5.0-beta.2"},
		{name: "build metadata", reason: "metadata is kept in the canonical form", in: "2.4.0+build.7", want: "2.4.0+build.7"},
		{name: "prerelease and metadata", reason: "both parts together", in: "v2.5.0-rc.1+sha.abc", want: "2.5.0-rc.1+sha.abc"},
		{name: "hyphen in prerelease", reason: "semver allows hyphens inside identifiers", in: "1.0.0-x-y.1", want: "1.0.0-x-y.1"},
		{name: "empty", reason: "no version at all", in: ""},
		{name: "two segments", reason: "go-version accepts it, strict semver does not", in: "2.4"},
		{name: "one segment", reason: "go-version accepts it, strict semver does not", in: "2"},
		{name: "four segments", reason: "go-version accepts it, strict semver does not", in: "2.4.0.1"},
		{name: "word", reason: "not a version", in: "latest"},
		{name: "uppercase V", reason: "only a lowercase v prefix is the convention", in: "V2.4.0"},
		{name: "double v", reason: "only one prefix", in: "vv2.4.0"},
		{name: "leading zero", reason: "semver forbids leading zeros in numbers", in: "2.04.0"},
		{name: "leading zero in prerelease number", reason: "semver forbids leading zeros in numeric identifiers", in: "2.4.0-01"},
		{name: "empty prerelease", reason: "a dash must be followed by an identifier", in: "2.4.0-"},
		{name: "empty metadata", reason: "a plus must be followed by an identifier", in: "2.4.0+"},
		{name: "empty prerelease identifier", reason: "dots must separate non-empty identifiers", in: "2.4.0-rc..1"},
		{name: "tilde", reason: "go-version accepts ~ in prereleases, semver does not", in: "2.4.0-rc~1"},
		{name: "whitespace", reason: "no trimming: what is stored is what is compared", in: "2.4.0 "},
		{name: "negative", reason: "not a number", in: "-2.4.0"},
		{name: "overflow", reason: "numbers beyond int64 are refused, not wrapped", in: "99999999999999999999.0.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := upgrade.ParseVersion(tc.in)
			if tc.want == "" {
				g.Expect(err).To(HaveOccurred(), tc.reason)
				g.Expect(got).To(BeNil(), tc.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			g.Expect(got.String()).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestParseImage(t *testing.T) {
	cases := []struct {
		name                string
		reason              string
		in                  string
		repo, tag, digest   string
		wantErr             bool
		wantErrContainsText string
	}{
		{name: "repo only", reason: "no tag and no digest is valid", in: "openbao/openbao", repo: "openbao/openbao"},
		{name: "single component", reason: "Docker Hub official style", in: "openbao", repo: "openbao"},
		{name: "tag", reason: "the common form", in: "ghcr.io/openbao/openbao:2.4.0", repo: "ghcr.io/openbao/openbao", tag: "2.4.0"},
		{name: "port no tag", reason: "the port colon is not a tag", in: "registry:5000/openbao/openbao", repo: "registry:5000/openbao/openbao"},
		{name: "port and tag", reason: "only the colon after the last slash is a tag", in: "registry:5000/openbao/openbao:2.4.0", repo: "registry:5000/openbao/openbao", tag: "2.4.0"},
		{name: "localhost", reason: "localhost is a registry even without a dot", in: "localhost/openbao:dev", repo: "localhost/openbao", tag: "dev"},
		{name: "ipv6 registry", reason: "bracketed IPv6 hosts contain colons that are not tags", in: "[fd00::1]:5000/openbao/openbao:2.4.0", repo: "[fd00::1]:5000/openbao/openbao", tag: "2.4.0"},
		{name: "uppercase registry", reason: "host names are case-insensitive", in: "Registry.Example.com/openbao/openbao", repo: "Registry.Example.com/openbao/openbao"},
		{name: "digest", reason: "digest-only pins content", in: "openbao/openbao@" + sha256Digest, repo: "openbao/openbao", digest: sha256Digest},
		{name: "tag and digest", reason: "both parts are returned", in: "registry:5000/openbao/openbao:2.4.0@" + sha256Digest, repo: "registry:5000/openbao/openbao", tag: "2.4.0", digest: sha256Digest},
		{name: "sha512", reason: "other verified algorithms are accepted", in: "openbao/openbao@" + sha512Digest, repo: "openbao/openbao", digest: sha512Digest},
		{name: "separators", reason: "., _, __ and dash runs are valid in paths", in: "a.b/c_d/e__f/g--h:v1_x.y-z", repo: "a.b/c_d/e__f/g--h", tag: "v1_x.y-z"},
		{name: "empty", reason: "nothing to pull", in: "", wantErr: true, wantErrContainsText: "empty"},
		{name: "empty repo with tag", reason: "a tag alone is not an image", in: ":2.4.0", wantErr: true, wantErrContainsText: "repository is empty"},
		{name: "empty repo with digest", reason: "a digest alone is not an image", in: "@" + sha256Digest, wantErr: true, wantErrContainsText: "repository is empty"},
		{name: "empty tag", reason: "a trailing colon is a typo", in: "openbao/openbao:", wantErr: true, wantErrContainsText: "tag"},
		{name: "space", reason: "whitespace never belongs in a reference", in: "openbao/openbao :2.4.0", wantErr: true, wantErrContainsText: "whitespace"},
		{name: "tab", reason: "any whitespace, not just spaces", in: "openbao/openbao\t", wantErr: true, wantErrContainsText: "whitespace"},
		{name: "uppercase path", reason: "runtimes refuse uppercase paths", in: "ghcr.io/OpenBao/openbao", wantErr: true, wantErrContainsText: "lowercase"},
		{name: "uppercase first component", reason: "without a dot or port it is a path, not a host, and is refused", in: "OpenBao/openbao", wantErr: true, wantErrContainsText: "lowercase"},
		{name: "short digest", reason: "sha256 needs 64 hex digits", in: "openbao/openbao@sha256:abc", wantErr: true, wantErrContainsText: "digest"},
		{name: "uppercase digest", reason: "digests are lowercase hex", in: "openbao/openbao@" + strings.ToUpper(sha256Digest), wantErr: true, wantErrContainsText: "digest"},
		{name: "unknown algorithm", reason: "runtimes cannot verify it", in: "openbao/openbao@md5:0123456789abcdef0123456789abcdef", wantErr: true, wantErrContainsText: "digest"},
		{name: "empty digest", reason: "a trailing @ is a typo", in: "openbao/openbao@", wantErr: true, wantErrContainsText: "digest"},
		{name: "double at", reason: "only one digest", in: "openbao/openbao@" + sha256Digest + "@" + sha256Digest, wantErr: true, wantErrContainsText: "digest"},
		{name: "tag starting with dot", reason: "tags start with a word character", in: "openbao/openbao:.x", wantErr: true, wantErrContainsText: "tag"},
		{name: "tag with plus", reason: "build metadata cannot be a tag", in: "openbao/openbao:2.4.0+abc", wantErr: true, wantErrContainsText: "tag"},
		{name: "long tag", reason: "tags are at most 128 characters", in: "openbao/openbao:" + strings.Repeat("a", 129), wantErr: true, wantErrContainsText: "tag"},
		{name: "empty path component", reason: "double slash", in: "openbao//openbao", wantErr: true, wantErrContainsText: "component"},
		{name: "trailing slash", reason: "empty last component", in: "openbao/", wantErr: true, wantErrContainsText: "component"},
		{name: "registry only", reason: "a registry without a path is not an image", in: "ghcr.io/", wantErr: true, wantErrContainsText: "path is empty"},
		{name: "bad registry", reason: "a host cannot start with a dash", in: "-bad.io/openbao", wantErr: true, wantErrContainsText: "registry"},
		{name: "bad port", reason: "a port is numeric", in: "registry:port/openbao", wantErr: true, wantErrContainsText: "registry"},
		{name: "too long", reason: "registries reject names over 255 characters", in: strings.Repeat("a", 256), wantErr: true, wantErrContainsText: "255"},
		{name: "colon without slash", reason: "a name cannot hold two colons", in: "foo:bar:baz", wantErr: true, wantErrContainsText: "component"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo, tag, digest, err := upgrade.ParseImage(tc.in)
			if tc.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErrContainsText)), tc.reason)
				g.Expect([]string{repo, tag, digest}).To(Equal([]string{"", "", ""}), tc.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			g.Expect(repo).To(Equal(tc.repo), tc.reason)
			g.Expect(tag).To(Equal(tc.tag), tc.reason)
			g.Expect(digest).To(Equal(tc.digest), tc.reason)
		})
	}
}

func TestDefaultAndResolveImage(t *testing.T) {
	cases := []struct {
		name, reason   string
		image, version string
		want           string
	}{
		{name: "default", reason: "empty spec.image uses the upstream image tagged with the version", version: "2.4.0", want: "ghcr.io/openbao/openbao:2.4.0"},
		{name: "default strips v", reason: "upstream tags have no leading v", version: "v2.4.0", want: "ghcr.io/openbao/openbao:2.4.0"},
		{name: "default prerelease", reason: "rc tags are used as is", version: "2.5.0-rc1", want: "ghcr.io/openbao/openbao:2.5.0-rc1"},
		{name: "explicit image wins", reason: "spec.image is used verbatim when set", image: "registry:5000/openbao/openbao:2.4.0", version: "2.9.9", want: "registry:5000/openbao/openbao:2.4.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(upgrade.ResolveImage(tc.image, tc.version)).To(Equal(tc.want), tc.reason)
			if tc.image == "" {
				g.Expect(upgrade.DefaultImage(tc.version)).To(Equal(tc.want), tc.reason)
			}
		})
	}
}

// conditionReason is the validation Kubernetes applies to
// metav1.Condition.Reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

func TestReasonsAreConditionReasons(t *testing.T) {
	// Reasons are copied into Kubernetes conditions; an invalid one would
	// make the status update fail.
	g := NewWithT(t)
	for _, r := range []upgrade.PolicyReason{
		upgrade.ReasonInvalidVersion, upgrade.ReasonDowngrade, upgrade.ReasonImageMismatch,
		upgrade.ReasonInvalidImage, upgrade.WarningMinorVersionSkip, upgrade.WarningUnknownCurrentVersion,
	} {
		g.Expect(string(r)).To(MatchRegexp(conditionReason.String()), "reason %q", r)
	}
}
