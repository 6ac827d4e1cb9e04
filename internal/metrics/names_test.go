package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestNamesListsEverySeriesAsPrometheusStoresIt(t *testing.T) {
	g := NewWithT(t)
	names := Names()

	g.Expect(names).To(ContainElements(
		"baokeeper_cluster_phase", // a state series (StatusCollector)
		"baokeeper_snapshot_last_taken_timestamp_seconds",
		"baokeeper_upgrade_failures_total", // an event series (New)
		"baokeeper_break_glass_active",
		"baokeeper_upgrade_step_duration_seconds_bucket", // a histogram, as its three series
		"baokeeper_upgrade_step_duration_seconds_sum",
		"baokeeper_upgrade_step_duration_seconds_count",
	))
	g.Expect(names).NotTo(ContainElement("baokeeper_upgrade_step_duration_seconds"), "a histogram's bare name has no series")
	g.Expect(sort.StringsAreSorted(names)).To(BeTrue())
	for _, n := range names {
		g.Expect(n).To(MatchRegexp(`^baokeeper_[a-z_]+$`))
	}
	// 17 collectors of New (3 of them histograms, 3 series each) and 19 state descriptors.
	g.Expect(names).To(HaveLen(14 + 3*3 + 19))
}

// TestNamesMatchTheDocumentedMetrics keeps docs/metrics.md, THE list of metrics,
// and what baokeeper registers the same, both ways.
func TestNamesMatchTheDocumentedMetrics(t *testing.T) {
	g := NewWithT(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	g.Expect(err).NotTo(HaveOccurred())
	documented := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `(baokeeper_[a-z_]+)`")
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}

	registered := map[string]bool{}
	for _, n := range Names() {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok && strings.HasSuffix(base, "_seconds") {
				n = base
			}
		}
		registered[n] = true
	}
	g.Expect(registered).To(Equal(documented), "every registered metric has a row in docs/metrics.md, and every row is registered")
}
