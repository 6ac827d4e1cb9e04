package nodeagent

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// imageCommandNames lists, per image repository base name, the command names the image
// provides besides the base name itself. Each name becomes a symlink to the mapped
// executable in the container's bin directory, which is first on PATH, so a shell
// command such as "exec bao server" finds it.
var imageCommandNames = map[string][]string{
	"openbao":   {"bao"},
	"baokeeper": {"baokeeper"},
}

// imageRef is a parsed container image reference.
type imageRef struct {
	host   string // registry host, "" when the reference has none
	repo   string // repository path without host
	tag    string // "" when absent
	digest string // "" when absent, else "sha256:..."
}

// parseImage splits an image reference the way the Docker reference grammar does: the
// first path element is a registry host when it contains "." or ":" or is "localhost"
// and more elements follow.
func parseImage(image string) imageRef {
	var r imageRef
	rest := image
	if i := strings.Index(rest, "@"); i >= 0 {
		r.digest = rest[i+1:]
		rest = rest[:i]
	}
	if first, after, ok := strings.Cut(rest, "/"); ok &&
		(strings.ContainsAny(first, ".:") || first == "localhost") {
		r.host = first
		rest = after
	}
	// A tag is after the last ":" that follows the last "/".
	if i := strings.LastIndex(rest, ":"); i >= 0 && !strings.Contains(rest[i:], "/") {
		r.tag = rest[i+1:]
		rest = rest[:i]
	}
	r.repo = rest
	return r
}

// repoBase is the last path element of the repository, e.g. "openbao" for
// "ghcr.io/openbao/openbao:2.4.0".
func (r imageRef) repoBase() string { return path.Base(r.repo) }

// imageCandidates lists the image-map keys tried for image, in order: the reference as
// written, without the registry host, then "repo:tag" ignoring the digest (with and
// without host), then the same with Docker Hub's implicit "library/" and ":latest".
func imageCandidates(image string) []string {
	r := parseImage(image)
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	join := func(host, repo, tag, digest string) string {
		s := repo
		if host != "" {
			s = host + "/" + s
		}
		if tag != "" {
			s += ":" + tag
		}
		if digest != "" {
			s += "@" + digest
		}
		return s
	}
	add(image)
	add(join("", r.repo, r.tag, r.digest))
	tag := r.tag
	if tag == "" {
		tag = "latest"
	}
	for _, t := range []string{r.tag, tag} {
		add(join(r.host, r.repo, t, ""))
		add(join("", r.repo, t, ""))
		if lib, ok := strings.CutPrefix(r.repo, "library/"); ok {
			add(join("", lib, t, ""))
		}
	}
	return out
}

// imageError says that an image has no usable local executable; the container waits
// with reason ErrImagePull and this message.
type imageError struct{ msg string }

func (e *imageError) Error() string { return e.msg }

// resolveImage returns the local executable for image: the first of imageCandidates
// present in m. The executable must exist.
func resolveImage(m map[string]string, image string, stat func(string) (os.FileInfo, error)) (string, error) {
	for _, c := range imageCandidates(image) {
		exe, ok := m[c]
		if !ok {
			continue
		}
		fi, err := stat(exe)
		if err != nil {
			return "", &imageError{msg: fmt.Sprintf("image %q maps to %s, which cannot be used: %v (build it, or fix the rig's image map)", image, exe, err)}
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", &imageError{msg: fmt.Sprintf("image %q maps to %s, which is not an executable file (fix the rig's image map)", image, exe)}
		}
		return exe, nil
	}
	known := make([]string, 0, len(m))
	for k := range m {
		known = append(known, k)
	}
	sort.Strings(known)
	return "", &imageError{msg: fmt.Sprintf("image %q is not in the rig's image map (tried %s; known images: %s); add it to the image map (nodeagent.Config.ImageMap)",
		image, strings.Join(imageCandidates(image), ", "), strings.Join(known, ", "))}
}

// commandNames are the symlink names for an image's executable: the repository base
// name, the names in imageCommandNames for it, and the executable's own file name.
func commandNames(image, exe string) []string {
	base := parseImage(image).repoBase()
	names := []string{base}
	names = append(names, imageCommandNames[base]...)
	names = append(names, filepath.Base(exe))
	var out []string
	for _, n := range names {
		if n != "" && n != "." && n != "/" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// shells are kept as written when they are a container's command[0].
var shells = []string{"sh", "bash", "dash", "ash"}

// commandPlan is how a container's process is executed.
type commandPlan struct {
	path string   // executable path to exec
	argv []string // argv, argv[0] as the pod spec wrote it
}

// planCommand decides what to exec for a container whose image maps to exe. command and
// args are already expanded. lookPath searches the container's PATH (whose first entry
// is the container's bin directory with the image's command names); exists reports
// whether an absolute path exists on this machine.
//
// The rule, documented in doc.go:
//   - no command: exec exe with args (the mapped executable stands in for the image's
//     entrypoint);
//   - command[0] a shell (sh, bash, dash, ash, bare or absolute): keep it, found on PATH
//     when bare or missing here;
//   - command[0] an absolute or relative path: keep it when it exists on this machine,
//     else exec exe in its place;
//   - command[0] a bare name: the first match on PATH (so the image's own names resolve to
//     exe through the bin directory), else exe.
//
// argv[0] is always command[0] as written, so multi-call binaries still see their name.
func planCommand(command, args []string, exe string, lookPath func(string) (string, bool), exists func(string) bool) commandPlan {
	if len(command) == 0 {
		return commandPlan{path: exe, argv: append([]string{exe}, args...)}
	}
	argv := append(append([]string{}, command...), args...)
	c0 := command[0]
	switch {
	case slices.Contains(shells, path.Base(c0)):
		if strings.Contains(c0, "/") && exists(c0) {
			return commandPlan{path: c0, argv: argv}
		}
		if p, ok := lookPath(path.Base(c0)); ok {
			return commandPlan{path: p, argv: argv}
		}
		return commandPlan{path: c0, argv: argv}
	case strings.Contains(c0, "/"):
		if filepath.IsAbs(c0) && exists(c0) {
			return commandPlan{path: c0, argv: argv}
		}
		return commandPlan{path: exe, argv: argv}
	default:
		if p, ok := lookPath(c0); ok {
			return commandPlan{path: p, argv: argv}
		}
		return commandPlan{path: exe, argv: argv}
	}
}

// lookPathIn searches dirs (a PATH value) for an executable file named name.
func lookPathIn(pathEnv string, name string) (string, bool) {
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}
