package workload

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func mustCA(t *testing.T, c *baov1.OpenBaoCluster, at time.Time) KeyPair {
	t.Helper()
	ca, err := NewCA(c, at, rand.Reader)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func mustServing(t *testing.T, c *baov1.OpenBaoCluster, ca KeyPair, at time.Time) KeyPair {
	t.Helper()
	kp, err := IssueServing(c, ca, at, rand.Reader)
	if err != nil {
		t.Fatalf("IssueServing: %v", err)
	}
	return kp
}

func mustParseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	cert, err := parseCert(certPEM)
	if err != nil {
		t.Fatalf("parseCert: %v", err)
	}
	return cert
}

func TestNewCA(t *testing.T) {
	g := NewWithT(t)
	ca := mustCA(t, newCluster(), now)

	cert, key, err := ParsePair(ca)
	g.Expect(err).NotTo(HaveOccurred(), "the CA key must match its certificate")
	g.Expect(key.Curve).To(Equal(elliptic.P256()))
	g.Expect(cert.IsCA).To(BeTrue())
	g.Expect(cert.BasicConstraintsValid).To(BeTrue())
	g.Expect(cert.MaxPathLenZero).To(BeTrue(), "the CA may sign leaf certificates only")
	g.Expect(cert.KeyUsage&x509.KeyUsageCertSign).NotTo(BeZero(), "a CA without CertSign cannot sign the serving certificate")
	g.Expect(cert.NotAfter).To(BeTemporally("==", now.Add(CALifetime)))
	g.Expect(cert.NotBefore).To(BeTemporally("==", now.Add(-clockSkew)), "NotBefore is backdated for members with late clocks")
	g.Expect(cert.NotBefore).To(BeTemporally("<", now))
	g.Expect(cert.Subject.CommonName).To(Equal("baokeeper CA for ns/bao"))
	g.Expect(cert.CheckSignatureFrom(cert)).To(Succeed(), "the CA is self-signed")
	g.Expect(CertNotAfter(ca.CertPEM)).To(BeTemporally("==", now.Add(CALifetime)))

	other := mustCA(t, newCluster(), now)
	g.Expect(other.CertPEM).NotTo(Equal(ca.CertPEM), "two CAs must have distinct keys and serials")
}

func TestNewCAReaderFailure(t *testing.T) {
	g := NewWithT(t)
	_, err := NewCA(newCluster(), now, failingReader{})
	g.Expect(err).To(HaveOccurred(), "a broken random source must not yield a CA")
}

func TestIssueServing(t *testing.T) {
	for _, replicas := range []int32{1, 3, 5} {
		t.Run(fmt.Sprintf("%d replicas", replicas), func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster(withReplicas(replicas))
			ca := mustCA(t, c, now)
			serving := mustServing(t, c, ca, now)
			cert, _, err := ParsePair(serving)
			g.Expect(err).NotTo(HaveOccurred())

			roots := x509.NewCertPool()
			roots.AddCert(mustParseCert(t, ca.CertPEM))
			names := ServingDNSNames(c)
			g.Expect(names).To(ContainElement(fmt.Sprintf("bao-%d.bao-internal.ns.svc", replicas-1)))
			for _, name := range names {
				if name[0] == '*' {
					continue // a wildcard is not a host name to verify against
				}
				_, err := cert.Verify(x509.VerifyOptions{
					DNSName:     name,
					Roots:       roots,
					CurrentTime: now,
					KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
				})
				g.Expect(err).NotTo(HaveOccurred(), "clients and retry_join connect as %s", name)
			}
			_, err = cert.Verify(x509.VerifyOptions{DNSName: "bao.other-ns.svc", Roots: roots, CurrentTime: now})
			g.Expect(err).To(HaveOccurred(), "the certificate must not cover another namespace")

			g.Expect(cert.IsCA).To(BeFalse())
			g.Expect(cert.ExtKeyUsage).To(ContainElements(x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth),
				"members present the certificate as servers and as Raft clients")
			g.Expect(cert.NotAfter).To(BeTemporally("==", now.Add(baov1.DefaultCertificateDuration)))
			g.Expect(cert.NotBefore).To(BeTemporally("==", now.Add(-clockSkew)))
		})
	}
}

