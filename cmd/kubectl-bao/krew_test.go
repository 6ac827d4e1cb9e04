package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/baokeeper/baokeeper/internal/cli/kubectlbao"
	"github.com/baokeeper/baokeeper/test/testenv"
)

// placeholderSHA256 is the SHA-256 of an empty file, the placeholder archive of
// plugins/bao.yaml until a release publishes real archives.
const placeholderSHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// krewTool builds a tool of krew v0.4.3 from its wrapper module hack/tools/krew into
// bin/ when it is missing there: krew's old dependencies stay out of baokeeper's
// go.mod. It needs the Go module proxy (or a warm module cache) the first time.
func krewTool(t *testing.T, name, pkg string) string {
	t.Helper()
	root := testenv.RepoRoot()
	bin := filepath.Join(root, "bin", name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH, so %s cannot be built: %v", name, err)
	}
	cmd := exec.Command(goBin, "build", "-C", filepath.Join(root, "hack", "tools", "krew"), "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("failed to build %s from hack/tools/krew (%v); it needs the Go module proxy or a module cache with krew v0.4.3:\n%s", name, err, out)
	}
	return bin
}

// manifest is what the tests read of plugins/bao.yaml.
type manifest struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Platforms        []struct {
			URI      string `json:"uri"`
			SHA256   string `json:"sha256"`
			Bin      string `json:"bin"`
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
		} `json:"platforms"`
	} `json:"spec"`
}

func readManifest(t *testing.T) (string, []byte, manifest) {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(), "plugins", "bao.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatalf("plugins/bao.yaml is not YAML: %v", err)
	}
	return path, raw, m
}

// TestKrewManifest runs krew's own validator (validate-krew-manifest of krew v0.4.3)
// on plugins/bao.yaml, and checks that it refuses a broken copy, so that a pass
// means something.
func TestKrewManifest(t *testing.T) {
	validator := krewTool(t, "validate-krew-manifest", "sigs.k8s.io/krew/cmd/validate-krew-manifest")
	path, raw, m := readManifest(t)

	// -skip-install: the install step downloads each platform's archive, which is not
	// published yet (TestKrewInstall installs from a local archive instead).
	out, err := exec.Command(validator, "-manifest", path, "-skip-install").CombinedOutput()
	if err != nil {
		t.Fatalf("validate-krew-manifest refuses plugins/bao.yaml: %v\n%s", err, out)
	}
	for _, want := range []string{"structural validation OK", "all spec.platform[] items are used", "no overlapping spec.platform[].selector"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the validator did not report %q:\n%s", want, out)
		}
	}

	broken := filepath.Join(t.TempDir(), "bao.yaml")
	if err := os.WriteFile(broken, []byte(strings.Replace(string(raw), "name: bao", "name: bao-cli", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(validator, "-manifest", broken, "-skip-install").CombinedOutput(); err == nil {
		t.Errorf("the validator accepts a manifest whose name differs from its file name:\n%s", out)
	}

	if m.Metadata.Name != "bao" {
		t.Errorf("metadata.name is %q; kubectl runs the plugin as kubectl bao, so it must be bao", m.Metadata.Name)
	}
	if short := kubectlbao.NewRootCommand(kubectlbao.Options{}).Short; m.Spec.ShortDescription != short {
		t.Errorf("spec.shortDescription %q differs from the command's own %q", m.Spec.ShortDescription, short)
	}
	semverTag := regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
	for _, p := range m.Spec.Platforms {
		if p.SHA256 != placeholderSHA256 {
			t.Errorf("%s: sha256 %s is not the placeholder; a real sum belongs with a published archive (update this test then)", p.URI, p.SHA256)
		}
		if !strings.HasPrefix(p.Bin, "kubectl-bao") || !semverTag.MatchString(m.Spec.Version) || !strings.Contains(p.URI, "/"+m.Spec.Version+"/") {
			t.Errorf("%s: bin %q and the uri must name kubectl-bao at spec.version %s", p.URI, p.Bin, m.Spec.Version)
		}
	}
}

// TestKrewInstall installs the plugin with krew itself from a local archive of
// this build (the layout a release publishes: kubectl-bao and LICENSE), with the
// manifest's sums set to that archive's, and runs the installed kubectl-bao: the
// manifest's bin and files put a working plugin on krew's PATH.
func TestKrewInstall(t *testing.T) {
	krew := krewTool(t, "kubectl-krew", "sigs.k8s.io/krew/cmd/krew")
	_, raw, m := readManifest(t)
	platform := false
	for _, p := range m.Spec.Platforms {
		if p.Selector.MatchLabels["os"] == runtime.GOOS && p.Selector.MatchLabels["arch"] == runtime.GOARCH {
			platform = true
		}
	}
	if !platform {
		t.Skipf("plugins/bao.yaml has no platform for %s/%s, so krew cannot install it here", runtime.GOOS, runtime.GOARCH)
	}
	dir := t.TempDir()
	exe := "kubectl-bao"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(goBin, "build", "-C", testenv.RepoRoot(), "-o", filepath.Join(dir, exe), "./cmd/kubectl-bao").CombinedOutput(); err != nil {
		t.Fatalf("failed to build kubectl-bao: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "LICENSE"), []byte("placeholder license of the test archive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "kubectl-bao.tar.gz")
	sum := tarGz(t, archive, dir, exe, "LICENSE")
	local := filepath.Join(dir, "bao.yaml")
	if err := os.WriteFile(local, []byte(strings.ReplaceAll(string(raw), placeholderSHA256, sum)), 0o644); err != nil {
		t.Fatal(err)
	}
	krewRoot := filepath.Join(dir, "krew")
	cmd := exec.Command(krew, "install", "--manifest="+local, "--archive="+archive)
	cmd.Env = append(os.Environ(), "KREW_ROOT="+krewRoot, "KREW_OS="+runtime.GOOS, "KREW_ARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl krew install refuses plugins/bao.yaml with a local archive: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(krewRoot, "bin", exe), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kubectl bao [command]") {
		t.Fatalf("the plugin krew installed does not run: %v\n%s", err, out)
	}
}

// tarGz writes the named files of dir into a gzipped tar and returns its SHA-256.
func tarGz(t *testing.T, path, dir string, names ...string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: int64(st.Mode().Perm()), Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
