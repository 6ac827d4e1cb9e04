package upgrade_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

// officialSemver is the regular expression published on semver.org, plus an
// optional leading "v". It is written out here independently of the
// implementation so that the fuzz property checks ParseVersion against the
// specification, not against itself.
var officialSemver = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

var versionSeeds = []string{
	"", "2.4.0", "v2.4.0", "0.0.0", "2.5.0-rc1", "2.5.0-rc.1+build.7", "1.0.0-x-y.1", "1.0.0--",
	"2.4", "2", "2.4.0.1", "latest", "V2.4.0", "vv2.4.0", "02.4.0", "2.4.0-01", "2.4.0-", "2.4.0+",
	"2.4.0-rc~1", " 2.4.0", "2.4.0\n", "99999999999999999999.0.0", "1.0.0-99999999999999999999",
	"9223372036854775807.9223372036854775807.9223372036854775807", "2.4.0+abc",
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range versionSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := upgrade.ParseVersion(s)
		if err != nil {
			if v != nil {
				t.Fatalf("ParseVersion(%q) returned a version with error %v", s, err)
			}
			if err.Error() == "" {
				t.Fatalf("ParseVersion(%q) returned an empty error", s)
			}
			return
		}
		if !officialSemver.MatchString(s) {
			t.Fatalf("ParseVersion(%q) succeeded but the input is not strict semver", s)
		}
		canonical := v.String()
		if want := strings.TrimPrefix(s, "v"); canonical != want {
			t.Fatalf("ParseVersion(%q).String() = %q, want %q", s, canonical, want)
		}
		again, err := upgrade.ParseVersion(canonical)
		if err != nil {
			t.Fatalf("re-parsing %q (from %q) failed: %v", canonical, s, err)
		}
		if again.Compare(v) != 0 || !again.Equal(v) || again.String() != canonical {
			t.Fatalf("round trip of %q changed the version: %q", s, again.String())
		}
	})
}

func FuzzParseImage(f *testing.F) {
	for _, s := range []string{
		"", "openbao", "openbao/openbao", "ghcr.io/openbao/openbao:2.4.0", "registry:5000/openbao/openbao",
		"registry:5000/openbao/openbao:2.4.0", "localhost/openbao:dev", "[fd00::1]:5000/openbao/openbao:2.4.0",
		"openbao/openbao@" + sha256Digest, "ghcr.io/openbao/openbao:2.4.0@" + sha256Digest,
		"openbao/openbao@" + sha512Digest, ":2.4.0", "@" + sha256Digest, "openbao/openbao:", "openbao/openbao@",
		"OpenBao/openbao", "ghcr.io/OpenBao/openbao", "openbao/openbao :2.4.0", "openbao/openbao@sha256:abc",
		"foo:bar:baz", "a.b/c_d/e__f/g--h:v1_x.y-z", "openbao//openbao", "ghcr.io/", "-bad.io/x", "a@b@c",
		"registry:5000", "openbao/openbao:2.4.0+abc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		repo, tag, digest, err := upgrade.ParseImage(ref)
		if err != nil {
			if repo != "" || tag != "" || digest != "" {
				t.Fatalf("ParseImage(%q) returned parts with error %v", ref, err)
			}
			return
		}
		if repo == "" {
			t.Fatalf("ParseImage(%q) succeeded with an empty repository", ref)
		}
		if strings.ContainsAny(repo+tag+digest, " \t\n@") || strings.Contains(tag, ":") {
			t.Fatalf("ParseImage(%q) returned separators inside parts: %q %q %q", ref, repo, tag, digest)
		}
		rebuilt := repo
		if tag != "" {
			rebuilt += ":" + tag
		}
		if digest != "" {
			rebuilt += "@" + digest
		}
		if rebuilt != ref {
			t.Fatalf("ParseImage(%q) parts %q %q %q rebuild to %q", ref, repo, tag, digest, rebuilt)
		}
		// The repository alone must be a valid reference without a tag:
		// otherwise a registry port could have been mistaken for a tag.
		r2, t2, d2, err := upgrade.ParseImage(repo)
		if err != nil || r2 != repo || t2 != "" || d2 != "" {
			t.Fatalf("ParseImage(%q) = %q %q %q %v, want the repository back unchanged", repo, r2, t2, d2, err)
		}
	})
}

