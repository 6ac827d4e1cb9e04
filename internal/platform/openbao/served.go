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
// handshake with it tells (the Secret may hold its successor already).
type servedCertTransport struct {
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t servedCertTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp == nil || resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return resp, err
	}
	if s, ok := r.Context().Value(certSinkKey{}).(*certSink); ok {
		leaf := resp.TLS.PeerCertificates[0]
		sum := sha256.Sum256(leaf.Raw)
		s.set(&ServedCertificate{SHA256: hex.EncodeToString(sum[:]), NotAfter: leaf.NotAfter})
	}
	return resp, err
}
