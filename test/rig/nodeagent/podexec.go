package nodeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PodExecArg is os.Args[1] of the helper process that sets up a container's mount
// namespace and then becomes the container's command. A program embedding the agent
// must call PodExecMain(os.Args[2:]) first thing in main when it sees it.
const PodExecArg = "__rig_pod_exec"

// execSpec is the helper's instruction, passed as JSON in its second argument. It holds
// no environment values: the environment arrives as the helper's own environment.
type execSpec struct {
	// Path is the executable to exec and Argv its arguments (Argv[0] as the pod wrote it).
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	// Dir is the working directory (created when missing).
	Dir string `json:"dir"`
	// Hostname, when set, is set in a private UTS namespace.
	Hostname string `json:"hostname,omitempty"`
	// Mounts are bind mounts, made in order of target depth.
	Mounts []bindMount `json:"mounts,omitempty"`
	// HostsFile is bind-mounted over /etc/hosts.
	HostsFile string `json:"hostsFile,omitempty"`
	// RecordFile gets one line per mount point the helper had to create on the host.
	RecordFile string `json:"recordFile,omitempty"`
	// Netns, when set, is the network namespace (a path under /run/netns) the command
	// runs in: an isolated pod's (podnet.go).
	Netns string `json:"netns,omitempty"`
	// ClockFile, when set, is the offset file of a clock-adjustable pod: the command
	// runs as the helper's child with its wall clock skewed by it (clock.go).
	ClockFile string `json:"clockFile,omitempty"`
	// Nice, when not 0, is the command's nice value (Config.FavorImages).
	Nice int `json:"nice,omitempty"`
	// ReadOnlyRoot makes / read-only for the command (the container's
	// securityContext.readOnlyRootFilesystem): only its volumes stay writable, as
	// under a container runtime.
	ReadOnlyRoot bool `json:"readOnlyRoot,omitempty"`
}

// bindMount is one bind mount of a host file or directory.
type bindMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
	// Optional mounts are skipped when they cannot be made (the termination log under
	// /dev, for one).
	Optional bool `json:"optional,omitempty"`
}

// Exit codes of the helper when it fails before exec; it also writes the reason to fd 3.
const (
	exitSetupFailed     = 125
	exitCannotExec      = 126
	exitCommandNotFound = 127
)

// PodExecMain is the helper process started for every container and exec probe, in a
// new mount namespace (and a new UTS namespace when a hostname is set). It makes every
// mount private, creates missing mount points (recording those it creates on the host),
// bind-mounts the pod's volumes and hosts file, changes to the working directory and
// execs the command. args are the arguments after PodExecArg. It returns only if args
// are malformed; setup errors exit with code 125-127 after writing the reason to fd 3.
func PodExecMain(args []string) {
	if len(args) > 0 && args[0] == PodExecArg {
		args = args[1:]
	}
	errPipe := os.NewFile(3, "errpipe")
	fail := func(code int, format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		if errPipe != nil {
			_, _ = errPipe.WriteString(msg)
		}
		fmt.Fprintf(os.Stderr, "rig pod exec: %s\n", msg)
		os.Exit(code)
	}
	if errPipe != nil {
		syscall.CloseOnExec(3)
	}
	if len(args) != 1 {
		fail(exitSetupFailed, "want one JSON argument, got %d", len(args))
	}
	var spec execSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		fail(exitSetupFailed, "failed to parse the exec spec: %v", err)
	}
	if spec.Netns != "" {
		// setns changes the calling thread only: this goroutine stays on it through
		// the exec, which keeps the thread's namespaces.
		runtime.LockOSThread()
		if err := joinNetns(spec.Netns); err != nil {
			fail(exitSetupFailed, "%v", err)
		}
	}
	if err := setupMounts(&spec); err != nil {
		fail(exitSetupFailed, "%v", err)
	}
	if spec.Hostname != "" {
		if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
			fail(exitSetupFailed, "failed to set hostname %q: %v", spec.Hostname, err)
		}
	}
	if spec.Dir != "" {
		if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
			fail(exitSetupFailed, "failed to create working directory %s: %v", spec.Dir, err)
		}
		if err := os.Chdir(spec.Dir); err != nil {
			fail(exitSetupFailed, "failed to change to working directory %s: %v", spec.Dir, err)
		}
	}
	if spec.Nice != 0 {
		// Inherited by the exec'ed command and its children.
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, spec.Nice); err != nil {
			fail(exitSetupFailed, "failed to set the nice value %d: %v", spec.Nice, err)
		}
	}
	if spec.ClockFile != "" {
		code, err := runSkewed(spec, func() {
			if errPipe != nil {
				_ = errPipe.Close()
			}
		})
		fail(code, "%v", err)
	}
	err := syscall.Exec(spec.Path, spec.Argv, os.Environ())
	code := exitCannotExec
	if errors.Is(err, syscall.ENOENT) {
		code = exitCommandNotFound
	}
	fail(code, "failed to exec %s: %v", spec.Path, err)
}

