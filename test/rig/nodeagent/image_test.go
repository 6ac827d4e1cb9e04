package nodeagent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseImage(t *testing.T) {
	cases := []struct {
		name, reason, in string
		want             imageRef
	}{
		{"hub short", "no host for a bare repository", "openbao/openbao:2.4.0", imageRef{repo: "openbao/openbao", tag: "2.4.0"}},
		{"registry", "a first element with a dot is a host", "ghcr.io/openbao/openbao:2.4.0", imageRef{host: "ghcr.io", repo: "openbao/openbao", tag: "2.4.0"}},
		{"registry port", "host:port is a host, the tag is after the last colon", "localhost:5000/x/y:1", imageRef{host: "localhost:5000", repo: "x/y", tag: "1"}},
		{"digest", "the digest is split off first", "ghcr.io/a/b:1@sha256:abc", imageRef{host: "ghcr.io", repo: "a/b", tag: "1", digest: "sha256:abc"}},
		{"no tag", "an untagged reference has no tag", "busybox", imageRef{repo: "busybox"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(parseImage(tc.in)).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestResolveImage(t *testing.T) {
	dir := t.TempDir()
	bao := filepath.Join(dir, "bao-2.4.0")
	keeper := filepath.Join(dir, "baokeeper")
	notExec := filepath.Join(dir, "data.txt")
	for _, f := range []string{bao, keeper} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{
		"ghcr.io/openbao/openbao:2.4.0":       bao,
		"baokeeper/baokeeper:latest":          keeper,
		"openbao/openbao:9.9.9":               filepath.Join(dir, "missing"),
		"openbao/openbao:text":                notExec,
		"quay.io/other/exact@sha256:deadbeef": keeper,
	}
	cases := []struct {
		name, reason, image, want string
		wantErr                   []string
	}{
		{name: "exact", reason: "the image as written is tried first", image: "ghcr.io/openbao/openbao:2.4.0", want: bao},
		{name: "without host", reason: "a map key without registry host matches an image with one", image: "docker.io/baokeeper/baokeeper:latest", want: keeper},
		{name: "digest ignored", reason: "repo:tag matches when the image pins a digest", image: "ghcr.io/openbao/openbao:2.4.0@sha256:0123", want: bao},
		{name: "implicit latest", reason: "an untagged image is :latest", image: "baokeeper/baokeeper", want: keeper},
		{name: "exact with digest", reason: "a key with a digest matches exactly", image: "quay.io/other/exact@sha256:deadbeef", want: keeper},
		{name: "unmapped", reason: "an unknown image names itself and the map", image: "ghcr.io/openbao/openbao:2.5.0",
			wantErr: []string{`"ghcr.io/openbao/openbao:2.5.0"`, "image map", "ghcr.io/openbao/openbao:2.4.0"}},
		{name: "missing file", reason: "a mapped path that does not exist is an error naming it", image: "openbao/openbao:9.9.9",
			wantErr: []string{"missing", "image map"}},
		{name: "not executable", reason: "a mapped file without exec bits is refused", image: "openbao/openbao:text",
			wantErr: []string{"not an executable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := resolveImage(m, tc.image, os.Stat)
			if tc.wantErr != nil {
				var ie *imageError
				g.Expect(errors.As(err, &ie)).To(BeTrue(), tc.reason)
				for _, s := range tc.wantErr {
					g.Expect(err.Error()).To(ContainSubstring(s), tc.reason)
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			g.Expect(got).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestCommandNames(t *testing.T) {
	cases := []struct {
		name, reason, image, exe string
		want                     []string
	}{
		{"openbao", "openbao images also provide bao", "ghcr.io/openbao/openbao:2.4.0", "/b/bao-2.4.0", []string{"openbao", "bao", "bao-2.4.0"}},
		{"baokeeper", "no duplicate names", "ghcr.io/baokeeper/baokeeper:latest", "/b/baokeeper", []string{"baokeeper"}},
		{"other", "an image without table entry gets its base name", "busybox:1", "/bin/busybox", []string{"busybox"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(commandNames(tc.image, tc.exe)).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestPlanCommand(t *testing.T) {
	const exe = "/rig/bin/bao-2.4.0"
	onPath := map[string]string{"bao": "/pod/bin/bao", "sh": "/bin/sh", "cat": "/usr/bin/cat"}
	lookPath := func(n string) (string, bool) { p, ok := onPath[n]; return p, ok }
	exists := func(p string) bool { return p == "/bin/sh" || p == "/usr/bin/env" }
	cases := []struct {
		name, reason  string
		command, args []string
		want          commandPlan
	}{
		{"no command", "the mapped executable stands in for the entrypoint", nil, []string{"server", "-dev"},
			commandPlan{path: exe, argv: []string{exe, "server", "-dev"}}},
		{"shell kept", "/bin/sh is kept so the script finds bao on PATH", []string{"/bin/sh", "-c"}, []string{"exec bao server"},
			commandPlan{path: "/bin/sh", argv: []string{"/bin/sh", "-c", "exec bao server"}}},
		{"bare shell", "a bare sh is found on PATH", []string{"sh", "-c", "true"}, nil,
			commandPlan{path: "/bin/sh", argv: []string{"sh", "-c", "true"}}},
		{"bare image name", "bao resolves through the bin dir symlink", []string{"bao", "server"}, nil,
			commandPlan{path: "/pod/bin/bao", argv: []string{"bao", "server"}}},
		{"bare host tool", "a bare name on the host PATH runs the host tool", []string{"cat", "/x"}, nil,
			commandPlan{path: "/usr/bin/cat", argv: []string{"cat", "/x"}}},
		{"bare unknown", "a bare name found nowhere runs the mapped executable", []string{"docker-entrypoint.sh", "server"}, nil,
			commandPlan{path: exe, argv: []string{"docker-entrypoint.sh", "server"}}},
		{"absolute missing", "an absolute path not on this machine runs the mapped executable", []string{"/usr/local/bin/bao"}, []string{"server"},
			commandPlan{path: exe, argv: []string{"/usr/local/bin/bao", "server"}}},
		{"absolute present", "an absolute path on this machine is kept", []string{"/usr/bin/env"}, []string{"true"},
			commandPlan{path: "/usr/bin/env", argv: []string{"/usr/bin/env", "true"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(planCommand(tc.command, tc.args, exe, lookPath, exists)).To(Equal(tc.want), tc.reason)
		})
	}
}
