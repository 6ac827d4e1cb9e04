package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRootUID is the user and group the image runs as (the "nonroot" user of
// distroless images, which Kubernetes' runAsNonRoot accepts by number).
const NonRootUID = 65532

// Binary is the operator built for one platform.
type Binary struct {
	OS, Arch string
	// Data is the static executable.
	Data []byte
	// SBOM is the SPDX document of the modules linked into Data.
	SBOM []byte
}

// Release describes the image being built.
type Release struct {
	// Repository is the image name without tag, for example ghcr.io/baokeeper/baokeeper.
	Repository string
	// Version tags the image and labels it.
	Version string
	// Revision is the source revision (a git commit), or "".
	Revision string
	// Created is the image's creation time: the source's time, never the build's,
	// so that two builds of the same source give the same digest.
	Created time.Time
}

// Ref is the reference the OCI layout names the image by.
func (r Release) Ref() string { return r.Repository + ":" + r.Version }

// Image builds the image of one platform: the executable at /baokeeper (the
// entrypoint), an /etc/passwd and /etc/group naming the non-root user, a writable
// /tmp and home, and the SBOM at /usr/share/sbom/baokeeper.spdx.json. Nothing else:
// no shell, no package manager. Every timestamp is r.Created and every owner fixed.
func Image(r Release, b Binary) (v1.Image, error) {
	files := []tarFile{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", NonRootUID)},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRootUID, NonRootUID)},
		{name: "home/", dir: true, mode: 0o755},
		{name: "home/nonroot/", dir: true, mode: 0o700, uid: NonRootUID},
		{name: "tmp/", dir: true, mode: 0o1777},
		{name: "usr/", dir: true, mode: 0o755},
		{name: "usr/share/", dir: true, mode: 0o755},
		{name: "usr/share/sbom/", dir: true, mode: 0o755},
		{name: "usr/share/sbom/baokeeper.spdx.json", mode: 0o644, data: b.SBOM},
		{name: "baokeeper", mode: 0o755, data: b.Data},
	}
	tarBytes, err := writeTar(files, r.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("failed to build the layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: r.Created}, CreatedBy: "hack/image: baokeeper " + r.Version + " for " + b.OS + "/" + b.Arch},
	})
	if err != nil {
		return nil, fmt.Errorf("failed to add the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = b.OS, b.Arch
	cf.Created = v1.Time{Time: r.Created}
	cf.Config.Entrypoint = []string{"/baokeeper"}
	cf.Config.Cmd = nil
	cf.Config.User = fmt.Sprintf("%d:%d", NonRootUID, NonRootUID)
	cf.Config.WorkingDir = "/home/nonroot"
	cf.Config.Env = []string{"PATH=/", "HOME=/home/nonroot", "TMPDIR=/tmp"}
	cf.Config.Labels = labels(r)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("failed to set the image configuration: %w", err)
	}
	return img, nil
}

func labels(r Release) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "baokeeper",
		"org.opencontainers.image.description": "An operator that runs OpenBao Raft clusters and upgrades them without breaking Raft safety",
		"org.opencontainers.image.version":     r.Version,
		"org.opencontainers.image.source":      "https://github.com/baokeeper/baokeeper",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     r.Created.UTC().Format(time.RFC3339),
	}
	if r.Revision != "" {
		l["org.opencontainers.image.revision"] = r.Revision
	}
	return l
}

// Index is the multi-platform index of the images, in the order given.
func Index(r Release, binaries []Binary) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, b := range binaries {
		img, err := Image(r, b)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform:    &v1.Platform{OS: b.OS, Architecture: b.Arch},
			Annotations: map[string]string{"org.opencontainers.image.version": r.Version},
		}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// WriteLayout writes the index as an OCI image layout in dir (replacing what was
// there), named by r.Ref() through the org.opencontainers.image.ref.name annotation.
func WriteLayout(dir string, r Release, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to clear %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("failed to create the OCI layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": r.Ref(),
	})); err != nil {
		return fmt.Errorf("failed to write the image into %s: %w", dir, err)
	}
	return nil
}

// tarFile is one entry of the layer.
type tarFile struct {
	name string
	dir  bool
	mode int64
	uid  int
	data []byte
}

