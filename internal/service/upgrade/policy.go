package upgrade

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/hashicorp/go-version"
)

// PolicyReason is the machine-readable reason for a refusal or a warning.
// It is a CamelCase string so that callers can copy it verbatim into a
// Kubernetes condition reason or an event reason (both require that form),
// and so that code and alerts can match on it instead of parsing messages.
type PolicyReason string

// Refusal reasons, set in [Decision.Reason] when [Decision.Allowed] is false.
const (
	// ReasonInvalidVersion means spec.version is not a strict semantic
	// version. It is refused because every later step (ordering, the
	// downgrade check, the image tag) needs one unambiguous version: "2.4"
	// could be any 2.4.x release, and "latest" moves under our feet.
	ReasonInvalidVersion PolicyReason = "InvalidVersion"

	// ReasonDowngrade means spec.version is older than
	// status.currentVersion. It is refused because OpenBao does not support
	// downgrading in place: storage written by a newer version may not be
	// readable by an older one.
	ReasonDowngrade PolicyReason = "DowngradeRefused"

	// ReasonImageMismatch means the tag of spec.image names a different
	// version than spec.version. It is refused because the operator would
	// record and plan for one version while the pods run another.
	ReasonImageMismatch PolicyReason = "ImageVersionMismatch"

	// ReasonInvalidImage means spec.image (or the default image derived
	// from spec.version when spec.image is empty) is not a valid image
	// reference. It is refused here so the mistake shows up on the resource
	// instead of as pods stuck in InvalidImageName.
	ReasonInvalidImage PolicyReason = "InvalidImage"

	// ReasonFloatingImage: spec.image has no tag, or the tag latest, and no
	// digest, so what a member runs could change whenever it restarts.
	ReasonFloatingImage PolicyReason = "FloatingImage"
)

// Warning reasons, set in [Warning.Reason]. A warning never refuses a
// request; it tells a person about a risk they should check.
const (
	// WarningMinorVersionSkip means the upgrade jumps over at least one
	// minor version, or changes the major version. OpenBao allows it, but
	// each skipped release may carry upgrade notes that still apply.
	WarningMinorVersionSkip PolicyReason = "MinorVersionSkip"

	// WarningUnknownCurrentVersion means status.currentVersion is set but is
	// not a semantic version, so the downgrade check could not run. It is a
	// warning rather than a refusal for the reasons given in EvaluateVersion.
	WarningUnknownCurrentVersion PolicyReason = "UnknownCurrentVersion"
)

// DefaultImageRepository is the repository used when spec.image is empty. It
// is the upstream OpenBao image, whose tags are the release versions without
// a leading "v", which is what lets the operator derive an image from
// spec.version alone.
const DefaultImageRepository = "ghcr.io/openbao/openbao"

// VersionRequest is what the policy judges: the user's intent (spec) and what
// the operator last observed (status). It carries plain strings, exactly as
// they appear on the resource, so that messages can quote them back.
type VersionRequest struct {
	// Desired is spec.version, for example "2.4.0" or "v2.5.1".
	Desired string
	// Image is spec.image. Empty means the default image whose tag is
	// Desired (see ResolveImage).
	Image string
	// CurrentVersion is status.currentVersion: the version the cluster runs
	// now. Empty for a cluster that has not been rolled out yet.
	CurrentVersion string
}

// Decision is the outcome of EvaluateVersion. It is a value, not an error, so
// that callers can report a refusal as a condition and still use the parsed
// version and warnings.
type Decision struct {
	// Allowed is true when the request may proceed.
	Allowed bool
	// Reason says why the request was refused. Empty when Allowed.
	Reason PolicyReason
	// Message is a sentence a person can act on: what is wrong and which
	// field (spec.version, spec.image, status.currentVersion) to change.
	// Empty when Allowed.
	Message string
	// Warnings are risks that do not block the request, such as skipping
	// minor versions. Only set when Allowed, so that a person first fixes
	// the refusal without noise.
	Warnings []Warning
	// Desired is spec.version parsed. Set whenever spec.version parses, even
	// when the request is refused for another reason, so callers can still
	// show or compare it. Nil when spec.version is invalid.
	Desired *version.Version
	// IsUpgrade is true when status.currentVersion is set, parses, and is
	// older than spec.version. False for a new cluster, for an unchanged
	// version, and when status.currentVersion cannot be parsed (unknown).
	IsUpgrade bool
}

