package workload

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/hcl"
	. "github.com/onsi/gomega"
)

// TestExecutorPolicyRunbook holds docs/runbooks/identity-migration.md to the policy
// baokeeper writes: the HCL a person pastes there to pin an older cluster's executor
// policy must say what executorPolicyHCL says, for any namespace and operator.
func TestExecutorPolicyRunbook(t *testing.T) {
	g := NewWithT(t)
	_, here, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "..", "docs", "runbooks", "identity-migration.md"))
	g.Expect(err).NotTo(HaveOccurred())
	text := string(doc)
	start := strings.Index(text, "<<'HCL'\n")
	end := strings.Index(text, "\nHCL\n")
	g.Expect(start).To(BeNumerically(">", 0), "the runbook's policy heredoc")
	g.Expect(end).To(BeNumerically(">", start))
	const ns, ctrl = "team-a", "system:serviceaccount:baokeeper-system:baokeeper"
	runbook := strings.NewReplacer("@NS@", ns, "@CTRL@", ctrl).Replace(text[start+len("<<'HCL'\n") : end])

	parse := func(src string) map[string]any {
		var out map[string]any
		g.Expect(hcl.Decode(&out, src)).To(Succeed(), src)
		return out
	}
	g.Expect(parse(runbook)).To(Equal(parse(executorPolicyHCL(ns, ctrl))),
		"the runbook's executor policy differs from the one baokeeper writes: change docs/runbooks/identity-migration.md with it")

	// The role writes of step 3 are roleData's parameters.
	for _, key := range []string{"role_type=jwt", "user_claim=sub", "token_type=batch", "token_ttl=" + executorTokenTTL,
		"token_max_ttl=" + executorTokenMaxTTL, "token_ttl=" + controllerTokenTTL, "token_max_ttl=" + controllerTokenMaxTTL} {
		g.Expect(text).To(ContainSubstring(key))
	}
	g.Expect(ExecutorRoleData("s", "a")).To(HaveLen(8), "step 3 writes the eight parameters roleData writes")
}