func FuzzEvaluateVersion(f *testing.F) {
	seeds := []struct{ desired, image, current string }{
		{"2.4.0", "", ""},
		{"v2.5.1", "", "2.4.0"},
		{"2.4.0", "", "2.4.0"},
		{"2.3.0", "", "2.4.0"},
		{"2.5.0-rc1", "", "2.5.0"},
		{"2.5.0", "", "2.5.0-rc1"},
		{"2.3.0", "", "garbage"},
		{"2.5.0", "", "2.3.1"},
		{"3.0.0", "", "2.9.3"},
		{"2.4", "", ""},
		{"", "", ""},
		{"2.4.0", "ghcr.io/openbao/openbao:2.4.1", ""},
		{"2.4.0", "ghcr.io/openbao/openbao:v2.4.0", ""},
		{"2.4.0", "openbao/openbao@" + sha256Digest, ""},
		{"2.4.0", "ghcr.io/openbao/openbao:2.3.0@" + sha256Digest, ""},
		{"2.4.0", "registry:5000/openbao/openbao:2.4.0", "2.3.0"},
		{"2.4.0", "registry:5000/openbao/openbao", ""},
		{"2.4.0", "openbao/openbao:latest", ""},
		{"2.4.0", "OpenBao/openbao:2.4.0", ""},
		{"2.4.0", " ", ""},
		{"2.4.0+abc", "", ""},
		{"1.0.0-" + strings.Repeat("a", 130), "", ""},
		{"9223372036854775807.9223372036854775807.0", "", "0.0.0"},
		{"0.9223372036854775807.0", "", "0.0.0"},
	}
	for _, s := range seeds {
		f.Add(s.desired, s.image, s.current)
	}
	f.Fuzz(func(t *testing.T, desired, image, current string) {
		req := upgrade.VersionRequest{Desired: desired, Image: image, CurrentVersion: current}
		d := upgrade.EvaluateVersion(req)
		checkDecision(t, req, d)

		// An image tagged with spec.version itself can never mismatch,
		// with or without a leading v on either side.
		for _, tag := range []string{desired, strings.TrimPrefix(desired, "v"), "v" + strings.TrimPrefix(desired, "v")} {
			req := upgrade.VersionRequest{Desired: desired, Image: "registry:5000/openbao/openbao:" + tag, CurrentVersion: current}
			d := upgrade.EvaluateVersion(req)
			checkDecision(t, req, d)
			if d.Reason == upgrade.ReasonImageMismatch {
				t.Fatalf("image tagged with spec.version refused as mismatch: %+v: %s", req, d.Message)
			}
		}
	})
}

// checkDecision asserts the invariants every Decision must satisfy.
func checkDecision(t *testing.T, req upgrade.VersionRequest, d upgrade.Decision) {
	t.Helper()
	if d.Allowed {
		if d.Reason != "" || d.Message != "" {
			t.Fatalf("%+v: allowed decision carries a refusal: %q %q", req, d.Reason, d.Message)
		}
	} else {
		if d.Reason == "" || d.Message == "" {
			t.Fatalf("%+v: refusal without reason or message: %q %q", req, d.Reason, d.Message)
		}
		if len(d.Warnings) != 0 {
			t.Fatalf("%+v: refusal carries warnings", req)
		}
	}
	for _, w := range d.Warnings {
		if w.Reason == "" || w.Message == "" {
			t.Fatalf("%+v: warning without reason or message: %+v", req, w)
		}
	}

	desired, err := upgrade.ParseVersion(req.Desired)
	if (err == nil) != (d.Desired != nil) {
		t.Fatalf("%+v: Desired is %v but ParseVersion error is %v", req, d.Desired, err)
	}
	if err != nil {
		if d.Reason != upgrade.ReasonInvalidVersion {
			t.Fatalf("%+v: invalid spec.version refused as %q", req, d.Reason)
		}
		return
	}
	if !d.Desired.Equal(desired) {
		t.Fatalf("%+v: Desired %s is not spec.version", req, d.Desired)
	}

	current, err := upgrade.ParseVersion(req.CurrentVersion)
	if err != nil {
		if d.IsUpgrade || d.Reason == upgrade.ReasonDowngrade {
			t.Fatalf("%+v: ordering claimed against an unknown current version", req)
		}
		return
	}
	if d.IsUpgrade != desired.GreaterThan(current) {
		t.Fatalf("%+v: IsUpgrade = %v", req, d.IsUpgrade)
	}
	if (d.Reason == upgrade.ReasonDowngrade) != desired.LessThan(current) {
		t.Fatalf("%+v: downgrade reason %q does not match ordering", req, d.Reason)
	}
}
