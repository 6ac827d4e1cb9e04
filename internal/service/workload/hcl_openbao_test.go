package workload

// These tests parse the rendered files with github.com/hashicorp/hcl v1, the parser
// OpenBao's server uses for config.hcl and for the initialize stanzas
// (command/server/config.go: hcl.Parse, helper/profiles: hcl.DecodeObject). A rendered
// file that this parser rejects makes ordinal 0 crash-loop; a value it decodes
// differently reaches OpenBao changed.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// hcl1Requests parses an initialize.hcl the way OpenBao does and returns each request
// object by name, decoded into a map.
func hcl1Requests(g Gomega, src string) map[string]map[string]any {
	f, err := hcl.Parse(src)
	g.Expect(err).NotTo(HaveOccurred(), "OpenBao could not parse:\n%s", src)
	root, ok := f.Node.(*ast.ObjectList)
	g.Expect(ok).To(BeTrue())
	out := map[string]map[string]any{}
	for _, stanza := range root.Filter("initialize").Items {
		obj, ok := stanza.Val.(*ast.ObjectType)
		g.Expect(ok).To(BeTrue())
		for _, req := range obj.List.Filter("request").Items {
			g.Expect(req.Keys).To(HaveLen(1))
			name, _ := req.Keys[0].Token.Value().(string)
			var m map[string]any
			g.Expect(hcl.DecodeObject(&m, req.Val)).To(Succeed())
			out[name] = m
		}
	}
	return out
}

// dataOf returns the data object of a decoded request. HCL v1 decodes an object
// value as a one-element list of maps.
func dataOf(g Gomega, req map[string]any) map[string]any {
	switch d := req["data"].(type) {
	case map[string]any:
		return d
	case []map[string]any:
		g.Expect(d).To(HaveLen(1))
		return d[0]
	default:
		g.Expect(d).To(BeNil(), "unexpected data type %T", d)
		return nil
	}
}

func TestRenderedConfigParsesWithOpenBaoHCL(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		opts   []func(*baov1.OpenBaoCluster)
	}{
		{name: "default", reason: "the default cluster's config must load"},
		{name: "five members", reason: "several retry_join blocks must all parse", opts: []func(*baov1.OpenBaoCluster){withReplicas(5), withPerformanceMultiplier(3)}},
		{name: "custom seal", reason: "the user's stanza is inserted verbatim and must still leave a valid file", opts: []func(*baov1.OpenBaoCluster){withCustomSeal("seal \"transit\" {\n  address = \"https://vault:8200\"\n}")}},
		{name: "dashed names", reason: "namespace and name end up in cluster_name", opts: []func(*baov1.OpenBaoCluster){withName("bao-prod-1")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			src, err := RenderConfig(newCluster(tc.opts...))
			g.Expect(err).NotTo(HaveOccurred())
			var m map[string]any
			g.Expect(hcl.Decode(&m, src)).To(Succeed(), "%s:\n%s", tc.reason, src)
			g.Expect(m).To(HaveKey("listener"))
			g.Expect(m).To(HaveKey("storage"))
			g.Expect(m).To(HaveKey("seal"))
			g.Expect(m).To(HaveKey("service_registration"))
		})
	}
}

func TestRenderedInitializeParsesWithOpenBaoHCL(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withExtraRequest("kv", "", "sys/mounts/kv", `{"type":"kv","options":{"version":"2"},"big":9007199254740993,"ratio":0.5,"list":["a","b"]}`))
	src, err := RenderInitialize(c, testAuth())
	g.Expect(err).NotTo(HaveOccurred())
	reqs := hcl1Requests(g, src)

	g.Expect(reqs).To(HaveLen(8))
	g.Expect(reqs["enable_jwt"]["path"]).To(Equal("sys/auth/baokeeper-jwt"))
	g.Expect(reqs["enable_canary"]["path"]).To(Equal("sys/mounts/" + CanaryMount))
	g.Expect(dataOf(g, reqs["enable_canary"])["type"]).To(Equal("kv"))
	g.Expect(dataOf(g, reqs["enable_canary"])["options"]).To(Equal([]map[string]any{{"version": "2"}}), "a KV version 2 engine")
	g.Expect(reqs["enable_jwt"]["operation"]).To(Equal("update"))
	g.Expect(dataOf(g, reqs["configure_jwt"])["jwt_validation_pubkeys"]).To(Equal([]any{testKey1, testKey2}),
		"multi-line PEM keys must reach OpenBao byte for byte")
	g.Expect(dataOf(g, reqs["configure_jwt"])["bound_issuer"]).To(Equal(testIssuer))
	g.Expect(dataOf(g, reqs["controller_policy"])["policy"]).To(Equal(controllerPolicyHCL),
		"the policy text, with its quotes and newlines, must arrive unchanged")
	g.Expect(dataOf(g, reqs["executor_policy"])["policy"]).To(Equal(executorPolicyHCL("ns", testControllerSubject)))
	g.Expect(dataOf(g, reqs["controller_role"])["bound_subject"]).To(Equal(testControllerSubject))
	g.Expect(dataOf(g, reqs["executor_role"])["bound_subject"]).To(Equal("system:serviceaccount:ns:bao-executor"))

	user := dataOf(g, reqs["user_kv"])
	g.Expect(user["type"]).To(Equal("kv"))
	g.Expect(user["big"]).To(Equal(9007199254740993), "an integer inside int64 keeps every digit")
	g.Expect(user["ratio"]).To(Equal(0.5))
	g.Expect(user["list"]).To(Equal([]any{"a", "b"}))
}

