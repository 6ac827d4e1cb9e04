package workload

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl"
	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestRenderConfigRetryJoin(t *testing.T) {
	cases := []struct {
		name     string
		reason   string
		replicas int32
	}{
		{name: "single member", reason: "a one-member cluster still joins itself through retry_join so it can grow later", replicas: 1},
		{name: "three members", reason: "the default size; every member must know every other member", replicas: 3},
		{name: "five members", reason: "ordinals 3 and 4 must appear, not only the default three", replicas: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := RenderConfig(newCluster(withReplicas(tc.replicas)))
			g.Expect(err).NotTo(HaveOccurred())

			g.Expect(strings.Count(out, "retry_join {")).To(Equal(int(tc.replicas)), tc.reason)
			g.Expect(strings.Count(out, `leader_ca_cert_file = "/openbao/tls/ca.crt"`)).To(Equal(int(tc.replicas)),
				"every retry_join must verify the leader with the cluster CA")
			for i := range tc.replicas {
				g.Expect(out).To(ContainSubstring(fmt.Sprintf(`leader_api_addr     = "https://bao-%d.bao-internal.ns.svc:8200"`, i)), tc.reason)
			}
			g.Expect(out).NotTo(ContainSubstring(fmt.Sprintf("bao-%d.bao-internal", tc.replicas)),
				"no retry_join may point at an ordinal that does not exist")
		})
	}
}

func TestRenderConfigDefaultReplicas(t *testing.T) {
	g := NewWithT(t)
	out, err := RenderConfig(newCluster())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(out, "retry_join {")).To(Equal(int(baov1.DefaultReplicas)),
		"an unset spec.replicas must render the default member count")
}

func TestRenderConfigAutopilotReconcileInterval(t *testing.T) {
	g := NewWithT(t)
	out, err := RenderConfig(newCluster())
	g.Expect(err).NotTo(HaveOccurred())
	storage := out[strings.Index(out, `storage "raft" {`):]
	storage = storage[:strings.Index(storage, "\n}\n")]
	g.Expect(storage).To(ContainSubstring(`autopilot_reconcile_interval = "2s"`),
		"promotions and demotions apply on autopilot's next reconcile: 2 s, not OpenBao's 10 s")
	sha, err := ConfigSHA256(newCluster())
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := RenderConfigFor(newCluster(), ConfigOptions{omitJoin: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg).To(ContainSubstring("autopilot_reconcile_interval"), "a running member reads it only at start: it is part of %s", sha)
}

func TestRenderConfigPerformanceMultiplier(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		opts   []func(*baov1.OpenBaoCluster)
		want   string
	}{
		{name: "default", reason: "unset means 1, the fastest failure detection", want: "performance_multiplier = 1\n"},
		{name: "explicit 1", reason: "an explicit 1 renders the same as the default", opts: []func(*baov1.OpenBaoCluster){withPerformanceMultiplier(1)}, want: "performance_multiplier = 1\n"},
		{name: "slow network", reason: "a user tuning Raft for a slow network must get their value", opts: []func(*baov1.OpenBaoCluster){withPerformanceMultiplier(5)}, want: "performance_multiplier = 5\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := RenderConfig(newCluster(tc.opts...))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(ContainSubstring(tc.want), tc.reason)
			g.Expect(strings.Count(out, "performance_multiplier")).To(Equal(1))
		})
	}
}

