package openbao

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestBoundedTransport(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", len(r.URL.Path)*10))
	}))
	defer srv.Close()
	c := &http.Client{Transport: boundedTransport{next: http.DefaultTransport, max: 100}}
	get := func(path string) (string, error) {
		resp, err := c.Get(srv.URL + path)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	body, err := get("/a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(HaveLen(20))
	body, err = get("/" + strings.Repeat("a", 9)) // exactly 100 bytes
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(HaveLen(100))
	_, err = get("/" + strings.Repeat("a", 10)) // 110 bytes
	g.Expect(err).To(MatchError(ContainSubstring("longer than 100 bytes")))
}
