// Package satoken issues the operator's own service-account tokens, one per
// audience, through the TokenRequest API, and keeps each until most of its life has
// passed. Each OpenBao cluster trusts an audience of its own, so a token the
// operator sends to one cluster (whose image a tenant chose) is refused by every
// other cluster.
package satoken

import (
	"context"
	"fmt"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"
)

// DefaultLifetime is how long a requested token is valid: the API server's
// minimum is 10 minutes.
const DefaultLifetime = 10 * time.Minute

// Source requests and caches tokens of one service account.
type Source struct {
	// Client creates tokens (serviceaccounts/token of ServiceAccount only).
	Client corev1client.ServiceAccountsGetter
	// ServiceAccount is the operator's own.
	ServiceAccount types.NamespacedName
	// Lifetime of a requested token; DefaultLifetime when zero.
	Lifetime time.Duration
	// Clock is the time source; the real clock when nil.
	Clock clock.PassiveClock

	mu     sync.Mutex
	tokens map[string]token
}

type token struct {
	value   string
	renewAt time.Time
}

// Token returns a token for audience: the cached one until 80 % of its life has
// passed, then a new one.
func (s *Source) Token(ctx context.Context, audience string) (string, error) {
	now := s.now()
	s.mu.Lock()
	if t, ok := s.tokens[audience]; ok && now.Before(t.renewAt) {
		s.mu.Unlock()
		return t.value, nil
	}
	s.mu.Unlock()

	life := s.Lifetime
	if life <= 0 {
		life = DefaultLifetime
	}
	secs := int64(life / time.Second)
	tr, err := s.Client.ServiceAccounts(s.ServiceAccount.Namespace).CreateToken(ctx, s.ServiceAccount.Name, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to request a token of service account %s for audience %s: %w", s.ServiceAccount, audience, err)
	}
	if tr.Status.Token == "" {
		return "", fmt.Errorf("the API server returned no token for service account %s and audience %s", s.ServiceAccount, audience)
	}
	issued := tr.Status.ExpirationTimestamp.Time
	if issued.IsZero() {
		issued = now.Add(life)
	}
	renewAt := now.Add(issued.Sub(now) * 8 / 10)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]token{}
	}
	s.tokens[audience] = token{value: tr.Status.Token, renewAt: renewAt}
	return tr.Status.Token, nil
}

func (s *Source) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}