func TestRenderConfigSeal(t *testing.T) {
	const transit = `seal "transit" {
  address    = "https://vault.example:8200"
  key_name   = "bao"
  mount_path = "transit/"
}`
	cases := []struct {
		name      string
		reason    string
		opts      []func(*baov1.OpenBaoCluster)
		contains  []string
		excludes  []string
		wantError string
	}{
		{
			name:     "default is static",
			reason:   "an unset seal type must use the generated key mounted from the seal Secret",
			contains: []string{"seal \"static\" {\n", `current_key_id = "baokeeper-static-1"`, `current_key    = "file:///openbao/seal/key"`},
		},
		{
			name:     "explicit static",
			reason:   "Static must render exactly like the default",
			opts:     []func(*baov1.OpenBaoCluster){withSealType(baov1.StaticSeal)},
			contains: []string{`current_key    = "file:///openbao/seal/key"`},
		},
		{
			name:     "custom verbatim",
			reason:   "the user's stanza is copied as written and replaces the static seal entirely",
			opts:     []func(*baov1.OpenBaoCluster){withCustomSeal("\n\n" + transit + "\n  \n")},
			contains: []string{transit + "\n"},
			excludes: []string{`seal "static"`, "/openbao/seal", StaticSealKeyID},
		},
		{
			name:      "custom empty",
			reason:    "an empty custom stanza would start OpenBao with no seal at all; the error must name the field",
			opts:      []func(*baov1.OpenBaoCluster){withCustomSeal("")},
			wantError: "spec.seal.customStanza",
		},
		{
			name:      "custom whitespace only",
			reason:    "whitespace is as empty as the empty string",
			opts:      []func(*baov1.OpenBaoCluster){withCustomSeal(" \n\t\n")},
			wantError: "spec.seal.customStanza",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := RenderConfig(newCluster(tc.opts...))
			if tc.wantError != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantError)), tc.reason)
				g.Expect(out).To(BeEmpty(), "no partial config may be returned with an error")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			for _, s := range tc.contains {
				g.Expect(out).To(ContainSubstring(s), tc.reason)
			}
			for _, s := range tc.excludes {
				g.Expect(out).NotTo(ContainSubstring(s), tc.reason)
			}
			g.Expect(regexp.MustCompile(`(?m)^seal "`).FindAllString(out, -1)).To(HaveLen(1), "exactly one seal stanza")
		})
	}
}

func TestRenderConfigListenerAndServiceRegistration(t *testing.T) {
	g := NewWithT(t)
	out, err := RenderConfig(newCluster())
	g.Expect(err).NotTo(HaveOccurred())

	listener := regexp.MustCompile(`(?s)listener "tcp" \{\n(.*?)\n\}\n`).FindStringSubmatch(out)
	g.Expect(listener).To(HaveLen(2), "config.hcl must have a tcp listener block:\n%s", out)
	for _, want := range []string{
		`address         = "__POD_IP__:8200"`,
		`cluster_address = "__POD_IP__:8201"`,
		`tls_cert_file   = "/openbao/tls/tls.crt"`,
		`tls_key_file    = "/openbao/tls/tls.key"`,
		`tls_min_version = "tls12"`,
	} {
		g.Expect(listener[1]).To(ContainSubstring(want), "the start script substitutes the pod IP; TLS files come from the mounted Secret")
	}
	g.Expect(listener[1]).NotTo(ContainSubstring("tls_disable"))
	g.Expect(out).To(ContainSubstring(`cluster_name = "ns-bao"`))
	g.Expect(out).To(ContainSubstring("storage \"raft\" {\n  path                   = \"/openbao/data\"\n"))
	g.Expect(out).To(ContainSubstring(`service_registration "kubernetes" {}`),
		"service registration labels the active member, which the active Service selects")
	g.Expect(out).To(MatchRegexp(`(?m)^telemetry \{\n  prometheus_retention_time = "30s"\n`))
	g.Expect(out).To(ContainSubstring(PodIPPlaceholder))
}

func TestRenderConfigIsStable(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withReplicas(5), withPerformanceMultiplier(2))
	first, err := RenderConfig(c)
	g.Expect(err).NotTo(HaveOccurred())
	for range 20 {
		again, err := RenderConfig(c)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(first), "the ConfigMap must not change between two reconciles of the same cluster")
	}
	other, err := RenderConfig(newCluster(withReplicas(3), withPerformanceMultiplier(2)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other).NotTo(Equal(first), "the rendering must depend on the spec")
}

const (
	testIssuer            = "https://kubernetes.default.svc.cluster.local"
	testControllerSubject = "system:serviceaccount:baokeeper-system:baokeeper-controller-manager"
	testKey1              = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEone\n-----END PUBLIC KEY-----\n"
	testKey2              = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEtwo\n-----END PUBLIC KEY-----\n"
)

