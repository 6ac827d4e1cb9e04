// Package testenv starts envtest (a real kube-apiserver and etcd built from Go modules
// into bin/) for the project's integration suites, and says clearly why it cannot.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// RequireIntegrationEnv is set by `make test`: a missing binary then fails the suite
// instead of skipping it, so CI cannot pass without running the integration tests.
const RequireIntegrationEnv = "BAOKEEPER_REQUIRE_INTEGRATION"

// RepoRoot is the repository root, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Assets returns KUBEBUILDER_ASSETS, or a reason to skip when it is unusable.
func Assets() (dir string, skipReason string) {
	dir = os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "", "KUBEBUILDER_ASSETS is not set: run `make test`, which builds kube-apiserver and etcd into bin/ and sets it"
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Sprintf("%s is missing from KUBEBUILDER_ASSETS=%s: run `make envtest-bins`", b, dir)
		}
	}
	return dir, ""
}

// Required reports whether integration suites must run rather than skip.
func Required() bool { return os.Getenv(RequireIntegrationEnv) != "" }