func TestIssueServingNotAfterCappedByCA(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	// The CA was created long ago and expires in 30 days, sooner than the 90-day default.
	caCreated := now.Add(-(CALifetime - 30*24*time.Hour))
	ca := mustCA(t, c, caCreated)
	caCert := mustParseCert(t, ca.CertPEM)

	serving := mustServing(t, c, ca, now)
	notAfter, err := CertNotAfter(serving.CertPEM)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(notAfter).To(BeTemporally("==", caCert.NotAfter), "a leaf must never outlive its CA")
	g.Expect(notAfter).To(BeTemporally("<", now.Add(c.GetCertificateDuration())))
}

func TestIssueServingRefusesBrokenCA(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	ca := mustCA(t, c, now)
	other := mustCA(t, c, now)
	_, err := IssueServing(c, KeyPair{CertPEM: ca.CertPEM, KeyPEM: other.KeyPEM}, now, rand.Reader)
	g.Expect(err).To(MatchError(ContainSubstring("cluster CA")), "a CA whose key does not match cannot sign")
	_, err = IssueServing(c, KeyPair{}, now, rand.Reader)
	g.Expect(err).To(HaveOccurred())
}

func TestServingDNSNames(t *testing.T) {
	g := NewWithT(t)
	names := ServingDNSNames(newCluster(withReplicas(3)))
	for _, want := range []string{
		"bao", "bao.ns", "bao.ns.svc", "bao.ns.svc.cluster.local",
		"bao-active", "bao-active.ns.svc", "bao-active.ns.svc.cluster.local",
		"bao-internal", "bao-internal.ns.svc",
		"bao-0.bao-internal.ns.svc", "bao-2.bao-internal.ns.svc", "bao-2.bao-internal.ns.svc.cluster.local",
		"*.bao-internal.ns.svc", "*.bao-internal.ns.svc.cluster.local", "localhost",
	} {
		g.Expect(names).To(ContainElement(want))
	}
	g.Expect(names).NotTo(ContainElement("bao-3.bao-internal.ns.svc"))
	seen := map[string]bool{}
	for _, n := range names {
		g.Expect(seen[n]).To(BeFalse(), "duplicate SAN %s", n)
		seen[n] = true
	}
	g.Expect(names).To(HaveLen(3*4 + 3*2 + 3))
}

