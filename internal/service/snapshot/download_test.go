package snapshot

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// fakeS3 serves one object of bucket "snaps" the way S3 does for HEAD and GET, and
// S3's NoSuchKey answer for every other key. lie, when set, is the size HEAD reports.
func fakeS3(t *testing.T, key string, body []byte, lie int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/snaps/"+key {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			if r.Method != http.MethodHead {
				_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code>` +
					`<Message>The specified key does not exist.</Message><Key>` + r.URL.Path + `</Key></Error>`))
			}
			return
		}
		size := len(body)
		if lie > 0 && r.Method == http.MethodHead {
			size = lie
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("Last-Modified", time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/gzip")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDownload(t *testing.T) {
	body := bytes.Repeat([]byte("raft snapshot "), 5000)
	tests := []struct {
		reason      string
		key         string
		lie         int
		wantMissing bool
		wantErr     string
	}{
		{reason: "the object is copied whole", key: "ns/bao/a.snap"},
		{reason: "a missing object is ErrObjectMissing, naming where it was looked for", key: "ns/bao/gone.snap",
			wantMissing: true, wantErr: "s3://snaps/ns/bao/gone.snap does not exist at "},
		{reason: "fewer bytes than the store reports is an error", key: "ns/bao/a.snap", lie: len(body) + 10,
			wantErr: "the store reports"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			srv := fakeS3(t, "ns/bao/a.snap", body, tt.lie)
			st, err := NewStore(S3Config{Endpoint: srv.URL, Bucket: "snaps", PathStyle: true, AccessKeyID: "id", SecretAccessKey: "secret"})
			g.Expect(err).NotTo(HaveOccurred())
			var out bytes.Buffer
			n, err := st.Download(t.Context(), tt.key, &out)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)), tt.reason)
				g.Expect(errors.Is(err, ErrObjectMissing)).To(Equal(tt.wantMissing), tt.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tt.reason)
			g.Expect(n).To(Equal(int64(len(body))))
			g.Expect(out.Bytes()).To(Equal(body))
		})
	}
}
