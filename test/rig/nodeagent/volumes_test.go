package nodeagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fakeVolumes is a volumeReader with a counting token issuer.
type fakeVolumes struct {
	fakeObjects
	issued   int
	lifetime time.Duration
	now      time.Time
	fail     bool
	last     struct{ ns, sa, aud string }
}

func (f *fakeVolumes) RequestToken(_ context.Context, ns, sa, aud string, _ int64, _ string, _ types.UID) (string, time.Time, time.Time, error) {
	if f.fail {
		return "", time.Time{}, time.Time{}, errors.New("serviceaccounts \"x\" not found")
	}
	f.issued++
	f.last.ns, f.last.sa, f.last.aud = ns, sa, aud
	return "token-" + string(rune('0'+f.issued)), f.now, f.now.Add(f.lifetime), nil
}

func (f *fakeVolumes) ClaimPath(string, string) (string, error) { return "", nil }

func kubeAPIAccess() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		},
	}
}

func TestProjectedKubeAPIAccess(t *testing.T) {
	g := NewWithT(t)
	objs := testObjects()
	objs.configMaps["prod/kube-root-ca.crt"] = &corev1.ConfigMap{Data: map[string]string{"ca.crt": "CA PEM"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &fakeVolumes{fakeObjects: objs, lifetime: time.Hour, now: now}
	pod := testPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "bao" })
	var tokens tokenCache

	files, err := projectedFiles(context.Background(), r, &tokens, pod, kubeAPIAccess(), podFacts{}, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveLen(3), "token, ca.crt and namespace, like the ServiceAccount admission plugin's volume")
	g.Expect(string(files["token"].data)).To(Equal("token-1"))
	g.Expect(string(files["ca.crt"].data)).To(Equal("CA PEM"))
	g.Expect(string(files["namespace"].data)).To(Equal("prod"))
	g.Expect(files["token"].mode).To(Equal(os.FileMode(0o644)))
	g.Expect(r.last.sa).To(Equal("bao"), "the token is for the pod's service account")

	_, err = projectedFiles(context.Background(), r, &tokens, pod, kubeAPIAccess(), podFacts{}, now.Add(47*time.Minute))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.issued).To(Equal(1), "before 80% of the lifetime the cached token is used")

	files, err = projectedFiles(context.Background(), r, &tokens, pod, kubeAPIAccess(), podFacts{}, now.Add(49*time.Minute))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.issued).To(Equal(2), "after 80% of the lifetime the token is renewed")
	g.Expect(string(files["token"].data)).To(Equal("token-2"))

	r.fail = true
	files, err = projectedFiles(context.Background(), r, &tokens, pod, kubeAPIAccess(), podFacts{}, now.Add(3*time.Hour))
	g.Expect(err).NotTo(HaveOccurred(), "a failed renewal keeps the old token")
	g.Expect(string(files["token"].data)).To(Equal("token-2"))
}

func TestProjectedWaits(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name, reason string
		fail         bool
		src          *corev1.ProjectedVolumeSource
	}{
		{"no ca configmap", "a missing required ConfigMap makes the volume wait", false, kubeAPIAccess()},
		{"token refused", "a token that cannot be issued makes the volume wait", true, &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "openbao"}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &fakeVolumes{fakeObjects: testObjects(), lifetime: time.Hour, now: now, fail: tc.fail}
			_, err := projectedFiles(context.Background(), r, &tokenCache{}, testPod(), tc.src, podFacts{}, now)
			var we *waitError
			g.Expect(errors.As(err, &we)).To(BeTrue(), tc.reason)
		})
	}
}