// TestHCLStringRoundTripsThroughOpenBaoParser checks that every string reaches OpenBao
// exactly as written. OpenBao parses with HCL v1, which has no "$${" or "%%{" escapes:
// "$${x}" decodes to the five characters "$${x}", and an unbalanced "${" makes the
// scanner run past the closing quote ("literal not terminated").
func TestHCLStringRoundTripsThroughOpenBaoParser(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		in     string
	}{
		{name: "plain", reason: "ordinary text", in: "hello world"},
		{name: "quotes and backslashes", reason: "quotes and backslashes are escaped the same way in HCL v1", in: `a "quoted" C:\path\`},
		{name: "newlines", reason: "policies are multi-line strings", in: "path \"x\" {\n  capabilities = [\"read\"]\n}\n"},
		{name: "unicode", reason: "non-ASCII text must survive", in: "grüße ✓ \u2028"},
		{name: "control characters", reason: "strconv.Quote uses \\x escapes, which HCL v1 also reads", in: "a\x00b\x1fc\x7f"},
		{name: "template interpolation", reason: "user data such as a templated policy path must arrive literally, not as $${...}", in: "secret/data/${identity.entity.id}/*"},
		{name: "template directive", reason: "%{ has no meaning in HCL v1 and must not be doubled", in: "%{ if true }x%{ endif }"},
		{name: "unbalanced interpolation", reason: "an unbalanced ${ must not break the whole file", in: "cost: ${5"},
		{name: "interpolation with quote", reason: "a quote after ${ must not end or extend the literal", in: `${"}`},
		{name: "already doubled", reason: "a literal $${ must stay $${", in: "$${x}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			src := "v = " + hclString(tc.in) + "\n"
			var m map[string]any
			g.Expect(hcl.Decode(&m, src)).To(Succeed(), "%s: OpenBao could not parse %s", tc.reason, src)
			g.Expect(m["v"]).To(Equal(tc.in), "%s: rendered as %s", tc.reason, src)
		})
	}
}

// TestHCLValueNumbersParseWithOpenBaoParser checks that every number hclValue agrees to
// render can be read back by OpenBao. HCL v1 reads an integer literal with
// strconv.ParseInt(…, 0, 0), so an integer beyond int64 makes the whole file fail to
// load. Refusing such a number with an error is an acceptable outcome.
func TestHCLValueNumbersParseWithOpenBaoParser(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		in     any
		want   any
	}{
		{name: "small int", reason: "the common case", in: json.Number("42"), want: 42},
		{name: "2^53+1", reason: "exact beyond float64 precision and within int64", in: json.Number("9007199254740993"), want: 9007199254740993},
		{name: "negative", reason: "a sign must be kept", in: json.Number("-3"), want: -3},
		{name: "decimal", reason: "fractions are floats", in: json.Number("0.25"), want: 0.25},
		{name: "exponent", reason: "JSON allows exponents; HCL v1 reads them as floats", in: json.Number("1e3"), want: 1000.0},
		{name: "negative exponent", reason: "a signed exponent with a fraction", in: json.Number("-1.5E-3"), want: -0.0015},
		{name: "int64 max", reason: "the largest integer HCL v1 reads", in: json.Number("9223372036854775807"), want: 9223372036854775807},
		{name: "beyond int64", reason: "a JSON integer beyond int64 must be refused or rendered readably, never crash-loop OpenBao", in: json.Number("12345678901234567890")},
		{name: "large float64", reason: "FormatFloat(1e21, 'f') writes 22 digits, an integer literal beyond int64", in: 1e21},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var b strings.Builder
			if err := hclValue(&b, tc.in, ""); err != nil {
				g.Expect(tc.want).To(BeNil(), "%s: a representable number was refused: %v", tc.reason, err)
				return // refused with an error: acceptable for unrepresentable numbers
			}
			src := "v = " + b.String() + "\n"
			var m map[string]any
			g.Expect(hcl.Decode(&m, src)).To(Succeed(), "%s: OpenBao could not parse %q", tc.reason, src)
			if tc.want != nil {
				g.Expect(m["v"]).To(Equal(tc.want), tc.reason)
			}
		})
	}
}

