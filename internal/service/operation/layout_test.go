package operation_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/baokeeper/baokeeper/"

// imports lists the module's packages that the non-test Go files of dir import.
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("failed to read %s: %v", dir, err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("failed to parse %s: %v", e.Name(), err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok {
				out[rest] = true
			}
		}
	}
	return out
}

// The layout is the architecture: the contract depends on nothing of the services;
// the operations depend on the contract and never on each other; scaling and the
// snapshot are not upgrades.
func TestOperationsNeverImportEachOther(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	operations := []string{
		"internal/service/upgrade/rolling",
		"internal/service/upgrade/bluegreen",
		"internal/service/scaling",
		"internal/service/snapshot",
	}
	forbidden := map[string][]string{
		"internal/service/operation": append([]string{"internal/service/upgrade", "internal/service/workload", "internal/service/executorjob"}, operations...),
		"internal/service/scaling":   {"internal/service/upgrade"},
		"internal/service/snapshot":  {"internal/service/upgrade"},
	}
	for _, op := range operations {
		for _, other := range operations {
			if other != op {
				forbidden[op] = append(forbidden[op], other)
			}
		}
	}
	for pkg, not := range forbidden {
		got := imports(t, filepath.Join(root, pkg))
		if len(got) == 0 && pkg != "internal/service/operation" {
			t.Fatalf("%s imports nothing of the module: the test reads the wrong directory", pkg)
		}
		for _, n := range not {
			if got[n] {
				t.Errorf("%s imports %s: operations depend on the contract (internal/service/operation), never on each other", pkg, n)
			}
		}
	}
}
