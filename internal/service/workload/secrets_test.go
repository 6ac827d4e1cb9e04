package workload

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestSealSecret(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	s, err := SealSecret(c, &countingReader{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(s.Data).To(HaveLen(1))
	g.Expect(string(s.Data[SealKeyKey])).To(Equal("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"),
		"the key is the 32 random bytes in lowercase hex, which is what OpenBao's static seal reads")
	g.Expect(s.Data[SealKeyKey]).To(MatchRegexp(`^[0-9a-f]{64}$`))
	g.Expect(s.Immutable).To(HaveValue(BeTrue()), "the key must never be overwritten: it decrypts the retained volumes")
	g.Expect(s.OwnerReferences).To(BeEmpty(), "deleting the cluster must not garbage-collect the only key to its data")
	g.Expect(s.Labels).To(Equal(CommonLabels(c)))
	g.Expect(s.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedByValue), "the controller's cache selects on managed-by")
	g.Expect(s.Name).To(Equal("bao-seal"))
	g.Expect(s.Namespace).To(Equal("ns"))
	g.Expect(s.Type).To(Equal(corev1.SecretTypeOpaque))
	g.Expect(s.Annotations).To(HaveKey("baokeeper.dev/note"))
	g.Expect(s.APIVersion).To(Equal("v1"))
	g.Expect(s.Kind).To(Equal("Secret"))
}

func TestSealSecretReadsExactly32Bytes(t *testing.T) {
	g := NewWithT(t)
	src := make([]byte, 40)
	for i := range src {
		src[i] = byte(0xa0 + i)
	}
	r := bytes.NewReader(src)
	s, err := SealSecret(newCluster(), r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(s.Data[SealKeyKey])).To(Equal("a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"))
	g.Expect(r.Len()).To(Equal(8), "exactly 32 bytes are consumed")
}

func TestSealSecretIsRandom(t *testing.T) {
	g := NewWithT(t)
	a, err := SealSecret(newCluster(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := SealSecret(newCluster(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Data[SealKeyKey]).To(MatchRegexp(`^[0-9a-f]{64}$`))
	g.Expect(a.Data[SealKeyKey]).NotTo(Equal(b.Data[SealKeyKey]), "two keys from crypto/rand must differ")
}

func TestSealSecretReaderErrors(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		rnd    io.Reader
		is     error
	}{
		{
			name:   "short reader",
			reason: "a key shorter than 32 bytes (padded or truncated) would silently weaken the seal",
			rnd:    bytes.NewReader(make([]byte, 31)),
			is:     io.ErrUnexpectedEOF,
		},
		{
			name:   "empty reader",
			reason: "no entropy at all must fail, not yield an all-zero key",
			rnd:    bytes.NewReader(nil),
			is:     io.EOF,
		},
		{
			name:   "failing reader",
			reason: "the reader's error must be wrapped so the cause is visible",
			rnd:    failingReader{},
			is:     errNoEntropy,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := SealSecret(newCluster(), tc.rnd)
			g.Expect(err).To(HaveOccurred(), tc.reason)
			g.Expect(errors.Is(err, tc.is)).To(BeTrue(), "%s: got %v", tc.reason, err)
			g.Expect(err.Error()).To(ContainSubstring("static-seal key"))
			g.Expect(s).To(BeNil())
		})
	}
}

func TestCASecretAndTLSSecret(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	ca := KeyPair{CertPEM: []byte("ca-cert"), KeyPEM: []byte("ca-key")}
	serving := KeyPair{CertPEM: []byte("tls-cert"), KeyPEM: []byte("tls-key")}

	caSecret := CASecret(c, ca)
	g.Expect(caSecret.Name).To(Equal("bao-ca"))
	g.Expect(caSecret.Namespace).To(Equal("ns"))
	g.Expect(caSecret.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedByValue))
	g.Expect(caSecret.Data).To(Equal(map[string][]byte{"ca.crt": []byte("ca-cert"), "ca.key": []byte("ca-key")}))

	tlsSecret := TLSSecret(c, serving, ca.CertPEM)
	g.Expect(tlsSecret.Name).To(Equal("bao-tls"))
	g.Expect(tlsSecret.Type).To(Equal(corev1.SecretTypeTLS), "kubernetes.io/tls is what users and tools expect")
	g.Expect(tlsSecret.Labels).To(HaveKeyWithValue(LabelManagedBy, ManagedByValue))
	g.Expect(tlsSecret.Data).To(Equal(map[string][]byte{"tls.crt": []byte("tls-cert"), "tls.key": []byte("tls-key"), "ca.crt": []byte("ca-cert")}),
		"the TLS Secret must carry ca.crt: retry_join verifies the leader with it")
	g.Expect(tlsSecret.Data).NotTo(HaveKey(CAKeyKey), "the CA private key must never be mounted into the pods")
}
