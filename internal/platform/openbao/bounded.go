package openbao

import (
	"fmt"
	"io"
	"net/http"
)

// MaxResponseBytes bounds every response body the operator's read-only client
// reads: the largest it reads (autopilot state of 9 members, a Raft configuration)
// is a few KiB, and an OpenBao image a cluster author chose could otherwise make the
// operator, whose memory limit is 256 MiB, read without end.
const MaxResponseBytes = 1 << 20

// boundedTransport fails the read of a response body past max bytes.
type boundedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: t.max, max: t.max, url: r.URL.Path}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
	url  string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly max bytes from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("the response to %s is longer than %d bytes: refused (an OpenBao answer is a few KiB)", b.url, b.max)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
