//go:build e2e

// Package e2e runs baokeeper end to end on the local rig: a real control plane and
// real OpenBao processes, with the operator installed by Helm 4 from charts/baokeeper
// (a shorter leader election) and running as a Deployment from the image make image
// builds, exactly as on a real cluster. The suite runs inside the rig's
// network namespace (make test-e2e arranges that).
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/test/rig"
	"github.com/baokeeper/baokeeper/test/testenv"
)

var (
	root       = testenv.RepoRoot()
	rigDir     string
	rigCmd     *exec.Cmd
	rigDone    = make(chan error, 1)
	kubeconfig string
	restCfg    *rest.Config
	k8s        client.Client
	cs         *kubernetes.Clientset
	scheme     = runtime.NewScheme()
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "baokeeper end to end on the local rig")
}

// Every top-level Describe carries SpecPriority(its duration in seconds, as measured
// in a parallel run): Ginkgo hands out the longest first, so the two processes end
// close together instead of one idling while the other runs a long Describe.
//
// The rig is shared by every Ginkgo process (make test-e2e runs two): process 1
// starts it and installs baokeeper, then hands the rig's directory to the others.
// Each Describe has a namespace of its own, so the processes never share a cluster.
var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	if err := rig.RequireInsideNetns(); err != nil {
		Fail("the e2e suite runs inside the rig's network namespace: use `make test-e2e` (" + err.Error() + ")")
	}
	rigBin := filepath.Join(root, "bin", "rig")
	_, err := os.Stat(rigBin)
	Expect(err).NotTo(HaveOccurred(), "bin/rig missing: use `make test-e2e`")

	rigDir = os.Getenv("BAOKEEPER_RIG_DIR")
	if rigDir == "" {
		rigDir, err = os.MkdirTemp("", "baokeeper-rig-")
		Expect(err).NotTo(HaveOccurred())
	}
	writeFlakyImage()
	writeFaultyExecutor()
	By("starting the rig in " + rigDir)
	// The members run at a higher CPU priority than the control plane and these
	// tests: two cores serve them all, and a member starved past Raft's leader lease
	// loses leadership for no reason a cluster with CPU per member would have.
	rigCmd = exec.Command(rigBin, "up", "--dir", rigDir, "--root", root, "--favor-images", "ghcr.io/openbao/openbao")
	logf, err := os.Create(filepath.Join(rigDir, "rig.log"))
	Expect(err).NotTo(HaveOccurred())
	rigCmd.Stdout, rigCmd.Stderr = logf, logf
	rigCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	Expect(rigCmd.Start()).To(Succeed())
	go func() { rigDone <- rigCmd.Wait() }()
	Eventually(func() error {
		select {
		case err := <-rigDone:
			rigDone <- err
			return StopTrying(fmt.Sprintf("rig exited: %v (see %s/rig.log)", err, rigDir))
		default:
		}
		_, err := os.Stat(filepath.Join(rigDir, rig.ReadyFile))
		return err
	}, 3*time.Minute, 250*time.Millisecond).Should(Succeed())

	connect()
	By("installing baokeeper with the chart through Helm 4, in cluster mode (a shorter leader election), leaving the chart release's namespaces alone")
	installSuiteOperator(ctx)
	By("starting Prometheus next to the rig: it scrapes the operator and the members and evaluates the shipped alerts for the whole run")
	startPrometheus(ctx)
	return []byte(rigDir)
}, func(dir []byte) {
	if rigDir == "" {
		rigDir = string(dir)
		connect()
	}
}, NodeTimeout(6*time.Minute))

// connect builds the clients of this process from the rig's kubeconfig.
func connect() {
	GinkgoHelper()
	kubeconfig = filepath.Join(rigDir, rig.KubeconfigFile)
	var err error
	restCfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(baov1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(restCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	cs, err = kubernetes.NewForConfig(restCfg)
	Expect(err).NotTo(HaveOccurred())
}

// Process 1 stops the rig once every process is done.
var _ = SynchronizedAfterSuite(func() {}, func() {
	if rigCmd == nil || rigCmd.Process == nil {
		return
	}
	stopPrometheus()
	By("stopping the rig")
	_ = syscall.Kill(-rigCmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-rigDone:
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-rigCmd.Process.Pid, syscall.SIGKILL)
	}
	if os.Getenv("BAOKEEPER_RIG_DIR") == "" && !CurrentSpecReport().Failed() {
		_ = os.RemoveAll(rigDir)
	}
})

var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() {
		AddReportEntry("rig logs", "control plane: "+filepath.Join(rigDir, "logs")+", pods: "+filepath.Join(rigDir, "nodes", "pods"))
		printLogs()
	}
})

// The failures again, each with its message, after every other node: a run's output
// is often kept only by its tail, and Ginkgo's closing summary names a failed spec's
// location but not what it found.
var _ = ReportAfterSuite("the failures, with their messages", func(report Report) {
	for _, s := range report.SpecReports {
		if !s.Failed() {
			continue
		}
		msg := s.Failure.Message
		if len(msg) > 5000 {
			msg = msg[:5000] + " ..."
		}
		GinkgoWriter.Printf("FAILED: %s\n  at %s\n  %s\n", s.FullText(), s.Failure.Location, msg)
	}
})

// kubectl runs the rig's kubectl and fails the spec on error.
func kubectl(ctx context.Context, args ...string) string {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "k8s-1.37.2", "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}

// printLogs prints the tail of every container log of the rig to the spec's output.
func printLogs() {
	logs, _ := filepath.Glob(filepath.Join(rigDir, "nodes", "pods", "*", "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		GinkgoWriter.Printf("==== %s (tail) ====\n%s\n", l, b)
	}
}

// flakyImage maps (test/rig/images.txt) to bin/bao-flaky: OpenBao 2.4.1 that exits at
// once until the suite creates the fix marker, like a broken image that gets fixed.
const flakyImage = "ghcr.io/openbao/openbao@sha256:0000000000000000000000000000000000000000000000000000000000000001"

func fixMarker() string { return filepath.Join(rigDir, "flaky-image-fixed") }

func writeFlakyImage() {
	GinkgoHelper()
	script := fmt.Sprintf("#!/bin/sh\n# Written by the e2e suite: a broken image until %[1]s exists.\n"+
		"[ -e %[1]q ] || { echo \"broken image: %[1]s does not exist\" >&2; exit 1; }\nexec %[2]q \"$@\"\n",
		fixMarker(), filepath.Join(root, "bin", "bao-2.4.1"))
	Expect(os.WriteFile(filepath.Join(root, "bin", "bao-flaky"), []byte(script), 0o755)).To(Succeed())
}
