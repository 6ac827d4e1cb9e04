//go:build !(linux && amd64)

package nodeagent

import "errors"

// runSkewed needs the x86-64 system call numbers and register layout.
func runSkewed(execSpec, func()) (int, error) {
	return exitSetupFailed, errors.New("an adjustable clock (rig.baokeeper.dev/clock) needs linux/amd64")
}
