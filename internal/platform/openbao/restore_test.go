package openbao

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	. "github.com/onsi/gomega"
)

// testArchive builds a snapshot archive as OpenBao streams it: a gzip tar of
// meta.json, state.bin, SHA256SUMS and, unless sealed is empty,
// SHA256SUMS.sealed.
func testArchive(t *testing.T, meta, sealed string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	files := []struct{ name, body string }{
		{"meta.json", meta},
		{"state.bin", strings.Repeat("raft state ", 500)},
		{"SHA256SUMS", "0123 meta.json\n4567 state.bin\n"},
	}
	if sealed != "" {
		files = append(files, struct{ name, body string }{"SHA256SUMS.sealed", sealed})
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o600, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sentRequest is what the fake's restore and role endpoints received.
type sentRequest struct {
	method, path, token string
	contentLength       int64
	body                []byte
}

// writeEndpoints serves sys/storage/raft/snapshot-force and auth/<mount>/role/<role>
// on b, recording every request; answer, when set, answers instead of the
// token check (a standby's redirect, a sealed node).
type writeEndpoints struct {
	mu     sync.Mutex
	sent   []sentRequest
	answer func(w http.ResponseWriter) bool
}

func (e *writeEndpoints) requests() []sentRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]sentRequest(nil), e.sent...)
}

