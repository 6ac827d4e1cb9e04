package promqlcheck

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/test/testenv"
)

func TestRunReportsParseErrorsAndUnknownMetrics(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := Build(ctx, testenv.RepoRoot())
	g.Expect(err).NotTo(HaveOccurred())

	results, err := Run(ctx, bin, []Query{
		{ID: "fine", Expr: `time() - max by (namespace, name) (baokeeper_snapshot_last_taken_timestamp_seconds{namespace=~"$namespace"})`},
		{ID: "histogram", Expr: `histogram_quantile(0.9, sum by (le) (rate(baokeeper_upgrade_step_duration_seconds_bucket[5m])))`},
		{ID: "typo", Expr: `baokeeper_raft_leadr == 0`},
		{ID: "broken", Expr: `sum(baokeeper_raft_leader{`},
		{ID: "by name label", Expr: `{__name__="up", job=~".*baokeeper.*"}`},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(results).To(HaveLen(5))

	g.Expect(results[0].Selectors).To(HaveLen(1))
	g.Expect(results[0].Selectors[0].Name).To(Equal("baokeeper_snapshot_last_taken_timestamp_seconds"))
	g.Expect(results[0].Selectors[0].Has("namespace", "=~", "$namespace")).To(BeTrue())
	g.Expect(results[4].Selectors[0].Name).To(Equal("up"), "a __name__ matcher names the metric")
	g.Expect(results[4].Selectors[0].Matchers).To(ConsistOf(Matcher{Label: "job", Type: "=~", Value: ".*baokeeper.*"}))

	problems := Problems(results, KnownNames())
	g.Expect(problems).To(HaveLen(2))
	g.Expect(problems[0]).To(HavePrefix("typo: reads baokeeper_raft_leadr, which baokeeper does not export"))
	g.Expect(problems[1]).To(HavePrefix("broken: does not parse:"))
}
