package nodeagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// requireRoot skips tests that need to create mount namespaces.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: the pod exec helper needs root (CLONE_NEWNS, mount); run the tests as root")
	}
}

func readTrim(g Gomega, p string) string {
	b, err := os.ReadFile(p)
	g.Expect(err).NotTo(HaveOccurred(), "reading %s", p)
	return strings.TrimSpace(string(b))
}

// TestHelperRunsContainer runs one container through the real helper: a ConfigMap-like
// directory bind-mounted read-only at a path that does not exist yet, the pod's hosts
// file over /etc/hosts and its hostname, then /bin/sh reading them.
func TestHelperRunsContainer(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	root := t.TempDir()
	src := filepath.Join(root, "volumes", "config")
	g.Expect(os.MkdirAll(src, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(src, "key"), []byte("hello from the configmap\n"), 0o644)).To(Succeed())
	hosts := filepath.Join(root, "hosts")
	g.Expect(os.WriteFile(hosts, []byte("10.250.0.99\tbao-0.bao-internal.prod.svc\n"), 0o644)).To(Succeed())
	mountPath := filepath.Join(root, "mnt", "config")
	out := filepath.Join(root, "out")
	record := filepath.Join(root, "created-mountpoints.txt")
	script := strings.Join([]string{
		"cat " + mountPath + "/key > " + out + ".key",
		"cat /etc/hosts > " + out + ".hosts",
		"hostname > " + out + ".hostname",
		"(touch " + mountPath + "/new 2>/dev/null && echo rw || echo ro) > " + out + ".ro",
		"echo \"$GREETING\" > " + out + ".env",
		"pwd > " + out + ".pwd",
	}, " && ")
	spec := execSpec{
		Path: "/bin/sh", Argv: []string{"sh", "-c", script}, Dir: filepath.Join(root, "work"), Hostname: "bao-0",
		Mounts:    []bindMount{{Source: src, Target: mountPath, ReadOnly: true}},
		HostsFile: hosts, RecordFile: record,
	}
	logf, err := os.Create(filepath.Join(root, "container.log"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = logf.Close() }()
	hostBefore, _ := os.Hostname()

	p, err := startProcess("/proc/self/exe", spec, []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "GREETING=hi there"}, logf)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.pid).To(BeNumerically(">", 0))
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.signal(9)
		t.Fatal("the container did not finish within 30 s")
	}
	logText, _ := os.ReadFile(filepath.Join(root, "container.log"))
	g.Expect(p.exitCode).To(BeZero(), "container log: %s", logText)

	g.Expect(readTrim(g, out+".key")).To(Equal("hello from the configmap"), "the volume is mounted at its mountPath")
	g.Expect(readTrim(g, out+".hosts")).To(ContainSubstring("bao-0.bao-internal.prod.svc"), "/etc/hosts is the pod's hosts file")
	g.Expect(readTrim(g, out+".hostname")).To(Equal("bao-0"), "the container sees the pod's hostname")
	g.Expect(readTrim(g, out+".ro")).To(Equal("ro"), "a readOnly mount cannot be written")
	g.Expect(readTrim(g, out+".env")).To(Equal("hi there"), "the environment reaches the command")
	g.Expect(readTrim(g, out+".pwd")).To(Equal(filepath.Join(root, "work")), "the working directory is created and used")

	entries, err := os.ReadDir(mountPath)
	g.Expect(err).NotTo(HaveOccurred(), "the mount point was created on the host")
	g.Expect(entries).To(BeEmpty(), "the bind mount stayed inside the private mount namespace")
	g.Expect(readTrim(g, record)).To(Equal(filepath.Join(root, "mnt")+"\n"+mountPath), "created mount points are recorded, parents first")
	hostAfter, _ := os.Hostname()
	g.Expect(hostAfter).To(Equal(hostBefore), "the hostname changed only in the container's UTS namespace")
	hostsNow, _ := os.ReadFile("/etc/hosts")
	g.Expect(string(hostsNow)).NotTo(ContainSubstring("bao-0.bao-internal"), "the machine's /etc/hosts is untouched")
}

