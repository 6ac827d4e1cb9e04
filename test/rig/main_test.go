package rig

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/baokeeper/baokeeper/test/rig/nodeagent"
)

// listenArg makes the test binary a pod's TCP server (the network test's image
// rig.test/listener): it answers every connection with "hello from <hostname>".
const listenArg = "rig-test-listen"

// TestMain lets the test binary act as the node agent's pod exec helper, as the rig's
// main does (the exec test runs the node agent in-process), and as a pod's TCP server.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == nodeagent.PodExecArg {
		nodeagent.PodExecMain(os.Args[2:])
		return
	}
	if len(os.Args) > 2 && os.Args[1] == listenArg {
		os.Exit(serveHello(os.Args[2]))
	}
	os.Exit(m.Run())
}

// serveHello answers every connection on addr with one line and closes it.
func serveHello(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	host, _ := os.Hostname()
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, _ = fmt.Fprintf(c, "hello from %s\n", host)
		_ = c.Close()
	}
}
