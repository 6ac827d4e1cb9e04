// Package realbao proves that the configuration baokeeper renders runs for real: it
// starts the OpenBao 2.4.0 binary (built from Go modules into bin/) with config.hcl and
// initialize.hcl exactly as rendered for a one-member cluster, rewriting only file
// paths, the pod IP placeholder and the ports, against a real kube-apiserver (envtest)
// that issues the service-account tokens and receives the service registration.
package realbao

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	baoapi "github.com/openbao/openbao/api/v2"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/saissuer"
	"github.com/baokeeper/baokeeper/internal/service/workload"
	"github.com/baokeeper/baokeeper/test/testenv"
)

const (
	ns       = "vault-ns"
	operNS   = "baokeeper-system"
	operSA   = "baokeeper"
	appSA    = "app"
	waitLong = 60 * time.Second
)

var (
	testEnv *envtest.Environment
	cfg     *rest.Config
	cs      *kubernetes.Clientset
	dir     string
	baoCmd  *exec.Cmd
	baoLog  *bytes.Buffer
	apiAddr string
	caPEM   []byte
	cluster *baov1.OpenBaoCluster
)

func TestRealOpenBao(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Rendered config on a real OpenBao")
}

// skipOrFail skips with a reason, or fails when `make test` requires the suite.
func skipOrFail(reason string) {
	if testenv.Required() {
		Fail(reason)
	}
	Skip(reason)
}

