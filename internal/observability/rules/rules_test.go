package rules

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/baokeeper/baokeeper/internal/observability/promqlcheck"
	"github.com/baokeeper/baokeeper/test/testenv"
)

// required are the alerts issue 10 asks for; more may follow.
func required() []string {
	return []string{"BaokeeperUpgradeStuck", "BaokeeperUpgradeFailed", "BaokeeperBreakGlassActive",
		"BaokeeperFailureToleranceLow", "BaokeeperNoLeader", "BaokeeperVersionSkew", "BaokeeperSnapshotFailed",
		"BaokeeperSnapshotStale", "BaokeeperReconcileErrors", "BaokeeperOperatorDown", "BaokeeperRestoreDrillFailed", "BaokeeperRestoreDrillStale",
		"BaokeeperQuorumLost"}
}

func load(t *testing.T) *PrometheusRule {
	t.Helper()
	pr, err := Load(filepath.Join(testenv.RepoRoot(), RulesPath))
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

func TestEveryAlertHasSeverityAnnotationsAndARunbook(t *testing.T) {
	g := NewWithT(t)
	root := testenv.RepoRoot()
	pr := load(t)
	g.Expect(pr.APIVersion).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(pr.Kind).To(Equal("PrometheusRule"))

	overview, err := os.ReadFile(filepath.Join(root, "docs", "observability.md"))
	g.Expect(err).NotTo(HaveOccurred())
	names := map[string]bool{}
	for _, r := range pr.Alerts() {
		g.Expect(r.Alert).To(HavePrefix("Baokeeper"), "the dashboard's alert list shows Baokeeper* (expr %q)", r.Expr)
		g.Expect(names).NotTo(HaveKey(r.Alert), "%s is defined twice", r.Alert)
		names[r.Alert] = true
		g.Expect(r.Labels).To(HaveKey("severity"), r.Alert)
		g.Expect(r.Labels["severity"]).To(BeElementOf("warning", "critical"), r.Alert)
		g.Expect(r.Annotations).To(HaveKey("summary"), r.Alert)
		g.Expect(r.Annotations).To(HaveKey("description"), r.Alert)
		g.Expect(r.Annotations).To(HaveKeyWithValue("runbook_url", RunbookBase+r.Alert+".md"), r.Alert)
		g.Expect(filepath.Join(root, RunbookDir, r.Alert+".md")).To(BeARegularFile(), "%s's runbook", r.Alert)
		if r.For != "" {
			_, err := time.ParseDuration(r.For)
			g.Expect(err).NotTo(HaveOccurred(), "%s: for: %q", r.Alert, r.For)
		}
		g.Expect(string(overview)).To(ContainSubstring("[`"+r.Alert+"`](runbooks/"+r.Alert+".md)"),
			"docs/observability.md lists %s with its runbook", r.Alert)
	}
	for _, a := range required() {
		g.Expect(names).To(HaveKey(a))
	}
}

// TestEveryExpressionReadsWhatBaokeeperExports parses every expression with
// Prometheus' PromQL parser and checks each metric name against internal/metrics.Names
// (and controller-runtime's and Prometheus' own series).
func TestEveryExpressionReadsWhatBaokeeperExports(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := promqlcheck.Build(ctx, testenv.RepoRoot())
	g.Expect(err).NotTo(HaveOccurred())
	var queries []promqlcheck.Query
	for _, r := range load(t).Alerts() {
		queries = append(queries, promqlcheck.Query{ID: r.Alert, Expr: r.Expr})
	}
	results, err := promqlcheck.Run(ctx, bin, queries)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(promqlcheck.Problems(results, promqlcheck.KnownNames())).To(BeEmpty())
	for _, r := range results {
		for _, s := range r.Selectors {
			switch {
			case s.Name == promqlcheck.Up:
				g.Expect(s.Has("job", "=~", JobSelector)).To(BeTrue(), "%s: up is selected by the job convention job=~%q", r.ID, JobSelector)
			case strings.HasPrefix(s.Name, "controller_runtime_"):
				g.Expect(s.Has("controller", "=~", "openbaocluster.*")).To(BeTrue(), "%s: %s of baokeeper's controllers only", r.ID, s.Name)
			}
		}
	}
}

// unitTests is what the checks read of the promtool test file.
type unitTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			EvalTime  string           `json:"eval_time"`
			Alertname string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func TestEveryAlertHasAFiringAndAQuietCase(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), TestsPath))
	g.Expect(err).NotTo(HaveOccurred())
	var ut unitTests
	g.Expect(yaml.Unmarshal(raw, &ut)).To(Succeed())
	g.Expect(ut.RuleFiles).To(Equal([]string{SpecFile}))
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range ut.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, r := range load(t).Alerts() {
		g.Expect(fires).To(HaveKey(r.Alert), "%s has no case where it fires in %s", r.Alert, TestsPath)
		g.Expect(quiet).To(HaveKey(r.Alert), "%s has no case where it does not fire in %s", r.Alert, TestsPath)
	}
}

// promtool returns the path of promtool, or skips (fails when integration tests are
// required) without it.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err == nil {
		return path
	}
	msg := "promtool is not installed (apt-get install prometheus, which ships it; the prometheus service it installs need not run): " + err.Error()
	if testenv.Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestPromtoolChecksAndTestsTheRules runs promtool check rules on the rule group and
// promtool test rules on the unit tests, in a temporary directory that holds both.
func TestPromtoolChecksAndTestsTheRules(t *testing.T) {
	g := NewWithT(t)
	bin := promtool(t)
	dir := t.TempDir()
	group, err := load(t).RuleFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, SpecFile), group, 0o644)).To(Succeed())
	tests, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), TestsPath))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, filepath.Base(TestsPath)), tests, 0o644)).To(Succeed())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"check", "rules", SpecFile}, {"test", "rules", filepath.Base(TestsPath)}} {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Errorf("promtool %s failed (%v): fix %s or %s:\n%s", strings.Join(args, " "), err, RulesPath, TestsPath, out)
			continue
		}
		g.Expect(err).NotTo(HaveOccurred(), "promtool %s", strings.Join(args, " "))
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}
