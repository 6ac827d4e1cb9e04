package rig

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

const innerEnv = "BAOKEEPER_RIG_INNER_DIR"

// TestControlPlaneInNetns starts the real control plane inside a network namespace of
// its own (the test re-runs itself inside it), and reaches the API server from the
// host through the rig's port forward.
func TestControlPlaneInNetns(t *testing.T) {
	if dir := os.Getenv(innerEnv); dir != "" {
		runInner(t, dir)
		return
	}
	binDir := requireRigBins(t, "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
	g := NewWithT(t)
	dir := t.TempDir()
	ns := startInNetns(t, "baokeeper-rigtest-", "TestControlPlaneInNetns", innerEnv+"="+dir, "RIG_K8S_BIN="+binDir)

	g.Eventually(func() error { _, err := os.Stat(filepath.Join(dir, ReadyFile)); return err }, 3*time.Minute, 200*time.Millisecond).
		Should(Succeed(), "control plane ready inside the namespace (logs in %s/logs)", dir)

	// The API server is reached from the host only through the forwarded loopback port;
	// the test never dials 10.250.0.1 from the host, which would leave the machine.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	_ = l.Close()
	go func() { _ = ns.Forward(ctx, addr, APIServerIP+":6443") }()
	pool, err := loadPool(filepath.Join(dir, "pki", "ca.crt"))
	g.Expect(err).NotTo(HaveOccurred())
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	g.Eventually(func() (int, error) {
		resp, err := client.Get("https://" + addr + "/readyz")
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(http.StatusOK))

	// kubectl works with the rig's kubeconfig from inside the namespace.
	out, err := ns.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", filepath.Join(dir, KubeconfigFile), "get", "--raw", "/readyz").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(Equal("ok"))
}

// runInner runs inside the namespace: start the control plane, mark ready, wait for SIGTERM.
func runInner(t *testing.T, dir string) {
	g := NewWithT(t)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cp, err := startControlPlane(ctx, os.Getenv("RIG_K8S_BIN"), dir, net.ParseIP(APIServerIP), net.ParseIP(KubeletIP))
	g.Expect(err).NotTo(HaveOccurred())
	defer cp.stop()
	g.Expect(os.WriteFile(filepath.Join(dir, ReadyFile), []byte("ok"), 0o600)).To(Succeed())
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Minute):
		t.Error("inner control plane was not stopped within 5 minutes")
	}
}