// joinNetns moves the calling thread into the network namespace at path.
func joinNetns(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("failed to open the pod's network namespace: %w", err)
	}
	defer func() { _ = f.Close() }()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("failed to join the pod's network namespace %s: %w", path, err)
	}
	return nil
}

// setupMounts makes / private, creates missing mount points and bind-mounts.
func setupMounts(spec *execSpec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("failed to make / private: %w (the helper must run as root in a new mount namespace)", err)
	}
	mounts := append([]bindMount{}, spec.Mounts...)
	if spec.HostsFile != "" {
		mounts = append(mounts, bindMount{Source: spec.HostsFile, Target: "/etc/hosts"})
	}
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].Target) < depth(mounts[j].Target) })
	// First create missing mount points on the host, before any bind mount hides it,
	// and record them; then mount, creating points inside already mounted volumes.
	for _, m := range mounts {
		if err := checkTarget(m.Target); err != nil {
			return err
		}
		created, err := ensureMountpoint(m.Source, m.Target)
		if rerr := record(spec.RecordFile, created); rerr != nil {
			return rerr
		}
		if err != nil && !m.Optional {
			return err
		}
	}
	for _, m := range mounts {
		if err := bind(m); err != nil && !m.Optional {
			return err
		}
	}
	if spec.ReadOnlyRoot {
		// After the volumes: a bind mount takes the flags of the mount its source is
		// on, and a volume's source may be on /.
		if err := readOnlyRoot(); err != nil {
			return err
		}
	}
	return nil
}

// readOnlyRoot makes the root mount read-only in the helper's own mount namespace:
// a bind remount changes this namespace's copy of the mount, never the host's, and
// the mounts below / (the pod's volumes, /dev/shm, /proc) keep their own flags. It
// refuses to run in its parent's mount namespace, where it would be the host's root.
func readOnlyRoot() error {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("failed to read the helper's mount namespace: %w", err)
	}
	// The helper's parent is the agent, started in the host's mount namespace, and
	// the helper was cloned into a new one.
	if parent, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid())); err != nil || parent == self {
		return fmt.Errorf("refusing to make / read-only: the helper is not in a mount namespace of its own (%s; its parent's: %s, %v)", self, parent, err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("failed to make / read-only (readOnlyRootFilesystem): %w", err)
	}
	return nil
}

// bind makes one bind mount, read-only when asked.
func bind(m bindMount) error {
	if _, err := ensureMountpoint(m.Source, m.Target); err != nil {
		return err
	}
	if err := syscall.Mount(m.Source, m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("failed to bind-mount %s at %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		if err := syscall.Mount("", m.Target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("failed to make %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

func checkTarget(t string) error {
	if !filepath.IsAbs(t) || filepath.Clean(t) == "/" {
		return fmt.Errorf("mount path %q must be an absolute path other than /", t)
	}
	return nil
}

// ensureMountpoint creates target (a directory, or an empty file when source is a file)
// and its missing parents, returning what it created, top-down.
func ensureMountpoint(source, target string) ([]string, error) {
	if _, err := os.Lstat(target); err == nil {
		return nil, nil
	}
	fi, err := os.Stat(source)
	if err != nil {
		return nil, fmt.Errorf("mount source %s: %w", source, err)
	}
	var missing []string
	for p := filepath.Dir(target); p != "/" && p != "."; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		missing = append([]string{p}, missing...)
	}
	var created []string
	for _, p := range missing {
		if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
			return created, fmt.Errorf("failed to create mount point parent %s: %w", p, err)
		}
		created = append(created, p)
	}
	if fi.IsDir() {
		if err := os.Mkdir(target, 0o755); err != nil && !os.IsExist(err) {
			return created, fmt.Errorf("failed to create mount point %s: %w", target, err)
		}
	} else {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return created, fmt.Errorf("failed to create mount point file %s: %w", target, err)
		}
		_ = f.Close()
	}
	return append(created, target), nil
}

