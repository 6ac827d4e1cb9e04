package nodeagent

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"
)

func TestParseKubeletAddr(t *testing.T) {
	cases := []struct {
		name, reason, addr string
		wantErr            string
	}{
		{"loopback", "127.0.0.1 with a port is accepted", "127.0.0.1:10250", ""},
		{"other loopback", "any address of 127.0.0.0/8 is loopback", "127.0.0.42:10250", ""},
		{"free port", "port 0 asks for a free port", "127.0.0.1:0", ""},
		{"pod network", "10.250.0.1 is not loopback, even inside the rig's namespace", "10.250.0.1:10250", "127.0.0.0/8"},
		{"all interfaces", "0.0.0.0 would expose exec to the network", "0.0.0.0:10250", "127.0.0.0/8"},
		{"ipv6 loopback", "only IPv4 loopback is allowed", "[::1]:10250", "127.0.0.0/8"},
		{"host name", "names are not resolved: localhost may not be loopback", "localhost:10250", "IP address"},
		{"no port", "a port is required", "127.0.0.1", "IP address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseKubeletAddr(tc.addr)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred(), tc.reason)
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)), tc.reason)
		})
	}
}

func TestKubeletAPIConfigValidate(t *testing.T) {
	files := KubeletAPIConfig{Addr: "127.0.0.1:10250", CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}
	cases := []struct {
		name, reason string
		cfg          KubeletAPIConfig
		wantErr      string
	}{
		{"off", "no address serves no kubelet API and needs no files", KubeletAPIConfig{}, ""},
		{"complete", "address and files are enough", files, ""},
		{"no client CA", "the API server's client certificate must be verified: no CA, no server",
			KubeletAPIConfig{Addr: files.Addr, CertFile: "c", KeyFile: "k"}, "ClientCAFile"},
		{"not loopback", "the address is checked", KubeletAPIConfig{Addr: "10.0.0.1:10250", CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}, "127.0.0.0/8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.cfg.validate()
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred(), tc.reason)
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)), tc.reason)
		})
	}
}

func TestExitError(t *testing.T) {
	cases := []struct {
		name, reason string
		code         int
		wantNil      bool
	}{
		{"success", "exit 0 is no error: VK reports success", 0, true},
		{"failure", "a non-zero exit is an ExitError with that status", 3, false},
		{"killed", "128+signal stays as it is", 137, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := exitError(tc.code)
			if tc.wantNil {
				g.Expect(err).NotTo(HaveOccurred(), tc.reason)
				return
			}
			// VK's ServeExec type-asserts (no errors.As), so the error itself must implement it.
			ee, ok := err.(utilexec.ExitError)
			g.Expect(ok).To(BeTrue(), tc.reason)
			g.Expect(ee.Exited()).To(BeTrue(), tc.reason)
			g.Expect(ee.ExitStatus()).To(Equal(tc.code), tc.reason)
			g.Expect(ee.Error()).To(ContainSubstring(fmt.Sprint(tc.code)), tc.reason)
		})
	}
}

func TestConfigureNodeAdvertisesKubelet(t *testing.T) {
	cases := []struct {
		name, reason string
		kubelet      kubeletEndpoint
		wantAddrs    []corev1.NodeAddress
		wantPort     int32
	}{
		{"no kubelet API", "without a kubelet API the node keeps NodeIP and no port",
			kubeletEndpoint{},
			[]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.0.1"}, {Type: corev1.NodeHostName, Address: "rig-node-1"}}, 0},
		{"loopback kubelet API", "the kubelet address comes first: the API server dials the first InternalIP",
			kubeletEndpoint{ip: "127.0.0.1", port: 10250},
			[]corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeInternalIP, Address: "10.250.0.1"},
				{Type: corev1.NodeHostName, Address: "rig-node-1"},
			}, 10250},
		{"same address", "an address is not listed twice (the API server rejects duplicates)",
			kubeletEndpoint{ip: "10.250.0.1", port: 10250},
			[]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.0.1"}, {Type: corev1.NodeHostName, Address: "rig-node-1"}}, 10250},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rig-node-1"}}
			configureNode(n, "10.250.0.1", tc.kubelet)
			g.Expect(n.Status.Addresses).To(Equal(tc.wantAddrs), tc.reason)
			g.Expect(n.Status.DaemonEndpoints.KubeletEndpoint.Port).To(Equal(tc.wantPort), tc.reason)
		})
	}
}

func TestLogView(t *testing.T) {
	cases := []struct {
		name, reason, in string
		tail, limit      int
		want             string
	}{
		{"all", "no tail and no limit is the whole log", "a\nb\nc\n", 0, 0, "a\nb\nc\n"},
		{"tail", "the last lines, the final newline kept", "a\nb\nc\n", 2, 0, "b\nc\n"},
		{"tail without final newline", "an unfinished last line counts as a line", "a\nb\nc", 2, 0, "b\nc"},
		{"tail longer than log", "asking for more lines than there are is the whole log", "a\nb\n", 5, 0, "a\nb\n"},
		{"tail one", "tail 1 is the last line only", "a\nb\n", 1, 0, "b\n"},
		{"limit", "limit keeps the first bytes, like the kubelet", "abcdef", 0, 3, "abc"},
		{"tail then limit", "the limit applies to the tail", "a\nbcd\nefg\n", 2, 5, "bcd\ne"},
		{"empty", "an empty log stays empty", "", 3, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(string(logView([]byte(tc.in), tc.tail, tc.limit))).To(Equal(tc.want), tc.reason)
		})
	}
}