func TestServingDecision(t *testing.T) {
	three := newCluster(withReplicas(3))
	ca := mustCA(t, three, now)
	otherCA := mustCA(t, three, now)
	serving := mustServing(t, three, ca, now)
	foreign := mustServing(t, three, otherCA, now)
	victim := newCluster(withReplicas(3))
	victim.Name = "victim"
	otherNames := mustServing(t, victim, ca, now)
	notAfter := now.Add(baov1.DefaultCertificateDuration)
	renewAt := notAfter.Add(-baov1.DefaultRenewBefore)

	shortLived := newCluster(withCertificateDuration(24*time.Hour), withRenewBefore(720*time.Hour))
	shortServing := mustServing(t, shortLived, ca, now)

	cases := []struct {
		name        string
		reason      string
		cluster     *baov1.OpenBaoCluster
		serving     *KeyPair
		caPEM       []byte
		at          time.Time
		wantRenew   bool
		wantReason  string
		wantRenewAt time.Time
	}{
		{
			name:       "missing pair",
			reason:     "the first reconcile has no certificate and must issue one",
			cluster:    three,
			caPEM:      ca.CertPEM,
			at:         now,
			wantRenew:  true,
			wantReason: "no serving certificate exists yet",
		},
		{
			name:       "missing key",
			reason:     "a Secret with a certificate but no key cannot serve TLS",
			cluster:    three,
			serving:    &KeyPair{CertPEM: serving.CertPEM},
			caPEM:      ca.CertPEM,
			at:         now,
			wantRenew:  true,
			wantReason: "no serving certificate exists yet",
		},
		{
			name:       "unreadable PEM",
			reason:     "a corrupted Secret must be replaced, not crash the reconciler",
			cluster:    three,
			serving:    &KeyPair{CertPEM: []byte("not a certificate"), KeyPEM: serving.KeyPEM},
			caPEM:      ca.CertPEM,
			at:         now,
			wantRenew:  true,
			wantReason: "unreadable",
		},
		{
			name:       "key does not match",
			reason:     "a certificate with someone else's key cannot complete a handshake",
			cluster:    three,
			serving:    &KeyPair{CertPEM: serving.CertPEM, KeyPEM: foreign.KeyPEM},
			caPEM:      ca.CertPEM,
			at:         now,
			wantRenew:  true,
			wantReason: "does not match",
		},
		{
			name:       "unreadable CA",
			reason:     "without a readable CA the signature cannot be checked, so a new certificate is needed",
			cluster:    three,
			serving:    &serving,
			caPEM:      []byte("garbage"),
			at:         now,
			wantRenew:  true,
			wantReason: "CA certificate is unreadable",
		},
		{
			name:       "signed by another CA",
			reason:     "after the CA was replaced, members verify each other with the new CA only",
			cluster:    three,
			serving:    &foreign,
			caPEM:      ca.CertPEM,
			at:         now,
			wantRenew:  true,
			wantReason: "not signed by the current CA",
		},
		{
			name: "replicas grew from 3 to 5",
			reason: "the wildcard over the headless Service covers the new members: a new certificate would restart every member for nothing " +
				"(and after a blue-green upgrade, green's members, whose names the first certificate never listed)",
			cluster:     newCluster(withReplicas(5)),
			serving:     &serving,
			caPEM:       ca.CertPEM,
			at:          now,
			wantRenewAt: renewAt,
		},
		{
			name:       "issued for another cluster",
			reason:     "a certificate that covers none of the cluster's names is replaced",
			cluster:    three,
			serving:    &otherNames,
			caPEM:      ca.CertPEM,
			at:         now,
			wantRenew:  true,
			wantReason: "does not cover bao",
		},
		{
			name:        "inside renewBefore window",
			reason:      "a certificate one second past renewAt must be renewed before it expires",
			cluster:     three,
			serving:     &serving,
			caPEM:       ca.CertPEM,
			at:          renewAt.Add(time.Second),
			wantRenew:   true,
			wantReason:  "expires at " + notAfter.Format(time.RFC3339),
			wantRenewAt: renewAt,
		},
		{
			name:        "exactly at renewAt",
			reason:      "renewAt itself is the first moment of renewal, or a requeue at renewAt would find nothing to do",
			cluster:     three,
			serving:     &serving,
			caPEM:       ca.CertPEM,
			at:          renewAt,
			wantRenew:   true,
			wantReason:  "expires at",
			wantRenewAt: renewAt,
		},
		{
			name:        "just before renewAt",
			reason:      "a certificate is not renewed early",
			cluster:     three,
			serving:     &serving,
			caPEM:       ca.CertPEM,
			at:          renewAt.Add(-time.Second),
			wantRenewAt: renewAt,
		},
		{
			name:        "expired",
			reason:      "an expired certificate is certainly renewed",
			cluster:     three,
			serving:     &serving,
			caPEM:       ca.CertPEM,
			at:          notAfter.Add(time.Hour),
			wantRenew:   true,
			wantReason:  "expires at",
			wantRenewAt: renewAt,
		},
		{
			name:        "healthy",
			reason:      "a fresh, matching certificate is kept and the reconciler requeues at NotAfter - renewBefore",
			cluster:     three,
			serving:     &serving,
			caPEM:       ca.CertPEM,
			at:          now,
			wantRenewAt: renewAt,
		},
		{
			name:        "healthy with fewer replicas",
			reason:      "scaling down leaves extra SANs, which are harmless and need no new certificate",
			cluster:     newCluster(withReplicas(1)),
			serving:     &serving,
			caPEM:       ca.CertPEM,
			at:          now,
			wantRenewAt: renewAt,
		},
		{
			name:        "renewBefore capped for short certificates",
			reason:      "renewBefore 30d on a 24h certificate would renew in a loop; it is capped at 2/3 of the lifetime (16h)",
			cluster:     shortLived,
			serving:     &shortServing,
			caPEM:       ca.CertPEM,
			at:          now,
			wantRenewAt: now.Add(24 * time.Hour).Add(-16 * time.Hour),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			renew, reason, at := ServingDecision(tc.cluster, tc.serving, tc.caPEM, tc.at)
			g.Expect(renew).To(Equal(tc.wantRenew), tc.reason)
			if tc.wantReason == "" {
				g.Expect(reason).To(BeEmpty(), tc.reason)
			} else {
				g.Expect(reason).To(ContainSubstring(tc.wantReason), tc.reason)
			}
			g.Expect(at).To(BeTemporally("==", tc.wantRenewAt), tc.reason)
		})
	}
}

