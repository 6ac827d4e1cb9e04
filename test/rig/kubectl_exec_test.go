package rig

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/types"

	"github.com/baokeeper/baokeeper/test/rig/nodeagent"
	"github.com/baokeeper/baokeeper/test/testenv"
)

const execInnerEnv = "BAOKEEPER_RIG_EXEC_INNER_DIR"

// Names of the exec test's node, pod, container and image.
const (
	execNode      = "rig-node-1"
	execPod       = "exec-target"
	execContainer = "shell"
	execImage     = "rig.test/shell:1"
	// The isolated-network test's images: bash (for /dev/tcp) and the test binary as a
	// TCP server (TestMain's listenArg).
	bashImage     = "rig.test/bash:1"
	listenerImage = "rig.test/listener:1"
)

// requireRigBins returns bin/k8s-1.37.2, or skips (fails under `make test`) when one of
// the binaries is missing or the test is not root (it creates a network namespace).
func requireRigBins(t *testing.T, names ...string) string {
	t.Helper()
	binDir := filepath.Join(testenv.RepoRoot(), "bin", "k8s-1.37.2")
	for _, b := range names {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			if testenv.Required() {
				t.Fatalf("%s missing: run `make rig-bins`", b)
			}
			t.Skipf("%s missing from %s: run `make rig-bins`", b, binDir)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("the rig needs root to create a network namespace")
	}
	return binDir
}

// startInNetns creates a network namespace with APIServerIP on its loopback and runs
// the test binary inside it, running only testName with env; the process gets SIGTERM
// (SIGKILL after 60 s) and the namespace is deleted when the test ends.
func startInNetns(t *testing.T, prefix, testName string, env ...string) Netns {
	t.Helper()
	g := NewWithT(t)
	ns, err := CreateNetns(prefix+time.Now().Format("150405"), APIServerIP+"/32")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(ns.Delete()).To(Succeed()) })
	cmd := ns.Command(os.Args[0], "-test.run=^"+testName+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	g.Expect(cmd.Start()).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return ns
}

// kubectlResult is what one kubectl run printed and its exit code.
type kubectlResult struct {
	stdout []byte
	stderr string
	code   int
}

func (r kubectlResult) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, truncate(r.stdout, 300), r.stderr)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// TestKubectlExecAndLogs starts the control plane and the node agent (with its kubelet
// API) inside a network namespace of their own and runs the real kubectl against a pod:
// exec prints stdout and stderr, exec -i pipes megabytes of stdin through, a failing
// command's exit code is kubectl's, and logs prints the container log. It also checks
// the node's advertised kubelet endpoint and that the kubelet API refuses a client
// without a certificate of the rig CA.
func TestKubectlExecAndLogs(t *testing.T) {
	if dir := os.Getenv(execInnerEnv); dir != "" {
		runExecInner(t, dir)
		return
	}
	binDir := requireRigBins(t, "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
	g := NewWithT(t)
	dir := t.TempDir()
	ns := startInNetns(t, "baokeeper-rigexec-", "TestKubectlExecAndLogs", execInnerEnv+"="+dir, "RIG_K8S_BIN="+binDir)
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range []string{"nodeagent.log", "kube-apiserver.log"} {
				b, _ := os.ReadFile(filepath.Join(dir, "logs", f))
				t.Logf("last of %s:\n%s", f, lastBytes(b, 4000))
			}
		}
	})
	g.Eventually(func() error { _, err := os.Stat(filepath.Join(dir, ReadyFile)); return err }, 3*time.Minute, 200*time.Millisecond).
		Should(Succeed(), "control plane and node agent ready inside the namespace (logs in %s/logs)", dir)

	kubeconfig := filepath.Join(dir, KubeconfigFile)
	kubectl := func(stdin []byte, args ...string) kubectlResult {
		return runKubectl(ns, filepath.Join(binDir, "kubectl"), kubeconfig, stdin, args...)
	}
	wantOK := func(r kubectlResult, what string) {
		t.Helper()
		g.Expect(r.code).To(BeZero(), "%s: %s", what, r)
	}

	g.Eventually(func() kubectlResult {
		return kubectl(nil, "wait", "--for=condition=Ready", "node/"+execNode, "--timeout=10s")
	}, 90*time.Second, time.Second).
		Should(WithTransform(func(r kubectlResult) int { return r.code }, BeZero()), "the node is registered and Ready")
	r := kubectl(nil, "get", "node", execNode, "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port} {.status.addresses[0].type}={.status.addresses[0].address}")
	wantOK(r, "reading the node")
	g.Expect(string(r.stdout)).To(Equal(fmt.Sprintf("%d InternalIP=%s", KubeletPort, KubeletIP)), "the node advertises the kubelet API as its port and first InternalIP")

	termLog := filepath.Join(dir, "termination-log") // inside the test's directory: nothing is created on the host
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 2
  containers:
  - name: %s
    image: %s
    terminationMessagePath: %s
    command: ["sh", "-c", "echo hello-from-the-log; echo to-stderr >&2; exec sleep 3600"]
