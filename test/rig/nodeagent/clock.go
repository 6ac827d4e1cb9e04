package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodClockAnnotation, set to PodClockAdjustable on a pod, lets a test skew the wall
// clock that the pod's processes read (SkewClock), as a member on a node whose clock
// drifted would. A Go program such as OpenBao reads the clock through the vDSO, which
// neither LD_PRELOAD nor a time namespace can offset, so every process of such a pod
// runs under a small supervisor: the process starts without the vDSO, so that it reads
// the wall clock with a system call, and a seccomp filter hands each such call to the
// supervisor, which answers with its own clock plus the offset in the pod's clock file
// (clock_linux_amd64.go). The monotonic clock, which Raft's timers use, is untouched,
// as on a real node whose wall clock is wrong. Other pods are not supervised.
const (
	PodClockAnnotation = "rig.baokeeper.dev/clock"
	PodClockAdjustable = "adjustable"
)

// ClockDir holds one file per skewed pod, named after its namespace and name, with
// the offset (a Go duration) its processes add to the wall clock; a missing file is no
// offset. The name, not the UID, keys it: a skewed clock is a node's, and a member's
// replacement pod comes back to the same clock, as a StatefulSet pod does to its node.
// It is shared by every agent on the machine like /run/netns.
const ClockDir = "/run/bkclock"

// clockFile is the offset file of the pod namespace/name.
func clockFile(namespace, name string) string {
	return filepath.Join(ClockDir, namespace+"_"+name)
}

// adjustableClock reports whether the pod asked for an adjustable clock.
func adjustableClock(pod *corev1.Pod) bool {
	return pod.Annotations[PodClockAnnotation] == PodClockAdjustable
}

// SkewClock sets the wall-clock offset of the clock-adjustable pod namespace/name: its
// processes, and those of the pods that replace it, read the time d ahead (or behind,
// when negative) from their next read on, within clockRefresh. Zero sets the clock
// right again and forgets the offset.
func SkewClock(namespace, name string, d time.Duration) error {
	path := clockFile(namespace, name)
	if d == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("failed to set the clock of %s/%s right: %w", namespace, name, err)
		}
		return nil
	}
	if err := os.MkdirAll(ClockDir, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", ClockDir, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(d.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("failed to write the clock offset of %s/%s: %w", namespace, name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("failed to set the clock offset of %s/%s: %w", namespace, name, err)
	}
	return nil
}

// DeleteClockFiles removes every offset file that is left (a crashed agent's); the rig's
// launcher calls it once the rig has stopped.
func DeleteClockFiles() error {
	if err := os.RemoveAll(ClockDir); err != nil {
		return fmt.Errorf("failed to remove %s: %w", ClockDir, err)
	}
	return nil
}

// clockRefresh is how often a supervisor reads its pod's offset file again.
const clockRefresh = 100 * time.Millisecond

// clockOffset follows an offset file.
type clockOffset struct {
	path string
	ns   atomic.Int64
}

// load reads the file once; a missing or malformed file leaves the offset as it was
// (missing at the start: zero).
func (c *clockOffset) load() {
	b, err := os.ReadFile(c.path)
	if err != nil {
		if os.IsNotExist(err) {
			c.ns.Store(0)
		}
		return
	}
	if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
		c.ns.Store(int64(d))
	}
}

// follow reloads the file every clockRefresh, for ever.
func (c *clockOffset) follow() {
	for range time.Tick(clockRefresh) {
		c.load()
	}
}

// now is the skewed wall clock.
func (c *clockOffset) now() time.Time { return time.Now().Add(time.Duration(c.ns.Load())) }