func record(file string, paths []string) error {
	if file == "" || len(paths) == 0 {
		return nil
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", file, err)
	}
	defer func() { _ = f.Close() }()
	_, err = f.WriteString(strings.Join(paths, "\n") + "\n")
	return err
}

// helperCommand builds the helper's exec.Cmd: selfExe re-executed with PodExecArg, in a
// new mount namespace and its own process group.
func helperCommand(selfExe string, spec execSpec, env []string) (*exec.Cmd, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the exec spec: %w", err)
	}
	cmd := exec.Command(selfExe, PodExecArg, string(js))
	cmd.Env = env
	flags := uintptr(syscall.CLONE_NEWNS)
	if spec.Hostname != "" {
		flags |= syscall.CLONE_NEWUTS
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Setpgid: true}
	return cmd, nil
}

// startError is a container that could not be started: the helper failed before exec.
type startError struct {
	code int
	msg  string
}

func (e *startError) Error() string { return e.msg }

// process is a running container process (the helper after its exec).
type process struct {
	pid       int
	startedAt time.Time
	exited    chan struct{}
	exitCode  int32 // valid once exited is closed
}

// stdio are a helper's standard streams; a nil one is /dev/null. Streams that are not
// *os.File are copied by os/exec goroutines that the process's exit waits for.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// startProcess starts the helper with out as stdout and stderr and waits until it has
// exec'ed the command (or failed, then *startError).
func startProcess(selfExe string, spec execSpec, env []string, out io.Writer) (*process, error) {
	return startProcessIO(selfExe, spec, env, stdio{out: out, err: out})
}

// startProcessIO is startProcess with the given standard streams.
func startProcessIO(selfExe string, spec execSpec, env []string, sio stdio) (*process, error) {
	cmd, err := helperCommand(selfExe, spec, env)
	if err != nil {
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sio.in, sio.out, sio.err
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("failed to create a pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, &startError{code: 128, msg: fmt.Sprintf("failed to start the pod exec helper %s: %v", selfExe, err)}
	}
	_ = w.Close()
	msg, _ := io.ReadAll(r) // EOF once the helper exec'ed (close-on-exec) or exited
	_ = r.Close()
	p := &process{pid: cmd.Process.Pid, startedAt: time.Now(), exited: make(chan struct{})}
	if len(msg) > 0 {
		_ = cmd.Wait()
		code := 128
		if cmd.ProcessState != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return nil, &startError{code: code, msg: string(msg)}
	}
	go func() {
		_ = cmd.Wait()
		p.exitCode = exitCodeOf(cmd.ProcessState)
		// Like a container runtime, nothing of the container survives its main process.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		close(p.exited)
	}()
	return p, nil
}

// exitCodeOf is the exit code like a container runtime reports it: 128+signal for a
// process killed by a signal.
func exitCodeOf(ps *os.ProcessState) int32 {
	if ps == nil {
		return 128
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int32(128 + int(ws.Signal()))
	}
	return int32(ps.ExitCode())
}

// signal sends sig to the process group.
func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.pid, sig)
}

// stop sends SIGTERM, waits until deadline() and then sends SIGKILL, and returns once
// the process is gone. deadline is read again while waiting, so a shorter grace period
// given later takes effect.
func (p *process) stop(deadline func() time.Time) {
	p.signal(syscall.SIGTERM)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.exited:
			return
		case <-tick.C:
			if time.Now().After(deadline()) {
				p.signal(syscall.SIGKILL)
				<-p.exited
				return
			}
		}
	}
}

// runHelper runs the helper to completion with a timeout (exec probes and hooks) and
// returns its exit code and up to 10 KiB of output.
func runHelper(ctx context.Context, selfExe string, spec execSpec, env []string) (int, string, error) {
	var buf limitedBuffer
	buf.max = 10 << 10
	p, err := startProcess(selfExe, spec, env, &buf)
	if err != nil {
		var se *startError
		if errors.As(err, &se) {
			return se.code, se.msg, nil
		}
		return -1, "", err
	}
	select {
	case <-p.exited:
		return int(p.exitCode), buf.String(), nil
	case <-ctx.Done():
		p.signal(syscall.SIGKILL)
		<-p.exited
		return -1, buf.String(), fmt.Errorf("command timed out: %w", ctx.Err())
	}
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
