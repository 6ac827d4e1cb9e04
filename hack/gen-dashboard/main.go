// Command gen-dashboard writes baokeeper's Grafana dashboard,
// config/grafana/baokeeper-dashboard.json, config/grafana/dashboard-configmap.yaml
// and the picture of its layout, docs/images/dashboard-layout.svg, from internal/observability/dashboard. Run it from anywhere in the repository:
//
//	go run ./hack/gen-dashboard
//
// and commit both files; the package's test fails while they differ from what it
// generates.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/baokeeper/baokeeper/internal/observability/dashboard"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen-dashboard:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("failed to find the repository root with go list -m (run it inside the repository): %w", err)
	}
	root := strings.TrimSpace(string(out))
	if err := dashboard.Write(root); err != nil {
		return err
	}
	fmt.Printf("wrote %s, %s and %s\n", dashboard.JSONPath, dashboard.ConfigMapPath, dashboard.LayoutPath)
	return nil
}
