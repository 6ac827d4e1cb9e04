//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// adminSA is the service account of the admin role every test cluster creates for the
// runbooks: its policy may restore snapshots and read and write the KV mount.
const adminSA = "admin"

// adminPolicy is the admin role's policy: what the restore runbook needs.
const adminPolicy = `path \"sys/storage/raft/snapshot-force\" { capabilities = [\"update\",\"sudo\"] } ` +
	`path \"secret/*\" { capabilities = [\"create\",\"update\",\"read\",\"list\"] }`

// runbookBlocks returns the fenced code blocks of a runbook under docs/runbooks, in
// order: what a person types, command by command.
func runbookBlocks(file string) []string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "runbooks", file))
	Expect(err).NotTo(HaveOccurred())
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```[a-z]*\n(.*?)^```").FindAllStringSubmatch(string(b), -1) {
		blocks = append(blocks, m[1])
	}
	Expect(blocks).NotTo(BeEmpty(), "no code block in %s", file)
	return blocks
}

// runRunbook runs every code block of a runbook in one bash shell (variables carry
// over, as in a person's terminal), with the runbook's namespace ns replaced by
// namespace, the rig's kubectl first on PATH, in a fresh working directory. It fails
// the spec on the first failing command and returns everything the shell printed.
func runRunbook(ctx context.Context, file, namespace string, env ...string) string {
	GinkgoHelper()
	for _, tool := range []string{"jq", "aws", "sha256sum"} {
		_, err := exec.LookPath(tool)
		Expect(err).NotTo(HaveOccurred(), "the runbook needs %s: install it (Debian: apt-get install jq awscli coreutils); .ci/run does", tool)
	}
	dir := GinkgoT().TempDir()
	tools := filepath.Join(dir, ".bin")
	Expect(os.Mkdir(tools, 0o755)).To(Succeed())
	Expect(os.Symlink(filepath.Join(root, "bin", "k8s-1.37.2", "kubectl"), filepath.Join(tools, "kubectl"))).To(Succeed())
	script := strings.Join(runbookBlocks(file), "\n")
	script = strings.ReplaceAll(script, " -n ns ", " -n "+namespace+" ")
	script = strings.ReplaceAll(script, " -n ns\n", " -n "+namespace+"\n")
	Expect(script).NotTo(MatchRegexp(`-n ns\b`), "every namespace of the runbook is substituted")
	GinkgoWriter.Printf("running the blocks of docs/runbooks/%s:\n%s\n", file, script)
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-x", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"PATH=" + tools + ":" + os.Getenv("PATH"), "KUBECONFIG=" + kubeconfig}, env...)...)
	out, err := cmd.CombinedOutput()
	GinkgoWriter.Printf("output:\n%s\n", out)
	Expect(err).NotTo(HaveOccurred(), "a command of docs/runbooks/%s failed (see the output above):\n%s", file, tail(string(out), 3000))
	return string(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// writeKV writes data.value of secret/<key> with the app role, through the first
// member that takes it.
func (tc *testCluster) writeKV(ctx context.Context, key, value string) {
	GinkgoHelper()
	tok, err := tc.login(ctx, token(ctx, tc.ns, appSA), "app")
	Expect(err).NotTo(HaveOccurred())
	var last error
	for _, m := range tc.memberList() {
		if _, last = tc.client(m, tok).Logical().WriteWithContext(ctx, "secret/data/"+key, map[string]any{"data": map[string]any{"value": value}}); last == nil {
			return
		}
	}
	Expect(last).NotTo(HaveOccurred(), "writing secret/%s", key)
}

// readKV reads data.value of secret/<key> through member m with the app role; found
// is false when the key does not exist.
func (tc *testCluster) readKV(ctx context.Context, m, key string) (value string, found bool) {
	GinkgoHelper()
	tok, err := tc.login(ctx, token(ctx, tc.ns, appSA), "app")
	Expect(err).NotTo(HaveOccurred())
	s, err := tc.client(m, tok).Logical().ReadWithContext(ctx, "secret/data/"+key)
	Expect(err).NotTo(HaveOccurred())
	if s == nil || s.Data["data"] == nil {
		return "", false
	}
	data, _ := s.Data["data"].(map[string]any)
	v, _ := data["value"].(string)
	return v, true
}

// refresh reads the cluster's CA and its members' pod IPs again (after the cluster
// was deleted and created anew, both changed).
func (tc *testCluster) refresh(ctx context.Context, members ...string) {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: tc.ns, Name: name + "-tls"}, s)).To(Succeed())
	tc.caPEM = s.Data["ca.crt"]
	tc.setMembers(members...)
	for _, m := range members {
		p, err := cs.CoreV1().Pods(tc.ns).Get(ctx, m, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		tc.setIP(m, p.Status.PodIP)
	}
}

func randomValue() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return fmt.Sprintf("v-%s", hex.EncodeToString(b))
}
