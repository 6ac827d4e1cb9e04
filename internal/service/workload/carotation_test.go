package workload

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// certsIn parses every certificate of a PEM bundle.
func certsIn(t *testing.T, b []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatalf("bundle holds an unreadable certificate: %v", err)
		}
		out = append(out, cert)
	}
}

// A rotated CA is trusted (in ca.crt) before any serving certificate it signs is
// issued, and the CA it replaced stays trusted while it lives.
func TestCARotation(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	born := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old, err := NewCA(c, born, rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	oldCert, _, _ := ParsePair(old)

	st := CAState{Current: &old}
	now := oldCert.NotAfter.Add(-CARenewBefore)
	renew, _ := CADecision(st.Current, now)
	g.Expect(renew).To(BeTrue(), "a year before it expires the CA is replaced")
	next, err := NewCA(c, now, rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	nextCert, _, _ := ParsePair(next)
	st = st.Rotate(next, now)

	g.Expect(certsIn(t, st.Bundle(now))).To(HaveLen(2), "ca.crt holds the new CA and the old one")
	g.Expect(st.Signer(now).CertPEM).To(Equal(old.CertPEM), "the old CA signs until the new one was published for CABundleSoak")
	g.Expect(st.SwitchAt(now)).To(Equal(now.Add(CABundleSoak)), "the serving certificate is reissued when the soak ends")
	serving, err := IssueServing(c, st.Signer(now), now, rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	renewServing, _, _ := ServingDecision(c, &serving, st.Signer(now).CertPEM, now.Add(time.Hour))
	g.Expect(renewServing).To(BeFalse(), "during the soak the serving certificate signed by the old CA stays")

	later := now.Add(CABundleSoak)
	g.Expect(st.Signer(later).CertPEM).To(Equal(next.CertPEM), "after the soak the new CA signs")
	g.Expect(st.SwitchAt(later)).To(BeZero())
	renewServing, reason, _ := ServingDecision(c, &serving, st.Signer(later).CertPEM, later)
	g.Expect(renewServing).To(BeTrue(), "the serving certificate moves to the new CA")
	g.Expect(reason).To(ContainSubstring("not signed by the current CA"))
	g.Expect(certsIn(t, st.Bundle(later))).To(HaveLen(2), "the old CA stays trusted while it lives")

	// The Secret keeps the state across restarts of the operator.
	sec := CASecretFor(c, st, later)
	back := CAStateOf(sec)
	g.Expect(back.Previous).NotTo(BeNil())
	g.Expect(back.RotatedAt).To(Equal(now.Truncate(time.Second)))
	g.Expect(back.Signer(now.Add(time.Hour)).CertPEM).To(Equal(old.CertPEM))

	expired := oldCert.NotAfter.Add(time.Minute)
	g.Expect(certsIn(t, st.Bundle(expired))).To(HaveLen(1), "an expired CA leaves the bundle")
	g.Expect(certsIn(t, st.Bundle(expired))[0].Equal(nextCert)).To(BeTrue())
	g.Expect(CASecretFor(c, st, expired).Data).NotTo(HaveKey(CAPreviousCertKey), "and the CA Secret")

	// A CA that is unreadable or expired when it is replaced is not kept.
	gone := CAState{Current: &KeyPair{CertPEM: []byte("junk"), KeyPEM: []byte("junk")}}.Rotate(next, now)
	g.Expect(gone.Previous).To(BeNil())
	g.Expect(certsIn(t, gone.Bundle(now))).To(HaveLen(1))
}
