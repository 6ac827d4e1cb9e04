package openbao

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	baoapi "github.com/openbao/openbao/api/v2"
)

// ErrNotSnapshot reports data that is not a complete Raft snapshot archive: no
// gzip tar, or one without a non-empty SHA256SUMS.sealed entry. Unlike
// ErrIncompleteSnapshot of a stream, reading the same data again will not help.
var ErrNotSnapshot = errors.New("openbao: not a complete Raft snapshot archive")

// SnapshotInfo describes a snapshot that was streamed.
type SnapshotInfo struct {
	// Bytes is the size of the archive.
	Bytes int64
	// Index and Term are the last Raft index and term the snapshot contains,
	// from the archive's meta.json.
	Index, Term uint64
}

// Snapshot implements Leadership.
func (c *client) Snapshot(ctx context.Context, addr string, w io.Writer) (SnapshotInfo, error) {
	action := fmt.Sprintf("failed to take a Raft snapshot from %s", addr)
	cw := &countingWriter{w: w}
	var meta archiveMeta
	err := c.withToken(ctx, action, addr, pathSnapshot, "read", func(cl *baoapi.Client) error {
		resp, err := cl.Logical().ReadRawWithContext(ctx, pathSnapshot)
		if resp != nil && resp.Body != nil {
			defer resp.Body.Close()
		}
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			// Redirects are reported by withToken; any other 2xx has no body.
			return fmt.Errorf("OpenBao answered HTTP %d without a snapshot", resp.StatusCode)
		}
		meta, err = copyVerified(cw, resp.Body)
		return err
	})
	return SnapshotInfo{Bytes: cw.n, Index: meta.Index, Term: meta.Term}, err
}

// Restore implements Leadership.
//
// It sends the archive as the api client's Sys().RaftSnapshotRestoreWithContext
// does (POST, the raw archive as the body, streamed), but reads the answer's
// status itself: that call reports a redirect from a standby as success and
// would have restored nothing.
func (c *client) Restore(ctx context.Context, addr string, r io.ReadSeeker) error {
	action := fmt.Sprintf("failed to restore a Raft snapshot on %s", addr)
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("%s: the snapshot cannot be read: %w", action, err)
	}
	end, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("%s: the snapshot cannot be read: %w", action, err)
	}
	return c.withToken(ctx, action, addr, pathSnapshotForce, "update and sudo", func(cl *baoapi.Client) error {
		// A second call (after a 403 and a fresh login) sends the archive again
		// from its start.
		if _, err := r.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("failed to rewind the snapshot: %w", err)
		}
		api := cl.NewRequest(http.MethodPost, "/v1/"+pathSnapshotForce)
		// Not the api client's request, which would read the whole archive into
		// memory (and leave a redirect undetected): the body is streamed.
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, api.URL.String(), io.NopCloser(r))
		if err != nil {
			return err
		}
		req.ContentLength = end - start
		for name, values := range api.Headers {
			req.Header[name] = values
		}
		if api.ClientToken != "" {
			req.Header.Set(baoapi.AuthHeaderName, api.ClientToken)
		}
		httpResp, err := c.httpClient.Do(req)
		if err != nil {
			return err
		}
		defer httpResp.Body.Close()
		resp := &baoapi.Response{Response: httpResp}
		st := &lastStatus{}
		st.record(resp)
		if err := st.redirected(addr); err != nil {
			return err
		}
		return resp.Error()
	})
}

// InspectSnapshot reads a snapshot archive to its end and checks that it is
// complete, as a snapshot stream is checked: a gzip tar whose
// SHA256SUMS.sealed entry is present and not empty (ErrNotSnapshot otherwise).
// It returns the archive's size and the Raft index and term its meta.json
// names (zero when meta.json is missing or does not decode).
func InspectSnapshot(r io.Reader) (SnapshotInfo, error) {
	cr := &countingReader{r: r}
	meta, ok := readArchive(cr)
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return SnapshotInfo{Bytes: cr.n}, fmt.Errorf("failed to read the snapshot archive: %w", err)
	}
	if cr.err != nil {
		return SnapshotInfo{Bytes: cr.n}, fmt.Errorf("failed to read the snapshot archive: %w", cr.err)
	}
	if !ok {
		return SnapshotInfo{Bytes: cr.n}, fmt.Errorf("%w: it is no gzip tar archive with a non-empty SHA256SUMS.sealed entry", ErrNotSnapshot)
	}
	return SnapshotInfo{Bytes: cr.n, Index: meta.Index, Term: meta.Term}, nil
}

// countingReader counts what it reads and keeps the first read error but EOF.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// archiveMeta is the part of a snapshot archive's meta.json (hashicorp/raft's
// SnapshotMeta) that a receipt records.
type archiveMeta struct {
	Index uint64 `json:"Index"`
	Term  uint64 `json:"Term"`
}

// copyVerified copies a snapshot archive to w and checks on the way that it
// is a gzip tar whose SHA256SUMS.sealed entry is present and not empty, as the
// api client's own snapshot call does; a server that fails midstream leaves
// it out. It returns what meta.json says.
func copyVerified(w io.Writer, body io.Reader) (archiveMeta, error) {
	pr, pw := io.Pipe()
	type result struct {
		meta archiveMeta
		ok   bool
	}
	verified := make(chan result, 1)
	go func() {
		meta, ok := readArchive(pr)
		_, _ = io.Copy(io.Discard, pr)
		verified <- result{meta, ok}
	}()
	_, err := io.Copy(io.MultiWriter(w, pw), body)
	pw.CloseWithError(err)
	res := <-verified
	if err != nil {
		return archiveMeta{}, fmt.Errorf("failed to copy the snapshot stream: %w", err)
	}
	if !res.ok {
		return archiveMeta{}, fmt.Errorf("%w: the archive has no non-empty SHA256SUMS.sealed", ErrIncompleteSnapshot)
	}
	return res.meta, nil
}

// readArchive reads a snapshot archive to its SHA256SUMS.sealed entry and reports
// whether that entry is there and not empty, with meta.json's index and term.
func readArchive(r io.Reader) (archiveMeta, bool) {
	var meta archiveMeta
	gz, err := gzip.NewReader(r)
	if err != nil {
		return meta, false
	}
	t := tar.NewReader(gz)
	for {
		h, err := t.Next()
		if err != nil {
			return meta, false
		}
		switch h.Name {
		case "meta.json":
			// A meta.json that does not decode leaves index and term at zero; the
			// archive itself is judged by its sealed checksums.
			_ = json.NewDecoder(io.LimitReader(t, 1<<20)).Decode(&meta)
		case "SHA256SUMS.sealed":
			b, err := io.ReadAll(t)
			return meta, err == nil && len(b) > 0
		}
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