func TestServingDecisionOnFreshlyIssuedCertificate(t *testing.T) {
	// The reconciler re-runs ServingDecision right after issuing to learn renewAt; a
	// fresh certificate must never be judged in need of renewal, for any size.
	for _, replicas := range []int32{1, 3, 5, 7, 9} {
		g := NewWithT(t)
		c := newCluster(withReplicas(replicas))
		ca := mustCA(t, c, now)
		kp := mustServing(t, c, ca, now)
		renew, reason, _ := ServingDecision(c, &kp, ca.CertPEM, now)
		g.Expect(renew).To(BeFalse(), "%d replicas: %s", replicas, reason)
	}
}

func TestCADecision(t *testing.T) {
	ca := mustCA(t, newCluster(), now)
	other := mustCA(t, newCluster(), now)
	expiry := now.Add(CALifetime)
	renewFrom := expiry.Add(-CARenewBefore)
	cases := []struct {
		name       string
		reason     string
		ca         *KeyPair
		at         time.Time
		wantRenew  bool
		wantReason string
	}{
		{name: "nil", reason: "the first reconcile creates the CA", ca: nil, at: now, wantRenew: true, wantReason: "no CA exists yet"},
		{name: "empty", reason: "an empty Secret is no CA", ca: &KeyPair{}, at: now, wantRenew: true, wantReason: "no CA exists yet"},
		{name: "no key", reason: "a CA without its key cannot sign", ca: &KeyPair{CertPEM: ca.CertPEM}, at: now, wantRenew: true, wantReason: "no CA exists yet"},
		{name: "garbage", reason: "a corrupted Secret must be replaced", ca: &KeyPair{CertPEM: []byte("garbage"), KeyPEM: []byte("garbage")}, at: now, wantRenew: true, wantReason: "unreadable"},
		{name: "mismatched key", reason: "a CA key that does not match cannot sign certificates that verify", ca: &KeyPair{CertPEM: ca.CertPEM, KeyPEM: other.KeyPEM}, at: now, wantRenew: true, wantReason: "does not match"},
		{name: "within CARenewBefore", reason: "the CA is replaced a year before expiry, leaving time for clients to pick it up", ca: &ca, at: renewFrom, wantRenew: true, wantReason: "expires at " + expiry.Format(time.RFC3339)},
		{name: "expired", reason: "an expired CA is replaced", ca: &ca, at: expiry.Add(time.Hour), wantRenew: true, wantReason: "expires at"},
		{name: "just before the window", reason: "the CA is not replaced early", ca: &ca, at: renewFrom.Add(-time.Second)},
		{name: "healthy", reason: "a fresh CA is kept: replacing it would re-issue every certificate", ca: &ca, at: now},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			renew, reason := CADecision(tc.ca, tc.at)
			g.Expect(renew).To(Equal(tc.wantRenew), tc.reason)
			if tc.wantReason == "" {
				g.Expect(reason).To(BeEmpty())
			} else {
				g.Expect(reason).To(ContainSubstring(tc.wantReason), tc.reason)
			}
		})
	}
}

