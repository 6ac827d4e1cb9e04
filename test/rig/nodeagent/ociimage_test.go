package nodeagent

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

// testLayout writes an OCI layout with a multi-platform index named ref, whose
// image for this machine holds /app (a script) and runs as user.
func testLayout(t *testing.T, ref, user string) (string, v1.Hash) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("#!/bin/sh\necho hello\n")
	for _, h := range []*tar.Header{
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "app", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(body))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			_, _ = tw.Write(body)
		}
	}
	_ = tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint, cf.Config.User = []string{"/app"}, user
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: empty.Image, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: other}}},
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	dir := filepath.Join(t.TempDir(), "oci")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: ref})); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	return dir, d
}

func TestOCIStore(t *testing.T) {
	g := NewWithT(t)
	dir, indexDigest := testLayout(t, "ghcr.io/baokeeper/baokeeper:0.1.0", "65532:65532")
	s := &ociStore{layouts: []string{filepath.Join(t.TempDir(), "missing"), dir}, dir: t.TempDir()}

	img, err := s.resolve("ghcr.io/baokeeper/baokeeper:0.1.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(img.user).To(Equal("65532:65532"))
	g.Expect(img.exe).To(Equal(filepath.Join(img.rootfs, "app")))
	got, err := os.ReadFile(img.exe)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(ContainSubstring("echo hello"))
	fi, err := os.Stat(img.exe)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o755)))
	tmp, err := os.Stat(filepath.Join(img.rootfs, "tmp"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tmp.Mode() & os.ModeSticky).NotTo(BeZero())

	// A second lookup reuses the unpacked image.
	again, err := s.resolve("ghcr.io/baokeeper/baokeeper:0.1.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.digest).To(Equal(img.digest))

	byDigest, err := s.resolve("ghcr.io/baokeeper/baokeeper@" + indexDigest.String())
	g.Expect(err).NotTo(HaveOccurred(), "an image pinned by the index digest")
	g.Expect(byDigest.digest).To(Equal(img.digest))

	_, err = s.resolve("ghcr.io/baokeeper/baokeeper:0.2.0")
	g.Expect(err).To(MatchError(errNotInLayouts), "another tag falls through to the image map")
	_, err = (*ociStore)(nil).resolve("x:1")
	g.Expect(err).To(MatchError(errNotInLayouts))
}

func TestNonRootProblem(t *testing.T) {
	g := NewWithT(t)
	zero, uid := int64(0), int64(1000)
	g.Expect(nonRootProblem(false, nil, "", "c")).To(BeEmpty())
	g.Expect(nonRootProblem(true, nil, "65532:65532", "c")).To(BeEmpty())
	g.Expect(nonRootProblem(true, nil, "", "c")).To(ContainSubstring("image will run as root"))
	g.Expect(nonRootProblem(true, nil, "0:0", "c")).To(ContainSubstring("image will run as root"))
	g.Expect(nonRootProblem(true, nil, "nonroot", "c")).To(ContainSubstring("non-numeric user (nonroot)"))
	g.Expect(nonRootProblem(true, &uid, "", "c")).To(BeEmpty(), "runAsUser wins over the image's user")
	g.Expect(nonRootProblem(true, &zero, "65532", "c")).To(ContainSubstring("runAsUser breaks non-root policy"))

	yes := true
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid}}}
	nonRoot, user := effectiveUser(pod, &corev1.Container{SecurityContext: &corev1.SecurityContext{RunAsUser: &zero}})
	g.Expect(nonRoot).To(BeTrue())
	g.Expect(*user).To(BeZero(), "the container's runAsUser over the pod's")
}
