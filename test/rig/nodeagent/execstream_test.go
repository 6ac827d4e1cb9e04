package nodeagent

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestStreamHelper runs exec sessions through the real helper: streams apart and not
// truncated, stdin to EOF, exit codes, and sessions that end although a background
// process, a silent client or a canceled context would hold them.
func TestStreamHelper(t *testing.T) {
	requireRoot(t)
	root := t.TempDir()
	big := make([]byte, 4<<20)
	_, err := rand.Read(big)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	silent, _ := io.Pipe() // a client that never sends stdin nor closes it
	t.Cleanup(func() { _ = silent.Close() })

	cases := []struct {
		name, reason string
		argv         []string
		path         string        // executable, default /bin/sh
		stdin        io.Reader     // nil: no stdin
		timeout      time.Duration // of the session's context, default 30 s
		wantCode     int
		wantOut      []byte
		wantErrOut   string // substring of stderr
		wantErr      bool
		maxDuration  time.Duration
	}{
		{name: "streams apart", reason: "stdout and stderr are separate streams",
			argv: []string{"sh", "-c", "echo out; echo err >&2"}, wantOut: []byte("out\n"), wantErrOut: "err\n"},
		{name: "stdin through cat", reason: "4 MiB of stdin come back unchanged on stdout, nothing is cut at 10 KiB",
			path: "/bin/cat", argv: []string{"cat"}, stdin: bytes.NewReader(big), wantOut: big},
		{name: "exit code", reason: "the command's exit code is returned",
			argv: []string{"sh", "-c", "echo bye; exit 3"}, wantCode: 3, wantOut: []byte("bye\n")},
		{name: "no stdin", reason: "without stdin the command reads EOF at once",
			path: "/bin/cat", argv: []string{"cat"}, wantOut: []byte{}},
		{name: "silent client", reason: "a command that exits ends the session although stdin is still open",
			argv: []string{"sh", "-c", "echo done"}, stdin: silent, wantOut: []byte("done\n"), maxDuration: 4 * time.Second},
		{name: "background child", reason: "a background process that keeps stdout open is killed with the session",
			argv: []string{"sh", "-c", "sleep 60 & echo started"}, wantOut: []byte("started\n"), maxDuration: 4 * time.Second},
		{name: "not found", reason: "a missing executable is exit 127 with the reason on stderr",
			path: filepath.Join(root, "nope"), argv: []string{"nope"}, wantCode: exitCommandNotFound, wantOut: []byte{}, wantErrOut: "failed to exec"},
		{name: "session ends", reason: "when the session's context ends the command is killed and the error says so",
			path: "/bin/sleep", argv: []string{"sleep", "60"}, timeout: 300 * time.Millisecond, wantCode: 137, wantOut: []byte{}, wantErr: true, maxDuration: 4 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			path := tc.path
			if path == "" {
				path = "/bin/sh"
			}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			maxDuration := tc.maxDuration
			if maxDuration == 0 {
				maxDuration = 20 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			var out, errOut bytes.Buffer
			start := time.Now()
			code, err := streamHelper(ctx, "/proc/self/exe", execSpec{Path: path, Argv: tc.argv, Dir: root},
				[]string{"PATH=/usr/bin:/bin"}, stdio{in: tc.stdin, out: &out, err: &errOut})
			if tc.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("command killed")), tc.reason)
			} else {
				g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			}
			g.Expect(time.Since(start)).To(BeNumerically("<", maxDuration), tc.reason)
			g.Expect(code).To(Equal(tc.wantCode), "%s (stderr: %s)", tc.reason, errOut.String())
			g.Expect(out.Len()).To(Equal(len(tc.wantOut)), tc.reason)
			g.Expect(bytes.Equal(out.Bytes(), tc.wantOut)).To(BeTrue(), tc.reason)
			g.Expect(errOut.String()).To(ContainSubstring(tc.wantErrOut), tc.reason)
		})
	}
}
