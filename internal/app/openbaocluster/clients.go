package openbaocluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Each cluster's client sends at most RequestLimit requests per second on average,
// RequestBurst at once. An upgrade's polls and the passes that pod and Job events
// start stay well below it (docs/benchmarks.md measures 25 to 35 per second on 3
// members and 40 to 55 on 5); a storm of events cannot make the operator a load on
// OpenBao.
const (
	RequestLimit rate.Limit = 200
	RequestBurst            = 100
)

// CachingClientFactory builds one read-only OpenBao client per cluster and CA, and
// reuses it so the controller logs in once per token lifetime, not once per pass.
type CachingClientFactory struct {
	// Tokens gives the controller's service-account token for an audience (a
	// satoken.Source): each cluster is logged in to with a token of its own
	// audience (workload.JWTAudience), which no other cluster accepts.
	Tokens func(ctx context.Context, audience string) (string, error)
	// Timeout bounds each OpenBao call.
	Timeout time.Duration
	// Instrument, when set, returns the transport wrapper of one cluster's client
	// (metrics.Metrics.InstrumentOpenBao counts its requests).
	Instrument func(namespace, name string) func(http.RoundTripper) http.RoundTripper

	mu      sync.Mutex
	clients map[string]openbao.Reader
}

// ReaderAddress is where the controller reads a cluster's leader, Raft
// configuration and autopilot state: its client Service, or member 0 directly while
// a cluster that starts from a snapshot has none (it gets its client Service once
// restored, and has one member until then).
func ReaderAddress(c *baov1.OpenBaoCluster) string {
	if !c.Restored() {
		return fmt.Sprintf("https://%s:%d", workload.NamesFor(c).MemberHost(0, c.Namespace), workload.APIPort)
	}
	return fmt.Sprintf("https://%s.%s.svc:%d", workload.NamesFor(c).ClientService(), c.Namespace, workload.APIPort)
}

// ForCluster implements ClientFactory.
func (f *CachingClientFactory) ForCluster(c *baov1.OpenBaoCluster, caPEM []byte) (openbao.Reader, error) {
	audience := workload.JWTAudience(c)
	addr := ReaderAddress(c)
	key := fmt.Sprintf("%s/%s/%s/%s/%x", c.Namespace, c.Name, audience, addr, sha256.Sum256(caPEM))
	f.mu.Lock()
	defer f.mu.Unlock()
	if cl, ok := f.clients[key]; ok {
		return cl, nil
	}
	cfg := openbao.Config{
		Address:   addr,
		CACertPEM: caPEM,
		AuthMount: workload.AuthMount,
		Role:      workload.ControllerRole,
		TokenSource: func(ctx context.Context) (string, error) {
			return f.Tokens(ctx, audience)
		},
		Timeout: f.Timeout,
		Limiter: rate.NewLimiter(RequestLimit, RequestBurst),
	}
	if f.Instrument != nil {
		cfg.WrapTransport = f.Instrument(c.Namespace, c.Name)
	}
	cl, err := openbao.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to build the OpenBao client of %s/%s: %w", c.Namespace, c.Name, err)
	}
	if f.clients == nil {
		f.clients = map[string]openbao.Reader{}
	}
	f.clients[key] = cl
	return cl, nil
}
