package workload

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// CALifetime is the lifetime of the operator-run CA. The CA is replaced only when it
// is within CARenewBefore of expiry; replacing it re-issues the serving certificate.
const (
	CALifetime    = 10 * 365 * 24 * time.Hour
	CARenewBefore = 365 * 24 * time.Hour
	// clockSkew backdates NotBefore so that members with slightly late clocks accept a new certificate.
	clockSkew = 5 * time.Minute
)

// ServingDNSNames are the DNS names the serving certificate must cover: every member
// (short and fully qualified), a wildcard over the headless Service, and the three
// Services in all their forms. localhost is included for probes from inside the pod.
func ServingDNSNames(c *baov1.OpenBaoCluster) []string {
	n := NamesFor(c)
	ns := c.Namespace
	var names []string
	svc := func(s string) {
		names = append(names, s, s+"."+ns, s+"."+ns+".svc", s+"."+ns+".svc.cluster.local")
	}
	svc(n.ClientService())
	svc(n.ActiveService())
	svc(n.HeadlessService())
	for i := range c.GetReplicas() {
		host := n.MemberHost(i, ns)
		names = append(names, host, host+".cluster.local")
	}
	names = append(names, "*."+n.HeadlessService()+"."+ns+".svc", "*."+n.HeadlessService()+"."+ns+".svc.cluster.local", "localhost")
	return names
}

// PermittedDNSDomains are the name constraints of the cluster's CA: the namespace's
// Service domains (<ns>.svc and <ns>.svc.cluster.local, and below), the short names of
// the cluster's three Services, and localhost. Every name of ServingDNSNames is in
// them.
func PermittedDNSDomains(c *baov1.OpenBaoCluster) []string {
	n := NamesFor(c)
	ns := c.Namespace
	out := []string{ns + ".svc", ns + ".svc.cluster.local", "localhost"}
	for _, s := range []string{n.ClientService(), n.ActiveService(), n.HeadlessService()} {
		out = append(out, s, s+"."+ns)
	}
	return out
}

// KeyPair is a PEM certificate and its PEM private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA creates a self-signed ECDSA P-256 CA for one cluster.
func NewCA(c *baov1.OpenBaoCluster, now time.Time, rnd io.Reader) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rnd)
	if err != nil {
		return KeyPair{}, fmt.Errorf("failed to generate CA key: %w", err)
	}
	serial, err := randSerial(rnd)
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("baokeeper CA for %s/%s", c.Namespace, c.Name), Organization: []string{"baokeeper"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		// Name constraints (issue 38): the CA's key lives in the cluster's namespace,
		// and whoever reads it can sign certificates; a client that trusts the CA then
		// accepts them only for the cluster's own names, never another namespace's
		// services or an IP address.
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         PermittedDNSDomains(c),
		ExcludedIPRanges:            []*net.IPNet{{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}, {IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}},
	}
	der, err := x509.CreateCertificate(rnd, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("failed to self-sign CA: %w", err)
	}
	return encodePair(der, key)
}