var _ = BeforeSuite(func(ctx SpecContext) {
	baoBin := os.Getenv("BAO_BIN")
	if baoBin == "" {
		skipOrFail("BAO_BIN is not set: run `make test`, which builds OpenBao 2.4.0 into bin/ and sets it")
	}
	if _, err := os.Stat(baoBin); err != nil {
		skipOrFail(fmt.Sprintf("BAO_BIN=%s does not exist: run `make openbao-bins`", baoBin))
	}
	assets, reason := testenv.Assets()
	if reason != "" {
		skipOrFail(reason)
	}
	if os.Geteuid() != 0 {
		// Service registration reads the token from a fixed path; a private mount
		// namespace puts it there without touching the host, and that needs root.
		skipOrFail("this suite needs root for a private mount namespace (unshare --mount)")
	}

	By("starting a real kube-apiserver and etcd")
	testEnv = &envtest.Environment{BinaryAssetsDirectory: assets}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	cs, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	dir = GinkgoT().TempDir()

	for _, n := range []string{ns, operNS} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}

	cluster = &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: ns, UID: "0000-test"},
		Spec: baov1.OpenBaoClusterSpec{
			Version:  "2.4.0",
			Replicas: ptr(int32(1)),
			Audit:    baov1.AuditSpec{File: &baov1.FileAuditSpec{Target: baov1.AuditStdout}},
			Initialization: baov1.InitializationSpec{ExtraRequests: []baov1.InitRequest{
				{Name: "kv", Path: "sys/mounts/secret", Data: rawJSON(`{"type":"kv","options":{"version":"2"}}`)},
				{Name: "app-policy", Path: "sys/policies/acl/app", Data: rawJSON(`{"policy":"path \"secret/data/*\" { capabilities = [\"create\",\"update\",\"read\"] }"}`)},
				{Name: "app-role", Path: "auth/baokeeper-jwt/role/app", Data: rawJSON(`{"role_type":"jwt","user_claim":"sub","bound_subject":"system:serviceaccount:` + ns + `:` + appSA + `","bound_audiences":["baokeeper"],"token_policies":["app"],"token_ttl":"5m"}`)},
			}},
		},
	}

	By("creating the identities and RBAC the workload reconciler would create")
	for _, sa := range append(workload.ServiceAccounts(cluster), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: appSA, Namespace: ns}}) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	_, err = cs.CoreV1().ServiceAccounts(operNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: operSA}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	role, binding := workload.ServiceRegistrationRBAC(cluster)
	role.OwnerReferences, binding.OwnerReferences = nil, nil
	_, err = cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	// The pod object that service registration labels (no kubelet runs it; this
	// process plays its container).
	_, err = cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bao-0", Namespace: ns, Labels: workload.SelectorLabels(cluster)},
		Spec:       corev1.PodSpec{ServiceAccountName: "bao", Containers: []corev1.Container{{Name: "openbao", Image: "openbao/openbao:2.4.0"}}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	By("rendering TLS, the seal key, config.hcl and initialize.hcl")
	ca, err := workload.NewCA(cluster, time.Now(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	serving, err := workload.IssueServing(cluster, ca, time.Now(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	caPEM = ca.CertPEM
	seal, err := workload.SealSecret(cluster, rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	files := map[string][]byte{
		"tls/tls.crt": serving.CertPEM, "tls/tls.key": serving.KeyPEM, "tls/ca.crt": ca.CertPEM,
		"seal/key": seal.Data[workload.SealKeyKey],
	}
	config, err := workload.RenderConfig(cluster)
	Expect(err).NotTo(HaveOccurred())
	issuer, err := saissuer.Fetch(ctx, saissuer.RESTGetter{Client: cs.Discovery().RESTClient()})
	Expect(err).NotTo(HaveOccurred())
	initHCL, err := workload.RenderInitialize(cluster, workload.AuthParams{
		Issuer: issuer.URL, PublicKeysPEM: issuer.PublicKeysPEM,
		ControllerSubject: workload.ServiceAccountSubject(operNS, operSA),
	})
	Expect(err).NotTo(HaveOccurred())

	apiPort, clusterPort := freePort(), freePort()
	apiAddr = fmt.Sprintf("https://localhost:%d", apiPort)
	config = strings.NewReplacer(
		"/openbao/", dir+"/",
		workload.PodIPPlaceholder+":8200", "127.0.0.1:"+strconv.Itoa(apiPort),
		workload.PodIPPlaceholder+":8201", "127.0.0.1:"+strconv.Itoa(clusterPort),
	).Replace(config)
	files["config/config.hcl"] = []byte(config)
	files["config/initialize.hcl"] = []byte(initHCL)

	By("writing the service-account token where Kubernetes would mount it")
	tok := tokenFor(ctx, ns, "bao", "")
	files["run/secrets/kubernetes.io/serviceaccount/token"] = []byte(tok)
	files["run/secrets/kubernetes.io/serviceaccount/ca.crt"] = cfg.CAData
	for name, data := range files {
		p := filepath.Join(dir, name)
		Expect(os.MkdirAll(filepath.Dir(p), 0o700)).To(Succeed())
		Expect(os.WriteFile(p, data, 0o600)).To(Succeed())
	}
	Expect(os.MkdirAll(filepath.Join(dir, "data"), 0o700)).To(Succeed())

	By("starting OpenBao 2.4.0 in a private mount namespace")
	apiURL, err := url.Parse(cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	host, port := apiURL.Hostname(), apiURL.Port()
	runDir, err := filepath.EvalSymlinks("/var/run")
	Expect(err).NotTo(HaveOccurred())
	script := `mount --bind "$1/run" "$2" && exec "$3" server -config="$1/config/config.hcl" -config="$1/config/initialize.hcl"`
	baoCmd = exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh", dir, runDir, baoBin)
	baoCmd.Env = append(os.Environ(),
		"BAO_RAFT_NODE_ID=bao-0", "BAO_K8S_POD_NAME=bao-0", "BAO_K8S_NAMESPACE="+ns,
		"BAO_API_ADDR="+apiAddr, fmt.Sprintf("BAO_CLUSTER_ADDR=https://127.0.0.1:%d", clusterPort),
		"KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port)
	baoLog = &bytes.Buffer{}
	baoCmd.Stdout, baoCmd.Stderr = baoLog, baoLog
	baoCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	Expect(baoCmd.Start()).To(Succeed())
	DeferCleanup(stopBao)
}, NodeTimeout(3*time.Minute))

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

func stopBao() {
	if baoCmd == nil || baoCmd.Process == nil {
		return
	}
	_ = syscall.Kill(-baoCmd.Process.Pid, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- baoCmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-baoCmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	if CurrentSpecReport().Failed() || os.Getenv("BAOKEEPER_SHOW_LOGS") != "" {
		GinkgoWriter.Printf("OpenBao log:\n%s\n", baoLog.String())
	}
}

var _ = Describe("OpenBao 2.4.0 started from the rendered config", Ordered, func() {
	It("initializes itself and unseals with the static key", func(ctx SpecContext) {
		c := controllerClient()
		Eventually(func(g Gomega) {
			h, err := c.Health(ctx, apiAddr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.Initialized).To(BeTrue())
			g.Expect(h.Sealed).To(BeFalse())
			g.Expect(h.Standby).To(BeFalse())
			g.Expect(h.Version).To(Equal("2.4.0"))
		}, waitLong, 500*time.Millisecond).Should(Succeed())
	}, SpecTimeout(2*time.Minute))

	It("registers itself in Kubernetes through the member RBAC", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, "bao-0", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pod.Labels).To(HaveKeyWithValue(workload.LabelActive, "true"))
			g.Expect(pod.Labels).To(HaveKeyWithValue("openbao-initialized", "true"))
			g.Expect(pod.Labels).To(HaveKeyWithValue("openbao-sealed", "false"))
			g.Expect(pod.Labels).To(HaveKeyWithValue("openbao-version", "2.4.0"))
		}, waitLong, 500*time.Millisecond).Should(Succeed())
	}, SpecTimeout(2*time.Minute))

	It("lets a member's service account patch the cluster's member pods only, not another pod of the namespace", func(ctx SpecContext) {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "victim-0", Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1.0"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		member, err := kubernetes.NewForConfig(&rest.Config{Host: cfg.Host, BearerToken: tokenFor(ctx, ns, "bao", ""),
			TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}})
		Expect(err).NotTo(HaveOccurred())
		patch := []byte(`{"metadata":{"labels":{"openbao-active":"true"}}}`)
		_, err = member.CoreV1().Pods(ns).Patch(ctx, "bao-0", types.MergePatchType, patch, metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred(), "its own pod: what service registration needs")
		_, err = member.CoreV1().Pods(ns).Patch(ctx, "victim-0", types.MergePatchType,
			[]byte(`{"spec":{"containers":[{"name":"app","image":"evil.example/app:1.0"}]}}`), metav1.PatchOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "another application's pod, whose image a patch could change: %v", err)
		_, err = member.CoreV1().Pods(ns).Get(ctx, "victim-0", metav1.GetOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "nor read it: %v", err)
		_, err = member.CoreV1().Pods(ns).Update(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bao-0", Namespace: ns}}, metav1.UpdateOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "no update, only the patch service registration sends: %v", err)
		Expect(cs.CoreV1().Pods(ns).Delete(ctx, "victim-0", metav1.DeleteOptions{})).To(Succeed())
	})

	It("lets the controller's service account read Raft membership through baokeeper's client", func(ctx SpecContext) {
		c := controllerClient()
		Eventually(func(g Gomega) {
			rc, err := c.RaftConfiguration(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rc.Servers).To(ConsistOf(And(HaveField("NodeID", "bao-0"), HaveField("Leader", true), HaveField("Voter", true))))
		}, waitLong, time.Second).Should(Succeed())
		st, err := c.AutopilotState(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Leader).To(Equal("bao-0"))
		Expect(st.Voters).To(ConsistOf("bao-0"))
	}, SpecTimeout(2*time.Minute))

	It("keeps the controller's role read-only", func(ctx SpecContext) {
		tok := login(ctx, tokenFor(ctx, operNS, operSA, workload.JWTAudience(cluster)), workload.ControllerRole)
		c := apiClient(tok)
		_, err := c.Logical().ReadWithContext(ctx, "sys/storage/raft/configuration")
		Expect(err).NotTo(HaveOccurred())
		expectDenied(c.Sys().StepDownWithContext(ctx))
		_, err = c.Logical().WriteWithContext(ctx, "sys/policies/acl/evil", map[string]any{"policy": `path "*" { capabilities = ["sudo"] }`})
		expectDenied(err)
		_, err = c.Logical().WriteWithContext(ctx, "sys/storage/raft/remove-peer", map[string]any{"server_id": "bao-0"})
		expectDenied(err)
		_, err = c.Logical().WriteWithContext(ctx, "secret/data/x", map[string]any{"data": map[string]any{"a": "b"}})
		expectDenied(err)
		_, err = c.Logical().ReadWithContext(ctx, "sys/storage/raft/snapshot")
		expectDenied(err)
		_, err = c.Logical().WriteWithContext(ctx, workload.CanaryPath, map[string]any{"data": map[string]any{"value": "forged"}})
		expectDenied(err)
	}, SpecTimeout(time.Minute))

	It("lets the executor write the restore canary and the controller read it back, through baokeeper's own clients", func(ctx SpecContext) {
		caFile, tokFile := filepath.Join(dir, "canary-ca.crt"), filepath.Join(dir, "executor-token")
		Expect(os.WriteFile(caFile, caPEM, 0o600)).To(Succeed())
		Expect(os.WriteFile(tokFile, []byte(tokenFor(ctx, ns, "bao-executor", workload.JWTAudience(cluster))), 0o600)).To(Succeed())
		mc, err := openbao.NewMemberClient(openbao.MemberConfig{CAFile: caFile, AuthMount: workload.AuthMount, Role: workload.ExecutorRole,
			TokenFile: tokFile, Timeout: 5 * time.Second})
		Expect(err).NotTo(HaveOccurred())
		Expect(mc.WriteCanary(ctx, apiAddr, workload.CanaryPath, "ns/bao/requested-1.snap")).To(Succeed())
		cr, ok := controllerClient().(openbao.CanaryReader)
		Expect(ok).To(BeTrue(), "the controller's reader reads the canary")
		v, err := cr.Canary(ctx, workload.CanaryPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(v).To(Equal("ns/bao/requested-1.snap"))

		By("nothing else of the mount: the executor cannot read, the controller cannot write")
		tok := login(ctx, tokenFor(ctx, ns, "bao-executor", workload.JWTAudience(cluster)), workload.ExecutorRole)
		_, err = apiClient(tok).Logical().ReadWithContext(ctx, workload.CanaryMount+"/data/other")
		expectDenied(err)
		_, err = apiClient(tok).Logical().WriteWithContext(ctx, workload.CanaryMount+"/data/other", map[string]any{"data": map[string]any{"a": "b"}})
		expectDenied(err)
	}, SpecTimeout(time.Minute))

	It("gives the executor's role the Raft operations and nothing else", func(ctx SpecContext) {
		tok := login(ctx, tokenFor(ctx, ns, "bao-executor", workload.JWTAudience(cluster)), workload.ExecutorRole)
		c := apiClient(tok)
		_, err := c.Logical().ReadWithContext(ctx, "sys/storage/raft/autopilot/configuration")
		Expect(err).NotTo(HaveOccurred())
		var buf bytes.Buffer
		Expect(c.Sys().RaftSnapshotWithContext(ctx, &buf)).To(Succeed())
		Expect(buf.Len()).To(BeNumerically(">", 0))
		_, err = c.Logical().WriteWithContext(ctx, "sys/policies/acl/evil", map[string]any{"policy": `path "*" { capabilities = ["sudo"] }`})
		expectDenied(err)
		_, err = c.Logical().ReadWithContext(ctx, "secret/data/x")
		expectDenied(err)

		By("the membership operations of scaling are allowed (on a server ID that is not a peer, so nothing changes)")
		for _, op := range []string{"promote", "demote", "remove-peer"} {
			_, err := c.Logical().WriteWithContext(ctx, "sys/storage/raft/"+op, map[string]any{"server_id": "not-a-peer"})
			var re *baoapi.ResponseError
			if errors.As(err, &re) {
				Expect(re.StatusCode).NotTo(Equal(403), "the executor role may %s: %v", op, err)
			}
		}
		cfg, err := c.Logical().ReadWithContext(ctx, "sys/storage/raft/configuration")
		Expect(err).NotTo(HaveOccurred())
		servers := cfg.Data["config"].(map[string]any)["servers"].([]any)
		Expect(servers).To(HaveLen(1), "the one member is still the only peer")
	}, SpecTimeout(time.Minute))

	It("refuses a token for the wrong audience or the wrong service account", func(ctx SpecContext) {
		for _, tc := range []struct{ what, ns, sa, aud, role string }{
			{"default audience", operNS, operSA, "", workload.ControllerRole},
			{"controller on executor role", operNS, operSA, workload.JWTAudience(cluster), workload.ExecutorRole},
			{"executor on controller role", ns, "bao-executor", workload.JWTAudience(cluster), workload.ControllerRole},
			{"member pod identity", ns, "bao", workload.JWTAudience(cluster), workload.ControllerRole},
		} {
			_, err := apiClient("").Logical().WriteWithContext(ctx, "auth/"+workload.AuthMount+"/login",
				map[string]any{"role": tc.role, "jwt": tokenFor(ctx, tc.ns, tc.sa, tc.aud)})
			Expect(err).To(HaveOccurred(), tc.what)
		}
	}, SpecTimeout(time.Minute))

	It("refuses the controller's and an executor's token issued for another cluster (a replayed token)", func(ctx SpecContext) {
		Expect(workload.JWTAudience(cluster)).To(Equal("openbao.baokeeper.dev/"+ns+"/bao"), "a new cluster trusts an audience of its own")
		other := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}}
		for _, tc := range []struct{ what, ns, sa, aud, role string }{
			{"the controller's token for cluster other", operNS, operSA, workload.JWTAudience(other), workload.ControllerRole},
			{"the controller's token for a cluster of another namespace", operNS, operSA, "openbao.baokeeper.dev/tenant-b/bao", workload.ControllerRole},
			{"the controller's token of the legacy shared audience", operNS, operSA, workload.LegacyTokenAudience, workload.ControllerRole},
			{"an executor token for cluster other", ns, "bao-executor", workload.JWTAudience(other), workload.ExecutorRole},
		} {
			_, err := apiClient("").Logical().WriteWithContext(ctx, "auth/"+workload.AuthMount+"/login",
				map[string]any{"role": tc.role, "jwt": tokenFor(ctx, tc.ns, tc.sa, tc.aud)})
			Expect(err).To(HaveOccurred(), "bug: %s was accepted", tc.what)
			Expect(err.Error()).To(ContainSubstring("aud"), "%s refused for its audience: %v", tc.what, err)
		}
		By("the same service account with this cluster's audience logs in: the refusals are the audience's")
		Expect(login(ctx, tokenFor(ctx, operNS, operSA, workload.JWTAudience(cluster)), workload.ControllerRole)).NotTo(BeEmpty())
	}, SpecTimeout(time.Minute))

	It("ran the user's extra initialization requests", func(ctx SpecContext) {
		c := apiClient(login(ctx, tokenFor(ctx, ns, appSA, workload.LegacyTokenAudience), "app"))
		_, err := c.Logical().WriteWithContext(ctx, "secret/data/hello", map[string]any{"data": map[string]any{"answer": "42"}})
		Expect(err).NotTo(HaveOccurred())
		s, err := c.Logical().ReadWithContext(ctx, "secret/data/hello")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Data["data"]).To(HaveKeyWithValue("answer", "42"))
	}, SpecTimeout(time.Minute))

	It("writes the audit log that spec.audit.file declares, to standard output, with secrets HMAC'd", func(ctx SpecContext) {
		jwt := tokenFor(ctx, operNS, operSA, workload.JWTAudience(cluster))
		_ = login(ctx, jwt, workload.ControllerRole)
		Eventually(func() string { return baoLog.String() }, 10*time.Second, 200*time.Millisecond).Should(And(
			ContainSubstring(`"type":"response"`), ContainSubstring(`"path":"auth/baokeeper-jwt/login"`)),
			"an audit entry of the login, as JSON on standard output")
		Expect(baoLog.String()).NotTo(ContainSubstring(jwt), "the service-account token is HMAC'd, never written")
	}, SpecTimeout(time.Minute))

	It("lets an executor token write the two roles only as baokeeper writes them (issue 38: no token widens itself)", func(ctx SpecContext) {
		tok := login(ctx, tokenFor(ctx, ns, "bao-executor", workload.JWTAudience(cluster)), workload.ExecutorRole)
		c := apiClient(tok)
		execPath := "auth/" + workload.AuthMount + "/role/" + workload.ExecutorRole
		ctlPath := "auth/" + workload.AuthMount + "/role/" + workload.ControllerRole
		own := workload.ExecutorRoleData(workload.ServiceAccountSubject(ns, "bao-executor"), workload.JWTAudience(cluster))
		with := func(base map[string]any, k string, v any) map[string]any {
			out := map[string]any{}
			for bk, bv := range base {
				out[bk] = bv
			}
			out[k] = v
			return out
		}
		By("refusing every widening")
		for what, data := range map[string]map[string]any{
			"another policy":                       with(own, "token_policies", "default"),
			"a second policy":                      with(own, "token_policies", "baokeeper-executor,default"),
			"a list with a second policy":          with(own, "token_policies", []any{"baokeeper-executor", "default"}),
			"another namespace's executor account": with(own, "bound_subject", "system:serviceaccount:tenant-b:bao-executor"),
			"an account and a second one":          with(own, "bound_subject", workload.ServiceAccountSubject(ns, "bao-executor")+",x"),
			"a second audience after a comma":      with(own, "bound_audiences", workload.JWTAudience(cluster)+",evil"),
			"another namespace's audience":         with(own, "bound_audiences", "openbao.baokeeper.dev/tenant-b/bao"),
			"longer tokens":                        with(own, "token_ttl", "768h"),
			"service tokens":                       with(own, "token_type", "service"),
			"a parameter baokeeper never writes":   with(own, "bound_claims", map[string]any{"sub": "*"}),
		} {
			_, err := c.Logical().WriteWithContext(ctx, execPath, data)
			Expect(err).To(HaveOccurred(), "bug: the executor role took %s", what)
			expectDenied(err)
		}
		_, err := c.Logical().WriteWithContext(ctx, ctlPath, workload.ControllerRoleData(workload.ServiceAccountSubject(ns, appSA), workload.JWTAudience(cluster)))
		expectDenied(err)

		By("allowing what a rebind writes: the identities of a cluster of the namespace, as baokeeper builds them")
		other := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: ns}}
		_, err = c.Logical().WriteWithContext(ctx, execPath, workload.ExecutorRoleData(workload.ServiceAccountSubject(ns, "copy-executor"), workload.ClusterAudience(other)))
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Logical().WriteWithContext(ctx, ctlPath, workload.ControllerRoleData(workload.ServiceAccountSubject(operNS, operSA), workload.ClusterAudience(other)))
		Expect(err).NotTo(HaveOccurred())
		By("and back to this cluster's own, which the specs after this one use")
		_, err = c.Logical().WriteWithContext(ctx, execPath, own)
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Logical().WriteWithContext(ctx, ctlPath, workload.ControllerRoleData(workload.ServiceAccountSubject(operNS, operSA), workload.JWTAudience(cluster)))
		Expect(err).NotTo(HaveOccurred())
		Expect(login(ctx, tokenFor(ctx, ns, "bao-executor", workload.JWTAudience(cluster)), workload.ExecutorRole)).NotTo(BeEmpty())
		Expect(login(ctx, tokenFor(ctx, operNS, operSA, workload.JWTAudience(cluster)), workload.ControllerRole)).NotTo(BeEmpty())
	}, SpecTimeout(time.Minute))

	It("never printed a root token", func() {
		log := baoLog.String()
		Expect(log).To(ContainSubstring("security barrier initialized"), "the server initialized itself: no test code called sys/init")
		Expect(strings.ToLower(log)).NotTo(ContainSubstring("root token:"))
		Expect(log).NotTo(MatchRegexp(`\bs\.[A-Za-z0-9]{24}\b`))
		Expect(log).NotTo(MatchRegexp(`\bhvs\.[A-Za-z0-9_-]{20,}`))
	})
})

