package nodeagent

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"POD_NAME": "bao-0", "NS": "prod", "EMPTY": ""}
	cases := []struct {
		name, reason, in, want string
	}{
		{"plain", "text without $ is unchanged", "server -config=x", "server -config=x"},
		{"one var", "a known reference is replaced", "$(POD_NAME)", "bao-0"},
		{"embedded", "references inside text are replaced", "https://$(POD_NAME).bao.$(NS).svc:8200", "https://bao-0.bao.prod.svc:8200"},
		{"unknown", "an unknown reference is kept as written", "$(NOPE)-$(POD_NAME)", "$(NOPE)-bao-0"},
		{"escaped", "$$ escapes the operator, so $$(VAR) is the literal $(VAR)", "$$(POD_NAME)", "$(POD_NAME)"},
		{"double escape", "$$$$ gives $$", "a$$$$b", "a$$b"},
		{"empty value", "a variable set to empty expands to empty", "x$(EMPTY)y", "xy"},
		{"incomplete", "a reference without ) is kept", "$(POD_NAME", "$(POD_NAME"},
		{"lone dollar", "a $ not followed by ( or $ is kept", "cost $5 $", "cost $5 $"},
		{"shell var", "shell syntax ${X} and $X is not kubelet syntax", "${POD_NAME} $POD_NAME", "${POD_NAME} $POD_NAME"},
		{"empty name", "$() looks up the empty name, unknown, kept", "$()", "$()"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(expandVars(tc.in, mapLookup(vars))).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestMapLookupOrder(t *testing.T) {
	g := NewWithT(t)
	l := mapLookup(map[string]string{"A": "first"}, map[string]string{"A": "second", "B": "b"})
	v, ok := l("A")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal("first"), "the first map that has the name wins")
	v, ok = l("B")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal("b"), "later maps are searched too")
	_, ok = l("C")
	g.Expect(ok).To(BeFalse(), "a name in no map is unknown")
}
