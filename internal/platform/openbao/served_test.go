package openbao

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// issue makes a CA and n serving certificates for localhost signed by it.
func issue(t *testing.T, n int) (caPEM []byte, leaves []tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	for i := range n {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "localhost"},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Duration(i+1) * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key})
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), leaves
}

// A member that reloads its certificate is reported on the new one at the next
// health read. Bug found on the rig: health reads reused a pooled connection, whose
// handshake showed the certificate the member served before its reload; the
// operator took the members for stale and restarted them.
func TestHealthReportsTheCertificateServedNow(t *testing.T) {
	g := NewWithT(t)
	caPEM, leaves := issue(t, 2)
	var current atomic.Pointer[tls.Certificate]
	current.Store(&leaves[0])
	fb := newFakeBao(t)
	srv := httptest.NewUnstartedServer(fb.srv.Config.Handler)
	srv.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current.Load(), nil }}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// By name, so that the client sends SNI and the server asks GetCertificate.
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	c, _, _ := newTestClient(t, fb, func(cfg *Config) { cfg.Address, cfg.CACertPEM = url, caPEM })
	fp := func(cert tls.Certificate) string {
		s := sha256.Sum256(cert.Certificate[0])
		return hex.EncodeToString(s[:])
	}

	h, err := c.Health(t.Context(), url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Certificate.SHA256).To(Equal(fp(leaves[0])))

	current.Store(&leaves[1]) // the member reloads its certificate (SIGHUP)
	h, err = c.Health(t.Context(), url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Certificate.SHA256).To(Equal(fp(leaves[1])), "the next health read sees the reloaded certificate")
}