func testAuth() AuthParams {
	return AuthParams{Issuer: testIssuer, PublicKeysPEM: []string{testKey1, testKey2}, ControllerSubject: testControllerSubject}
}

// requestBlock returns the text of one request block of a rendered initialize.hcl.
func requestBlock(g Gomega, out, name string) string {
	start := strings.Index(out, fmt.Sprintf("  request %q {\n", name))
	g.Expect(start).To(BeNumerically(">=", 0), "request %s is missing from:\n%s", name, out)
	end := strings.Index(out[start:], "\n  }\n")
	g.Expect(end).To(BeNumerically(">", 0), "request %s is not closed", name)
	return out[start : start+end+len("\n  }\n")]
}

func TestRenderInitializeRefusesMissingAuth(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		auth   func(*AuthParams)
		want   []string
	}{
		{
			name:   "no issuer",
			reason: "without bound_issuer any token signed by the keys would be accepted; tell the user what to check",
			auth:   func(a *AuthParams) { a.Issuer = "" },
			want:   []string{"issuer", "/.well-known/openid-configuration"},
		},
		{
			name:   "no keys",
			reason: "without keys no login could ever succeed, and the mount is created once only",
			auth:   func(a *AuthParams) { a.PublicKeysPEM = nil },
			want:   []string{"public keys", "/openid/v1/jwks"},
		},
		{
			name:   "no controller subject",
			reason: "a role with an empty bound_subject would not pin the controller's identity",
			auth:   func(a *AuthParams) { a.ControllerSubject = "" },
			want:   []string{"--controller-service-account"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			a := testAuth()
			tc.auth(&a)
			out, err := RenderInitialize(newCluster(), a)
			g.Expect(err).To(HaveOccurred(), tc.reason)
			for _, s := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(s), tc.reason)
			}
			g.Expect(out).To(BeEmpty())
		})
	}
}

func TestRenderInitializeAuthMethod(t *testing.T) {
	g := NewWithT(t)
	out, err := RenderInitialize(newCluster(), testAuth())
	g.Expect(err).NotTo(HaveOccurred())

	enable := requestBlock(g, out, "enable_jwt")
	g.Expect(enable).To(ContainSubstring(`operation = "update"`))
	g.Expect(enable).To(ContainSubstring(`path      = "sys/auth/baokeeper-jwt"`))
	g.Expect(enable).To(ContainSubstring(`"type" = "jwt"`))

	config := requestBlock(g, out, "configure_jwt")
	g.Expect(config).To(ContainSubstring(`path      = "auth/baokeeper-jwt/config"`))
	g.Expect(config).To(ContainSubstring(`"bound_issuer" = "https://kubernetes.default.svc.cluster.local"`))
	g.Expect(config).To(ContainSubstring(fmt.Sprintf(`"jwt_validation_pubkeys" = [%s, %s]`, hclString(testKey1), hclString(testKey2))),
		"every issuer key must be trusted, or tokens signed during key rotation fail")

	g.Expect(strings.Index(out, `request "enable_jwt"`)).To(BeNumerically("<", strings.Index(out, `request "configure_jwt"`)),
		"the mount must exist before its config is written")
}

