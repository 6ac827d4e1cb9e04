// Package promqlcheck checks PromQL expressions (the dashboard's queries, the alerting
// rules' expressions) with Prometheus' own parser, and the metric names they read
// against what baokeeper registers. The parser runs in a separate binary,
// promql-metrics, built from the wrapper module hack/tools/promql: importing
// github.com/prometheus/prometheus here would pull it, and gRPC, OpenTelemetry and zap
// at its versions, into baokeeper's go.mod (docs/design/build-cache.md).
//
//  1. Build builds <repo>/bin/promql-metrics when it is missing or older than its
//     sources (go build -C hack/tools/promql).
//  2. Run sends the queries to it and reads back, per query, the parse error or its
//     vector selectors.
//  3. Problems lists every query that does not parse or reads a metric that
//     KnownNames does not have.
package promqlcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/baokeeper/baokeeper/internal/metrics"
)

// Query is one expression to check; ID names it in messages (a panel title, an alert).
type Query struct {
	ID   string `json:"id"`
	Expr string `json:"expr"`
}

// Matcher is one label matcher of a selector; Type is =, !=, =~ or !~.
type Matcher struct {
	Label string `json:"label"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Selector is one vector selector of an expression: the metric name it reads and its
// other matchers.
type Selector struct {
	Name     string    `json:"name"`
	Matchers []Matcher `json:"matchers"`
}

// Has reports whether the selector has the matcher label<type>"value".
func (s Selector) Has(label, typ, value string) bool {
	for _, m := range s.Matchers {
		if m.Label == label && m.Type == typ && m.Value == value {
			return true
		}
	}
	return false
}

// Result is what promql-metrics says of one Query: a parse error, or its selectors.
type Result struct {
	ID        string     `json:"id"`
	Error     string     `json:"error,omitempty"`
	Selectors []Selector `json:"selectors,omitempty"`
}

// toolDir is the wrapper module, relative to the repository root.
const toolDir = "hack/tools/promql"

// Build returns <root>/bin/promql-metrics, built first when it is missing or older
// than one of its sources. Concurrent callers (test packages run in parallel) each
// build into a file of their own and rename it into place.
func Build(ctx context.Context, root string) (string, error) {
	bin := filepath.Join(root, "bin", "promql-metrics")
	fresh, err := upToDate(bin, filepath.Join(root, toolDir))
	if err != nil || fresh {
		return bin, err
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", fmt.Errorf("failed to create %s for promql-metrics: %w", filepath.Dir(bin), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(bin), "promql-metrics-*.tmp")
	if err != nil {
		return "", fmt.Errorf("failed to create a temporary file in %s: %w", filepath.Dir(bin), err)
	}
	_ = tmp.Close()
	defer func() { _ = os.Remove(tmp.Name()) }()
	cmd := exec.CommandContext(ctx, "go", "build", "-C", filepath.Join(root, toolDir), "-o", tmp.Name(), ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("failed to build promql-metrics (go build -C %s -o %s .), which needs the Go module proxy the first time: %w\n%s",
			toolDir, bin, err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", fmt.Errorf("failed to move promql-metrics into %s: %w", bin, err)
	}
	return bin, nil
}

// upToDate reports whether bin exists and is newer than every file of dir.
func upToDate(bin, dir string) (bool, error) {
	st, err := os.Stat(bin)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to stat %s: %w", bin, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("failed to read %s, the promql-metrics sources: %w", dir, err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return false, fmt.Errorf("failed to stat %s: %w", filepath.Join(dir, e.Name()), err)
		}
		if !e.IsDir() && info.ModTime().After(st.ModTime()) {
			return false, nil
		}
	}
	return true, nil
}

// Run runs bin on queries and returns its results, one per query, in order.
func Run(ctx context.Context, bin string, queries []Query) ([]Result, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, q := range queries {
		if err := enc.Encode(q); err != nil {
			return nil, fmt.Errorf("failed to encode query %q: %w", q.ID, err)
		}
	}
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("failed to run %s (rebuild it: delete it and run the test again): %w: %s", bin, err, stderr.String())
	}
	var results []Result
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("failed to decode the output of %s, %q: %w", bin, sc.Text(), err)
		}
		results = append(results, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read the output of %s: %w", bin, err)
	}
	if len(results) != len(queries) {
		return nil, fmt.Errorf("%s answered %d of %d queries: rebuild it (delete it and run the test again)", bin, len(results), len(queries))
	}
	return results, nil
}

// Series read by the alerting rules that baokeeper does not register itself.
const (
	// ReconcileErrorsTotal is controller-runtime's count of reconciles that
	// returned an error, by controller.
	ReconcileErrorsTotal = "controller_runtime_reconcile_errors_total"
	// ReconcileTotal is controller-runtime's count of reconciles, by controller and
	// result.
	ReconcileTotal = "controller_runtime_reconcile_total"
	// Up is the series Prometheus writes for every scrape target (1: the scrape
	// succeeded).
	Up = "up"
)

// KnownNames are the metric names a query may read: every name baokeeper registers
// (metrics.Names) and the controller-runtime and Prometheus series above.
func KnownNames() map[string]bool {
	known := map[string]bool{ReconcileErrorsTotal: true, ReconcileTotal: true, Up: true}
	for _, n := range metrics.Names() {
		known[n] = true
	}
	return known
}

// Problems returns one message for every query that does not parse, has a selector
// without a metric name, or reads a metric not in known; none when all are fine.
func Problems(results []Result, known map[string]bool) []string {
	var out []string
	for _, r := range results {
		if r.Error != "" {
			out = append(out, fmt.Sprintf("%s: does not parse: %s", r.ID, r.Error))
			continue
		}
		if len(r.Selectors) == 0 {
			out = append(out, fmt.Sprintf("%s: reads no metric", r.ID))
		}
		for _, s := range r.Selectors {
			switch {
			case s.Name == "":
				out = append(out, fmt.Sprintf("%s: a selector names no metric", r.ID))
			case !known[s.Name]:
				out = append(out, fmt.Sprintf("%s: reads %s, which baokeeper does not export (internal/metrics.Names: %s)",
					r.ID, s.Name, strings.Join(sortedKeys(known), ", ")))
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
