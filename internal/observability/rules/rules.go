package rules

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Paths, relative to the repository root.
const (
	// RulesPath is the PrometheusRule with every alert.
	RulesPath = "config/prometheus/baokeeper-rules.yaml"
	// TestsPath is the promtool unit-test file of RulesPath.
	TestsPath = "config/prometheus/baokeeper-rules.test.yaml"
	// SpecFile is the name under which the tests expect the rule group (the
	// PrometheusRule's spec), beside TestsPath's copy.
	SpecFile = "baokeeper-rules.spec.yaml"
	// RunbookDir holds one runbook per alert, <alert>.md.
	RunbookDir = "docs/runbooks"
)

// RunbookBase is where runbook_url points: RunbookBase + <alert> + ".md".
const RunbookBase = "https://github.com/baokeeper/baokeeper/blob/main/docs/runbooks/"

// JobSelector is the convention for the operator's scrape job: its name contains
// baokeeper (a ServiceMonitor's job is the Service's name, baokeeper-metrics).
const JobSelector = ".*baokeeper.*"

// PrometheusRule is the part of a monitoring.coreos.com/v1 PrometheusRule that
// baokeeper writes.
type PrometheusRule struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata is the object's name, namespace and labels.
type Metadata struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Spec is a Prometheus rule file: its groups.
type Spec struct {
	Groups []Group `json:"groups"`
}

// Group is one rule group.
type Group struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is one alerting rule (baokeeper has no recording rules).
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Load reads a PrometheusRule; a field it does not know is an error, so nothing of
// the file goes unchecked.
func Load(path string) (*PrometheusRule, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the alerting rules: %w", err)
	}
	var pr PrometheusRule
	if err := yaml.UnmarshalStrict(raw, &pr); err != nil {
		return nil, fmt.Errorf("failed to parse %s as a PrometheusRule (alerting rules only: alert, expr, for, labels, annotations): %w", path, err)
	}
	return &pr, nil
}

// Alerts returns every alerting rule, in file order.
func (p *PrometheusRule) Alerts() []Rule {
	var out []Rule
	for _, g := range p.Spec.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// RuleFile renders the rule group as a plain Prometheus rule file, what promtool
// reads.
func (p *PrometheusRule) RuleFile() ([]byte, error) {
	out, err := yaml.Marshal(p.Spec)
	if err != nil {
		return nil, fmt.Errorf("failed to render the rule group: %w", err)
	}
	return out, nil
}