// fakeAttach is an exec session's streams for RunInContainer tests.
type fakeAttach struct{ tty bool }

func (f fakeAttach) Stdin() io.Reader            { return nil }
func (f fakeAttach) Stdout() io.WriteCloser      { return nil }
func (f fakeAttach) Stderr() io.WriteCloser      { return nil }
func (f fakeAttach) TTY() bool                   { return f.tty }
func (f fakeAttach) Resize() <-chan api.TermSize { return nil }

func TestRunInContainerRefusals(t *testing.T) {
	a := &agent{}
	p := newProvider(a, "rig-node-1", nil)
	pr := &podRuntime{key: podKey("prod", "bao-0"), pod: testPod(withContainers("bao", "sidecar")), runners: map[string]*runner{
		"bao": {name: "bao"}, // started once, not running now
	}}
	p.pods[pr.key] = pr
	cases := []struct {
		name, reason, pod, container string
		tty                          bool
		cmd                          []string
		wantErr                      string
	}{
		{"tty", "TTY sessions are refused with what to do instead", "bao-0", "bao", true, []string{"sh"}, "without -t"},
		{"no command", "an empty command is refused", "bao-0", "bao", false, nil, "no command"},
		{"unknown pod", "a pod this node does not run is not found", "bao-1", "bao", false, []string{"true"}, "not running on node rig-node-1"},
		{"not started", "a container without a runner has not started", "bao-0", "sidecar", false, []string{"true"}, "has not been started"},
		{"not running", "a container between runs is not running", "bao-0", "bao", false, []string{"true"}, "is not running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := p.RunInContainer(context.Background(), "prod", tc.pod, tc.container, tc.cmd, fakeAttach{tty: tc.tty})
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)), tc.reason)
			var ee utilexec.ExitError
			g.Expect(errors.As(err, &ee)).To(BeFalse(), "a refusal is not an exit code")
		})
	}
}

func TestGetContainerLogs(t *testing.T) {
	dir := t.TempDir()
	a := &agent{}
	p := newProvider(a, "rig-node-1", nil)
	pr := &podRuntime{key: podKey("prod", "bao-0"), dir: dir, pod: testPod(withContainers("bao", "fresh")), runners: map[string]*runner{}}
	p.pods[pr.key] = pr
	g := NewWithT(t)
	g.Expect(os.WriteFile(pr.logPath("bao"), []byte("one\ntwo\nthree\n"), 0o644)).To(Succeed())
	cases := []struct {
		name, reason, pod, container string
		opts                         api.ContainerLogOpts
		want, wantErr                string
	}{
		{"whole log", "the log file as it is", "bao-0", "bao", api.ContainerLogOpts{}, "one\ntwo\nthree\n", ""},
		{"tail", "--tail keeps the last lines", "bao-0", "bao", api.ContainerLogOpts{Tail: 1}, "three\n", ""},
		{"limit", "--limit-bytes keeps the first bytes", "bao-0", "bao", api.ContainerLogOpts{LimitBytes: 5}, "one\nt", ""},
		{"no output yet", "a container that has not written a log has an empty one", "bao-0", "fresh", api.ContainerLogOpts{}, "", ""},
		{"unknown container", "a container the pod does not have is not found", "bao-0", "nope", api.ContainerLogOpts{}, "", "no container"},
		{"unknown pod", "a pod this node does not run is not found", "bao-9", "bao", api.ContainerLogOpts{}, "", "not running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rc, err := p.GetContainerLogs(context.Background(), "prod", tc.pod, tc.container, tc.opts)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)), tc.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			defer func() { _ = rc.Close() }()
			b, err := io.ReadAll(rc)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(b)).To(Equal(tc.want), tc.reason)
		})
	}
}

// testCerts are PEM files of a CA, a serving certificate for 127.0.0.1 and client
// certificates, one signed by the CA and one by another CA.
type testCerts struct {
	caFile, serverCert, serverKey, clientCert, clientKey, strangerCert, strangerKey string
}