func TestGetRenewBefore(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		name   string
		reason string
		opts   []func(*baov1.OpenBaoCluster)
		want   time.Duration
	}{
		{name: "defaults", reason: "30 days before a 90-day certificate expires", want: 30 * day},
		{name: "custom within limit", reason: "a user value below 2/3 of the lifetime is kept", opts: []func(*baov1.OpenBaoCluster){withRenewBefore(10 * day)}, want: 10 * day},
		{name: "exactly two thirds", reason: "the cap is inclusive: 60 days of 90 is allowed", opts: []func(*baov1.OpenBaoCluster){withRenewBefore(60 * day)}, want: 60 * day},
		{name: "larger than lifetime share", reason: "61 days of 90 is capped to 60", opts: []func(*baov1.OpenBaoCluster){withRenewBefore(61 * day)}, want: 60 * day},
		{name: "short certificate with default renewBefore", reason: "a 24h certificate with the 30-day default would be renewed at once, forever", opts: []func(*baov1.OpenBaoCluster){withCertificateDuration(24 * time.Hour)}, want: 16 * time.Hour},
		{name: "renewBefore longer than certificate", reason: "renewBefore 720h on 24h is capped to 16h", opts: []func(*baov1.OpenBaoCluster){withCertificateDuration(24 * time.Hour), withRenewBefore(720 * time.Hour)}, want: 16 * time.Hour},
		{name: "zero renewBefore", reason: "zero means unset, not 'renew at expiry'", opts: []func(*baov1.OpenBaoCluster){withRenewBefore(0)}, want: 30 * day},
		{name: "negative renewBefore", reason: "a negative value means unset", opts: []func(*baov1.OpenBaoCluster){withRenewBefore(-time.Hour)}, want: 30 * day},
		{name: "zero duration", reason: "a zero certificate duration falls back to 90 days, so the cap does not collapse to 0", opts: []func(*baov1.OpenBaoCluster){withCertificateDuration(0)}, want: 30 * day},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(newCluster(tc.opts...).GetRenewBefore()).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestParsePair(t *testing.T) {
	c := newCluster()
	ca := mustCA(t, c, now)
	other := mustCA(t, c, now)

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	otherEC, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherECDER, err := x509.MarshalECPrivateKey(otherEC)
	if err != nil {
		t.Fatal(err)
	}
	keyAsCert := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: otherECDER})

	cases := []struct {
		name    string
		reason  string
		pair    KeyPair
		wantErr string
	}{
		{name: "matching pair", reason: "a pair produced by NewCA must parse", pair: ca},
		{name: "key of another certificate", reason: "a Secret whose key does not match would fail every handshake", pair: KeyPair{CertPEM: ca.CertPEM, KeyPEM: other.KeyPEM}, wantErr: "does not match"},
		{name: "no key PEM", reason: "a missing key must be reported as such", pair: KeyPair{CertPEM: ca.CertPEM, KeyPEM: []byte("nothing")}, wantErr: "no PEM private key"},
		{name: "RSA key", reason: "only EC keys are issued; an RSA key is not ours", pair: KeyPair{CertPEM: ca.CertPEM, KeyPEM: rsaPEM}, wantErr: "EC private key"},
		{name: "no certificate", reason: "a key without a certificate is unusable", pair: KeyPair{CertPEM: nil, KeyPEM: ca.KeyPEM}, wantErr: "no PEM certificate"},
		{name: "key PEM in certificate slot", reason: "a PEM block of the wrong type must not be parsed as a certificate", pair: KeyPair{CertPEM: keyAsCert, KeyPEM: ca.KeyPEM}, wantErr: "no PEM certificate"},
		{name: "corrupt certificate DER", reason: "a PEM CERTIFICATE with broken DER is unreadable", pair: KeyPair{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), KeyPEM: ca.KeyPEM}, wantErr: "failed to parse certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cert, key, err := ParsePair(tc.pair)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred(), tc.reason)
				g.Expect(cert).NotTo(BeNil())
				g.Expect(key).NotTo(BeNil())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)), tc.reason)
			g.Expect(cert).To(BeNil())
			g.Expect(key).To(BeNil())
		})
	}
}

