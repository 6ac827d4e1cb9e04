package nodeagent

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// defaultFileMode is the kubelet's default mode of ConfigMap, Secret, projected and
// downward API volume files (0644).
const defaultFileMode int32 = 0o644

// volumeFile is one file of a materialized volume.
type volumeFile struct {
	data []byte
	mode os.FileMode
}

// waitError means a volume is not ready yet (a claim not bound, a Secret not there);
// containers wait with reason ContainerCreating and this message.
type waitError struct{ msg string }

func (e *waitError) Error() string { return e.msg }

// tokenRequester issues service account tokens through the TokenRequest API, bound to
// the pod.
type tokenRequester interface {
	RequestToken(ctx context.Context, namespace, serviceAccount, audience string, expirationSeconds int64, podName string, podUID types.UID) (token string, issued, expires time.Time, err error)
}

// claimResolver resolves a PersistentVolumeClaim to the host directory of its bound
// PersistentVolume.
type claimResolver interface {
	ClaimPath(namespace, claim string) (string, error)
}

// volumeReader is what volumes are built from.
type volumeReader interface {
	objectReader
	tokenRequester
	claimResolver
}

func modeOf(m *int32, def int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m) & 0o777
	}
	return os.FileMode(def) & 0o777
}

// keyFiles turns the data of a ConfigMap or Secret into files: every key, or only the
// listed items (a missing item key is an error unless optional).
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, defMode int32, optional bool, what string) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = volumeFile{data: v, mode: modeOf(nil, defMode)}
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, &waitError{msg: fmt.Sprintf("%s has no key %q", what, it.Key)}
		}
		files[it.Path] = volumeFile{data: v, mode: modeOf(it.Mode, defMode)}
	}
	return files, nil
}

func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}

// configMapFiles reads a ConfigMap volume source; a missing optional ConfigMap is empty.
func configMapFiles(objs objectReader, ns, name string, items []corev1.KeyToPath, defMode int32, optional bool) (map[string]volumeFile, error) {
	cm, err := objs.ConfigMap(ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			if optional {
				return map[string]volumeFile{}, nil
			}
			return nil, &waitError{msg: fmt.Sprintf("configmap %q not found", name)}
		}
		return nil, fmt.Errorf("failed to read configmap %s/%s: %w", ns, name, err)
	}
	return keyFiles(configMapData(cm), items, defMode, optional, fmt.Sprintf("configmap %q", name))
}

// secretFiles reads a Secret volume source; a missing optional Secret is empty.
func secretFiles(objs objectReader, ns, name string, items []corev1.KeyToPath, defMode int32, optional bool) (map[string]volumeFile, error) {
	s, err := objs.Secret(ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			if optional {
				return map[string]volumeFile{}, nil
			}
			return nil, &waitError{msg: fmt.Sprintf("secret %q not found", name)}
		}
		return nil, fmt.Errorf("failed to read secret %s/%s: %w", ns, name, err)
	}
	return keyFiles(s.Data, items, defMode, optional, fmt.Sprintf("secret %q", name))
}

// downwardAPIFiles renders downward API items.
func downwardAPIFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defMode int32, facts podFacts) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = podField(pod, it.FieldRef.FieldPath, facts)
		case it.ResourceFieldRef != nil:
			var ctr *corev1.Container
			if len(pod.Spec.Containers) > 0 {
				ctr = &pod.Spec.Containers[0]
			}
			v, err = resourceField(pod, ctr, it.ResourceFieldRef, facts)
		default:
			err = fmt.Errorf("downward API item %q has no source", it.Path)
		}
		if err != nil {
			return nil, err
		}
		files[it.Path] = volumeFile{data: []byte(v), mode: modeOf(it.Mode, defMode)}
	}
	return files, nil
}

// tokenCache keeps a pod's service account tokens and renews each at 80% of its
// lifetime, like the kubelet.
type tokenCache struct {
	entries map[string]cachedToken
}

type cachedToken struct {
	token     string
	refreshAt time.Time
}

// tokenRefreshAt is when a token issued at issued, requested for requested and
// expiring at expires, is renewed: after 80% of its lifetime (the shorter of requested
// and the real one, since the API server may extend kube-api-access tokens).
func tokenRefreshAt(issued time.Time, requested time.Duration, expires time.Time) time.Time {
	life := expires.Sub(issued)
	if requested > 0 && (life <= 0 || requested < life) {
		life = requested
	}
	return issued.Add(life * 8 / 10)
}