func writeTestCerts(t *testing.T, dir string) testCerts {
	t.Helper()
	g := NewWithT(t)
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		g.Expect(err).NotTo(HaveOccurred())
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		g.Expect(err).NotTo(HaveOccurred())
		cert, err := x509.ParseCertificate(der)
		g.Expect(err).NotTo(HaveOccurred())
		return cert, key
	}
	write := func(name string, blockType string, der []byte) string {
		p := filepath.Join(dir, name)
		g.Expect(os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600)).To(Succeed())
		return p
	}
	issue := func(name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		g.Expect(err).NotTo(HaveOccurred())
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		g.Expect(err).NotTo(HaveOccurred())
		keyDER, err := x509.MarshalECPrivateKey(key)
		g.Expect(err).NotTo(HaveOccurred())
		return write(name+".crt", "CERTIFICATE", der), write(name+".key", "EC PRIVATE KEY", keyDER)
	}
	ca, caKey := newCA("test-rig-ca")
	other, otherKey := newCA("someone-else")
	var c testCerts
	c.caFile = write("ca.crt", "CERTIFICATE", ca.Raw)
	c.serverCert, c.serverKey = issue("kubelet", ca, caKey, 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	c.clientCert, c.clientKey = issue("apiserver", ca, caKey, 3, x509.ExtKeyUsageClientAuth, nil)
	c.strangerCert, c.strangerKey = issue("stranger", other, otherKey, 4, x509.ExtKeyUsageClientAuth, nil)
	return c
}

// echoKubelet answers every exec with stdin on stdout, "to stderr" on stderr and exit
// code 3, and every log request with "log of <ns>/<pod>/<container>".
type echoKubelet struct{}

func (echoKubelet) RunInContainer(_ context.Context, _, _, _ string, cmd []string, attach api.AttachIO) error {
	if _, err := io.Copy(attach.Stdout(), attach.Stdin()); err != nil {
		return err
	}
	if _, err := io.WriteString(attach.Stderr(), "to stderr: "+strings.Join(cmd, " ")); err != nil {
		return err
	}
	return exitError(3)
}

func (echoKubelet) GetContainerLogs(_ context.Context, ns, pod, container string, _ api.ContainerLogOpts) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("log of " + ns + "/" + pod + "/" + container)), nil
}

// TestKubeletAPIServer serves the kubelet API on a free loopback port and checks that
// only clients with a certificate of the client CA get in, that logs are served, and
// that exec streams stdin, stdout and stderr and carries the exit code the way the API
// server's client (client-go remotecommand over SPDY) reads it.
func TestKubeletAPIServer(t *testing.T) {
	g := NewWithT(t)
	certs := writeTestCerts(t, t.TempDir())
	srv, err := listenKubeletAPI(KubeletAPIConfig{Addr: "127.0.0.1:0", CertFile: certs.serverCert, KeyFile: certs.serverKey, ClientCAFile: certs.caFile})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv.serve(ctx, echoKubelet{})
	defer srv.close()
	g.Expect(srv.endpoint.ip).To(Equal("127.0.0.1"))
	g.Expect(srv.endpoint.port).To(BeNumerically(">", 0), "port 0 is replaced by the port listened on")
	base := fmt.Sprintf("https://127.0.0.1:%d", srv.endpoint.port)

	caPEM, err := os.ReadFile(certs.caFile)
	g.Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(caPEM)).To(BeTrue())
	clientFor := func(certFile, keyFile string) *http.Client {
		cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if certFile != "" {
			kp, err := tls.LoadX509KeyPair(certFile, keyFile)
			g.Expect(err).NotTo(HaveOccurred())
			cfg.Certificates = []tls.Certificate{kp}
		}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	cases := []struct {
		name, reason, cert, key string
		wantOK                  bool
	}{
		{"no client certificate", "anonymous clients fail the handshake", "", "", false},
		{"certificate of another CA", "only the client CA's certificates are accepted", certs.strangerCert, certs.strangerKey, false},
		{"certificate of the client CA", "the API server's kubelet client certificate gets the log", certs.clientCert, certs.clientKey, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			resp, err := clientFor(tc.cert, tc.key).Get(base + "/containerLogs/prod/bao-0/bao")
			if !tc.wantOK {
				g.Expect(err).To(HaveOccurred(), tc.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(resp.Body)
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), tc.reason)
			g.Expect(string(b)).To(Equal("log of prod/bao-0/bao"), tc.reason)
		})
	}

	t.Run("exec", func(t *testing.T) {
		g := NewWithT(t)
		restCfg := &rest.Config{Host: base, TLSClientConfig: rest.TLSClientConfig{CAFile: certs.caFile, CertFile: certs.clientCert, KeyFile: certs.clientKey}}
		u, err := url.Parse(base + "/exec/prod/bao-0/bao?command=bao&command=status&input=1&output=1&error=1")
		g.Expect(err).NotTo(HaveOccurred())
		ex, err := remotecommand.NewSPDYExecutor(restCfg, http.MethodPost, u)
		g.Expect(err).NotTo(HaveOccurred())
		in := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		var out, errOut bytes.Buffer
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		defer scancel()
		err = ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &errOut})
		var ee interface{ ExitStatus() int }
		g.Expect(errors.As(err, &ee)).To(BeTrue(), "the exit code reaches the client as an exit error: %v", err)
		g.Expect(ee.ExitStatus()).To(Equal(3), "the client sees the command's exit code")
		g.Expect(out.Len()).To(Equal(len(in)), "all of stdin came back on stdout")
		g.Expect(bytes.Equal(out.Bytes(), in)).To(BeTrue(), "stdout is stdin, byte for byte")
		g.Expect(errOut.String()).To(Equal("to stderr: bao status"), "stderr is its own stream and the command arrives")
	})
}
