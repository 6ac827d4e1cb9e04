package kubectlbao

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func withHistory(entries ...baov1.HistoryEntry) option {
	return func(c *baov1.OpenBaoCluster) { c.Status.History = entries }
}

func withFailure() option {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1",
			Failure: &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout, Message: "bao-2 did not become Ready within 10m0s"}}
	}
}

var _ = Describe("history, fleet, wait, pause --annotation and report", func() {
	It("prints the history and one line per cluster of every namespace", func() {
		ended := metav1.NewTime(time.Now().Add(-time.Hour))
		createCluster("hist", withHistory(baov1.HistoryEntry{Kind: baov1.HistoryVersion, Outcome: baov1.OutcomeSucceeded, FromVersion: "2.4.0", TargetVersion: "2.4.1",
			StartedAt: &ended, EndedAt: &ended, Elections: 1}))
		createCluster("held", withFailure())
		out, err := kubectlBao("history", "hist", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Version  2.4.0 → 2.4.1"))
		Expect(out).To(ContainSubstring("Succeeded"))

		out, err = kubectlBao("fleet", "-A", "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		var rows []FleetRow
		Expect(json.Unmarshal([]byte(out), &rows)).To(Succeed())
		byName := map[string]FleetRow{}
		for _, r := range rows {
			byName[r.Name] = r
		}
		Expect(byName["hist"].Last).To(Equal("Version 2.4.0 → 2.4.1: Succeeded"))
		Expect(byName["held"].WaitsFor).To(Equal("retry: failed (StepTimeout)"))
	})

	It("waits: 0 once settled, a failed operation at once, the timeout apart", func() {
		createCluster("settled", func(c *baov1.OpenBaoCluster) {
			c.Spec.Version = "2.4.0"
			c.Status.CurrentVersion, c.Status.Phase = "2.4.0", baov1.PhaseRunning
		})
		out, err := kubectlBao("wait", "settled", "-n", ns, "--timeout", "10s")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("runs 2.4.0 with nothing in progress"))

		createCluster("failing", withFailure())
		_, err = kubectlBao("wait", "failing", "-n", ns, "--timeout", "10s")
		Expect(errors.Is(err, ErrOperationFailed)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("kubectl bao retry failing -n vault"))

		createCluster("moving", withRollingUpgrade())
		start := time.Now()
		_, err = kubectlBao("wait", "moving", "-n", ns, "--timeout", "3s")
		Expect(errors.Is(err, ErrWaitTimeout)).To(BeTrue(), "%v", err)
		Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
	})

	It("pauses with the annotation, beside the spec, and resumes", func() {
		createCluster("gitops", withRollingUpgrade())
		out, err := kubectlBao("pause", "gitops", "-n", ns, "--annotation")
		Expect(err).NotTo(HaveOccurred(), out)
		c := get("gitops")
		Expect(c.Annotations).To(HaveKeyWithValue(baov1.AnnotationPause, "true"))
		Expect(c.Spec.Upgrade.Paused).To(BeFalse(), "the spec is not touched")
		Expect(out).To(ContainSubstring("metadata.annotations[baokeeper.dev/pause]"))

		out, err = kubectlBao("resume", "gitops", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("the baokeeper.dev/pause annotation still pauses it"))

		_, err = kubectlBao("resume", "gitops", "-n", ns, "--annotation")
		Expect(err).NotTo(HaveOccurred())
		Expect(get("gitops").Annotations).NotTo(HaveKey(baov1.AnnotationPause))
	})

	It("writes a support bundle, saying what it could not read", func() {
		createCluster("rep", withRollingUpgrade())
		file := filepath.Join(GinkgoT().TempDir(), "rep.tar.gz")
		out, err := kubectlBao("report", "rep", "-n", ns, "-f", file)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("Wrote " + file))
		fi, err := os.Stat(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)), "the bundle is the user's alone")

		_, err = kubectlBao("report", "rep", "-n", ns, "-f", file)
		Expect(err).To(MatchError(ContainSubstring("name another file with -f")), "an existing file is not overwritten")
	})
})

var _ = Describe("--watch", func() {
	It("prints the status again when it changes, and each new event, until interrupted", func() {
		createCluster("watched", withRollingUpgrade())
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		defer cancel()
		done := make(chan string, 1)
		go func() {
			defer GinkgoRecover()
			var out, errOut bytes.Buffer
			root := NewRootCommand(Options{Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}})
			root.SetArgs([]string{"status", "watched", "-n", ns, "-w", "--kubeconfig", env.kubeconfig})
			Expect(root.ExecuteContext(ctx)).To(Succeed(), errOut.String())
			done <- out.String()
		}()
		time.Sleep(time.Second)
		c := get("watched")
		c.Status.Message = "a message written while watched"
		Expect(env.k8s.Status().Update(context.Background(), c)).To(Succeed())
		var out string
		Eventually(done, 10*time.Second).Should(Receive(&out))
		Expect(out).To(ContainSubstring("\n--- "), "a second rendering")
		Expect(out).To(ContainSubstring("a message written while watched"))
		Expect(regexp.MustCompile(`(?m)^Name:`).FindAllString(out, -1)).To(HaveLen(2), "printed twice: once at the start, once for the change")
	})
})
