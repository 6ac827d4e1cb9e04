package nodeagent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's seccomp user-notification structures (linux/seccomp.h).
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// Auxiliary vector entry types (elf.h).
const (
	atNull        = 0
	atIgnore      = 1
	atSysinfoEhdr = 33
)

// wallClockFilter is the seccomp program that hands every wall-clock read of an
// x86-64 process to the supervisor: clock_gettime of CLOCK_REALTIME or
// CLOCK_REALTIME_COARSE, gettimeofday and time. Every other call runs as usual.
func wallClockFilter() []unix.SockFilter {
	const (
		ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		// Offsets in struct seccomp_data.
		offNr   = 0
		offArch = 4
		offArg0 = 16 // the low half of args[0] on a little-endian machine
	)
	// Jump offsets count the instructions to skip: notify is index 9, allow 10.
	return []unix.SockFilter{
		/* 0 */ {Code: ldAbs, K: offArch},
		/* 1 */ {Code: jeq, K: unix.AUDIT_ARCH_X86_64, Jt: 0, Jf: 8},
		/* 2 */ {Code: ldAbs, K: offNr},
		/* 3 */ {Code: jeq, K: unix.SYS_GETTIMEOFDAY, Jt: 5, Jf: 0},
		/* 4 */ {Code: jeq, K: unix.SYS_TIME, Jt: 4, Jf: 0},
		/* 5 */ {Code: jeq, K: unix.SYS_CLOCK_GETTIME, Jt: 0, Jf: 4},
		/* 6 */ {Code: ldAbs, K: offArg0},
		/* 7 */ {Code: jeq, K: unix.CLOCK_REALTIME, Jt: 1, Jf: 0},
		/* 8 */ {Code: jeq, K: unix.CLOCK_REALTIME_COARSE, Jt: 0, Jf: 1},
		/* 9 */ {Code: ret, K: unix.SECCOMP_RET_USER_NOTIF},
		/* 10 */ {Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
}

// runSkewed runs spec's command as the child of this helper with an adjustable wall
// clock (see PodClockAnnotation) and exits as the command exits. started is called
// once the command runs (its exec succeeded). An error is returned only before the
// command runs; the exit code says which kind (exitCommandNotFound and so on).
//
// The command and every process it forks stay traced (ptrace) for their forks and
// execs: each program started in the pod (an OpenBao container's start script starts
// bao in the background) gets its vDSO entry hidden as its exec completes. Threads
// are not traced, so only signals to a process's main thread stop it for a moment.
func runSkewed(spec execSpec, started func()) (int, error) {
	// The filter is installed on this thread only and the child is forked from it, so
	// the child inherits the filter and this helper's other threads do not; ptrace
	// requests must come from the thread that traces.
	runtime.LockOSThread()
	listener, err := installWallClockFilter()
	if err != nil {
		return exitSetupFailed, err
	}
	pid, err := syscall.ForkExec(spec.Path, spec.Argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		code := exitCannotExec
		if errors.Is(err, syscall.ENOENT) {
			code = exitCommandNotFound
		}
		return code, fmt.Errorf("failed to exec %s: %w", spec.Path, err)
	}
	if err := traceExecs(pid); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return exitSetupFailed, err
	}
	clock := &clockOffset{path: spec.ClockFile}
	clock.load()
	go clock.follow()
	go serveWallClock(listener, clock)
	// Signals to the pod reach its process group, the command included: the helper
	// only outlives them to report the command's exit.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for s := range sigs {
			_ = s // the command received it as well
		}
	}()
	started()
	ws := followExecs(pid)
	if ws.Signaled() {
		// Die of the same signal, so that the agent reports 128+signal.
		signal.Reset()
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
	return 0, nil
}

// traceExecs takes the child pid, traced since its fork (PTRACE_TRACEME) and stopped
// right after its exec, hides the vDSO from it and traces it on (PTRACE_SEIZE, which,
// unlike PTRACE_TRACEME, keeps SIGSTOP working) for its forks and execs: it leaves it
// stopped, seizes it and lets it go on.
func traceExecs(pid int) error {
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return fmt.Errorf("failed to wait for the command to start: %w", err)
	}
	if !ws.Stopped() {
		return fmt.Errorf("the command did not stop after its exec (status %v)", ws)
	}
	if err := hideVDSO(pid); err != nil {
		return err
	}
	if err := ptrace(unix.PTRACE_DETACH, pid, 0, uintptr(syscall.SIGSTOP)); err != nil {
		return fmt.Errorf("failed to detach from the command: %w", err)
	}
	if err := ptrace(unix.PTRACE_SEIZE, pid, 0, unix.PTRACE_O_TRACEEXEC|unix.PTRACE_O_TRACEFORK|unix.PTRACE_O_TRACEVFORK|unix.PTRACE_O_EXITKILL); err != nil {
		return fmt.Errorf("failed to trace the command's execs: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("failed to let the command run: %w", err)
	}
	return nil
}

