package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/baokeeper/baokeeper/internal/observability/promqlcheck"
	"github.com/baokeeper/baokeeper/test/testenv"
)

const regenerate = "run `go run ./hack/gen-dashboard` and commit config/grafana and docs/images"

func TestCommittedFilesAreWhatTheGeneratorWrites(t *testing.T) {
	files, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
		if err != nil {
			t.Errorf("%s: %v: %s", path, err, regenerate)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from what internal/observability/dashboard generates (it is never edited by hand): %s", path, regenerate)
		}
	}
}

func TestConfigMapHoldsTheDashboardForTheSidecar(t *testing.T) {
	g := NewWithT(t)
	files, err := Render()
	g.Expect(err).NotTo(HaveOccurred())
	var cm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	g.Expect(yaml.UnmarshalStrict(files[ConfigMapPath], &cm)).To(Succeed())
	g.Expect(cm.APIVersion).To(Equal("v1"))
	g.Expect(cm.Kind).To(Equal("ConfigMap"))
	g.Expect(cm.Metadata.Name).To(Equal(ConfigMapName))
	g.Expect(cm.Metadata.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"), "the Grafana sidecar's default label")
	g.Expect(cm.Data).To(HaveLen(1))
	g.Expect(cm.Data[ConfigMapKey]).To(Equal(string(files[JSONPath])), "the ConfigMap holds the JSON file byte for byte")
}

// panel is what the checks read of a generated panel.
type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	Options map[string]any `json:"options"`
}

