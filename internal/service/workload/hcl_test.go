package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestHCLString(t *testing.T) {
	// Only escapes whose meaning is the same in every HCL dialect are pinned here. How
	// "${" and "%{" must come out is checked against OpenBao's own parser in
	// hcl_openbao_test.go.
	cases := []struct {
		name   string
		reason string
		in     string
		want   string
	}{
		{
			name:   "plain",
			reason: "ordinary text must be quoted and otherwise untouched",
			in:     "baokeeper-jwt",
			want:   `"baokeeper-jwt"`,
		},
		{
			name:   "empty",
			reason: "an empty value must still be a quoted string, never a bare token",
			in:     "",
			want:   `""`,
		},
		{
			name:   "double quotes",
			reason: "an unescaped quote would end the string early and let the rest be parsed as HCL",
			in:     `say "hi"`,
			want:   `"say \"hi\""`,
		},
		{
			name:   "backslashes",
			reason: "a lone backslash would start an escape and change the value (or break parsing)",
			in:     `C:\dir\n`,
			want:   `"C:\\dir\\n"`,
		},
		{
			name:   "newline and tab",
			reason: "a raw newline ends an HCL string literal; policies are multi-line and must survive",
			in:     "line1\n\tline2",
			want:   `"line1\n\tline2"`,
		},
		{
			name:   "quote then brace injection",
			reason: "user data must not be able to close the string and inject a stanza",
			in:     "x\"\n}\nseal \"static\" {",
			want:   `"x\"\n}\nseal \"static\" {"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(hclString(tc.in)).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestHCLStringNeverEmitsRawControlCharacters(t *testing.T) {
	g := NewWithT(t)
	in := "a\nb\rc\x00d\x7fe\u2028f"
	out := hclString(in)
	for _, r := range out {
		g.Expect(r >= 0x20 && r != 0x7f && r != '\u2028').To(BeTrue(),
			"rendered %q contains control character %U: HCL string literals cannot hold it raw", out, r)
	}
}

func TestHCLValue(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		in     any
		indent string
		want   string
	}{
		{name: "nil", reason: "a JSON null has no HCL literal; it renders as an empty string", in: nil, want: `""`},
		{name: "true", reason: "booleans must be bare, not quoted strings", in: true, want: "true"},
		{name: "false", reason: "false must not be dropped or turned into an empty value", in: false, want: "false"},
		{name: "int", reason: "Go ints render as bare integers", in: 42, want: "42"},
		{name: "negative int32", reason: "int32 (Kubernetes counts) must keep its sign", in: int32(-7), want: "-7"},
		{name: "int64", reason: "int64 values beyond int32 must not be truncated", in: int64(1) << 40, want: "1099511627776"},
		{name: "float", reason: "floats render in plain notation", in: 1.5, want: "1.5"},
		{name: "float with no fraction", reason: "a whole float renders without an exponent or trailing .0", in: 3.0, want: "3"},
		{name: "small float", reason: "FormatFloat with -1 precision keeps the shortest exact form", in: 0.1, want: "0.1"},
		{
			name:   "json.Number kept verbatim",
			reason: "2^53+1 cannot survive a float64 round trip; json.Number must be written as decoded",
			in:     json.Number("9007199254740993"),
			want:   "9007199254740993",
		},
		{name: "json.Number float", reason: "decimal JSON numbers must be kept as written", in: json.Number("-0.25"), want: "-0.25"},
		{name: "empty list", reason: "an empty list is a valid value and must render as []", in: []any{}, want: "[]"},
		{
			name:   "string list",
			reason: "[]string (policies, audiences) is rendered like []any with quoted items",
			in:     []string{"a", `b"c`},
			want:   `["a", "b\"c"]`,
		},
		{
			name:   "mixed list",
			reason: "items of every scalar type render in order, comma separated",
			in:     []any{1, "x", true, json.Number("2.5"), nil},
			want:   `[1, "x", true, 2.5, ""]`,
		},
		{name: "empty map", reason: "an empty object still needs braces", in: map[string]any{}, want: "{\n}"},
		{
			name:   "flat map sorted",
			reason: "keys come out sorted and quoted, one per line",
			in:     map[string]any{"type": "kv", "description": "d", "local": false},
			want:   "{\n  \"description\" = \"d\"\n  \"local\" = false\n  \"type\" = \"kv\"\n}",
		},
		{
			name:   "nested map and list",
			reason: "nested objects indent by two more spaces and close at their parent's indent",
			in: map[string]any{
				"options": map[string]any{"version": "2"},
				"list":    []any{map[string]any{"a": 1}},
			},
			indent: "    ",
			want: "{\n" +
				"      \"list\" = [{\n" +
				"        \"a\" = 1\n" +
				"      }]\n" +
				"      \"options\" = {\n" +
				"        \"version\" = \"2\"\n" +
				"      }\n" +
				"    }",
		},
		{
			name:   "keys needing escapes",
			reason: "map keys come from user JSON and are quoted with the same rules as values",
			in:     map[string]any{`a"b`: 1},
			want:   "{\n  \"a\\\"b\" = 1\n}",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var b strings.Builder
			g.Expect(hclValue(&b, tc.in, tc.indent)).To(Succeed(), tc.reason)
			g.Expect(b.String()).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestHCLValueErrors(t *testing.T) {
	cases := []struct {
		name    string
		reason  string
		in      any
		wantErr []string
	}{
		{name: "NaN", reason: "HCL has no NaN literal; writing NaN would produce an unparseable config", in: math.NaN(), wantErr: []string{"NaN"}},
		{name: "+Inf", reason: "HCL has no infinity literal", in: math.Inf(1), wantErr: []string{"+Inf"}},
		{name: "-Inf", reason: "negative infinity is just as unrepresentable", in: math.Inf(-1), wantErr: []string{"-Inf"}},
		{name: "float32", reason: "only float64 is produced by JSON decoding; other types must not be guessed", in: float32(1), wantErr: []string{"float32"}},
		{name: "uint", reason: "unsigned integers are not a supported input type", in: uint(1), wantErr: []string{"uint"}},
		{name: "struct", reason: "an arbitrary struct must be refused instead of rendered with %v", in: struct{ A int }{1}, wantErr: []string{"struct"}},
		{name: "map[string]string", reason: "only map[string]any is supported; a typed map must not be silently mis-rendered", in: map[string]string{"a": "b"}, wantErr: []string{"map[string]string"}},
		{
			name:    "NaN nested in map",
			reason:  "errors inside objects must name the key so the user can find the bad field",
			in:      map[string]any{"outer": map[string]any{"bad": math.NaN()}},
			wantErr: []string{`key "outer"`, `key "bad"`, "NaN"},
		},
		{
			name:    "unsupported type in list",
			reason:  "errors inside lists must propagate, not be dropped",
			in:      []any{"ok", complex(1, 2)},
			wantErr: []string{"complex128"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var b strings.Builder
			err := hclValue(&b, tc.in, "")
			g.Expect(err).To(HaveOccurred(), tc.reason)
			for _, s := range tc.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(s), tc.reason)
			}
		})
	}
}

func TestHCLValueSortsKeysDeterministically(t *testing.T) {
	g := NewWithT(t)
	m := map[string]any{}
	for i := range 40 {
		m[fmt.Sprintf("key_%02d", 39-i)] = map[string]any{"z": i, "a": []any{i, "v"}, "m": true}
	}

	render := func() string {
		var b strings.Builder
		g.Expect(hclValue(&b, m, "")).To(Succeed())
		return b.String()
	}
	first := render()
	// Go randomizes map iteration on every range, so 50 renders would very likely
	// differ if the keys were not sorted.
	for range 50 {
		g.Expect(render()).To(Equal(first), "the ConfigMap must not change between two reconciles of the same input")
	}

	last := -1
	for i := range 40 {
		pos := strings.Index(first, fmt.Sprintf("%q = {", fmt.Sprintf("key_%02d", i)))
		g.Expect(pos).To(BeNumerically(">", last), "key_%02d must come after key_%02d", i, i-1)
		last = pos
	}
	g.Expect(strings.Index(first, `"a" = [`)).To(BeNumerically("<", strings.Index(first, `"m" = true`)))
	g.Expect(strings.Index(first, `"m" = true`)).To(BeNumerically("<", strings.Index(first, `"z" = `)))
}