func TestHelperStartErrors(t *testing.T) {
	requireRoot(t)
	root := t.TempDir()
	cases := []struct {
		name, reason string
		spec         execSpec
		wantCode     int
		wantMsg      string
	}{
		{"missing executable", "an executable that is not there is exit 127 with the path in the message",
			execSpec{Path: filepath.Join(root, "nope"), Argv: []string{"nope"}, Dir: root}, exitCommandNotFound, "nope"},
		{"missing volume", "a mount source that is not there fails the setup with 125",
			execSpec{Path: "/bin/true", Argv: []string{"true"}, Dir: root, Mounts: []bindMount{{Source: filepath.Join(root, "absent"), Target: filepath.Join(root, "m")}}},
			exitSetupFailed, "absent"},
		{"relative target", "a relative mount path is refused",
			execSpec{Path: "/bin/true", Argv: []string{"true"}, Dir: root, Mounts: []bindMount{{Source: root, Target: "rel"}}},
			exitSetupFailed, "absolute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := startProcess("/proc/self/exe", tc.spec, []string{"PATH=/bin"}, os.Stderr)
			var se *startError
			g.Expect(errors.As(err, &se)).To(BeTrue(), tc.reason)
			g.Expect(se.code).To(Equal(tc.wantCode), tc.reason)
			g.Expect(se.msg).To(ContainSubstring(tc.wantMsg), tc.reason)
		})
	}
}

func TestRunHelperTimeout(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := runHelper(ctx, "/proc/self/exe", execSpec{Path: "/bin/sleep", Argv: []string{"sleep", "30"}, Dir: root}, []string{"PATH=/bin"})
	g.Expect(err).To(HaveOccurred(), "an exec probe that outlives its timeout fails")
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "the command is killed at the timeout")

	code, out, err := runHelper(context.Background(), "/proc/self/exe", execSpec{Path: "/bin/sh", Argv: []string{"sh", "-c", "echo out; exit 3"}, Dir: root}, []string{"PATH=/bin"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(3), "the exit code is reported")
	g.Expect(strings.TrimSpace(out)).To(Equal("out"), "output is captured")
}

func TestTailLog(t *testing.T) {
	cases := []struct {
		name, reason, in string
		lines, bytes     int
		want             string
	}{
		{"short", "a short log is kept", "a\nb\n", 80, 2048, "a\nb"},
		{"lines", "only the last lines are kept", "1\n2\n3\n4\n", 2, 2048, "3\n4"},
		{"bytes", "only the last bytes are kept", "abcdef", 80, 3, "def"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(tailLog([]byte(tc.in), tc.lines, tc.bytes)).To(Equal(tc.want), tc.reason)
		})
	}
}

// TestHelperReadOnlyRoot runs a container with readOnlyRootFilesystem: / cannot be
// written, its volumes can, and the host's / is writable afterwards, as before.
func TestHelperReadOnlyRoot(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	// On the root mount itself: t.TempDir() may be on a tmpfs of its own, which a
	// read-only / does not cover.
	onRoot, err := os.MkdirTemp("/var/tmp", "baokeeper-rootfs-")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.RemoveAll(onRoot) })
	vol := filepath.Join(onRoot, "volume")
	g.Expect(os.MkdirAll(vol, 0o755)).To(Succeed())
	mountPath := filepath.Join(onRoot, "mnt", "data")
	// The container writes its answers into its volume; the test reads them at the
	// volume's source.
	script := strings.Join([]string{
		"(touch " + onRoot + "/root-file 2>/dev/null && echo rw || echo ro) > " + mountPath + "/out.root",
		"(touch " + mountPath + "/volume-file 2>/dev/null && echo rw || echo ro) > " + mountPath + "/out.volume",
	}, " && ")
	out := filepath.Join(vol, "out")
	spec := execSpec{
		Path: "/bin/sh", Argv: []string{"sh", "-c", script}, Dir: onRoot, ReadOnlyRoot: true,
		Mounts: []bindMount{{Source: vol, Target: mountPath}},
	}
	logf, err := os.Create(filepath.Join(vol, "container.log"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = logf.Close() }()
	p, err := startProcess("/proc/self/exe", spec, []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}, logf)
	g.Expect(err).NotTo(HaveOccurred())
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.signal(9)
		t.Fatal("the container did not finish within 30 s")
	}
	logText, _ := os.ReadFile(filepath.Join(vol, "container.log"))
	g.Expect(p.exitCode).To(BeZero(), "container log: %s", logText)
	g.Expect(readTrim(g, out+".root")).To(Equal("ro"), "the root file system is read-only for the container")
	g.Expect(readTrim(g, out+".volume")).To(Equal("rw"), "its volume is writable")
	g.Expect(filepath.Join(vol, "volume-file")).To(BeAnExistingFile())
	g.Expect(os.WriteFile(filepath.Join(onRoot, "host-file"), []byte("x"), 0o644)).To(Succeed(), "the host's / is as writable as before")
}