// followExecs waits for the seized command to exit, hiding the vDSO after each exec
// in its tree of processes (a forked process is seized with its parent's options) and
// passing every signal and stop on unchanged, and returns the command's exit status.
func followExecs(main int) syscall.WaitStatus {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, unix.WALL, nil)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			os.Exit(exitSetupFailed)
		}
		if ws.Exited() || ws.Signaled() {
			if pid == main {
				return ws
			}
			continue
		}
		if !ws.Stopped() {
			continue
		}
		sig := ws.StopSignal()
		switch event := int(uint32(ws) >> 16); {
		case event == unix.PTRACE_EVENT_EXEC:
			if err := hideVDSO(pid); err != nil {
				fmt.Fprintf(os.Stderr, "rig pod exec: %v\n", err)
			}
			_ = ptrace(unix.PTRACE_CONT, pid, 0, 0)
		case event == unix.PTRACE_EVENT_STOP && sig != syscall.SIGTRAP:
			// A group-stop (SIGSTOP and the like): it stays stopped until SIGCONT.
			_ = ptrace(unix.PTRACE_LISTEN, pid, 0, 0)
		case event != 0:
			_ = ptrace(unix.PTRACE_CONT, pid, 0, 0)
		default:
			// A signal on its way to the command: deliver it.
			_ = ptrace(unix.PTRACE_CONT, pid, 0, uintptr(sig))
		}
	}
}

// ptrace makes one ptrace request.
func ptrace(req int, pid int, addr, data uintptr) error {
	if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// hideVDSO makes the auxiliary vector of pid, stopped right after an exec, say
// nothing of the vDSO (its AT_SYSINFO_EHDR entry becomes AT_IGNORE), so that its
// runtime or libc reads the clock with a system call.
func hideVDSO(pid int) error {
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		return fmt.Errorf("failed to read the command's registers: %w", err)
	}
	word := func(addr uint64) (uint64, error) {
		var b [8]byte
		if _, err := syscall.PtracePeekData(pid, uintptr(addr), b[:]); err != nil {
			return 0, fmt.Errorf("failed to read the command's stack at %#x: %w", addr, err)
		}
		return binary.LittleEndian.Uint64(b[:]), nil
	}
	// At entry the stack holds argc, argv[], NULL, envp[], NULL, then the auxiliary
	// vector's (type, value) pairs up to AT_NULL.
	sp := regs.Rsp
	argc, err := word(sp)
	if err != nil {
		return err
	}
	p := sp + 8*(argc+2)
	for {
		v, err := word(p)
		if err != nil {
			return err
		}
		p += 8
		if v == 0 {
			break
		}
	}
	for ; ; p += 16 {
		t, err := word(p)
		if err != nil {
			return err
		}
		if t == atNull {
			return nil
		}
		if t == atSysinfoEhdr {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], atIgnore)
			if _, err := syscall.PtracePokeData(pid, uintptr(p), b[:]); err != nil {
				return fmt.Errorf("failed to hide the vDSO from the command: %w", err)
			}
		}
	}
}

// installWallClockFilter installs wallClockFilter on the calling thread and returns
// the listener on which its notifications arrive.
func installWallClockFilter() (int, error) {
	filter := wallClockFilter()
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return -1, fmt.Errorf("failed to install the wall-clock seccomp filter: %w (the rig must run as root on Linux 5.0 or newer)", errno)
	}
	return int(fd), nil
}

// serveWallClock answers every notification of listener with clock's time.
func serveWallClock(listener int, clock *clockOffset) {
	for {
		var n seccompNotif
		if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.ENOENT) {
				continue
			}
			return // the listener is gone with every filtered process
		}
		resp := seccompNotifResp{ID: n.ID}
		val, errno := answerWallClock(int(n.Pid), n.Data, clock.now())
		resp.Val = val
		if errno != 0 {
			resp.Error = -int32(errno)
		}
		_ = ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}
}

// answerWallClock performs one wall-clock call for thread tid at time now: it writes
// the result into the caller's memory and returns the call's return value.
func answerWallClock(tid int, d seccompData, now time.Time) (int64, syscall.Errno) {
	sec, nsec := now.Unix(), int64(now.Nanosecond())
	var out []byte
	var addr uint64
	val := int64(0)
	switch d.Nr {
	case unix.SYS_CLOCK_GETTIME:
		addr = d.Args[1]
		out = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(sec)), uint64(nsec))
	case unix.SYS_GETTIMEOFDAY:
		addr = d.Args[0]
		out = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(sec)), uint64(nsec/1000))
	case unix.SYS_TIME:
		addr = d.Args[0]
		out = binary.LittleEndian.AppendUint64(nil, uint64(sec))
		val = sec
	default:
		return -1, syscall.ENOSYS
	}
	if addr == 0 {
		if d.Nr == unix.SYS_TIME {
			return val, 0
		}
		return -1, syscall.EFAULT
	}
	local := []unix.Iovec{{Base: &out[0], Len: uint64(len(out))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(out)}}
	if _, err := unix.ProcessVMWritev(tid, local, remote, 0); err != nil {
		return -1, syscall.EFAULT
	}
	return val, 0
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}