func (c *tokenCache) get(ctx context.Context, tr tokenRequester, pod *corev1.Pod, audience string, expSeconds int64, now time.Time) (string, error) {
	if c.entries == nil {
		c.entries = map[string]cachedToken{}
	}
	key := fmt.Sprintf("%s|%d", audience, expSeconds)
	if e, ok := c.entries[key]; ok && now.Before(e.refreshAt) {
		return e.token, nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tok, issued, expires, err := tr.RequestToken(ctx, pod.Namespace, sa, audience, expSeconds, pod.Name, pod.UID)
	if err != nil {
		if e, ok := c.entries[key]; ok {
			return e.token, nil // keep the old token until it can be renewed
		}
		return "", &waitError{msg: fmt.Sprintf("failed to request a token for service account %s/%s: %v", pod.Namespace, sa, err)}
	}
	c.entries[key] = cachedToken{token: tok, refreshAt: tokenRefreshAt(issued, time.Duration(expSeconds)*time.Second, expires)}
	return tok, nil
}

// projectedFiles renders a projected volume: service account tokens, ConfigMaps,
// Secrets and downward API items into one directory (later sources win).
func projectedFiles(ctx context.Context, r volumeReader, tokens *tokenCache, pod *corev1.Pod, src *corev1.ProjectedVolumeSource, facts podFacts, now time.Time) (map[string]volumeFile, error) {
	def := defaultFileMode
	if src.DefaultMode != nil {
		def = *src.DefaultMode
	}
	files := map[string]volumeFile{}
	merge := func(m map[string]volumeFile) {
		for k, v := range m {
			files[k] = v
		}
	}
	for _, s := range src.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			t := s.ServiceAccountToken
			exp := int64(3600)
			if t.ExpirationSeconds != nil {
				exp = *t.ExpirationSeconds
			}
			tok, err := tokens.get(ctx, r, pod, t.Audience, exp, now)
			if err != nil {
				return nil, err
			}
			files[t.Path] = volumeFile{data: []byte(tok), mode: modeOf(nil, def)}
		case s.ConfigMap != nil:
			m, err := configMapFiles(r, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, def, s.ConfigMap.Optional != nil && *s.ConfigMap.Optional)
			if err != nil {
				return nil, err
			}
			merge(m)
		case s.Secret != nil:
			m, err := secretFiles(r, pod.Namespace, s.Secret.Name, s.Secret.Items, def, s.Secret.Optional != nil && *s.Secret.Optional)
			if err != nil {
				return nil, err
			}
			merge(m)
		case s.DownwardAPI != nil:
			m, err := downwardAPIFiles(pod, s.DownwardAPI.Items, def, facts)
			if err != nil {
				return nil, err
			}
			merge(m)
		default:
			return nil, fmt.Errorf("projected volume source is not supported by the rig node agent (only serviceAccountToken, configMap, secret, downwardAPI)")
		}
	}
	return files, nil
}

// syncDir makes dir hold exactly files: a changed file is written to a temporary file
// and renamed over the old one, so readers see the old or the new content, never a
// mix; files that are no longer wanted are removed.
func syncDir(dir string, files map[string]volumeFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create volume directory %s: %w", dir, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	want := map[string]bool{}
	for _, n := range names {
		rel := filepath.Clean(n)
		if filepath.IsAbs(rel) || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("volume file path %q must be relative and stay inside the volume", n)
		}
		want[rel] = true
		f := files[n]
		p := filepath.Join(dir, rel)
		if cur, err := os.ReadFile(p); err == nil && bytes.Equal(cur, f.data) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() == f.mode.Perm() {
				continue
			}
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", filepath.Dir(p), err)
		}
		tmp := filepath.Join(filepath.Dir(p), ".rig-tmp-"+filepath.Base(p))
		if err := os.WriteFile(tmp, f.data, f.mode.Perm()); err != nil {
			return fmt.Errorf("failed to write %s: %w", tmp, err)
		}
		if err := os.Chmod(tmp, f.mode.Perm()); err != nil {
			return fmt.Errorf("failed to set the mode of %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, p); err != nil {
			return fmt.Errorf("failed to rename %s to %s: %w", tmp, p, err)
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !want[rel] {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("failed to remove stale volume file %s: %w", p, err)
			}
		}
		return nil
	})
}