`, execPod, execContainer, execImage, termLog)
	g.Eventually(func() kubectlResult { return kubectl([]byte(manifest), "apply", "-f", "-") }, 60*time.Second, time.Second).
		Should(WithTransform(func(r kubectlResult) int { return r.code }, BeZero()), "the pod is created (once the default ServiceAccount exists)")
	wantOK(kubectl(nil, "wait", "--for=condition=Ready", "pod/"+execPod, "--timeout=120s"), "the pod becomes Ready")

	t.Run("exec prints stdout and stderr", func(t *testing.T) {
		g := NewWithT(t)
		r := kubectl(nil, "exec", execPod, "-c", execContainer, "--", "sh", "-c", `echo "hello from $HOSTNAME"; echo oops >&2`)
		g.Expect(r.code).To(BeZero(), "%s", r)
		g.Expect(string(r.stdout)).To(Equal("hello from "+execPod+"\n"), "stdout is the command's, with the container's environment")
		g.Expect(r.stderr).To(ContainSubstring("oops"), "stderr is passed on")
	})
	t.Run("exec finds the image's command on PATH", func(t *testing.T) {
		g := NewWithT(t)
		r := kubectl(nil, "exec", execPod, "-c", execContainer, "--", "shell", "-c", "echo via-image-name")
		g.Expect(r.code).To(BeZero(), "%s", r)
		g.Expect(string(r.stdout)).To(Equal("via-image-name\n"), "the image's base name resolves to the mapped executable, as bao does")
	})
	t.Run("exec -i pipes stdin through", func(t *testing.T) {
		g := NewWithT(t)
		in := make([]byte, 8<<20)
		_, err := rand.Read(in)
		g.Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(in)
		r := kubectl(in, "exec", "-i", execPod, "-c", execContainer, "--", "cat")
		g.Expect(r.code).To(BeZero(), "%s", r)
		g.Expect(len(r.stdout)).To(Equal(len(in)), "8 MiB in, 8 MiB out")
		got := sha256.Sum256(r.stdout)
		g.Expect(hex.EncodeToString(got[:])).To(Equal(hex.EncodeToString(sum[:])), "cat returns stdin byte for byte")

		r = kubectl(in, "exec", "-i", execPod, "-c", execContainer, "--", "sh", "-c", "sha256sum")
		g.Expect(r.code).To(BeZero(), "%s", r)
		g.Expect(strings.Fields(string(r.stdout))).To(HaveExactElements(hex.EncodeToString(sum[:]), "-"), "the command read all of stdin up to EOF")
	})
	t.Run("exec returns the exit code", func(t *testing.T) {
		g := NewWithT(t)
		r := kubectl(nil, "exec", execPod, "-c", execContainer, "--", "sh", "-c", "exit 3")
		g.Expect(r.code).To(Equal(3), "kubectl exec exits with the command's code: %s", r)
		g.Expect(r.stderr).To(ContainSubstring("exit code 3"))
	})
	t.Run("logs prints the container log", func(t *testing.T) {
		g := NewWithT(t)
		r := kubectl(nil, "logs", execPod, "-c", execContainer)
		g.Expect(r.code).To(BeZero(), "%s", r)
		g.Expect(string(r.stdout)).To(Equal("hello-from-the-log\nto-stderr\n"), "stdout and stderr of the container, in order")
		r = kubectl(nil, "logs", execPod, "-c", execContainer, "--tail=1")
		g.Expect(r.code).To(BeZero(), "%s", r)
		g.Expect(string(r.stdout)).To(Equal("to-stderr\n"), "--tail keeps the last line")
	})
	t.Run("an isolated pod has a network of its own, cut off while its veth is down", func(t *testing.T) {
		testIsolatedPods(t, ns, kubectl)
	})
	t.Run("a clock-adjustable pod reads the clock it is set to", func(t *testing.T) {
		testAdjustableClock(t, kubectl)
	})
	t.Run("kubelet API requires a rig CA client certificate", func(t *testing.T) {
		g := NewWithT(t)
		pool, err := loadPool(filepath.Join(dir, "pki", "ca.crt"))
		g.Expect(err).NotTo(HaveOccurred())
		kubeletURL := fmt.Sprintf("https://%s/containerLogs/default/%s/%s", net.JoinHostPort(KubeletIP, fmt.Sprint(KubeletPort)), execPod, execContainer)
		client := func(certs ...tls.Certificate) *http.Client {
			return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				// Inside the namespace: 127.0.0.1 there is the rig's loopback.
				DialContext: func(context.Context, string, string) (net.Conn, error) {
					return ns.Dial(net.JoinHostPort(KubeletIP, fmt.Sprint(KubeletPort)))
				},
				TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS12},
			}}
		}
		_, err = client().Get(kubeletURL)
		g.Expect(err).To(HaveOccurred(), "a client without a certificate is refused")

		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "pki", "apiserver-kubelet-client.crt"), filepath.Join(dir, "pki", "apiserver-kubelet-client.key"))
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := client(cert).Get(kubeletURL)
		g.Expect(err).NotTo(HaveOccurred(), "the API server's client certificate is accepted and the serving certificate verifies for %s", KubeletIP)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(b))
		g.Expect(string(b)).To(ContainSubstring("hello-from-the-log"))
	})
}

// runKubectl runs kubectl inside the namespace with stdin, for at most 2 minutes.
func runKubectl(ns Netns, kubectl, kubeconfig string, stdin []byte, args ...string) kubectlResult {
	cmd := ns.Command(append([]string{kubectl, "--kubeconfig", kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Start(); err != nil {
		return kubectlResult{stderr: err.Error(), code: -1}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		return kubectlResult{stdout: out.Bytes(), stderr: errOut.String() + " (killed after 2 minutes)", code: -1}
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return kubectlResult{stdout: out.Bytes(), stderr: errOut.String(), code: code}
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[len(b)-n:])
	}
	return string(b)
}

// runExecInner runs inside the namespace: the control plane, then the node agent with
// its kubelet API on KubeletIP:KubeletPort as `rig up` runs it (one node, an image map
// of /bin/sh), ready file, and both stopped on SIGTERM, the agent first.
func runExecInner(t *testing.T, dir string) {
	g := NewWithT(t)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cp, err := startControlPlane(ctx, os.Getenv("RIG_K8S_BIN"), dir, net.ParseIP(APIServerIP), net.ParseIP(KubeletIP))
	g.Expect(err).NotTo(HaveOccurred())
	defer cp.stop()

	logf, err := os.Create(filepath.Join(dir, "logs", "nodeagent.log"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = logf.Close() }()
	log := funcr.New(func(prefix, args string) {
		_, _ = fmt.Fprintf(logf, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: 1})
	cfg := (&ControlPlane{cp: cp}).NodeAgentConfig([]string{execNode}, filepath.Join(dir, "nodes"),
		map[string]string{execImage: "/bin/sh", bashImage: bashPath(t), listenerImage: selfPath(t)}, log.WithName("nodeagent"))
	agentCtx, stopAgent := context.WithCancel(context.Background())
	agentDone := make(chan error, 1)
	go func() { agentDone <- nodeagent.Run(agentCtx, cfg) }()
	defer func() {
		stopAgent()
		select {
		case err := <-agentDone:
			g.Expect(err).NotTo(HaveOccurred(), "the node agent stops cleanly")
		case <-time.After(60 * time.Second):
			t.Error("the node agent did not stop within 60 s")
		}
	}()
	g.Expect(os.WriteFile(filepath.Join(dir, ReadyFile), []byte("ok"), 0o600)).To(Succeed())
	select {
	case <-ctx.Done():
	case err := <-agentDone:
		agentDone <- err
		t.Errorf("the node agent stopped early: %v", err)
	case <-time.After(10 * time.Minute):
		t.Error("the inner rig was not stopped within 10 minutes")
	}
}

// testIsolatedPods runs two pods with a network namespace of their own (the
// rig.baokeeper.dev/pod-network annotation), one a TCP server with a TCP readiness
// probe, and checks what a partition spec relies on: each has eth0 in a namespace that
// is not the shared one; one reaches the other and the API server, and the rig (the
// agent's probe, a client) reaches the server; with the server's veth down, neither
// the other pod nor the probe reaches it, and everything comes back once it is up;
// deleting the pods removes their namespaces and veths.
func testIsolatedPods(t *testing.T, ns Netns, kubectl func([]byte, ...string) kubectlResult) {
	g := NewWithT(t)
	pod := func(name, image, command string, probe bool) string {
		m := annotatedPod(name, nodeagent.PodNetworkAnnotation, nodeagent.PodNetworkIsolated, image, command)
		if probe {
			m += "    readinessProbe:\n      tcpSocket: {port: 8080}\n      periodSeconds: 1\n      timeoutSeconds: 1\n      failureThreshold: 1\n"
		}
		return m
	}
	manifest := pod("net-client", bashImage, `["bash", "-c", "exec sleep 3600"]`, false) + "---\n" +
		pod("net-server", listenerImage, fmt.Sprintf(`["listener", "%s", "0.0.0.0:8080"]`, listenArg), true)
	r := kubectl([]byte(manifest), "apply", "-f", "-")
	g.Expect(r.code).To(BeZero(), "%s", r)
	r = kubectl(nil, "wait", "--for=condition=Ready", "pod/net-client", "pod/net-server", "--timeout=60s")
	g.Expect(r.code).To(BeZero(), "both pods Ready (the server through its TCP probe from the agent): %s", r)
	r = kubectl(nil, "get", "pod", "net-server", "-o", "jsonpath={.status.podIP} {.metadata.uid}")
	g.Expect(r.code).To(BeZero(), "%s", r)
	var serverIP, serverUID string
	_, err := fmt.Sscan(string(r.stdout), &serverIP, &serverUID)
	g.Expect(err).NotTo(HaveOccurred(), "%s", r)
	veth := nodeagent.PodVeth(types.UID(serverUID))

	execOut := func(pod string, script string) kubectlResult {
		return kubectl(nil, "exec", pod, "-c", "main", "--", "bash", "-c", script)
	}
	netnsOf := func(pod, ctr string) string {
		r := kubectl(nil, "exec", pod, "-c", ctr, "--", "readlink", "/proc/self/ns/net")
		g.Expect(r.code).To(BeZero(), "%s", r)
		return strings.TrimSpace(string(r.stdout))
	}
	shared := netnsOf(execPod, execContainer)
	client := netnsOf("net-client", "main")
	g.Expect(client).NotTo(Equal(shared), "the isolated pod's processes, kubectl exec included, run in a namespace of their own")
	r = execOut("net-client", "cat /proc/net/dev")
	g.Expect(r.code).To(BeZero(), "%s", r)
	g.Expect(string(r.stdout)).To(ContainSubstring("eth0:"))

	connect := fmt.Sprintf("timeout 3 bash -c 'exec 3<>/dev/tcp/%s/8080; cat <&3'", serverIP)
	reachAPI := fmt.Sprintf("timeout 3 bash -c 'exec 3<>/dev/tcp/%s/6443' && echo api-reached", APIServerIP)
	r = execOut("net-client", connect)
	g.Expect(r.code).To(BeZero(), "pod to pod through the rig: %s", r)
	g.Expect(string(r.stdout)).To(Equal("hello from net-server\n"))
	r = execOut("net-client", reachAPI)
	g.Expect(string(r.stdout)).To(Equal("api-reached\n"), "the API server from an isolated pod: %s", r)
	hello := func() (string, error) {
		c, err := ns.Dial(net.JoinHostPort(serverIP, "8080"))
		if err != nil {
			return "", err
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		b, err := io.ReadAll(c)
		return string(b), err
	}
	g.Expect(hello()).To(Equal("hello from net-server\n"), "the rig's namespace reaches the pod")

	inRig := func(fn func() error) error {
		// Partition and Heal run in the rig's namespace: the test re-runs itself there.
		return ns.Run(fn)
	}
	g.Expect(inRig(func() error { return nodeagent.Partition(types.UID(serverUID)) })).To(Succeed())
	r = execOut("net-client", connect)
	g.Expect(r.code).NotTo(BeZero(), "the partitioned pod answers nobody: %s", r)
	r = kubectl(nil, "wait", "--for=condition=Ready=false", "pod/net-server", "--timeout=30s")
	g.Expect(r.code).To(BeZero(), "the agent's probe no longer reaches it: %s", r)
	g.Expect(inRig(func() error { return nodeagent.Heal(types.UID(serverUID), serverIP) })).To(Succeed())
	g.Eventually(func() string { return string(execOut("net-client", connect).stdout) }, 30*time.Second, time.Second).
		Should(Equal("hello from net-server\n"), "healed")
	r = kubectl(nil, "wait", "--for=condition=Ready", "pod/net-server", "--timeout=30s")
	g.Expect(r.code).To(BeZero(), "%s", r)

	podNetns := filepath.Join("/run/netns", nodeagent.PodNetnsPrefix+strings.ReplaceAll(serverUID, "-", "")[:12])
	g.Expect(podNetns).To(BeAnExistingFile(), "the pod's network namespace, named after its UID")
	r = kubectl(nil, "delete", "pod", "net-client", "net-server", "--timeout=60s")
	g.Expect(r.code).To(BeZero(), "%s", r)
	g.Eventually(func() error { return ns.Command("ip", "link", "show", veth).Run() }, 30*time.Second, time.Second).
		ShouldNot(Succeed(), "the pod's veth goes with it")
	g.Expect(podNetns).NotTo(BeAnExistingFile(), "the pod's network namespace goes with it")
}

// testAdjustableClock runs a pod whose clock the rig can set off: its processes read
// the machine's time until an offset is set, then the offset time, and again the
// machine's once the offset is removed.
func testAdjustableClock(t *testing.T, kubectl func([]byte, ...string) kubectlResult) {
	g := NewWithT(t)
	const name = "clock-pod"
	manifest := annotatedPod(name, nodeagent.PodClockAnnotation, nodeagent.PodClockAdjustable, bashImage,
		`["bash", "-c", "while sleep 0.2; do date +%s; done"]`)
	r := kubectl([]byte(manifest), "apply", "-f", "-")
	g.Expect(r.code).To(BeZero(), "%s", r)
	r = kubectl(nil, "wait", "--for=condition=Ready", "pod/"+name, "--timeout=60s")
	g.Expect(r.code).To(BeZero(), "%s", r)
	t.Cleanup(func() {
		_ = nodeagent.SkewClock("default", name, 0)
		kubectl(nil, "delete", "pod", name, "--timeout=60s")
	})
	// offsets reads the time from an exec'd command and from the container's own
	// command, which starts date(1) every 200 ms.
	offsets := func() (exec, main time.Duration) {
		read := func(r kubectlResult) time.Duration {
			g.Expect(r.code).To(BeZero(), "%s", r)
			sec, err := strconv.ParseInt(strings.TrimSpace(string(r.stdout)), 10, 64)
			g.Expect(err).NotTo(HaveOccurred(), "%s", r)
			return time.Unix(sec, 0).Sub(time.Now())
		}
		time.Sleep(time.Second) // the container's next lines
		return read(kubectl(nil, "exec", name, "-c", "main", "--", "date", "+%s")), read(kubectl(nil, "logs", name, "-c", "main", "--tail=1"))
	}
	near := func(d time.Duration) OmegaMatcher { return BeNumerically("~", d, 3*time.Second) }
	e, m := offsets()
	g.Expect([]time.Duration{e, m}).To(HaveEach(near(0)), "no offset set")
	g.Expect(nodeagent.SkewClock("default", name, -10*time.Minute)).To(Succeed())
	e, m = offsets()
	g.Expect([]time.Duration{e, m}).To(HaveEach(near(-10*time.Minute)), "10 minutes behind")
	g.Expect(nodeagent.SkewClock("default", name, 0)).To(Succeed())
	e, m = offsets()
	g.Expect([]time.Duration{e, m}).To(HaveEach(near(0)), "set right again")
}

// annotatedPod is the manifest of a one-container pod (container "main") in the
// default namespace with one annotation; command is a YAML flow sequence.
func annotatedPod(name, annotation, value, image, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
  annotations:
    %s: %s
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: %s
`, name, annotation, value, image, command)
}

// bashPath is bash on this machine (the isolated-network test's client image).
func bashPath(t *testing.T) string {
	p, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed for the isolated-network test: %v", err)
	}
	return p
}

// selfPath is the test binary (the isolated-network test's server image).
func selfPath(t *testing.T) string {
	p, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary's path: %v", err)
	}
	return p
}