func TestRenderInitializePolicies(t *testing.T) {
	g := NewWithT(t)
	out, err := RenderInitialize(newCluster(), testAuth())
	g.Expect(err).NotTo(HaveOccurred())

	ctrl := requestBlock(g, out, "controller_policy")
	g.Expect(ctrl).To(ContainSubstring(`path      = "sys/policies/acl/baokeeper-controller"`))
	g.Expect(ctrl).To(ContainSubstring(`"policy" = ` + hclString(controllerPolicyHCL)))
	exec := requestBlock(g, out, "executor_policy")
	g.Expect(exec).To(ContainSubstring(`path      = "sys/policies/acl/baokeeper-executor"`))
	execPolicy := executorPolicyHCL("ns", testControllerSubject)
	g.Expect(exec).To(ContainSubstring(`"policy" = ` + hclString(execPolicy)))

	// The controller is read-only: it observes and delegates every change to executor Jobs.
	for _, verb := range []string{"update", "sudo", "create", "delete", "list", "patch"} {
		g.Expect(controllerPolicyHCL).NotTo(ContainSubstring(`"`+verb+`"`), "the controller policy must not grant %s", verb)
	}
	caps := regexp.MustCompile(`capabilities = (\[.*\])`).FindAllStringSubmatch(controllerPolicyHCL, -1)
	g.Expect(caps).NotTo(BeEmpty())
	for _, c := range caps {
		g.Expect(c[1]).To(Equal(`["read"]`))
	}

	// The executor needs exactly the Raft operations of an upgrade.
	for _, want := range []string{
		"path \"sys/step-down\" {\n  capabilities = [\"update\", \"sudo\"]",
		"path \"sys/storage/raft/remove-peer\" {\n  capabilities = [\"update\"]",
		"path \"sys/storage/raft/snapshot\" {\n  capabilities = [\"read\"]",
		"path \"sys/storage/raft/promote\" {\n  capabilities = [\"update\"]",
		"path \"sys/storage/raft/demote\" {\n  capabilities = [\"update\"]",
		// A restore sends the snapshot with snapshot-force, and a cluster restored from
		// another cluster's snapshot rewrites the two roles it inherited.
		"path \"sys/storage/raft/snapshot-force\" {\n  capabilities = [\"update\", \"sudo\"]",
		"path \"auth/baokeeper-jwt/role/baokeeper-executor\" {\n  capabilities = [\"update\"]",
		"path \"auth/baokeeper-jwt/role/baokeeper-controller\" {\n  capabilities = [\"update\"]",
	} {
		g.Expect(execPolicy).To(ContainSubstring(want))
	}
	g.Expect(execPolicy).NotTo(ContainSubstring(`"sys/policies`), "the executor must not rewrite policies, its own included")
	g.Expect(strings.Count(execPolicy, `path "auth/`)).To(Equal(2), "of the auth method, only the two roles")
	g.Expect(execPolicy).NotTo(ContainSubstring(`"delete"`))
	g.Expect(execPolicy).NotTo(ContainSubstring(`"*"`))
	g.Expect(execPolicy).NotTo(MatchRegexp(`path "[^"]*\*"`), "no glob paths")
}

func TestRenderInitializeRoles(t *testing.T) {
	cases := []struct {
		name    string
		reason  string
		request string
		path    string
		subject string
		policy  string
		ttl     string
		maxTTL  string
	}{
		{
			name:    "controller",
			reason:  "only the operator's own service account may log in as the read-only controller",
			request: "controller_role",
			path:    "auth/baokeeper-jwt/role/baokeeper-controller",
			subject: testControllerSubject,
			policy:  "baokeeper-controller",
			ttl:     "5m",
			maxTTL:  "10m",
		},
		{
			name:    "executor",
			reason:  "only executor Jobs of this cluster (namespace ns, account bao-executor) may take the mutating role",
			request: "executor_role",
			path:    "auth/baokeeper-jwt/role/baokeeper-executor",
			subject: "system:serviceaccount:ns:bao-executor",
			policy:  "baokeeper-executor",
			ttl:     "15m",
			maxTTL:  "30m",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := RenderInitialize(newCluster(), testAuth())
			g.Expect(err).NotTo(HaveOccurred())
			block := requestBlock(g, out, tc.request)
			for _, want := range []string{
				`operation = "update"`,
				`path      = "` + tc.path + `"`,
				`"bound_subject" = "` + tc.subject + `"`,
				`"bound_audiences" = "openbao.baokeeper.dev/ns/bao"`,
				`"token_type" = "batch"`,
				`"token_policies" = "` + tc.policy + `"`,
				`"user_claim" = "sub"`,
				`"role_type" = "jwt"`,
				`"token_ttl" = "` + tc.ttl + `"`,
				`"token_max_ttl" = "` + tc.maxTTL + `"`,
			} {
				g.Expect(block).To(ContainSubstring(want), tc.reason)
			}
			for _, key := range []string{"token_ttl", "token_max_ttl"} {
				m := regexp.MustCompile(`"` + key + `" = "([^"]+)"`).FindStringSubmatch(block)
				g.Expect(m).To(HaveLen(2))
				d, err := time.ParseDuration(m[1])
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(d).To(BeNumerically(">", 0))
				g.Expect(d).To(BeNumerically("<=", time.Hour), "%s of %s must be short: a leaked token must expire quickly", key, tc.name)
			}
		})
	}
}

