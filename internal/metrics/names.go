package metrics

import (
	"sort"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// Names returns, sorted, the name of every series baokeeper exports as Prometheus
// stores it: the collectors New builds (taken from what Register registers, so the
// list cannot drift from it) and the StatusCollector's descriptors. A histogram is
// listed as its <name>_bucket, <name>_sum and <name>_count, which is what queries
// read; its bare name has no series. The dashboard and the alerting rules
// (config/grafana, config/prometheus) are checked against this list.
func Names() []string {
	var reg capture
	// capture never fails a registration.
	_ = New().Register(&reg)
	var out []string
	for _, c := range reg.collectors {
		_, histogram := c.(*prometheus.HistogramVec)
		for _, name := range descNames(c) {
			if histogram {
				out = append(out, name+"_bucket", name+"_sum", name+"_count")
				continue
			}
			out = append(out, name)
		}
	}
	// Every state series is a gauge (metricsOf builds them with GaugeValue); no reader
	// is needed to describe them.
	out = append(out, descNames(NewStatusCollector(nil, 0, logr.Discard()))...)
	sort.Strings(out)
	return out
}

// capture is a prometheus.Registerer that keeps what is registered on it.
type capture struct {
	collectors []prometheus.Collector
}

func (r *capture) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *capture) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *capture) Unregister(prometheus.Collector) bool { return false }

// descNames are the fully-qualified names of c's descriptors. client_golang has no
// accessor for a Desc's name; its String form, stable since its first release, is
// Desc{fqName: "<name>", help: ...}.
func descNames(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var names []string
	for d := range ch {
		_, rest, ok := strings.Cut(d.String(), `fqName: "`)
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(rest, `"`); ok {
			names = append(names, name)
		}
	}
	return names
}