// IssueServing issues a serving certificate for the cluster, signed by ca.
func IssueServing(c *baov1.OpenBaoCluster, ca KeyPair, now time.Time, rnd io.Reader) (KeyPair, error) {
	caCert, caKey, err := ParsePair(ca)
	if err != nil {
		return KeyPair{}, fmt.Errorf("failed to read the cluster CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rnd)
	if err != nil {
		return KeyPair{}, fmt.Errorf("failed to generate serving key: %w", err)
	}
	serial, err := randSerial(rnd)
	if err != nil {
		return KeyPair{}, err
	}
	notAfter := now.Add(c.GetCertificateDuration())
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: NamesFor(c).ClientService() + "." + c.Namespace + ".svc", Organization: []string{"baokeeper"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     ServingDNSNames(c),
	}
	der, err := x509.CreateCertificate(rnd, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("failed to sign serving certificate: %w", err)
	}
	return encodePair(der, key)
}

// CADecision says whether the CA must be (re)created.
func CADecision(ca *KeyPair, now time.Time) (renew bool, reason string) {
	if ca == nil || len(ca.CertPEM) == 0 || len(ca.KeyPEM) == 0 {
		return true, "no CA exists yet"
	}
	cert, _, err := ParsePair(*ca)
	if err != nil {
		return true, fmt.Sprintf("the CA Secret is unreadable (%v)", err)
	}
	if !now.Before(cert.NotAfter.Add(-CARenewBefore)) {
		return true, fmt.Sprintf("the CA expires at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return false, ""
}

// ServingDecision says whether the serving certificate must be (re)issued, and when
// the current one should be renewed. It is renewed when it is missing or unreadable,
// not signed by the current CA, missing a required DNS name (replicas grew), or within
// renewBefore of expiry.
func ServingDecision(c *baov1.OpenBaoCluster, serving *KeyPair, caCertPEM []byte, now time.Time) (renew bool, reason string, renewAt time.Time) {
	if serving == nil || len(serving.CertPEM) == 0 || len(serving.KeyPEM) == 0 {
		return true, "no serving certificate exists yet", time.Time{}
	}
	cert, _, err := ParsePair(*serving)
	if err != nil {
		return true, fmt.Sprintf("the serving certificate is unreadable (%v)", err), time.Time{}
	}
	caCert, err := parseCert(caCertPEM)
	if err != nil {
		return true, "the CA certificate is unreadable", time.Time{}
	}
	if err := cert.CheckSignatureFrom(caCert); err != nil {
		return true, "the serving certificate is not signed by the current CA", time.Time{}
	}
	for _, name := range ServingDNSNames(c) {
		// A name the certificate's wildcard over the headless Service covers (a member
		// added by a scale-up, green's members after a blue-green upgrade) needs no
		// new certificate: a new one restarts every member (day-two.md).
		covered := slices.Contains(cert.DNSNames, name) || (!strings.HasPrefix(name, "*.") && cert.VerifyHostname(name) == nil)
		if !covered {
			return true, fmt.Sprintf("the serving certificate does not cover %s", name), time.Time{}
		}
	}
	renewAt = cert.NotAfter.Add(-c.GetRenewBefore())
	if !now.Before(renewAt) {
		return true, fmt.Sprintf("the serving certificate expires at %s", cert.NotAfter.UTC().Format(time.RFC3339)), renewAt
	}
	return false, "", renewAt
}

// UserCertificateProblem says why a user-provided serving certificate cannot serve
// the cluster, or "": it must parse, and name every member (the address members join
// and the operator reads health at) and the client Service. Wildcards count.
func UserCertificateProblem(c *baov1.OpenBaoCluster, certPEM []byte) string {
	cert, err := parseCert(certPEM)
	if err != nil {
		return fmt.Sprintf("tls.crt is not a readable PEM certificate (%v)", err)
	}
	n := NamesFor(c)
	names := []string{fmt.Sprintf("%s.%s.svc", n.ClientService(), c.Namespace)}
	for i := range c.GetReplicas() {
		names = append(names, n.MemberHost(i, c.Namespace))
	}
	var missing []string
	for _, name := range names {
		if cert.VerifyHostname(name) != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("the certificate does not name %s; add them (or a wildcard such as *.%s.%s.svc) to its DNS names",
			strings.Join(missing, ", "), n.HeadlessService(), c.Namespace)
	}
	return ""
}

// ParsePair parses a PEM certificate and its PEM EC private key and checks they match.
func ParsePair(p KeyPair) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cert, err := parseCert(p.CertPEM)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(p.KeyPEM)
	if block == nil {
		return nil, nil, errors.New("no PEM private key found")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse EC private key: %w", err)
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, errors.New("the private key does not match the certificate")
	}
	return cert, key, nil
}

// CertNotAfter returns the expiry of a PEM certificate.
func CertNotAfter(certPEM []byte) (time.Time, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	return cert.NotAfter, nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate found")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("failed to parse certificate: %w", err)
	}
	return cert, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (KeyPair, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("failed to encode private key: %w", err)
	}
	var certBuf, keyBuf bytes.Buffer
	_ = pem.Encode(&certBuf, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	_ = pem.Encode(&keyBuf, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return KeyPair{CertPEM: certBuf.Bytes(), KeyPEM: keyBuf.Bytes()}, nil
}

func randSerial(rnd io.Reader) (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 127)
	s, err := randInt(rnd, limit)
	if err != nil {
		return nil, fmt.Errorf("failed to generate serial number: %w", err)
	}
	return s, nil
}