// TestRenderInitializeNeverRendersAnUnloadableFile checks RenderInitialize end to end:
// whatever JSON a user puts in extraRequests, the result either is an error that names
// the request, or a file OpenBao loads with the user's values intact.
func TestRenderInitializeNeverRendersAnUnloadableFile(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		data   string
		key    string
		want   any
	}{
		{name: "templated policy", reason: "ACL templating such as {{identity.entity.id}} is common; ${...} must arrive literally", data: `{"policy":"path \"secret/${user}/*\" { capabilities = [\"read\"] }"}`, key: "policy", want: `path "secret/${user}/*" { capabilities = ["read"] }`},
		{name: "unbalanced interpolation", reason: "one bad value must not make ordinal 0 crash-loop", data: `{"description":"costs ${5"}`, key: "description", want: "costs ${5"},
		{name: "percent brace", reason: "%{ is literal in HCL v1", data: `{"description":"%{x}"}`, key: "description", want: "%{x}"},
		{name: "integer beyond int64", reason: "must be refused with the request's name, or rendered so OpenBao can load it", data: `{"n":12345678901234567890}`, key: "n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			src, err := RenderInitialize(newCluster(withExtraRequest("my-req", "", "sys/x", tc.data)), testAuth())
			if err != nil {
				g.Expect(tc.want).To(BeNil(), "%s: a representable value was refused: %v", tc.reason, err)
				g.Expect(err.Error()).To(ContainSubstring("my-req"), "the error must name the request")
				return
			}
			var m map[string]any
			g.Expect(hcl.Decode(&m, src)).To(Succeed(), "%s: OpenBao could not parse:\n%s", tc.reason, src)
			if tc.want != nil {
				got := dataOf(g, hcl1Requests(g, src)["user_my_req"])[tc.key]
				g.Expect(got).To(Equal(tc.want), fmt.Sprintf("%s: OpenBao would receive %q", tc.reason, got))
			}
		})
	}
}

// The audit stanza decodes as OpenBao's parseAuditDevices does (command/server/config.go:
// type and path from the two keys, options into a map of strings).
func TestAuditStanzaParsesWithOpenBaoHCL(t *testing.T) {
	for target, want := range map[baov1.AuditTarget]string{
		baov1.AuditStdout:     "stdout",
		baov1.AuditDataVolume: "/openbao/data/audit.log",
	} {
		t.Run(string(target), func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster()
			c.Spec.Audit.File = &baov1.FileAuditSpec{Target: target}
			src, err := RenderConfig(c)
			g.Expect(err).NotTo(HaveOccurred())
			f, err := hcl.Parse(src)
			g.Expect(err).NotTo(HaveOccurred(), src)
			audits := f.Node.(*ast.ObjectList).Filter("audit").Items
			g.Expect(audits).To(HaveLen(1))
			g.Expect(audits[0].Keys).To(HaveLen(2))
			g.Expect(audits[0].Keys[0].Token.Value()).To(Equal("file"))
			g.Expect(audits[0].Keys[1].Token.Value()).To(Equal("baokeeper-file/"))
			var dev struct {
				Options map[string]string `hcl:"options"`
			}
			g.Expect(hcl.DecodeObject(&dev, audits[0].Val)).To(Succeed())
			g.Expect(dev.Options).To(Equal(map[string]string{"file_path": want}))
		})
	}
	src, err := RenderConfig(newCluster())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(src).NotTo(ContainSubstring("audit"), "off unless set: the members' configuration of existing clusters does not change")
}
