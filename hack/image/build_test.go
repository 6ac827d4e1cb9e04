package main

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	. "github.com/onsi/gomega"
)

// testBinary is a real Go executable (this repository's smallest command), so
// that the SBOM reads real build information.
func testBinary(t *testing.T) []byte {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "image")
	cmd := exec.Command("go", "build", "-trimpath", "-o", exe, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestImageIsReproducibleNonRootAndComplete(t *testing.T) {
	g := NewWithT(t)
	exe := testBinary(t)
	r := Release{Repository: "ghcr.io/baokeeper/baokeeper", Version: "0.1.0", Revision: "abc123", Created: time.Unix(1_780_000_000, 0).UTC()}
	sbom, err := SBOM(r, exe, "linux/amd64")
	g.Expect(err).NotTo(HaveOccurred())
	bins := []Binary{{OS: "linux", Arch: "amd64", Data: exe, SBOM: sbom}, {OS: "linux", Arch: "arm64", Data: exe, SBOM: sbom}}

	build := func() string {
		idx, err := Index(r, bins)
		g.Expect(err).NotTo(HaveOccurred())
		d, err := idx.Digest()
		g.Expect(err).NotTo(HaveOccurred())
		return d.String()
	}
	first := build()
	time.Sleep(1100 * time.Millisecond) // a build that depended on the clock would differ now
	g.Expect(build()).To(Equal(first), "two builds of the same input must give the same digest")

	// The layout names the image by repository:version, with one manifest per platform.
	dir := filepath.Join(t.TempDir(), "oci")
	idx, err := Index(r, bins)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(WriteLayout(dir, r, idx)).To(Succeed())
	p, err := layout.FromPath(dir)
	g.Expect(err).NotTo(HaveOccurred())
	top, err := p.ImageIndex()
	g.Expect(err).NotTo(HaveOccurred())
	tm, err := top.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tm.Manifests).To(HaveLen(1))
	g.Expect(tm.Manifests[0].Annotations).To(HaveKeyWithValue("org.opencontainers.image.ref.name", "ghcr.io/baokeeper/baokeeper:0.1.0"))
	inner, err := top.ImageIndex(tm.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	im, err := inner.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		img, err := inner.Image(m.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		cf, err := img.ConfigFile()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cf.Config.User).To(Equal("65532:65532"), "non-root by number, which runAsNonRoot can check")
		g.Expect(cf.Config.Entrypoint).To(Equal([]string{"/baokeeper"}))
		g.Expect(cf.Architecture).To(Equal(m.Platform.Architecture))
		g.Expect(cf.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", "0.1.0"))
		g.Expect(cf.Created.Time.Equal(r.Created)).To(BeTrue())

		files := map[string]int64{}
		rc := mutate.Extract(img)
		tr := newTarReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			files[h.Name] = h.Mode
			g.Expect(h.ModTime.Equal(r.Created)).To(BeTrue(), h.Name)
		}
		_ = rc.Close()
		g.Expect(files).To(HaveKeyWithValue("baokeeper", int64(0o755)))
		g.Expect(files).To(HaveKey("etc/passwd"))
		g.Expect(files).To(HaveKey("usr/share/sbom/baokeeper.spdx.json"))
		g.Expect(files).To(HaveKeyWithValue("tmp", int64(0o1777)))
		for name := range files {
			g.Expect(name).NotTo(HavePrefix("bin/"), "no shell or tools in the image")
		}
	}
	g.Expect(platforms).To(Equal([]string{"linux/amd64", "linux/arm64"}))
}

func TestSBOM(t *testing.T) {
	g := NewWithT(t)
	exe := testBinary(t)
	r := Release{Version: "0.1.0", Created: time.Unix(0, 0)}
	raw, err := SBOM(r, exe, "linux/amd64")
	g.Expect(err).NotTo(HaveOccurred())
	again, err := SBOM(r, exe, "linux/amd64")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(raw))
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name    string `json:"name"`
			Version string `json:"versionInfo"`
		} `json:"packages"`
	}
	g.Expect(json.Unmarshal(raw, &doc)).To(Succeed())
	g.Expect(doc.SPDXVersion).To(Equal("SPDX-2.3"))
	var names []string
	for _, p := range doc.Packages {
		names = append(names, p.Name+"@"+p.Version)
	}
	joined := strings.Join(names, " ")
	g.Expect(joined).To(ContainSubstring("baokeeper@0.1.0"))
	g.Expect(joined).To(ContainSubstring("github.com/google/go-containerregistry@v0.22.1"), "the modules linked in are listed with their versions")
}

func newTarReader(r io.Reader) *tar.Reader { return tar.NewReader(r) }
