package openbao

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
)

// certSinkKey carries a certSink in a request's context.
type certSinkKey struct{}

// certSink receives the leaf certificate of the connection that answered a request.
type certSink struct {
	mu   sync.Mutex
	cert *ServedCertificate
}

func (s *certSink) set(c *ServedCertificate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cert = c
}

func (s *certSink) get() *ServedCertificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cert
}

// withCertSink returns a context whose requests report the certificate that
// answered them into the returned sink.
func withCertSink(ctx context.Context) (context.Context, *certSink) {
	s := &certSink{}
	return context.WithValue(ctx, certSinkKey{}, s), s
}

// servedCertTransport records, for a request whose context carries a certSink, the
// certificate the server presented: what a member serves, which only a TLS
// handshake with it tells (the Secret may hold its successor already). Such a
// request goes over a connection of its own (fresh: no keep-alive, no session
// resumption), because a pooled connection shows the certificate of its handshake,
// which a member that reloaded its certificate since no longer serves (found on the
// rig: members that reloaded a renewed certificate were reported on the old one,
// and restarted for it). One handshake per health read: every 30 s per member at
// rest.
type servedCertTransport struct {
	next  http.RoundTripper
	fresh http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t servedCertTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s, wants := r.Context().Value(certSinkKey{}).(*certSink)
	rt := t.next
	if wants && t.fresh != nil {
		rt = t.fresh
	}
	resp, err := rt.RoundTrip(r)
	if err != nil || resp == nil || resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return resp, err
	}
	if wants {
		leaf := resp.TLS.PeerCertificates[0]
		sum := sha256.Sum256(leaf.Raw)
		s.set(&ServedCertificate{SHA256: hex.EncodeToString(sum[:]), NotAfter: leaf.NotAfter})
	}
	return resp, err
}