func controllerClient() openbao.Reader {
	tokFile := filepath.Join(dir, "controller-token")
	Expect(os.WriteFile(tokFile, []byte(tokenFor(context.Background(), operNS, operSA, workload.JWTAudience(cluster))), 0o600)).To(Succeed())
	c, err := openbao.New(openbao.Config{Address: apiAddr, CACertPEM: caPEM, AuthMount: workload.AuthMount,
		Role: workload.ControllerRole, TokenPath: tokFile, Timeout: 5 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func apiClient(token string) *baoapi.Client {
	conf := baoapi.DefaultConfig()
	conf.Address = apiAddr
	Expect(conf.ConfigureTLS(&baoapi.TLSConfig{CACertBytes: caPEM})).To(Succeed())
	c, err := baoapi.NewClient(conf)
	Expect(err).NotTo(HaveOccurred())
	c.SetToken(token)
	return c
}

func login(ctx context.Context, jwt, role string) string {
	GinkgoHelper()
	s, err := apiClient("").Logical().WriteWithContext(ctx, "auth/"+workload.AuthMount+"/login", map[string]any{"role": role, "jwt": jwt})
	Expect(err).NotTo(HaveOccurred())
	Expect(s.Auth).NotTo(BeNil())
	Expect(s.Auth.LeaseDuration).To(BeNumerically("<=", 15*60), "tokens are short-lived")
	return s.Auth.ClientToken
}

func expectDenied(err error) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	var re *baoapi.ResponseError
	Expect(errors.As(err, &re)).To(BeTrue(), "%v", err)
	Expect(re.StatusCode).To(Equal(403), "%v", err)
}

// tokenFor asks the API server for a service-account token (TokenRequest), with the
// given audience or the API server's default one.
func tokenFor(ctx context.Context, namespace, sa, audience string) string {
	GinkgoHelper()
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	res, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return res.Status.Token
}

func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func ptr[T any](v T) *T { return &v }
