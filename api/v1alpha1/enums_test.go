package v1alpha1

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestStatusEnumsMatchTheirConstants: every constant of a status enum is accepted by
// the CRD's validation, and the CRD accepts nothing the code cannot write. A value
// missing from a kubebuilder Enum marker would make the operator's status write fail
// at the API server (the upgrade would stall on the write, not on Raft).
func TestStatusEnumsMatchTheirConstants(t *testing.T) {
	g := NewWithT(t)
	consts := constantsByType(t, "openbaocluster_types.go")
	crd := loadCRD(t)
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]

	for _, tc := range []struct {
		typ  string
		path []string
	}{
		{"StepAction", []string{"upgrade", "currentStep", "action"}},
		{"StepAction", []string{"scaling", "currentStep", "action"}},
		{"StepAction", []string{"blueGreen", "currentStep", "action"}},
		{"FailureReason", []string{"upgrade", "failure", "reason"}},
		{"FailureReason", []string{"scaling", "failure", "reason"}},
		{"BlueGreenPhase", []string{"blueGreen", "phase"}},
		{"PromotionState", []string{"blueGreen", "promotion"}},
	} {
		prop := status
		for _, p := range tc.path {
			next, ok := prop.Properties[p]
			g.Expect(ok).To(BeTrue(), "status.%v has no %s", tc.path, p)
			prop = next
		}
		var enum []string
		for _, v := range prop.Enum {
			var s string
			g.Expect(yaml.Unmarshal(v.Raw, &s)).To(Succeed())
			enum = append(enum, s)
		}
		want := consts[tc.typ]
		g.Expect(want).NotTo(BeEmpty(), "constants of type %s", tc.typ)
		slices.Sort(enum)
		g.Expect(enum).To(Equal(want), "status.%v: the Enum marker of %s and its constants", tc.path, tc.typ)
	}
}

// constantsByType returns the sorted values of the typed string constants declared
// in file, by type name.
func constantsByType(t *testing.T, file string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			id, ok := vs.Type.(*ast.Ident)
			if !ok || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			v := constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
			out[id.Name] = append(out[id.Name], v)
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

func loadCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile("../../config/crd/bases/openbao.baokeeper.dev_openbaoclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}