func TestKeyFiles(t *testing.T) {
	data := map[string][]byte{"a": []byte("A"), "b": []byte("B")}
	cases := []struct {
		name, reason string
		items        []corev1.KeyToPath
		optional     bool
		want         map[string]volumeFile
		wantWait     bool
	}{
		{"all keys", "without items every key is a file with the default mode", nil, false,
			map[string]volumeFile{"a": {data: []byte("A"), mode: 0o640}, "b": {data: []byte("B"), mode: 0o640}}, false},
		{"items", "items choose keys, paths and modes", []corev1.KeyToPath{{Key: "a", Path: "dir/x.txt", Mode: ptr.To[int32](0o600)}}, false,
			map[string]volumeFile{"dir/x.txt": {data: []byte("A"), mode: 0o600}}, false},
		{"missing key", "a missing item key makes the volume wait", []corev1.KeyToPath{{Key: "c", Path: "c"}}, false, nil, true},
		{"missing optional", "a missing key of an optional source is skipped", []corev1.KeyToPath{{Key: "c", Path: "c"}, {Key: "b", Path: "b"}}, true,
			map[string]volumeFile{"b": {data: []byte("B"), mode: 0o640}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := keyFiles(data, tc.items, 0o640, tc.optional, "configmap \"x\"")
			if tc.wantWait {
				var we *waitError
				g.Expect(errors.As(err, &we)).To(BeTrue(), tc.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			g.Expect(got).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestSecretFilesOptional(t *testing.T) {
	g := NewWithT(t)
	files, err := secretFiles(testObjects(), "prod", "absent", nil, defaultFileMode, true)
	g.Expect(err).NotTo(HaveOccurred(), "an optional missing Secret is an empty volume")
	g.Expect(files).To(BeEmpty())
	_, err = secretFiles(testObjects(), "prod", "absent", nil, defaultFileMode, false)
	var we *waitError
	g.Expect(errors.As(err, &we)).To(BeTrue(), "a required missing Secret makes the volume wait")
	files, err = secretFiles(testObjects(), "prod", "creds", nil, defaultFileMode, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(files["token"].data)).To(Equal("s3cret"))
}

func TestTokenRefreshAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name, reason string
		requested    time.Duration
		life         time.Duration
		want         time.Duration
	}{
		{"as requested", "80% of the lifetime", time.Hour, time.Hour, 48 * time.Minute},
		{"extended", "an extended kube-api-access token is still renewed after 80% of what was requested", time.Hour, 365 * 24 * time.Hour, 48 * time.Minute},
		{"shorter", "a token shorter than requested is renewed by its real lifetime", time.Hour, 10 * time.Minute, 8 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(tokenRefreshAt(t0, tc.requested, t0.Add(tc.life))).To(Equal(t0.Add(tc.want)), tc.reason)
		})
	}
}

func inode(g Gomega, p string) uint64 {
	var st syscall.Stat_t
	g.Expect(syscall.Stat(p, &st)).To(Succeed())
	return st.Ino
}

func TestSyncDir(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(t.TempDir(), "vol")
	g.Expect(syncDir(dir, map[string]volumeFile{"keep": {data: []byte("1"), mode: 0o644}, "change": {data: []byte("old"), mode: 0o644},
		"gone": {data: []byte("x"), mode: 0o644}, "sub/nested": {data: []byte("n"), mode: 0o600}})).To(Succeed())
	keepIno, changeIno := inode(g, filepath.Join(dir, "keep")), inode(g, filepath.Join(dir, "change"))

	g.Expect(syncDir(dir, map[string]volumeFile{"keep": {data: []byte("1"), mode: 0o644}, "change": {data: []byte("new"), mode: 0o644},
		"sub/nested": {data: []byte("n"), mode: 0o600}})).To(Succeed())
	g.Expect(inode(g, filepath.Join(dir, "keep"))).To(Equal(keepIno), "an unchanged file is not rewritten")
	g.Expect(inode(g, filepath.Join(dir, "change"))).NotTo(Equal(changeIno), "a changed file is replaced by rename, never written in place")
	b, err := os.ReadFile(filepath.Join(dir, "change"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("new"))
	_, err = os.Stat(filepath.Join(dir, "gone"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "a key that disappeared is removed")
	fi, err := os.Stat(filepath.Join(dir, "sub/nested"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)), "modes are applied despite the umask")
	tmps, _ := filepath.Glob(filepath.Join(dir, ".rig-tmp-*"))
	g.Expect(tmps).To(BeEmpty(), "no temporary files are left")

	g.Expect(syncDir(dir, map[string]volumeFile{"../escape": {data: []byte("x")}})).NotTo(Succeed(), "paths may not leave the volume")
}

func TestDownwardAPIFiles(t *testing.T) {
	g := NewWithT(t)
	pod := testPod(func(p *corev1.Pod) { p.Labels = map[string]string{"b": "2", "a": "1"} })
	files, err := downwardAPIFiles(pod, []corev1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o600)},
	}, defaultFileMode, podFacts{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(files["labels"].data)).To(Equal("a=\"1\"\nb=\"2\""), "labels are sorted key=\"value\" lines like the kubelet writes them")
	g.Expect(files["name"]).To(Equal(volumeFile{data: []byte("bao-0"), mode: 0o600}))
}