func TestCertNotAfter(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withCertificateDuration(48 * time.Hour))
	ca := mustCA(t, c, now)
	kp := mustServing(t, c, ca, now)
	g.Expect(CertNotAfter(kp.CertPEM)).To(BeTemporally("==", now.Add(48*time.Hour)))
	_, err := CertNotAfter([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"))
	g.Expect(err).To(HaveOccurred())
}

// A user-provided certificate must name the members and the client Service; one
// issued for another cluster is refused, naming what it misses.
func TestUserCertificateProblem(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	ca, err := NewCA(c, now, rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	ours, err := IssueServing(c, ca, now, rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(UserCertificateProblem(c, ours.CertPEM)).To(BeEmpty(), "a certificate that names every member and the Services")

	other := newCluster()
	other.Name = "victim"
	theirs, err := IssueServing(other, ca, now, rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(UserCertificateProblem(c, theirs.CertPEM)).To(And(
		ContainSubstring("the certificate does not name bao.ns.svc, bao-0.bao-internal.ns.svc"),
		ContainSubstring("or a wildcard such as *.bao-internal.ns.svc")))

	g.Expect(UserCertificateProblem(c, []byte("not a certificate"))).To(ContainSubstring("tls.crt is not a readable PEM certificate"))
}

// TestCANameConstraints: the cluster's CA signs for the cluster's names only (issue
// 38): a certificate its key signs for another namespace's Service, or for an IP
// address, does not verify against it; the serving certificate verifies for every
// name it carries.
func TestCANameConstraints(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(func(c *baov1.OpenBaoCluster) { c.Namespace = "apps" })
	now := time.Now()
	ca := mustCA(t, c, now)
	caCert, caKey, err := ParsePair(ca)
	g.Expect(err).NotTo(HaveOccurred())
	pool := x509.NewCertPool()
	pool.AddCert(caCert)

	serving, err := IssueServing(c, ca, now, rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	leaf, _, err := ParsePair(serving)
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range leaf.DNSNames {
		if name[0] == '*' {
			name = "bao-7" + name[1:]
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now})
		g.Expect(err).NotTo(HaveOccurred(), name)
	}

	sign := func(tmpl *x509.Certificate) *x509.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		g.Expect(err).NotTo(HaveOccurred())
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big1(), now.Add(-time.Minute), now.Add(time.Hour)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		g.Expect(err).NotTo(HaveOccurred())
		cert, err := x509.ParseCertificate(der)
		g.Expect(err).NotTo(HaveOccurred())
		return cert
	}
	for _, tc := range []struct {
		what string
		tmpl *x509.Certificate
		name string
	}{
		{"another namespace's Service", &x509.Certificate{DNSNames: []string{"vault.other.svc"}}, "vault.other.svc"},
		{"the API server", &x509.Certificate{DNSNames: []string{"kubernetes.default.svc"}}, "kubernetes.default.svc"},
		{"a public name", &x509.Certificate{DNSNames: []string{"login.example.com"}}, "login.example.com"},
		{"an IP address", &x509.Certificate{IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}, "10.0.0.1"},
	} {
		_, err := sign(tc.tmpl).Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.name, CurrentTime: now})
		g.Expect(err).To(HaveOccurred(), "bug: the cluster's CA vouches for %s", tc.what)
	}
}

func big1() *big.Int { return big.NewInt(1) }
