// Command promql-metrics parses PromQL expressions with Prometheus' own parser and
// prints, for each, its parse error or the vector selectors it reads (metric name and
// label matchers). baokeeper's tests use it to check every query of the generated
// Grafana dashboard and every expression of the alerting rules against the metric
// names baokeeper registers (internal/metrics.Names).
//
// It lives in a wrapper module of its own (this directory's go.mod) so that
// github.com/prometheus/prometheus and what it requires (gRPC, OpenTelemetry, zap, ...)
// never enter baokeeper's go.mod, whose module versions are aligned with the
// kubernetes and etcd builds (docs/design/build-cache.md). The tests build it with
//
//	go build -C hack/tools/promql -o bin/promql-metrics .
//
// Input (stdin): one JSON object a line, {"id": "...", "expr": "..."}; blank lines are
// skipped. Output (stdout): one JSON object a line, in the same order,
// {"id": "...", "error": "..."} or {"id": "...", "selectors": [{"name": "...",
// "matchers": [{"label": "...", "type": "=~", "value": "..."}]}]}. The name is the
// selector's metric name (from a __name__ equality matcher when written that way),
// empty when the selector names none; __name__ is not repeated among the matchers.
// A line that is not JSON ends the command with status 1.
//
//  1. Read one line, decode it.
//  2. Parse its expression; on error print the error.
//  3. Otherwise walk the syntax tree and print every vector selector, in order.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// query is one input line.
type query struct {
	ID   string `json:"id"`
	Expr string `json:"expr"`
}

// matcher is one label matcher of a selector.
type matcher struct {
	Label string `json:"label"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// selector is one vector selector of an expression.
type selector struct {
	Name     string    `json:"name"`
	Matchers []matcher `json:"matchers"`
}

// result is one output line.
type result struct {
	ID        string     `json:"id"`
	Error     string     `json:"error,omitempty"`
	Selectors []selector `json:"selectors,omitempty"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "promql-metrics:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	p := parser.NewParser(parser.Options{})
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var q query
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return fmt.Errorf("failed to decode input line %d (want {\"id\": ..., \"expr\": ...} per line): %w", line, err)
		}
		if err := enc.Encode(check(p, q)); err != nil {
			return fmt.Errorf("failed to write the result of %q: %w", q.ID, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("failed to read the queries from stdin: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("failed to write the results to stdout: %w", err)
	}
	return nil
}

// check parses one expression and lists its vector selectors.
func check(p parser.Parser, q query) result {
	expr, err := p.ParseExpr(q.Expr)
	if err != nil {
		return result{ID: q.ID, Error: err.Error()}
	}
	res := result{ID: q.ID, Selectors: []selector{}}
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			res.Selectors = append(res.Selectors, selectorOf(vs))
		}
		return nil
	})
	return res
}

func selectorOf(vs *parser.VectorSelector) selector {
	s := selector{Name: vs.Name, Matchers: []matcher{}}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel {
			if s.Name == "" && m.Type == labels.MatchEqual {
				s.Name = m.Value
			}
			continue
		}
		s.Matchers = append(s.Matchers, matcher{Label: m.Name, Type: m.Type.String(), Value: m.Value})
	}
	return s
}