// writeTar writes files in name order, every entry at mtime with fixed owners, so
// that the layer's digest depends on the content alone.
func writeTar(files []tarFile, mtime time.Time) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("failed to write %s into the layer: %w", f.name, err)
		}
		if !f.dir {
			if _, err := tw.Write(f.data); err != nil {
				return nil, fmt.Errorf("failed to write %s into the layer: %w", f.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SBOM is an SPDX 2.3 document of the Go modules linked into the executable,
// read from its build information. It is deterministic: its time is the
// release's and its namespace derives from the executable's digest.
func SBOM(r Release, exe []byte, platform string) ([]byte, error) {
	bi, err := buildinfo.Read(bytes.NewReader(exe))
	if err != nil {
		return nil, fmt.Errorf("failed to read the build information of the executable: %w", err)
	}
	sum := sha256.Sum256(exe)
	type checksum struct {
		Algorithm string `json:"algorithm"`
		Value     string `json:"checksumValue"`
	}
	type extRef struct {
		Category string `json:"referenceCategory"`
		Type     string `json:"referenceType"`
		Locator  string `json:"referenceLocator"`
	}
	type pkg struct {
		SPDXID           string     `json:"SPDXID"`
		Name             string     `json:"name"`
		Version          string     `json:"versionInfo,omitempty"`
		Download         string     `json:"downloadLocation"`
		FilesAnalyzed    bool       `json:"filesAnalyzed"`
		Checksums        []checksum `json:"checksums,omitempty"`
		ExternalRefs     []extRef   `json:"externalRefs,omitempty"`
		PrimaryPurpose   string     `json:"primaryPackagePurpose,omitempty"`
		LicenseConcluded string     `json:"licenseConcluded"`
		LicenseDeclared  string     `json:"licenseDeclared"`
		CopyrightText    string     `json:"copyrightText"`
	}
	type rel struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
	main := pkg{SPDXID: "SPDXRef-Package-baokeeper", Name: "baokeeper", Version: r.Version, Download: "https://github.com/baokeeper/baokeeper",
		Checksums:      []checksum{{"SHA256", hex.EncodeToString(sum[:])}},
		ExternalRefs:   []extRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/" + bi.Main.Path + "@" + r.Version}},
		PrimaryPurpose: "APPLICATION", LicenseConcluded: "NOASSERTION", LicenseDeclared: "Apache-2.0", CopyrightText: "NOASSERTION"}
	pkgs := []pkg{main, {SPDXID: "SPDXRef-Package-go", Name: "go", Version: bi.GoVersion, Download: "https://go.dev/dl/",
		ExternalRefs:     []extRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/stdlib@" + strings.TrimPrefix(bi.GoVersion, "go")}},
		LicenseConcluded: "NOASSERTION", LicenseDeclared: "BSD-3-Clause", CopyrightText: "NOASSERTION"}}
	rels := []rel{{"SPDXRef-DOCUMENT", "DESCRIBES", main.SPDXID}, {main.SPDXID, "DEPENDS_ON", "SPDXRef-Package-go"}}
	for i, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		id := fmt.Sprintf("SPDXRef-Package-%d", i)
		p := pkg{SPDXID: id, Name: m.Path, Version: m.Version, Download: "https://proxy.golang.org/" + strings.ToLower(m.Path) + "/@v/" + m.Version + ".zip",
			ExternalRefs:     []extRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/" + m.Path + "@" + m.Version}},
			LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", CopyrightText: "NOASSERTION"}
		if h, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
			p.Checksums = nil
			p.ExternalRefs = append(p.ExternalRefs, extRef{"OTHER", "go-module-hash", "h1:" + h})
		}
		pkgs = append(pkgs, p)
		rels = append(rels, rel{main.SPDXID, "DEPENDS_ON", id})
	}
	doc := map[string]any{
		"spdxVersion":       "SPDX-2.3",
		"dataLicense":       "CC0-1.0",
		"SPDXID":            "SPDXRef-DOCUMENT",
		"name":              "baokeeper-" + r.Version + "-" + strings.ReplaceAll(platform, "/", "-"),
		"documentNamespace": "https://github.com/baokeeper/baokeeper/spdx/" + path.Join(r.Version, platform, hex.EncodeToString(sum[:8])),
		"creationInfo": map[string]any{
			"created":  r.Created.UTC().Format(time.RFC3339),
			"creators": []string{"Tool: baokeeper hack/image"},
		},
		"packages":      pkgs,
		"relationships": rels,
	}
	return json.MarshalIndent(doc, "", "  ")
}
