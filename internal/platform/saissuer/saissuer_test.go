package saissuer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeGetter struct {
	bodies map[string][]byte
	errs   map[string]error
	calls  int
}

func (f *fakeGetter) Get(_ context.Context, path string) ([]byte, error) {
	f.calls++
	if err := f.errs[path]; err != nil {
		return nil, err
	}
	return f.bodies[path], nil
}

func jwks(t *testing.T, keys ...any) []byte {
	t.Helper()
	set := jose.JSONWebKeySet{}
	for i, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: string(rune('a' + i)), Use: "sig"})
	}
	raw, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestJWKSToPEM(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cases := []struct {
		name    string
		reason  string
		raw     []byte
		want    []any
		wantErr string
	}{
		{name: "rsa and ec", reason: "API servers sign with RSA or ECDSA; both must verify in OpenBao",
			raw: jwks(t, &rsaKey.PublicKey, &ecKey.PublicKey), want: []any{&rsaKey.PublicKey, &ecKey.PublicKey}},
		{name: "private key skipped", reason: "only public keys may ever reach the OpenBao config",
			raw: jwks(t, rsaKey, &ecKey.PublicKey), want: []any{&ecKey.PublicKey}},
		{name: "empty set", reason: "no key means no login could ever work: fail loudly",
			raw: []byte(`{"keys":[]}`), wantErr: "no usable public key"},
		{name: "garbage", reason: "a broken endpoint must not render a config",
			raw: []byte(`not json`), wantErr: "failed to parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := JWKSToPEM(tc.raw)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)), tc.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			g.Expect(got).To(HaveLen(len(tc.want)), tc.reason)
			var parsed []any
			for _, p := range got {
				block, _ := pem.Decode([]byte(p))
				g.Expect(block).NotTo(BeNil())
				g.Expect(block.Type).To(Equal("PUBLIC KEY"))
				k, err := x509.ParsePKIXPublicKey(block.Bytes)
				g.Expect(err).NotTo(HaveOccurred())
				parsed = append(parsed, k)
			}
			for _, w := range tc.want {
				g.Expect(parsed).To(ContainElement(Satisfy(func(k any) bool {
					e, ok := k.(interface{ Equal(crypto.PublicKey) bool })
					return ok && e.Equal(w)
				})), tc.reason)
			}
		})
	}
}

func TestCachedSource(t *testing.T) {
	g := NewWithT(t)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	f := &fakeGetter{bodies: map[string][]byte{
		"/.well-known/openid-configuration": []byte(`{"issuer":"https://kubernetes.default.svc"}`),
		"/openid/v1/jwks":                   jwks(t, &ecKey.PublicKey),
	}}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	s := NewCachedSource(f, clk, 10*time.Minute)

	iss, err := s.Issuer(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(iss.URL).To(Equal("https://kubernetes.default.svc"))
	g.Expect(iss.PublicKeysPEM).To(HaveLen(1))
	g.Expect(f.calls).To(Equal(2))

	_, err = s.Issuer(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.calls).To(Equal(2), "a cached issuer is not fetched again within the TTL")

	clk.SetTime(clk.Now().Add(11 * time.Minute))
	_, err = s.Issuer(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.calls).To(Equal(4), "after the TTL the issuer is fetched again")
}

func TestFetchErrorsSayWhatToCheck(t *testing.T) {
	g := NewWithT(t)
	f := &fakeGetter{errs: map[string]error{"/.well-known/openid-configuration": errors.New("forbidden")}}
	_, err := Fetch(context.Background(), f)
	g.Expect(err).To(MatchError(ContainSubstring("system:service-account-issuer-discovery")))

	f = &fakeGetter{bodies: map[string][]byte{"/.well-known/openid-configuration": []byte(`{}`)}}
	_, err = Fetch(context.Background(), f)
	g.Expect(err).To(MatchError(ContainSubstring("no issuer")))
}
