package rig

import (
	"os"
	"testing"

	"github.com/baokeeper/baokeeper/test/rig/nodeagent"
)

// TestMain lets the test binary act as the node agent's pod exec helper, as the rig's
// main does: the exec test runs the node agent in-process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == nodeagent.PodExecArg {
		nodeagent.PodExecMain(os.Args[2:])
		return
	}
	os.Exit(m.Run())
}
