package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// outputDrainTimeout bounds how long an exec session waits, once its command exited and
// the command's process group was killed, for output still in the pipes (a process that
// left the group may hold them open).
const outputDrainTimeout = 5 * time.Second

// streamHelper runs the helper like runHelper, but with an exec session's streams:
// s.in is copied to the command's stdin (EOF when s.in ends), its stdout and stderr are
// copied to s.out and s.err as they come, without a size limit. It returns the exit
// code (128+signal when killed; 125-127 when the helper could not exec, its reason then
// on s.err) once the command exited and its output was copied. When ctx ends first,
// the command's process group is killed and the error says why (context.Cause).
//
// The pipes are made here, not by os/exec: os/exec's Wait would wait for a stdin copy
// blocked on a client that sends nothing, and for every process holding stdout.
func streamHelper(ctx context.Context, selfExe string, spec execSpec, env []string, s stdio) (int, error) {
	var (
		child   stdio
		ends    []*os.File // the child's ends, closed here once it started
		reads   []*os.File // our read ends of its stdout and stderr
		stdinW  *os.File
		copying sync.WaitGroup
	)
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			_ = f.Close()
		}
	}
	fail := func(err error) (int, error) {
		closeAll(ends)
		closeAll(reads)
		if stdinW != nil {
			_ = stdinW.Close()
		}
		return -1, err
	}
	for _, o := range []struct {
		dst io.Writer
		set *io.Writer
	}{{s.out, &child.out}, {s.err, &child.err}} {
		if o.dst == nil {
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return fail(fmt.Errorf("failed to create an output pipe for the exec session: %w", err))
		}
		*o.set = w
		ends, reads = append(ends, w), append(reads, r)
		copying.Add(1)
		go func() {
			defer copying.Done()
			if _, err := io.Copy(o.dst, r); err != nil {
				// The client is gone: keep draining so the command does not block on a
				// full pipe before ctx ends and it is killed.
				_, _ = io.Copy(io.Discard, r)
			}
		}()
	}
	if s.in != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(fmt.Errorf("failed to create the stdin pipe for the exec session: %w", err))
		}
		child.in, stdinW = r, w
		ends = append(ends, r)
	}

	p, err := startProcessIO(selfExe, spec, env, child)
	closeAll(ends) // the child has its copies; our ends must not keep the pipes open
	ends = nil
	code := 0
	var sessionErr error
	if err != nil {
		var se *startError
		if !errors.As(err, &se) {
			return fail(err)
		}
		code = se.code
	} else {
		if stdinW != nil {
			go func() {
				_, _ = io.Copy(stdinW, s.in)
				_ = stdinW.Close() // EOF for the command
			}()
		}
		select {
		case <-p.exited:
		case <-ctx.Done():
			p.signal(syscall.SIGKILL)
			<-p.exited
			sessionErr = fmt.Errorf("command killed: %w", context.Cause(ctx))
		}
		code = int(p.exitCode)
	}
	if stdinW != nil {
		_ = stdinW.Close() // a stdin copy still blocked on the client ends with its stream
	}
	drained := make(chan struct{})
	go func() {
		copying.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(outputDrainTimeout):
		closeAll(reads)
		select {
		case <-drained:
		case <-ctx.Done():
		}
	}
	closeAll(reads)
	return code, sessionErr
}