func serveWrites(b *fakeBao) *writeEndpoints {
	e := &writeEndpoints{}
	handle := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		token := r.Header.Get("X-Vault-Token")
		e.mu.Lock()
		e.sent = append(e.sent, sentRequest{method: r.Method, path: r.URL.Path, token: token, contentLength: r.ContentLength, body: body})
		answer := e.answer
		e.mu.Unlock()
		if answer != nil && answer(w) {
			return
		}
		b.mu.Lock()
		allowed := b.valid[token] && !b.forbid[strings.TrimPrefix(r.URL.Path, "/v1/")]
		b.mu.Unlock()
		if !allowed {
			writeJSON(w, http.StatusForbidden, `{"errors":["permission denied"]}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	mux := b.srv.Config.Handler.(*http.ServeMux)
	mux.HandleFunc("POST /v1/"+pathSnapshotForce, handle)
	mux.HandleFunc("PUT /v1/auth/"+testMount+"/role/{role}", handle)
	return e
}

func TestRestore(t *testing.T) {
	archive := testArchive(t, `{"Index":812,"Term":3}`, "sealed-sums")
	tests := []struct {
		reason string
		setup  func(b *fakeBao, e *writeEndpoints)
		// revokeAfterLogin invalidates the first token once issued, as its expiry would.
		revokeAfterLogin bool
		wantErr          error
		wantErrText      string
		wantTransience   Transience
		wantSends        int
	}{
		{
			reason: "the archive is streamed whole to snapshot-force with the client token",
			setup:  func(*fakeBao, *writeEndpoints) {}, wantSends: 1,
		},
		{
			reason:           "a token refused with 403 is replaced by a fresh login, and the archive is sent again from its start",
			setup:            func(*fakeBao, *writeEndpoints) {},
			revokeAfterLogin: true, wantSends: 2,
		},
		{
			reason: "a standby's redirect is not the restore: ErrNotActive, transient",
			setup: func(_ *fakeBao, e *writeEndpoints) {
				e.answer = func(w http.ResponseWriter) bool {
					w.Header().Set("Location", "https://bao-1.bao-internal.ns.svc:8200/v1/"+pathSnapshotForce)
					w.WriteHeader(http.StatusTemporaryRedirect)
					return true
				}
			},
			wantErr: ErrNotActive, wantErrText: "redirect to https://bao-1.bao-internal.ns.svc:8200", wantTransience: Transient, wantSends: 1,
		},
		{
			reason:  "a policy without snapshot-force: ErrPermissionDenied after one fresh login, naming the capability",
			setup:   func(b *fakeBao, _ *writeEndpoints) { b.forbid[pathSnapshotForce] = true },
			wantErr: ErrPermissionDenied, wantErrText: "allow update and sudo on sys/storage/raft/snapshot-force",
			wantTransience: Permanent, wantSends: 2,
		},
		{
			reason: "a sealed node: transient",
			setup: func(_ *fakeBao, e *writeEndpoints) {
				e.answer = func(w http.ResponseWriter) bool {
					writeJSON(w, http.StatusServiceUnavailable, `{"errors":["Vault is sealed"]}`)
					return true
				}
			},
			wantErrText: "HTTP 503 (Vault is sealed)", wantTransience: Transient, wantSends: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			b := newFakeBao(t)
			e := serveWrites(b)
			tt.setup(b, e)
			c, _ := newMemberTestClient(t, b, nil)
			if tt.revokeAfterLogin {
				// A read logs in; the token then expires before the restore.
				_, err := c.AutopilotState(t.Context(), b.srv.URL)
				g.Expect(err).NotTo(HaveOccurred())
				b.revokeAll()
			}
			// The reader's current offset is where the archive starts.
			r := bytes.NewReader(append([]byte("skipped"), archive...))
			_, _ = r.Seek(int64(len("skipped")), io.SeekStart)

			err := c.Restore(t.Context(), b.srv.URL, r)
			sent := e.requests()
			g.Expect(sent).To(HaveLen(tt.wantSends), tt.reason)
			for _, s := range sent {
				g.Expect(s.method).To(Equal(http.MethodPost))
				g.Expect(s.path).To(Equal("/v1/sys/storage/raft/snapshot-force"))
			}
			if tt.wantErr != nil || tt.wantErrText != "" {
				g.Expect(err).To(HaveOccurred(), tt.reason)
				if tt.wantErr != nil {
					g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "%s: %v", tt.reason, err)
				}
				g.Expect(err.Error()).To(ContainSubstring(tt.wantErrText))
				g.Expect(err.Error()).To(ContainSubstring("failed to restore a Raft snapshot on " + b.srv.URL))
				g.Expect(TransienceOf(err)).To(Equal(tt.wantTransience), tt.reason)
				for _, s := range sent {
					g.Expect(err.Error()).NotTo(ContainSubstring(s.token), "no token in errors")
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tt.reason)
			last := sent[len(sent)-1]
			g.Expect(last.body).To(Equal(archive), "the archive from the reader's offset, whole, also when sent again")
			g.Expect(last.contentLength).To(Equal(int64(len(archive))))
			g.Expect(last.token).To(Equal(fmt.Sprintf("t-%d", b.logins())), "the token of the latest login")
			if tt.revokeAfterLogin {
				g.Expect(b.logins()).To(Equal(2))
				g.Expect(sent[0].token).To(Equal("t-1"), "the revoked token was tried first")
			}
		})
	}
}

func TestWriteRole(t *testing.T) {
	data := map[string]any{
		"role_type": "jwt", "user_claim": "sub", "bound_subject": "system:serviceaccount:ns:bao-executor",
		"bound_audiences": []any{"openbao.baokeeper.dev/ns/bao"}, "token_policies": []any{"baokeeper-executor"},
		"token_ttl": "15m", "token_max_ttl": "30m", "token_type": "batch",
	}
	t.Run("the data is written to auth/<mount>/role/<role> with the client token", func(t *testing.T) {
		g := NewWithT(t)
		b := newFakeBao(t)
		e := serveWrites(b)
		c, _ := newMemberTestClient(t, b, nil)
		g.Expect(c.WriteRole(t.Context(), b.srv.URL, "/"+testMount+"/", "baokeeper-executor", data)).To(Succeed())
		sent := e.requests()
		g.Expect(sent).To(HaveLen(1))
		g.Expect(sent[0].method).To(Equal(http.MethodPut))
		g.Expect(sent[0].path).To(Equal("/v1/auth/" + testMount + "/role/baokeeper-executor"))
		g.Expect(sent[0].token).To(Equal("t-1"))
		var got map[string]any
		g.Expect(json.Unmarshal(sent[0].body, &got)).To(Succeed())
		g.Expect(got).To(Equal(data))
	})
	t.Run("a policy without update on the role: ErrPermissionDenied, naming the path", func(t *testing.T) {
		g := NewWithT(t)
		b := newFakeBao(t)
		e := serveWrites(b)
		b.forbid["auth/"+testMount+"/role/baokeeper-controller"] = true
		c, _ := newMemberTestClient(t, b, nil)
		err := c.WriteRole(t.Context(), b.srv.URL, testMount, "baokeeper-controller", data)
		g.Expect(errors.Is(err, ErrPermissionDenied)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("allow update on auth/" + testMount + "/role/baokeeper-controller")))
		g.Expect(TransienceOf(err)).To(Equal(Permanent))
		g.Expect(e.requests()).To(HaveLen(2), "one more try after a fresh login")
	})
	t.Run("a role name that is not one path segment is refused unsent", func(t *testing.T) {
		g := NewWithT(t)
		b := newFakeBao(t)
		e := serveWrites(b)
		c, _ := newMemberTestClient(t, b, nil)
		g.Expect(c.WriteRole(t.Context(), b.srv.URL, testMount, "../config", data)).To(MatchError(ContainSubstring("invalid role name")))
		g.Expect(c.WriteRole(t.Context(), b.srv.URL, "/", "r", data)).To(MatchError(ContainSubstring("invalid auth mount")))
		g.Expect(e.requests()).To(BeEmpty())
		g.Expect(b.logins()).To(BeZero())
	})
}

func TestInspectSnapshot(t *testing.T) {
	complete := testArchive(t, `{"Index":812,"Term":3,"ID":"3-812-1764404473"}`, "sealed-sums")
	var notGzip bytes.Buffer
	notGzip.WriteString("PK\x03\x04 a zip, not a snapshot")
	tests := []struct {
		reason      string
		r           io.Reader
		wantInfo    SnapshotInfo
		wantNotSnap bool
		wantErr     string
	}{
		{reason: "a complete archive: its size, index and term", r: bytes.NewReader(complete),
			wantInfo: SnapshotInfo{Bytes: int64(len(complete)), Index: 812, Term: 3}},
		{reason: "no SHA256SUMS.sealed: an archive cut short", r: bytes.NewReader(testArchive(t, `{"Index":1,"Term":1}`, "")), wantNotSnap: true},
		{reason: "not gzip", r: &notGzip, wantNotSnap: true},
		{reason: "a gzip archive cut in half", r: bytes.NewReader(complete[:len(complete)/2]), wantNotSnap: true},
		{reason: "a read error is reported as one, not as a broken archive",
			r: io.MultiReader(bytes.NewReader(complete[:100]), iotest.ErrReader(errors.New("disk gone"))), wantErr: "disk gone"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			info, err := InspectSnapshot(tt.r)
			switch {
			case tt.wantNotSnap:
				g.Expect(errors.Is(err, ErrNotSnapshot)).To(BeTrue(), "%s: %v", tt.reason, err)
			case tt.wantErr != "":
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(errors.Is(err, ErrNotSnapshot)).To(BeFalse())
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(info).To(Equal(tt.wantInfo))
			}
		})
	}
}
