package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// OpenBao identities of baokeeper. The controller and executor Jobs log in with their
// Kubernetes service-account tokens (audience-bound, projected) to a JWT auth method
// that self-initialization enables. See docs/design/auth.md.
const (
	// AuthMount is the path of the JWT auth method, under auth/.
	AuthMount = "baokeeper-jwt"
	// ControllerRole is the read-only role of the controller.
	ControllerRole = "baokeeper-controller"
	// ExecutorRole is the mutating role of executor Jobs.
	ExecutorRole = "baokeeper-executor"
	// ControllerPolicy and ExecutorPolicy are the ACL policies of the two roles.
	ControllerPolicy = "baokeeper-controller"
	// ExecutorPolicy grants the Raft operations executor Jobs perform.
	ExecutorPolicy = "baokeeper-executor"
	// CanaryMount is the KV version 2 secrets engine that self-initialization
	// enables for the restore canary: the one value baokeeper writes there
	// (CanaryPath) before every snapshot, and reads back after every restore, so
	// that a restore is proven to hold the data written before its snapshot.
	CanaryMount = "baokeeper"
	// CanaryPath is the canary's API path: the executor may write it, the
	// controller may read it, and nothing else of the mount is used.
	CanaryPath = CanaryMount + "/data/canary"
	// LegacyTokenAudience is the one audience of every cluster initialized before
	// audiences were per cluster (status.jwtAudience empty or equal to it): its JWT
	// roles were written with it, and they are not rewritten.
	LegacyTokenAudience = "baokeeper"
	// AuditDevicePath is where the file audit device of spec.audit.file is mounted.
	AuditDevicePath = "baokeeper-file/"
	// StaticSealKeyID names the generated static-seal key.
	StaticSealKeyID = "baokeeper-static-1"

	controllerTokenTTL    = "5m"
	controllerTokenMaxTTL = "10m"
	executorTokenTTL      = "15m"
	executorTokenMaxTTL   = "30m"
)

// controllerPolicyHCL lets the controller read cluster health and membership, and
// the restore canary, and nothing else. sys/health and sys/leader need no token at
// all.
const controllerPolicyHCL = `# baokeeper controller: read-only view of Raft membership and health.
path "sys/storage/raft/configuration" {
  capabilities = ["read"]
}
path "sys/storage/raft/autopilot/state" {
  capabilities = ["read"]
}
path "sys/ha-status" {
  capabilities = ["read"]
}
path "` + CanaryPath + `" {
  capabilities = ["read"]
}
`

// executorPolicyHCL grants exactly the operations of a version change (leadership
// transfer, voter changes, peer removal, autopilot tuning and snapshots) and of a
// restore: a restore sends the snapshot with snapshot-force (the snapshot comes from
// another cluster, whose keyring this one does not share), and a cluster restored
// from another cluster's snapshot holds that cluster's two JWT roles, bound to the
// source's identities, which its executor rewrites to its own (executor rebind).
// The role paths are built from AuthMount, ExecutorRole and ControllerRole so that
// they stay in step with them. Before every snapshot the executor writes the
// restore canary (CanaryPath), which a restore reads back.
//
// The two role paths are pinned (issue 38): a write may set only the parameters
// roleData writes, each to baokeeper's own value: the role type, claim, token type,
// TTLs and policy exactly; the subject only to a service account of the namespace
// (ExecutorRole: OpenBao's globs match a prefix or a suffix, not both, so "the
// namespace's *-executor accounts" cannot be said) or to the operator's
// (ControllerRole); the audience only to one of the namespace's cluster audiences,
// one at a time. So no executor token can give itself another policy or longer
// tokens, nor hand its role to an account of another namespace; a rebind still can
// write the restored cluster's own identities, which all match.
func executorPolicyHCL(namespace, controllerSubject string) string {
	return `# baokeeper executor: Raft operations of an upgrade and of a restore.
path "sys/step-down" {
  capabilities = ["update", "sudo"]
}
path "sys/storage/raft/configuration" {
  capabilities = ["read"]
}
path "sys/storage/raft/autopilot/state" {
  capabilities = ["read"]
}
path "sys/storage/raft/autopilot/configuration" {
  capabilities = ["read", "update"]
}
path "sys/storage/raft/promote" {
  capabilities = ["update"]
}
path "sys/storage/raft/demote" {
  capabilities = ["update"]
}
path "sys/storage/raft/remove-peer" {
  capabilities = ["update"]
}
path "sys/storage/raft/snapshot" {
  capabilities = ["read"]
}
path "sys/storage/raft/snapshot-force" {
  capabilities = ["update", "sudo"]
}
path "auth/` + AuthMount + `/role/` + ExecutorRole + `" {
  capabilities = ["update"]
` + pinnedRole(ServiceAccountSubject(namespace, "*"), namespace, ExecutorPolicy, executorTokenTTL, executorTokenMaxTTL) + `}
path "auth/` + AuthMount + `/role/` + ControllerRole + `" {
  capabilities = ["update"]
` + pinnedRole(controllerSubject, namespace, ControllerPolicy, controllerTokenTTL, controllerTokenMaxTTL) + `}
path "sys/ha-status" {
  capabilities = ["read"]
}
path "` + CanaryPath + `" {
  capabilities = ["create", "update"]
}
`
}

