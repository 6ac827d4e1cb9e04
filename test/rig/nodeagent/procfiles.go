package nodeagent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// terminationMessage is the container's termination log, or for
// FallbackToLogsOnError and a failed exit, the tail of this run's log.
func terminationMessage(ctr *corev1.Container, plan *execPlan, code int32, offset int64) string {
	if plan.termLog != "" {
		if b, err := readAtMost(plan.termLog, 0, maxTerminationMessage); err == nil && len(b) > 0 {
			return string(b)
		}
	}
	if ctr.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError || code == 0 {
		return ""
	}
	b, err := readAtMost(plan.logPath, offset, -1)
	if err != nil {
		return ""
	}
	return tailLog(b, maxFallbackLogLines, maxFallbackLogBytes)
}

// tailLog is the last maxLines lines of b, at most maxBytes bytes.
func tailLog(b []byte, maxLines, maxBytes int) string {
	s := strings.TrimRight(string(b), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	s = strings.Join(lines, "\n")
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
	}
	return s
}

// readAtMost reads file from offset, at most limit bytes (limit < 0: all).
func readAtMost(path string, offset int64, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	var rd io.Reader = f
	if limit >= 0 {
		rd = io.LimitReader(f, limit)
	}
	return io.ReadAll(rd)
}

// writePidFile records a container's pid and start time, so a restarted agent can
// kill what a crashed one left behind.
func writePidFile(path string, pid int) {
	st, err := procStartTime(pid)
	if err != nil {
		return
	}
	_ = os.WriteFile(path, []byte(fmt.Sprintf("%d %s\n", pid, st)), 0o644)
}

// procStartTime is field 22 of /proc/<pid>/stat.
func procStartTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// After ")" come fields 3 (state) onwards; start time is field 22.
	if len(f) < 20 {
		return "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return f[19], nil
}

// killStale kills the process groups recorded in <dir>/*/pid that still run.
func killStale(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var pid int
		var st string
		if _, err := fmt.Sscanf(string(b), "%d %s", &pid, &st); err != nil || pid <= 1 {
			continue
		}
		if cur, err := procStartTime(pid); err == nil && cur == st {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = os.Remove(f)
	}
}
