// Package saissuer reads the Kubernetes service-account token issuer and its public
// signing keys from the API server's issuer discovery endpoints, so that OpenBao's JWT
// auth method can verify service-account tokens offline.
//
//  1. GET /.well-known/openid-configuration gives the issuer (the iss claim).
//  2. GET /openid/v1/jwks gives the public keys, converted to PEM for OpenBao.
//  3. Results are cached for a TTL; keys change only when the API server's signing
//     keys rotate.
package saissuer

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Issuer is the service-account issuer and its verification keys.
type Issuer struct {
	// URL is the iss claim of service-account tokens.
	URL string
	// PublicKeysPEM are the signing keys, PEM-encoded, sorted.
	PublicKeysPEM []string
}

// Source returns the current issuer.
type Source interface {
	Issuer(ctx context.Context) (Issuer, error)
}

// Getter fetches a path from the API server.
type Getter interface {
	Get(ctx context.Context, absPath string) ([]byte, error)
}

// RESTGetter fetches paths with a REST client.
type RESTGetter struct{ Client rest.Interface }

// Get implements Getter.
func (g RESTGetter) Get(ctx context.Context, absPath string) ([]byte, error) {
	return g.Client.Get().AbsPath(absPath).DoRaw(ctx)
}

// CachedSource reads the issuer through a Getter and caches it for TTL.
type CachedSource struct {
	getter Getter
	clock  clock.PassiveClock
	ttl    time.Duration

	mu      sync.Mutex
	cached  Issuer
	fetched time.Time
}

// NewCachedSource returns a Source that caches for ttl.
func NewCachedSource(g Getter, clk clock.PassiveClock, ttl time.Duration) *CachedSource {
	return &CachedSource{getter: g, clock: clk, ttl: ttl}
}

// Issuer implements Source.
func (s *CachedSource) Issuer(ctx context.Context) (Issuer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached.URL != "" && s.clock.Since(s.fetched) < s.ttl {
		return s.cached, nil
	}
	iss, err := Fetch(ctx, s.getter)
	if err != nil {
		return Issuer{}, err
	}
	s.cached, s.fetched = iss, s.clock.Now()
	return iss, nil
}

// Fetch reads the issuer and keys once.
func Fetch(ctx context.Context, g Getter) (Issuer, error) {
	raw, err := g.Get(ctx, "/.well-known/openid-configuration")
	if err != nil {
		return Issuer{}, fmt.Errorf("failed to read the service-account issuer from /.well-known/openid-configuration (the operator needs the system:service-account-issuer-discovery ClusterRole): %w", err)
	}
	var disc struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal(raw, &disc); err != nil || disc.Issuer == "" {
		return Issuer{}, fmt.Errorf("the API server's openid-configuration has no issuer: %w", errors.Join(err, errors.New("empty issuer")))
	}
	raw, err = g.Get(ctx, "/openid/v1/jwks")
	if err != nil {
		return Issuer{}, fmt.Errorf("failed to read service-account signing keys from /openid/v1/jwks: %w", err)
	}
	keys, err := JWKSToPEM(raw)
	if err != nil {
		return Issuer{}, err
	}
	return Issuer{URL: disc.Issuer, PublicKeysPEM: keys}, nil
}

// JWKSToPEM converts a JSON Web Key Set into sorted PEM public keys.
func JWKSToPEM(raw []byte) ([]string, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("failed to parse the service-account JWKS: %w", err)
	}
	var out []string
	for _, k := range set.Keys {
		if !k.Valid() || !k.IsPublic() {
			continue
		}
		der, err := x509.MarshalPKIXPublicKey(k.Key)
		if err != nil {
			return nil, fmt.Errorf("failed to encode service-account key %s: %w", k.KeyID, err)
		}
		out = append(out, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	}
	if len(out) == 0 {
		return nil, errors.New("the service-account JWKS has no usable public key")
	}
	slices.Sort(out)
	return out, nil
}