// TestRoleDataIsWhatInitializeWrites checks that the exported role data, which the
// executor's rebind writes, is exactly what self-initialization writes.
func TestRoleDataIsWhatInitializeWrites(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	out, err := RenderInitialize(c, testAuth())
	g.Expect(err).NotTo(HaveOccurred())
	for request, data := range map[string]map[string]any{
		"controller_role": ControllerRoleData(testControllerSubject, JWTAudience(c)),
		"executor_role":   ExecutorRoleData("system:serviceaccount:ns:bao-executor", JWTAudience(c)),
	} {
		var b strings.Builder
		g.Expect(hclValue(&b, data, "    ")).To(Succeed())
		g.Expect(requestBlock(g, out, request)).To(ContainSubstring("    data = "+b.String()+"\n"), request)
	}
	g.Expect(ExecutorRoleData("s", "a")).To(HaveKeyWithValue("token_policies", ExecutorPolicy), "one string: the executor policy pins it")
	g.Expect(ControllerRoleData("s", "a")).To(HaveKeyWithValue("token_policies", ControllerPolicy))
	g.Expect(ControllerRoleData("s", "a")).To(HaveKeyWithValue("bound_audiences", "a"))
}

func TestRenderInitializeStanzaOrder(t *testing.T) {
	g := NewWithT(t)
	out, err := RenderInitialize(newCluster(withExtraRequest("mount-kv", "", "sys/mounts/secret", `{"type":"kv"}`)), testAuth())
	g.Expect(err).NotTo(HaveOccurred())
	order := []string{
		`initialize "baokeeper_auth"`, `initialize "baokeeper_canary"`, `initialize "baokeeper_policies"`, `initialize "baokeeper_roles"`, `initialize "user"`,
	}
	last := -1
	for _, s := range order {
		i := strings.Index(out, s)
		g.Expect(i).To(BeNumerically(">", last), "%s must come after the previous stanza: the user's requests run after baokeeper's own", s)
		last = i
	}
	g.Expect(strings.HasPrefix(out, "#")).To(BeTrue(), "the file starts with a comment saying who rendered it")
}

func TestRenderInitializeWithoutExtraRequests(t *testing.T) {
	g := NewWithT(t)
	out, err := RenderInitialize(newCluster(), testAuth())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(ContainSubstring(`initialize "user"`), "an empty user stanza must not be rendered")
	g.Expect(strings.Count(out, "  request ")).To(Equal(7), "the JWT method and its config, the canary mount, two policies, two roles")
}

