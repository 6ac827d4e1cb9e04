package snapshot

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
)

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }

// TestUnknownAuthorityTransport: minio's client retries every transport error but an
// unwrapped x509.UnknownAuthorityError, so the transport must hand that one on
// unwrapped (Go wraps it in tls.CertificateVerificationError) and leave others alone.
func TestUnknownAuthorityTransport(t *testing.T) {
	ua := x509.UnknownAuthorityError{}
	other := errors.New("connection refused")
	tests := []struct {
		reason     string
		err        error
		wantUA     bool
		wantUntrst bool
	}{
		{reason: "a certificate of an unknown authority, as Go's TLS returns it", err: &tls.CertificateVerificationError{Err: ua}, wantUA: true, wantUntrst: true},
		{reason: "a hostname mismatch is not an unknown authority", err: &tls.CertificateVerificationError{Err: x509.HostnameError{}}},
		{reason: "a network error passes unchanged", err: other},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			req, _ := http.NewRequest(http.MethodHead, "https://s3.example/b/", nil)
			_, err := unknownAuthorityTransport{failingTransport{tc.err}}.RoundTrip(req)
			_, isUA := err.(x509.UnknownAuthorityError)
			g.Expect(isUA).To(Equal(tc.wantUA), "the type minio's client does not retry")
			if !tc.wantUA {
				g.Expect(err).To(Equal(tc.err), "any other error is returned as it was")
			}
			g.Expect(untrustedAuthority(err)).To(Equal(tc.wantUntrst))
		})
	}
}