// pinnedRole is the allowed_parameters and denied_parameters of a role path: every
// parameter roleData writes, at its value; subject may end in a glob, the audience is
// one of the namespace's cluster audiences (ClusterAudience), and no comma may slip a
// second audience or policy into a value.
func pinnedRole(subject, namespace, policy, ttl, maxTTL string) string {
	return fmt.Sprintf(`  allowed_parameters = {
    "role_type" = ["jwt"]
    "user_claim" = ["sub"]
    "token_type" = ["batch"]
    "token_policies" = [%q]
    "token_ttl" = [%q]
    "token_max_ttl" = [%q]
    "bound_subject" = [%q]
    "bound_audiences" = [%q]
  }
  denied_parameters = {
    "bound_audiences" = ["*,*"]
    "bound_subject" = ["*,*"]
  }
`, policy, ttl, maxTTL, subject, "openbao.baokeeper.dev/"+namespace+"/*")
}

// AuthParams are the inputs of the JWT auth method: who may log in and how tokens are
// verified. The reconciler reads the issuer and keys from the API server's service
// account issuer discovery endpoints.
type AuthParams struct {
	// Issuer is the service-account token issuer (the iss claim).
	Issuer string
	// PublicKeysPEM verify service-account token signatures.
	PublicKeysPEM []string
	// ControllerSubject is system:serviceaccount:<ns>:<name> of the operator.
	ControllerSubject string
	// Audience is the audience the controller's and the executors' tokens must
	// carry: JWTAudience of the cluster.
	Audience string
}

