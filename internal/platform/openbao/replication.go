package openbao

import (
	"context"
	"fmt"
	"io"
	"strings"

	baoapi "github.com/openbao/openbao/api/v2"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricAppendEntries is the summary OpenBao's Raft library records for every
// AppendEntries RPC a follower handles (heartbeats included), in the Prometheus
// format after the metrics prefix: vault_raft_rpc_appendEntries with OpenBao's
// default prefix, which baokeeper's configuration keeps (any prefix is accepted).
const metricAppendEntries = "_raft_rpc_appendEntries"

// maxMetricsBytes bounds the metrics page read: a member's is about 30 KB.
const maxMetricsBytes = 4 << 20

// Replication reads the Raft replication the member at addr received, from its
// sys/metrics in the Prometheus format, without a token.
func (c *client) Replication(ctx context.Context, addr string) (*Replication, error) {
	return read(ctx, c, fmt.Sprintf("failed to read the Raft metrics of %s", addr), addr, pathMetrics, false,
		func(ctx context.Context, cl *baoapi.Client) (*Replication, error) {
			resp, err := cl.Logical().ReadRawWithDataWithContext(ctx, pathMetrics, map[string][]string{"format": {"prometheus"}})
			if resp != nil {
				defer resp.Body.Close() //nolint:errcheck // read-only body
			}
			if err != nil {
				return nil, err
			}
			return ParseReplication(io.LimitReader(resp.Body, maxMetricsBytes))
		})
}

// ParseReplication reads the AppendEntries count from a Prometheus text page.
func ParseReplication(page io.Reader) (*Replication, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(page)
	if err != nil {
		return nil, fmt.Errorf("the metrics page is not in the Prometheus text format: %w", err)
	}
	out := &Replication{}
	for name, f := range families {
		if !strings.HasSuffix(name, metricAppendEntries) {
			continue
		}
		for _, m := range f.GetMetric() {
			if s := m.GetSummary(); s != nil {
				out.AppendEntries += s.GetSampleCount()
			}
		}
	}
	return out, nil
}
