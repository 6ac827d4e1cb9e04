package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// clockProbeArg makes the test binary print its wall clock (Unix seconds) every 50 ms
// for the given number of times: a Go program reads the clock through the vDSO, the
// path the supervisor must take away.
const clockProbeArg = "rig-test-clock"

// clockProbeMain prints the time n times, 50 ms apart; with a second argument it
// creates that file once it printed the first, so a test can change the clock after
// the first read, however slowly the probe started.
func clockProbeMain(args []string) {
	n, _ := strconv.Atoi(args[0])
	for i := 0; i < n; i++ {
		fmt.Println(time.Now().Unix())
		if i == 0 && len(args) > 1 {
			_ = os.WriteFile(args[1], nil, 0o644)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHelperSkewsWallClock runs commands of a clock-adjustable pod through the real
// helper: a Go program, date(1) and programs a shell starts read the offset
// clock, the offset changes while a command runs, and exit codes and a missing
// command are reported as without it.
func TestHelperSkewsWallClock(t *testing.T) {
	requireRoot(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("skipped: the adjustable clock is implemented for linux/amd64 only")
	}
	g := NewWithT(t)
	root := t.TempDir()
	offset := filepath.Join(root, "offset")
	self, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	spec := func(argv ...string) execSpec {
		path := argv[0]
		if path == clockProbeArg {
			path, argv = self, append([]string{self}, argv...)
		}
		return execSpec{Path: path, Argv: argv, Dir: root, ClockFile: offset}
	}
	// lines runs the command and returns its output's numbers minus the time now.
	lines := func(s execSpec, during func()) []time.Duration {
		t.Helper()
		if during != nil {
			go during()
		}
		code, out, err := runHelper(context.Background(), "/proc/self/exe", s, []string{"PATH=/usr/bin:/bin", "TZ=UTC"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(0), "output: %s", out)
		now := time.Now().Unix()
		var ds []time.Duration
		for _, l := range strings.Fields(out) {
			v, err := strconv.ParseInt(l, 10, 64)
			g.Expect(err).NotTo(HaveOccurred(), "output: %s", out)
			ds = append(ds, time.Duration(v-now)*time.Second)
		}
		g.Expect(ds).NotTo(BeEmpty())
		return ds
	}
	near := func(want time.Duration) OmegaMatcher {
		return And(BeNumerically(">=", want-5*time.Second), BeNumerically("<=", want+5*time.Second))
	}

	// No offset file: the machine's time.
	g.Expect(lines(spec(clockProbeArg, "1"), nil)).To(HaveEach(near(0)))

	g.Expect(os.WriteFile(offset, []byte("-10m\n"), 0o644)).To(Succeed())
	g.Expect(lines(spec(clockProbeArg, "1"), nil)).To(HaveEach(near(-10*time.Minute)), "a Go program")
	g.Expect(lines(spec("/bin/date", "+%s"), nil)).To(HaveEach(near(-10*time.Minute)), "date(1) through libc")
	g.Expect(lines(spec("/bin/sh", "-c", "exec "+self+" "+clockProbeArg+" 1"), nil)).To(HaveEach(near(-10*time.Minute)),
		"a Go program a shell execs into")
	g.Expect(lines(spec("/bin/sh", "-c", self+" "+clockProbeArg+" 1 & wait"), nil)).To(HaveEach(near(-10*time.Minute)),
		"a Go program a shell starts in the background (an OpenBao container's start script does)")

	// The offset changes while the command runs, after its first read: the last reads
	// see the new one.
	firstRead := filepath.Join(root, "first-read")
	ds := lines(spec(clockProbeArg, "30", firstRead), func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(firstRead); err == nil {
				break
			}
		}
		_ = os.WriteFile(offset, []byte("1h"), 0o644)
	})
	g.Expect(ds[0]).To(near(-10 * time.Minute))
	g.Expect(ds[len(ds)-1]).To(near(time.Hour))

	code, _, err := runHelper(context.Background(), "/proc/self/exe", spec("/bin/sh", "-c", "exit 3"), []string{"PATH=/bin"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(3))
	code, msg, err := runHelper(context.Background(), "/proc/self/exe", spec(filepath.Join(root, "nope")), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(exitCommandNotFound))
	g.Expect(msg).To(ContainSubstring("nope"))
}