type generated struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Type       string `json:"type"`
			Name       string `json:"name"`
			Query      any    `json:"query"`
			Multi      bool   `json:"multi"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

func load(t *testing.T) generated {
	t.Helper()
	files, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	var d generated
	if err := json.Unmarshal(files[JSONPath], &d); err != nil {
		t.Fatalf("the generated dashboard is not JSON: %v", err)
	}
	return d
}

// grafanaIntervals are Grafana's built-in interval variables, replaced by a duration
// so that Prometheus' parser reads the range they stand for.
var grafanaIntervals = strings.NewReplacer("$__rate_interval", "5m", "$__range", "6h", "$__interval", "1m")

var labelValuesQuery = regexp.MustCompile(`^label_values\((.+), *([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// TestEveryQueryParsesAndReadsWhatBaokeeperExports parses every query (panels and
// variables) with Prometheus' PromQL parser, checks each metric name against
// internal/metrics.Names, and checks that every panel query is filtered by the
// namespace and cluster variables and every panel uses the datasource variable.
func TestEveryQueryParsesAndReadsWhatBaokeeperExports(t *testing.T) {
	g := NewWithT(t)
	d := load(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := promqlcheck.Build(ctx, testenv.RepoRoot())
	g.Expect(err).NotTo(HaveOccurred())

	var queries []promqlcheck.Query
	filtered := map[string]bool{} // query ID: must select namespace and cluster
	ids := map[int]string{}
	for _, p := range d.Panels {
		g.Expect(ids).NotTo(HaveKey(p.ID), "panel %q has the id of %q", p.Title, ids[p.ID])
		ids[p.ID] = p.Title
		if len(p.Targets) == 0 {
			continue
		}
		g.Expect(p.Datasource).NotTo(BeNil(), "panel %q has no datasource", p.Title)
		g.Expect(p.Datasource.UID).To(Equal("${datasource}"), "panel %q", p.Title)
		for _, tg := range p.Targets {
			id := fmt.Sprintf("panel %q query %s", p.Title, tg.RefID)
			g.Expect(tg.Datasource.UID).To(Equal("${datasource}"), id)
			g.Expect(tg.Expr).NotTo(BeEmpty(), id)
			queries = append(queries, promqlcheck.Query{ID: id, Expr: grafanaIntervals.Replace(tg.Expr)})
			filtered[id] = true
		}
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		m := labelValuesQuery.FindStringSubmatch(q)
		g.Expect(m).NotTo(BeNil(), "variable %s: %q is not label_values(<selector>, <label>)", v.Name, q)
		g.Expect(v.Datasource).NotTo(BeNil())
		g.Expect(v.Datasource.UID).To(Equal("${datasource}"), "variable %s", v.Name)
		g.Expect(v.Multi && v.IncludeAll && v.AllValue == ".*").To(BeTrue(), "variable %s: multi-value with All as .*, which =~ selects", v.Name)
		queries = append(queries, promqlcheck.Query{ID: "variable " + v.Name, Expr: m[1]})
	}
	g.Expect(vars).To(Equal(map[string]string{DatasourceVar: "datasource", NamespaceVar: "query", ClusterVar: "query"}))

	results, err := promqlcheck.Run(ctx, bin, queries)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(promqlcheck.Problems(results, promqlcheck.KnownNames())).To(BeEmpty())

	read := map[string]bool{}
	for _, r := range results {
		for _, s := range r.Selectors {
			read[s.Name] = true
			g.Expect(strings.HasPrefix(s.Name, "baokeeper_")).To(BeTrue(), "%s reads %s: the dashboard shows baokeeper's series, which carry namespace and name", r.ID, s.Name)
			switch {
			case filtered[r.ID]:
				g.Expect(s.Has("namespace", "=~", "$namespace") && s.Has("name", "=~", "$cluster")).To(BeTrue(),
					"%s: %s is not filtered by {namespace=~\"$namespace\", name=~\"$cluster\"} (write selectors with sel)", r.ID, s.Name)
			case r.ID == "variable "+ClusterVar:
				g.Expect(s.Has("namespace", "=~", "$namespace")).To(BeTrue(), "the cluster variable lists the clusters of the selected namespaces")
			}
		}
	}
	// What the dashboard must show: per cluster phase, versions, members and voters,
	// failure tolerance, upgrade progress, durations, leader transfers, failures and
	// rollbacks, snapshot age and duration, break-glass.
	g.Expect(read).To(HaveKey("baokeeper_cluster_phase"))
	for _, name := range []string{"baokeeper_cluster_version_info", "baokeeper_cluster_members", "baokeeper_cluster_desired_members",
		"baokeeper_raft_healthy_voters", "baokeeper_raft_failure_tolerance", "baokeeper_raft_leader",
		"baokeeper_upgrade_pods_completed", "baokeeper_upgrade_pods_total",
		"baokeeper_upgrade_step_duration_seconds_bucket", "baokeeper_upgrade_duration_seconds_bucket",
		"baokeeper_upgrade_step_started_timestamp_seconds", "baokeeper_upgrade_step_timeout_seconds",
		"baokeeper_leader_transfers_total", "baokeeper_upgrade_failures_total", "baokeeper_upgrade_rollbacks_total",
		"baokeeper_snapshot_last_taken_timestamp_seconds", "baokeeper_snapshot_duration_seconds_bucket",
		"baokeeper_break_glass_active"} {
		g.Expect(read).To(HaveKey(name), "no panel reads %s", name)
	}
}

func TestTheDashboardOpensWithAnAlertList(t *testing.T) {
	g := NewWithT(t)
	d := load(t)
	g.Expect(d.UID).To(Equal(UID))
	g.Expect(d.Panels).NotTo(BeEmpty())
	var alertLists []panel
	for _, p := range d.Panels {
		if p.Type == "alertlist" {
			alertLists = append(alertLists, p)
		}
	}
	g.Expect(alertLists).To(HaveLen(1))
	g.Expect(alertLists[0].Options).To(HaveKeyWithValue("alertName", "Baokeeper"), "every alert of config/prometheus/baokeeper-rules.yaml is named Baokeeper*")
	g.Expect(d.Panels[1].Type).To(Equal("alertlist"), "the alerts come first, under the first row")
}