func TestRenderInitializeExtraRequests(t *testing.T) {
	cases := []struct {
		name     string
		reason   string
		opt      func(*baov1.OpenBaoCluster)
		request  string
		contains []string
		excludes []string
	}{
		{
			name:     "name prefix and default operation",
			reason:   "user names must not collide with baokeeper's and must be HCL-safe; the CRD default update applies when unset",
			opt:      withExtraRequest("enable-kv-v2", "", "sys/mounts/secret", `{"type":"kv"}`),
			request:  "user_enable_kv_v2",
			contains: []string{`operation = "update"`, `path      = "sys/mounts/secret"`, `"type" = "kv"`},
		},
		{
			name:     "explicit operation",
			reason:   "a user-chosen operation must not be overwritten by the default",
			opt:      withExtraRequest("drop-old", "delete", "sys/mounts/old", ""),
			request:  "user_drop_old",
			contains: []string{`operation = "delete"`, `path      = "sys/mounts/old"`},
			excludes: []string{"data ="},
		},
		{
			name:    "nested data",
			reason:  "objects and lists inside data must be rendered as HCL objects and lists, sorted",
			opt:     withExtraRequest("kv", "create", "sys/mounts/kv", `{"type":"kv","options":{"version":"2"},"allowed":["a","b"],"seal_wrap":false}`),
			request: "user_kv",
			contains: []string{
				`operation = "create"`,
				"    data = {\n" +
					"      \"allowed\" = [\"a\", \"b\"]\n" +
					"      \"options\" = {\n" +
					"        \"version\" = \"2\"\n" +
					"      }\n" +
					"      \"seal_wrap\" = false\n" +
					"      \"type\" = \"kv\"\n" +
					"    }\n",
			},
		},
		{
			name:     "numbers exact",
			reason:   "JSON numbers are decoded as json.Number; float64 would turn 9007199254740993 into ...992",
			opt:      withExtraRequest("ttl", "", "sys/mounts/x/tune", `{"max":9007199254740993,"ratio":0.1,"neg":-3,"exp":1e3}`),
			request:  "user_ttl",
			contains: []string{`"max" = 9007199254740993`, `"ratio" = 0.1`, `"neg" = -3`, `"exp" = 1e3`},
			excludes: []string{"9007199254740992"},
		},
		{
			name:     "null data",
			reason:   "a JSON null body is the same as no body",
			opt:      withExtraRequest("nothing", "read", "sys/health", "null"),
			request:  "user_nothing",
			contains: []string{`operation = "read"`},
			excludes: []string{"data ="},
		},
		{
			name:     "empty object data",
			reason:   "an empty object adds no data line",
			opt:      withExtraRequest("empty", "", "sys/x", "{}"),
			request:  "user_empty",
			excludes: []string{"data ="},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := RenderInitialize(newCluster(tc.opt), testAuth())
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			block := requestBlock(g, out, tc.request)
			for _, s := range tc.contains {
				g.Expect(block).To(ContainSubstring(s), tc.reason)
			}
			for _, s := range tc.excludes {
				g.Expect(block).NotTo(ContainSubstring(s), tc.reason)
			}
			g.Expect(strings.Index(out, `initialize "user"`)).To(BeNumerically("<", strings.Index(out, block)),
				"user requests belong to the user stanza")
		})
	}
}

func TestRenderInitializeKeepsExtraRequestOrder(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(
		withExtraRequest("z-first", "", "sys/a", ""),
		withExtraRequest("a-second", "", "sys/b", ""),
		withExtraRequest("m-third", "", "sys/c", ""),
	)
	out, err := RenderInitialize(c, testAuth())
	g.Expect(err).NotTo(HaveOccurred())
	a, b, d := strings.Index(out, `"user_z_first"`), strings.Index(out, `"user_a_second"`), strings.Index(out, `"user_m_third"`)
	g.Expect(a).To(BeNumerically(">", 0))
	g.Expect(a).To(BeNumerically("<", b), "requests run in the order the user listed them, not sorted")
	g.Expect(b).To(BeNumerically("<", d))
}

func TestRenderInitializeInvalidExtraRequestData(t *testing.T) {
	cases := []struct {
		name   string
		reason string
		data   string
	}{
		{name: "array", reason: "the request body must be an object; a list cannot be a request body", data: `[1,2]`},
		{name: "string", reason: "a bare string is not an object", data: `"text"`},
		{name: "truncated", reason: "malformed JSON must be refused instead of rendering half a request", data: `{"a":`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster(withExtraRequest("ok-one", "", "sys/a", `{"x":1}`), withExtraRequest("bad-one", "", "sys/b", tc.data))
			out, err := RenderInitialize(c, testAuth())
			g.Expect(err).To(HaveOccurred(), tc.reason)
			g.Expect(err.Error()).To(ContainSubstring("spec.initialization.extraRequests[bad-one].data"), "the error must name the request to fix")
			g.Expect(out).To(BeEmpty())
		})
	}
}

func TestRenderInitializeIsStable(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withExtraRequest("kv", "", "sys/mounts/kv", `{"b":{"y":1,"x":2},"a":[{"q":1,"p":2}],"c":"d"}`))
	first, err := RenderInitialize(c, testAuth())
	g.Expect(err).NotTo(HaveOccurred())
	for range 20 {
		again, err := RenderInitialize(c, testAuth())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(first), "a changing initialize.hcl would rewrite the ConfigMap on every reconcile")
	}
}

