package rig

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Netns is a named network namespace (ip netns) that the rig creates and removes.
// Everything of the rig runs inside it; nothing it sends leaves it.
type Netns struct {
	Name string
}

// NetnsPath is where ip netns keeps the namespace's bind mount.
func (n Netns) Path() string { return filepath.Join("/run/netns", n.Name) }

// CreateNetns creates the namespace, brings up its loopback device and puts addrs
// (for example "10.250.0.1/32") on it. EndpointSlices refuse loopback addresses, so
// the API server and the pods use 10.250.0.N on lo instead of 127.0.0.N.
func CreateNetns(name string, addrs ...string) (Netns, error) {
	n := Netns{Name: name}
	if err := run("ip", "netns", "add", name); err != nil {
		return n, fmt.Errorf("failed to create network namespace %s (the rig needs root and iproute2): %w", name, err)
	}
	if err := run("ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		_ = n.Delete()
		return n, err
	}
	for _, a := range addrs {
		if err := run("ip", "-n", name, "addr", "add", a, "dev", "lo"); err != nil {
			_ = n.Delete()
			return n, err
		}
	}
	return n, nil
}

// Delete removes the namespace. Processes still inside keep it alive until they exit.
func (n Netns) Delete() error {
	if _, err := os.Stat(n.Path()); os.IsNotExist(err) {
		return nil
	}
	return run("ip", "netns", "delete", n.Name)
}

// Command returns a command that runs argv inside the namespace.
func (n Netns) Command(argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name}, argv...)...)
}

// Forward accepts connections on listen (a loopback address of the host) and
// connects each one to target inside the namespace, so that a person's kubectl on the
// host reaches the rig's API server. It returns when ctx ends.
func (n Netns) Forward(ctx context.Context, listen, target string) error {
	if !strings.HasPrefix(listen, "127.") && !strings.HasPrefix(listen, "localhost:") {
		return fmt.Errorf("forward listen address %s must be on loopback", listen)
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", listen, err)
	}
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = c.Close() }()
			up, err := n.Dial(target)
			if err != nil {
				return
			}
			defer func() { _ = up.Close() }()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
			select {
			case <-done:
			case <-ctx.Done():
			}
		}()
	}
}

// Dial opens a TCP connection from inside the namespace: the socket is created on an
// OS thread that temporarily joins the namespace.
func (n Netns) Dial(addr string) (net.Conn, error) {
	var conn net.Conn
	err := n.Run(func() error {
		var err error
		conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	})
	return conn, err
}

// Run calls fn on an OS thread that temporarily joins the namespace: sockets it opens
// and commands it starts are the namespace's.
func (n Netns) Run(fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer func() { _ = orig.Close() }()
	target, err := os.Open(n.Path())
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer func() { _ = target.Close() }()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("failed to enter network namespace %s: %w", n.Name, err)
	}
	fnErr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is stuck in the namespace: keep it locked so the runtime retires it.
		return fnErr
	}
	runtime.UnlockOSThread()
	return fnErr
}

func run(argv ...string) error {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