// ServiceAccountSubject is the sub claim of a service-account token.
func ServiceAccountSubject(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// RenderConfig renders config.hcl, shared by every member. Member-specific values come
// from the environment (BAO_API_ADDR, BAO_CLUSTER_ADDR, BAO_RAFT_NODE_ID) and from the
// start script, which replaces PodIPPlaceholder with the pod's IP.
func RenderConfig(c *baov1.OpenBaoCluster) (string, error) {
	return RenderConfigFor(c, ConfigOptions{})
}

// ConfigOptions are the inputs of config.hcl that come from the cluster's state, not
// its spec.
type ConfigOptions struct {
	// JoinAsNonVoter renders retry_join_as_non_voter: a member that joins from now on
	// (a scale-up, a member that lost its data) joins as a permanent non-voter, which
	// autopilot never promotes; baokeeper promotes it once it is caught up. Members
	// that already joined are not affected (retry_join runs only without Raft data),
	// and the initial members of a new cluster join before it is set.
	JoinAsNonVoter bool

	// omitJoin leaves out the retry_join settings, for ConfigSHA256.
	omitJoin bool
}

// ConfigSHA256 is the SHA-256 of the configuration a running member depends on:
// config.hcl without its retry_join settings. Only a member without Raft data reads
// those, and they change with spec.replicas and once the cluster formed; restarting
// every member for them would be for nothing. It goes on the pod template
// (baov1.TemplateAnnotationConfig), so a change that a member reads only at start
// (the listener, the Raft settings, the seal, telemetry) rolls out to every member. The
// start script is part of it: a member runs the script it started with.
func ConfigSHA256(c *baov1.OpenBaoCluster) (string, error) {
	cfg, err := RenderConfigFor(c, ConfigOptions{omitJoin: true})
	if err != nil {
		return "", err
	}
	return sha256Hex([]byte(cfg + startScript)), nil
}

// CertificateSHA256 is the fingerprint of a serving certificate: the SHA-256 of the
// DER of the first certificate in certPEM (what a TLS client sees of it, whatever
// the PEM's line breaks), or of the bytes as they are when they hold no PEM
// certificate; "" for none.
func CertificateSHA256(certPEM []byte) string {
	if len(certPEM) == 0 {
		return ""
	}
	if b, _ := pem.Decode(certPEM); b != nil && b.Type == "CERTIFICATE" {
		return sha256Hex(b.Bytes)
	}
	return sha256Hex(certPEM)
}

// CertificateSHA256DER is the fingerprint of a certificate's DER, as a TLS
// handshake presents it.
func CertificateSHA256DER(der []byte) string { return sha256Hex(der) }

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TemplateAnnotations are the annotations of the member pod template that carry
// what a running member picks up only when it restarts: the hash of its
// configuration and start script, and the token of the last accepted restart
// request. A new value is a template change, which the rollout takes to every
// member. The serving certificate is not among them: members reload it in place
// (startScript).
func TemplateAnnotations(c *baov1.OpenBaoCluster) (map[string]string, error) {
	cfg, err := ConfigSHA256(c)
	if err != nil {
		return nil, err
	}
	a := map[string]string{baov1.TemplateAnnotationConfig: cfg}
	if r := c.Status.Restart; r != nil && r.Token != "" {
		a[baov1.TemplateAnnotationRestart] = r.Token
	}
	return a, nil
}

// AutopilotReconcileInterval is how often autopilot on the leader applies voter
// changes (autopilot_reconcile_interval; OpenBao's default is 10 s). OpenBao's
// promote and demote only edit autopilot's non-voter list, and the voter flag
// follows on autopilot's next reconcile: with the default, every promotion and
// demotion of a blue-green upgrade or a scaling waited up to 10 s (9-10 s measured
// for a demotion). 2 s is the least OpenBao accepts with its default update interval
// (2 s, autopilot_update_interval, which the reconcile interval may not undercut).
// OpenBao's promoter only demotes servers on the non-voter list and only promotes
// non-voters stable for server_stabilization_time, so reconciling more often
// changes when those happen, never what happens; each round is a read of the Raft
// configuration and autopilot's state on the leader.
const AutopilotReconcileInterval = 2 * time.Second

// RenderConfigFor renders config.hcl with the given options.
func RenderConfigFor(c *baov1.OpenBaoCluster, opts ConfigOptions) (string, error) {
	n := NamesFor(c)
	var b strings.Builder
	fmt.Fprintf(&b, "# Rendered by baokeeper for %s/%s. Edits are overwritten.\n", c.Namespace, c.Name)
	fmt.Fprintf(&b, "ui           = false\ncluster_name = %s\nlog_level    = \"info\"\n\n", hclString(c.Namespace+"-"+c.Name))

	fmt.Fprintf(&b, "listener \"tcp\" {\n")
	fmt.Fprintf(&b, "  address         = \"%s:%d\"\n", PodIPPlaceholder, APIPort)
	fmt.Fprintf(&b, "  cluster_address = \"%s:%d\"\n", PodIPPlaceholder, ClusterPort)
	fmt.Fprintf(&b, "  tls_cert_file   = \"%s/%s\"\n", tlsMountPath, TLSCertKey)
	fmt.Fprintf(&b, "  tls_key_file    = \"%s/%s\"\n", tlsMountPath, TLSKeyKey)
	fmt.Fprintf(&b, "  tls_min_version = \"tls12\"\n")
	fmt.Fprintf(&b, "  telemetry {\n    unauthenticated_metrics_access = true\n  }\n}\n\n")

	fmt.Fprintf(&b, "storage \"raft\" {\n")
	fmt.Fprintf(&b, "  path                   = \"%s\"\n", DataMountPath)
	fmt.Fprintf(&b, "  performance_multiplier = %d\n", c.GetPerformanceMultiplier())
	fmt.Fprintf(&b, "  autopilot_reconcile_interval = %q\n", AutopilotReconcileInterval.String())
	for i := range c.GetReplicas() {
		if opts.omitJoin {
			break
		}
		fmt.Fprintf(&b, "  retry_join {\n")
		fmt.Fprintf(&b, "    leader_api_addr     = \"https://%s:%d\"\n", n.MemberHost(i, c.Namespace), APIPort)
		fmt.Fprintf(&b, "    leader_ca_cert_file = \"%s/%s\"\n", tlsMountPath, CACertKey)
		fmt.Fprintf(&b, "  }\n")
	}
	if opts.JoinAsNonVoter && !opts.omitJoin {
		fmt.Fprintf(&b, "  retry_join_as_non_voter = true\n")
	}
	fmt.Fprintf(&b, "}\n\n")

	switch c.GetSealType() {
	case baov1.CustomSeal:
		if strings.TrimSpace(c.Spec.Seal.CustomStanza) == "" {
			return "", fmt.Errorf("spec.seal.customStanza is empty: add a seal stanza or set spec.seal.type to Static")
		}
		b.WriteString(strings.TrimSpace(c.Spec.Seal.CustomStanza))
		b.WriteString("\n\n")
	default:
		fmt.Fprintf(&b, "seal \"static\" {\n  current_key_id = %q\n  current_key    = \"file://%s/%s\"\n}\n\n",
			StaticSealKeyID, sealMountPath, SealKeyKey)
	}

	if a := c.Spec.Audit.File; a != nil {
		path := "stdout"
		if a.Target == baov1.AuditDataVolume {
			path = DataMountPath + "/audit.log"
		}
		// Declared in the configuration (OpenBao's declarative audit devices): every
		// member has it from its start, and no token can remove it.
		fmt.Fprintf(&b, "audit \"file\" %q {\n  options = {\n    file_path = %q\n  }\n}\n\n", AuditDevicePath, path)
	}
	b.WriteString("service_registration \"kubernetes\" {}\n\n")
	b.WriteString("telemetry {\n  prometheus_retention_time = \"30s\"\n  disable_hostname          = true\n}\n")
	return b.String(), nil
}

// initRequest is one request block of an initialize stanza.
type initRequest struct {
	name      string
	operation string
	path      string
	data      map[string]any
}

// RenderInitialize renders the self-initialization stanzas: the JWT auth method, the
// two policies and the two roles, then the user's extra requests. The start script
// loads this file on ordinal 0 only, and the reconciler renders it only until the
// cluster has reported initialized (see docs/design/initialization.md): a member that
// lost its data must join the existing cluster, never initialize a second one.
func RenderInitialize(c *baov1.OpenBaoCluster, auth AuthParams) (string, error) {
	if auth.Issuer == "" || len(auth.PublicKeysPEM) == 0 {
		return "", fmt.Errorf("the service-account issuer and its public keys are unknown: check that the API server serves /.well-known/openid-configuration and /openid/v1/jwks")
	}
	if auth.ControllerSubject == "" {
		return "", fmt.Errorf("the controller's service account is unknown: set --controller-service-account")
	}
	if auth.Audience == "" {
		auth.Audience = JWTAudience(c)
	}
	keys := make([]any, len(auth.PublicKeysPEM))
	for i, k := range auth.PublicKeysPEM {
		keys[i] = k
	}
	base := []struct {
		stanza   string
		requests []initRequest
	}{
		{"baokeeper_auth", []initRequest{
			{"enable_jwt", "update", "sys/auth/" + AuthMount, map[string]any{
				"type":        "jwt",
				"description": "Kubernetes service accounts of baokeeper (controller and executor Jobs)",
			}},
			{"configure_jwt", "update", "auth/" + AuthMount + "/config", map[string]any{
				"jwt_validation_pubkeys": keys,
				"bound_issuer":           auth.Issuer,
			}},
		}},
		{"baokeeper_canary", []initRequest{
			{"enable_canary", "update", "sys/mounts/" + CanaryMount, map[string]any{
				"type":        "kv",
				"description": "baokeeper's restore canary: written before every snapshot, read back after every restore",
				"options":     map[string]any{"version": "2"},
			}},
		}},
		{"baokeeper_policies", []initRequest{
			{"controller_policy", "update", "sys/policies/acl/" + ControllerPolicy, map[string]any{"policy": controllerPolicyHCL}},
			{"executor_policy", "update", "sys/policies/acl/" + ExecutorPolicy, map[string]any{"policy": executorPolicyHCL(c.Namespace, auth.ControllerSubject)}},
		}},
		{"baokeeper_roles", []initRequest{
			{"controller_role", "update", "auth/" + AuthMount + "/role/" + ControllerRole,
				ControllerRoleData(auth.ControllerSubject, auth.Audience)},
			{"executor_role", "update", "auth/" + AuthMount + "/role/" + ExecutorRole,
				ExecutorRoleData(ServiceAccountSubject(c.Namespace, NamesFor(c).ExecutorServiceAccount()), auth.Audience)},
		}},
	}

	var b strings.Builder
	b.WriteString("# Self-initialization, rendered by baokeeper. Loaded by ordinal 0 on first start only.\n")
	for _, st := range base {
		if err := writeInitialize(&b, st.stanza, st.requests); err != nil {
			return "", err
		}
	}
	if len(c.Spec.Initialization.ExtraRequests) > 0 {
		reqs := make([]initRequest, 0, len(c.Spec.Initialization.ExtraRequests))
		for _, r := range c.Spec.Initialization.ExtraRequests {
			data := map[string]any{}
			if r.Data != nil && len(r.Data.Raw) > 0 {
				dec := json.NewDecoder(strings.NewReader(string(r.Data.Raw)))
				dec.UseNumber()
				if err := dec.Decode(&data); err != nil {
					return "", fmt.Errorf("spec.initialization.extraRequests[%s].data is not a JSON object: %w", r.Name, err)
				}
				if err := hclValue(&strings.Builder{}, data, ""); err != nil {
					return "", fmt.Errorf("spec.initialization.extraRequests[%s].data cannot be rendered: %w", r.Name, err)
				}
			}
			op := r.Operation
			if op == "" {
				op = "update"
			}
			reqs = append(reqs, initRequest{name: "user_" + strings.ReplaceAll(r.Name, "-", "_"), operation: op, path: r.Path, data: data})
		}
		if err := writeInitialize(&b, "user", reqs); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// InitializeDisabled is the content of initialize.hcl once the cluster initialized.
const InitializeDisabled = "# The cluster has initialized: self-initialization is disabled.\n"

// ControllerRoleData is the data of the controller's JWT role,
// auth/<AuthMount>/role/<ControllerRole>: subject (the operator's service account,
// ServiceAccountSubject) may log in with tokens for audience, and gets the read-only
// ControllerPolicy. Self-initialization writes it, and so does the executor's rebind
// of a cluster restored from another cluster's snapshot.
func ControllerRoleData(subject, audience string) map[string]any {
	return roleData(subject, audience, ControllerPolicy, controllerTokenTTL, controllerTokenMaxTTL)
}

// ExecutorRoleData is the data of the executor Jobs' JWT role,
// auth/<AuthMount>/role/<ExecutorRole>: subject (the cluster's executor service
// account) may log in with tokens for audience, and gets ExecutorPolicy.
// Self-initialization writes it, and so does the executor's rebind of a cluster
// restored from another cluster's snapshot.
func ExecutorRoleData(subject, audience string) map[string]any {
	return roleData(subject, audience, ExecutorPolicy, executorTokenTTL, executorTokenMaxTTL)
}

// roleData writes the audience and the policy as single strings, not lists: the
// executor policy pins each to a value (pinnedRole), and OpenBao compares a list
// parameter to the allowed values as a whole.
func roleData(subject, audience, policy, ttl, maxTTL string) map[string]any {
	return map[string]any{
		"role_type":       "jwt",
		"user_claim":      "sub",
		"bound_subject":   subject,
		"bound_audiences": audience,
		"token_policies":  policy,
		"token_ttl":       ttl,
		"token_max_ttl":   maxTTL,
		"token_type":      "batch",
	}
}

func writeInitialize(b *strings.Builder, stanza string, reqs []initRequest) error {
	fmt.Fprintf(b, "\ninitialize %q {\n", stanza)
	for _, r := range reqs {
		fmt.Fprintf(b, "  request %q {\n", r.name)
		fmt.Fprintf(b, "    operation = %q\n", r.operation)
		fmt.Fprintf(b, "    path      = %s\n", hclString(r.path))
		if len(r.data) > 0 {
			b.WriteString("    data = ")
			if err := hclValue(b, r.data, "    "); err != nil {
				return fmt.Errorf("initialize request %s: %w", r.name, err)
			}
			b.WriteString("\n")
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return nil
}