func TestServiceAccountSubject(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ServiceAccountSubject("team-a", "bao-executor")).To(Equal("system:serviceaccount:team-a:bao-executor"))
}

func TestRenderConfigJoinAsNonVoter(t *testing.T) {
	g := NewWithT(t)
	plain, err := RenderConfig(newCluster())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plain).NotTo(ContainSubstring("retry_join_as_non_voter"), "the initial members join normally, so autopilot forms the cluster")
	later, err := RenderConfigFor(newCluster(withReplicas(5)), ConfigOptions{JoinAsNonVoter: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(later).To(ContainSubstring("  retry_join_as_non_voter = true\n}"), "inside the raft stanza, after its retry_join blocks (OpenBao refuses the flag without one)")
	var m map[string]any
	g.Expect(hcl.Decode(&m, later)).To(Succeed())
}

// The configuration hash on the pod template changes with what a running member
// reads at start, and not with the join settings, which only a member without data
// reads: scaling, or the cluster forming, must not restart every member.
func TestConfigSHA256FollowsWhatARunningMemberReads(t *testing.T) {
	g := NewWithT(t)
	base, err := ConfigSHA256(newCluster())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(base).To(HaveLen(64))

	five, err := ConfigSHA256(newCluster(withReplicas(5)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(five).To(Equal(base), "spec.replicas changes only retry_join: no rollout after a scaling")

	raft, err := ConfigSHA256(newCluster(withPerformanceMultiplier(5)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(raft).NotTo(Equal(base), "a Raft setting is read at start: the members restart onto it")

	a, err := TemplateAnnotations(newCluster())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(Equal(map[string]string{baov1.TemplateAnnotationConfig: base}), "no restart requested; the certificate is never on the template (members reload it)")
	c := newCluster()
	c.Status.Restart = &baov1.RestartRecord{Token: "t1"}
	a, err = TemplateAnnotations(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).NotTo(HaveKey(baov1.TemplateAnnotationCertificate))
	g.Expect(a).To(HaveKeyWithValue(baov1.TemplateAnnotationRestart, "t1"))
}

// TestExecutorPolicyPinsTheRoles: the executor may write the two roles only as
// roleData writes them (issue 38): every parameter pinned, the subject to the
// namespace's executor accounts or the operator's, the audience to the namespace's
// cluster audiences. The real server's verdicts are in test/integration/realbao.
func TestExecutorPolicyPinsTheRoles(t *testing.T) {
	g := NewWithT(t)
	p := executorPolicyHCL("apps", testControllerSubject)
	block := func(role string) string {
		start := strings.Index(p, `path "auth/baokeeper-jwt/role/`+role+`"`)
		g.Expect(start).To(BeNumerically(">=", 0))
		end := strings.Index(p[start:], "\n}\n")
		return p[start : start+end]
	}
	exec := block(ExecutorRole)
	for k := range ExecutorRoleData("system:serviceaccount:apps:bao-executor", "openbao.baokeeper.dev/apps/bao") {
		g.Expect(exec).To(ContainSubstring(fmt.Sprintf("%q = [", k)), "%s is pinned", k)
	}
	g.Expect(exec).To(ContainSubstring(`"token_policies" = ["baokeeper-executor"]`))
	g.Expect(exec).To(ContainSubstring(`"bound_subject" = ["system:serviceaccount:apps:*"]`))
	g.Expect(exec).To(ContainSubstring(`"bound_audiences" = ["openbao.baokeeper.dev/apps/*"]`))
	g.Expect(exec).To(ContainSubstring(`"token_ttl" = ["15m"]`))
	ctl := block(ControllerRole)
	g.Expect(ctl).To(ContainSubstring(`"token_policies" = ["baokeeper-controller"]`))
	g.Expect(ctl).To(ContainSubstring(fmt.Sprintf(`"bound_subject" = [%q]`, testControllerSubject)), "the operator's account only")
	for _, b := range []string{exec, ctl} {
		g.Expect(b).To(ContainSubstring(`"bound_audiences" = ["*,*"]`), "no second audience slipped in after a comma")
	}
}
