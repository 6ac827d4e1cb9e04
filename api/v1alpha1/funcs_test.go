package v1alpha1

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestDisplayEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://s3.eu-west-1.amazonaws.com": "https://s3.eu-west-1.amazonaws.com",
		"http://KEY:SECRET@minio:9000":       "http://<redacted>@minio:9000",
		"http://KEY@minio:9000/":             "http://<redacted>@minio:9000/",
		"http://KEY:SE%zzCRET@minio:9000":    "<redacted>@minio:9000",
	} {
		got := (&S3Target{Endpoint: in}).DisplayEndpoint()
		NewWithT(t).Expect(got).To(Equal(want), in)
		NewWithT(t).Expect(got).NotTo(ContainSubstring("SECRET"))
		NewWithT(t).Expect(got).NotTo(ContainSubstring("KEY"))
	}
	NewWithT(t).Expect((*S3Target)(nil).DisplayEndpoint()).To(BeEmpty())
}
