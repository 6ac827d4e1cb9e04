package nodeagent

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	corev1 "k8s.io/api/core/v1"
)

// refNameAnnotation names an image in an OCI layout's index.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// ociImage is an image unpacked from an OCI layout.
type ociImage struct {
	// digest is the platform manifest's digest (what a pod's imageID reports).
	digest v1.Hash
	// rootfs is where its layers were unpacked.
	rootfs string
	// exe is the entrypoint's executable inside rootfs.
	exe string
	// user is the image configuration's User ("65532:65532", "root", "").
	user string
}

// ociStore finds images in OCI image layouts (make image writes dist/oci) and
// unpacks each once, so that a pod runs the artifact a user installs, not a binary
// the rig maps a name to. Layouts are read at each lookup: an image rebuilt while
// the rig runs is picked up by the next container start.
type ociStore struct {
	layouts []string
	dir     string
	mu      sync.Mutex
}

// errNotInLayouts means no layout holds the image; the image map is tried next.
var errNotInLayouts = errors.New("not in any OCI layout")

// resolve returns the image for this machine's architecture, unpacked.
func (s *ociStore) resolve(image string) (*ociImage, error) {
	if s == nil || len(s.layouts) == 0 {
		return nil, errNotInLayouts
	}
	candidates := imageCandidates(image)
	digest := parseImage(image).digest
	for _, dir := range s.layouts {
		idx, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			continue
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, &imageError{msg: fmt.Sprintf("the OCI layout %s cannot be read: %v", dir, err)}
		}
		for _, d := range im.Manifests {
			ref := d.Annotations[refNameAnnotation]
			if !slices.Contains(candidates, ref) && (digest == "" || digest != d.Digest.String()) {
				continue
			}
			img, err := platformImage(idx, d)
			if err != nil {
				return nil, &imageError{msg: fmt.Sprintf("image %q in the OCI layout %s: %v", image, dir, err)}
			}
			return s.unpack(img)
		}
	}
	return nil, errNotInLayouts
}

// platformImage is the descriptor's image, or its index's image for linux and
// this machine's architecture.
func platformImage(idx v1.ImageIndex, d v1.Descriptor) (v1.Image, error) {
	if !d.MediaType.IsIndex() {
		return idx.Image(d.Digest)
	}
	inner, err := idx.ImageIndex(d.Digest)
	if err != nil {
		return nil, err
	}
	im, err := inner.IndexManifest()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, m := range im.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			return inner.Image(m.Digest)
		}
		if m.Platform != nil {
			have = append(have, m.Platform.OS+"/"+m.Platform.Architecture)
		}
	}
	return nil, fmt.Errorf("no manifest for linux/%s (the index has %s)", runtime.GOARCH, strings.Join(have, ", "))
}

// unpack extracts img's layers under s.dir/<digest>, once.
func (s *ociStore) unpack(img v1.Image) (*ociImage, error) {
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, &imageError{msg: fmt.Sprintf("image %s has no readable configuration: %v", digest, err)}
	}
	if len(cf.Config.Entrypoint) == 0 {
		return nil, &imageError{msg: fmt.Sprintf("image %s has no entrypoint", digest)}
	}
	root := filepath.Join(s.dir, digest.Hex, "rootfs")
	out := &ociImage{digest: digest, rootfs: root, exe: filepath.Join(root, cf.Config.Entrypoint[0]), user: cf.Config.User}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(filepath.Join(s.dir, digest.Hex, "done")); err == nil {
		return out, nil
	}
	tmp := root + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := untar(tar.NewReader(rc), tmp); err != nil {
		return nil, fmt.Errorf("failed to unpack image %s: %w", digest, err)
	}
	if err := os.RemoveAll(root); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, root); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, digest.Hex, "done"), nil, 0o644); err != nil {
		return nil, err
	}
	return out, nil
}

// untar writes regular files, directories and symlinks under dir, refusing paths
// that leave it.
func untar(tr *tar.Reader, dir string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("layer entry %q leaves the image's root", h.Name)
		}
		target := filepath.Join(dir, name)
		mode := os.FileMode(h.Mode & 0o777)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(target, mode|stickyOf(h.Mode)); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, target); err != nil && !os.IsExist(err) {
				return err
			}
		}
	}
}

func stickyOf(mode int64) os.FileMode {
	if mode&0o1000 != 0 {
		return os.ModeSticky
	}
	return 0
}

// nonRootProblem is the kubelet's runAsNonRoot check: with runAsNonRoot and no
// runAsUser, the image's user must be a number other than 0.
func nonRootProblem(runAsNonRoot bool, runAsUser *int64, imageUser, container string) string {
	if !runAsNonRoot {
		return ""
	}
	if runAsUser != nil {
		if *runAsUser == 0 {
			return fmt.Sprintf("container's runAsUser breaks non-root policy (container: %s)", container)
		}
		return ""
	}
	user, _, _ := strings.Cut(imageUser, ":")
	if user == "" || user == "root" || user == "0" {
		return fmt.Sprintf("container has runAsNonRoot and image will run as root (container: %s)", container)
	}
	if _, err := strconv.ParseInt(user, 10, 64); err != nil {
		return fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (container: %s)", user, container)
	}
	return ""
}

// containerExecutable is the executable a container's image stands for: its
// entrypoint, unpacked from an OCI layout, or the image map's binary.
func (a *agent) containerExecutable(pod *corev1.Pod, ctr *corev1.Container) (string, error) {
	img, err := a.oci.resolve(ctr.Image)
	if errors.Is(err, errNotInLayouts) {
		return resolveImage(a.cfg.ImageMap, ctr.Image, os.Stat)
	}
	if err != nil {
		return "", err
	}
	nonRoot, user := effectiveUser(pod, ctr)
	if p := nonRootProblem(nonRoot, user, img.user, ctr.Name); p != "" {
		return "", &configError{msg: p}
	}
	return img.exe, nil
}

// effectiveUser is runAsNonRoot and runAsUser of a container, its own over the pod's.
func effectiveUser(pod *corev1.Pod, ctr *corev1.Container) (bool, *int64) {
	var nonRoot bool
	var user *int64
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsNonRoot != nil {
			nonRoot = *psc.RunAsNonRoot
		}
		user = psc.RunAsUser
	}
	if sc := ctr.SecurityContext; sc != nil {
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
	}
	return nonRoot, user
}
