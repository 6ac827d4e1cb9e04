package nodeagent

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as the pod exec helper, as the rig's main does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == PodExecArg {
		PodExecMain(os.Args[2:])
		return
	}
	if len(os.Args) > 2 && os.Args[1] == clockProbeArg {
		clockProbeMain(os.Args[2:])
		return
	}
	os.Exit(m.Run())
}