// Warning is a risk attached to an allowed Decision, kept separate from the
// refusal fields so that callers can surface it (for example as an admission
// warning or an event) without blocking the request.
type Warning struct {
	// Reason identifies the kind of warning, for matching in code.
	Reason PolicyReason
	// Message explains the risk and what to check, for a person.
	Message string
}

// strictSemver is the regular expression from semver.org, with an optional
// leading "v". go-version's own semver pattern is looser (it accepts "2.4",
// "2.4.0.1", leading zeros and "~"), so this one is applied first.
var strictSemver = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
	`(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// ParseVersion parses a strict semantic version, MAJOR.MINOR.PATCH with
// optional -prerelease and +build metadata and an optional leading "v". It
// refuses what go-version alone would accept but is not strict semver, such
// as "2.4", "2", "2.4.0.1", "02.4.0" or "latest", because a version that
// names a range of releases cannot be ordered or turned into an image tag.
func ParseVersion(s string) (*version.Version, error) {
	if s == "" {
		return nil, errors.New("version is empty")
	}
	if !strictSemver.MatchString(s) {
		return nil, fmt.Errorf("%q is not a semantic version: want MAJOR.MINOR.PATCH with optional -PRERELEASE and +BUILD, numbers without leading zeros, and an optional leading v", s)
	}
	v, err := version.NewSemver(s)
	if err != nil {
		// Reached for numbers too large for int64.
		return nil, fmt.Errorf("%q is not a usable semantic version: %w", s, err)
	}
	return v, nil
}

// DefaultImage returns the image used for a version when spec.image is
// empty: DefaultImageRepository tagged with the version without its leading
// "v", because upstream tags are "2.4.0", not "v2.4.0". It does not validate
// v; EvaluateVersion does.
func DefaultImage(v string) string {
	return DefaultImageRepository + ":" + strings.TrimPrefix(v, "v")
}

// ResolveImage returns the image the pods will run: spec.image when it is
// set, else DefaultImage(desiredVersion). It exists so that every caller makes the
// same choice the policy checked.
func ResolveImage(image, desiredVersion string) string {
	if image != "" {
		return image
	}
	return DefaultImage(desiredVersion)
}

// Image reference grammar, following the distribution/reference grammar
// that container runtimes use, so that what passes here also pulls.
var (
	// tagPattern: a word character, then up to 127 word characters, dots
	// and dashes.
	tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// pathComponentPattern: lowercase alphanumerics joined by ".", "_",
	// "__" or runs of "-".
	pathComponentPattern = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	// domainPattern: a DNS name or a bracketed IPv6 address, with an
	// optional port.
	domainPattern = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	// digestPattern: the algorithms runtimes verify, each with its exact
	// length of lowercase hex. A digest that is merely hex-shaped would be
	// accepted here and then fail at pull time.
	digestPattern = regexp.MustCompile(`^(?:sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})$`)
)

// maxNameLength is the longest repository name (registry included) that
// registries accept.
const maxNameLength = 255

// ParseImage splits an image reference into repository, tag and digest so
// the policy can compare the tag with spec.version. It handles registries
// with ports ("registry:5000/openbao/openbao:2.4.0"), digests
// ("openbao/openbao@sha256:..."), tag and digest together
// ("...:2.4.0@sha256:...") and no tag at all. repo is returned as written,
// registry included, without adding docker.io or library/. Either or both of
// tag and digest may be empty. It refuses references a runtime would refuse:
// empty repository, whitespace, uppercase in the repository path, invalid
// tags and malformed or unsupported digests.
func ParseImage(ref string) (repo, tag, digest string, err error) {
	if ref == "" {
		return "", "", "", errors.New("image reference is empty")
	}
	if strings.ContainsFunc(ref, unicode.IsSpace) {
		return "", "", "", errors.New("image reference contains whitespace")
	}
	name := ref
	if before, after, found := strings.Cut(ref, "@"); found {
		name, digest = before, after
		if !digestPattern.MatchString(digest) {
			return "", "", "", fmt.Errorf("digest %q is not valid: want sha256: followed by 64 lowercase hex digits (or sha384/sha512)", digest)
		}
	}
	// A tag follows the last colon, but only if that colon comes after the
	// last slash; a colon before it is a registry port.
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
		if !tagPattern.MatchString(tag) {
			return "", "", "", fmt.Errorf("tag %q is not valid: want up to 128 letters, digits, underscores, dots and dashes, not starting with a dot or dash", tag)
		}
	}
	if err := validateRepository(name); err != nil {
		return "", "", "", err
	}
	return name, tag, digest, nil
}

// validateRepository checks [registry[:port]/]path. The first component is
// a registry only if it contains "." or ":" or is "localhost". This is
// stricter than Docker, which also treats a first component with uppercase
// letters as a registry: "OpenBao/openbao" is far more likely a mistyped
// path than a host, so it is refused as uppercase instead of pulled from a
// host called OpenBao.
func validateRepository(name string) error {
	if name == "" {
		return errors.New("repository is empty")
	}
	if len(name) > maxNameLength {
		return fmt.Errorf("repository is %d characters long, more than the %d registries accept", len(name), maxNameLength)
	}
	path := name
	if first, rest, found := strings.Cut(name, "/"); found &&
		(strings.ContainsAny(first, ".:") || first == "localhost") {
		if !domainPattern.MatchString(first) {
			return fmt.Errorf("registry %q is not a valid host[:port]", first)
		}
		path = rest
	}
	if path == "" {
		return errors.New("repository path is empty")
	}
	for _, component := range strings.Split(path, "/") {
		if pathComponentPattern.MatchString(component) {
			continue
		}
		if strings.ToLower(component) != component {
			return fmt.Errorf("repository path %q must be lowercase", path)
		}
		return fmt.Errorf("repository path component %q is not valid: want lowercase letters and digits separated by single '.', '_', '__' or dashes", component)
	}
	return nil
}

// EvaluateVersion applies the version and image policy to req. The steps,
// in order, are listed in the package documentation; the first refusal
// wins, so a person fixes the most basic problem first. It never panics and
// always returns a Reason and Message when it refuses.
func EvaluateVersion(req VersionRequest) Decision {
	desired, err := ParseVersion(req.Desired)
	if err != nil {
		return refuse(Decision{}, ReasonInvalidVersion, invalidVersionMessage(req.Desired))
	}
	d := Decision{Desired: desired}

	var warnings []Warning
	if req.CurrentVersion != "" {
		current, err := ParseVersion(req.CurrentVersion)
		if err != nil {
			// status.currentVersion is written by the operator, not by the
			// user, so an unparsable value means a bug, an older operator or
			// a hand edit. Refusing would block every change, including the
			// rollout that writes a valid value back, and the message could
			// only ask the user to fix a status field they should not edit.
			// So the version is treated as unknown: no downgrade check, and
			// a warning so that the skipped check is visible.
			warnings = append(warnings, Warning{
				Reason: WarningUnknownCurrentVersion,
				Message: fmt.Sprintf("status.currentVersion %q is not a semantic version, so the downgrade check was skipped; "+
					"make sure spec.version %s is not older than the version the cluster actually runs", req.CurrentVersion, req.Desired),
			})
		} else {
			switch desired.Compare(current) {
			case -1:
				return refuse(d, ReasonDowngrade, fmt.Sprintf(
					"spec.version %s is older than the running version %s (status.currentVersion); "+
						"OpenBao does not support downgrades in place: set spec.version to %s or newer, "+
						"or restore a snapshot into a new cluster", req.Desired, req.CurrentVersion, req.CurrentVersion))
			case 1:
				d.IsUpgrade = true
				if w, ok := skipWarning(current, desired, req.CurrentVersion, req.Desired); ok {
					warnings = append(warnings, w)
				}
			}
		}
	}

	if reason, message := checkImage(req, desired); reason != "" {
		return refuse(d, reason, message)
	}

	d.Allowed = true
	d.Warnings = warnings
	return d
}

// refuse fills in a refusal. Warnings are dropped on purpose (see
// Decision.Warnings).
func refuse(d Decision, reason PolicyReason, message string) Decision {
	d.Allowed = false
	d.Reason = reason
	d.Message = message
	d.Warnings = nil
	return d
}

// invalidVersionMessage explains an unparsable spec.version and, where the
// intent is clear ("2.4", "v2", "02.4.0"), suggests the strict form.
func invalidVersionMessage(raw string) string {
	if raw == "" {
		return "spec.version is empty; set it to MAJOR.MINOR.PATCH, for example 2.4.0"
	}
	return fmt.Sprintf("spec.version %q is not a semantic version; set it to MAJOR.MINOR.PATCH, for example %s",
		raw, suggestVersion(raw))
}

// suggestVersion returns a strict version close to raw, or a generic
// example. A suggestion is only offered if it passes ParseVersion itself.
func suggestVersion(raw string) string {
	const example = "2.4.0"
	loose, err := version.NewVersion(raw)
	if err != nil || len(loose.Segments64()) != 3 {
		return example
	}
	// String() pads "2.4" to "2.4.0" and drops leading zeros and the "v".
	candidate := loose.String()
	if _, err := ParseVersion(candidate); err != nil {
		return example
	}
	return candidate
}

// skipWarning reports an upgrade that skips minor versions or changes the
// major version. It is only called for upgrades (desired > current).
func skipWarning(current, desired *version.Version, currentRaw, desiredRaw string) (Warning, bool) {
	cur, des := current.Segments64(), desired.Segments64()
	if des[0] != cur[0] {
		majors := des[0] - cur[0]
		return Warning{
			Reason: WarningMinorVersionSkip,
			Message: fmt.Sprintf("upgrading from %s to %s crosses %d major %s; "+
				"major versions may remove or change behaviour: read the release notes of every version from %s to %s first",
				currentRaw, desiredRaw, majors, plural(majors, "version", "versions"), currentRaw, desiredRaw),
		}, true
	}
	// des[1] >= cur[1] here, so the difference cannot overflow.
	if diff := des[1] - cur[1]; diff > 1 {
		skipped := diff - 1
		first, last := cur[1]+1, des[1]-1
		which := fmt.Sprintf("%d.%d", cur[0], first)
		if skipped > 1 {
			which = fmt.Sprintf("%d.%d to %d.%d", cur[0], first, cur[0], last)
		}
		return Warning{
			Reason: WarningMinorVersionSkip,
			Message: fmt.Sprintf("upgrading from %s to %s skips %d minor %s (%s); "+
				"OpenBao supports this but read the release notes of every skipped version first",
				currentRaw, desiredRaw, skipped, plural(skipped, "version", "versions"), which),
		}, true
	}
	return Warning{}, false
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// checkImage applies step 3 of the policy. It returns an empty reason when
// the image is acceptable.
func checkImage(req VersionRequest, desired *version.Version) (PolicyReason, string) {
	if req.Image == "" {
		// The default image is tagged with spec.version, so it cannot
		// mismatch, but it can be invalid: build metadata ("+abc") and very
		// long prereleases are valid semver but not valid tags.
		image := DefaultImage(req.Desired)
		if _, _, _, err := ParseImage(image); err != nil {
			return ReasonInvalidImage, fmt.Sprintf(
				"spec.image is empty, so the default image %s would be used, but it is not a valid image reference (%v); "+
					"remove the build metadata from spec.version or set spec.image", image, err)
		}
		return "", ""
	}

	_, tag, digest, err := ParseImage(req.Image)
	if err != nil {
		return ReasonInvalidImage, fmt.Sprintf(
			"spec.image %q is not a valid image reference (%v); set it to REPOSITORY[:TAG][@DIGEST], for example %s, "+
				"or leave it empty to use the default image", req.Image, err, exampleImage(desired))
	}
	if digest == "" && (tag == "" || tag == "latest") {
		// A tag that moves (no tag means latest) lets a member that restarts
		// for any reason pull another build, outside any upgrade.
		what := "has no tag"
		if tag != "" {
			what = "is tagged latest"
		}
		return ReasonFloatingImage, fmt.Sprintf(
			"spec.image %q %s, so a member that restarts could pull another build outside any upgrade; "+
				"pin it to a version tag such as %s or a digest (@sha256:...), or leave spec.image empty", req.Image, what, exampleImage(desired))
	}
	if tag == "" {
		// A digest only. It pins the exact content, and there is no version
		// written in it to compare with spec.version, so the user is trusted
		// to have pinned the right build.
		return "", ""
	}
	tagVersion, err := ParseVersion(tag)
	if err != nil {
		// "latest", "2.4", "main-abc": not a version, nothing to compare.
		return "", ""
	}
	if tagVersion.Equal(desired) {
		return "", ""
	}
	if digest != "" {
		// The digest decides what runs, but a version-looking tag next to
		// it is what people read, so a wrong one is still refused.
		return ReasonImageMismatch, fmt.Sprintf(
			"spec.image tag %s does not match spec.version %s; the image is pinned by digest, but the tag says a different version: "+
				"fix the tag or spec.version so they agree, or remove the tag and keep only the digest", tag, req.Desired)
	}
	return ReasonImageMismatch, fmt.Sprintf(
		"spec.image tag %s does not match spec.version %s; change one so they agree, or pin the image by digest",
		tag, req.Desired)
}

// exampleImage is a valid image for desired, for messages: the default
// repository tagged with the version without build metadata, which tags
// cannot carry.
func exampleImage(desired *version.Version) string {
	tag := desired.Core().String()
	if pre := desired.Prerelease(); pre != "" {
		tag += "-" + pre
	}
	return DefaultImage(tag)
}
