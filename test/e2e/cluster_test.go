//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	baoapi "github.com/openbao/openbao/api/v2"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

const (
	ns        = "e2e"
	name      = "bao"
	appSA     = "app"
	bringUp   = 5 * time.Minute
	recovery  = 3 * time.Minute
	pollEvery = time.Second
)

var _ = Describe("A 3-member OpenBaoCluster on the rig", Ordered, SpecPriority(175), func() {
	var caPEM []byte

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: appSA, Namespace: ns}})).To(Succeed())
		three := int32(3)
		c := &baov1.OpenBaoCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: baov1.OpenBaoClusterSpec{
				Version:  "2.4.0",
				Replicas: &three,
				Initialization: baov1.InitializationSpec{ExtraRequests: []baov1.InitRequest{
					{Name: "kv", Path: "sys/mounts/secret", Data: raw(`{"type":"kv","options":{"version":"2"}}`)},
					{Name: "app-policy", Path: "sys/policies/acl/app", Data: raw(`{"policy":"path \"secret/data/*\" { capabilities = [\"create\",\"update\",\"read\"] }"}`)},
					{Name: "app-role", Path: "auth/baokeeper-jwt/role/app", Data: raw(`{"role_type":"jwt","user_claim":"sub","bound_subject":"system:serviceaccount:` + ns + `:` + appSA + `","bound_audiences":["baokeeper"],"token_policies":["app"],"token_ttl":"5m"}`)},
				}},
			},
		}
		Expect(k8s.Create(ctx, c)).To(Succeed())
	})

	It("becomes Running: initialized, unsealed, 3 voters and exactly one leader", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			c := cluster(ctx, g)
			g.Expect(c.Status.Phase).To(Equal(baov1.PhaseRunning), c.Status.Message)
			g.Expect(c.Status.CurrentVersion).To(Equal("2.4.0"))
		}, bringUp, pollEvery).Should(Succeed())
		caPEM = clusterCA(ctx)

		// Pods are Ready once unsealed; autopilot promotes the joined members to voters
		// after its stabilization time, a few seconds later.
		Eventually(func(g Gomega) {
			st := autopilot(ctx, caPEM)
			g.Expect(st.Healthy).To(BeTrue())
			g.Expect(st.Voters).To(ConsistOf("bao-0", "bao-1", "bao-2"))
			g.Expect(st.FailureTolerance).To(Equal(1))
		}, time.Minute, pollEvery).Should(Succeed())
		leaders := 0
		for _, pod := range []string{"bao-0", "bao-1", "bao-2"} {
			h, err := memberClient(ctx, caPEM, pod, "").Sys().HealthWithContext(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(h.Initialized).To(BeTrue(), pod)
			Expect(h.Sealed).To(BeFalse(), pod)
			if !h.Standby {
				leaders++
			}
		}
		Expect(leaders).To(Equal(1), "exactly one active member")
	}, SpecTimeout(bringUp+time.Minute))

	It("serves a KV write and read back through its client Service", func(ctx SpecContext) {
		c := serviceClient(ctx, caPEM, name, appToken(ctx))
		_, err := c.Logical().WriteWithContext(ctx, "secret/data/e2e", map[string]any{"data": map[string]any{"answer": "42"}})
		Expect(err).NotTo(HaveOccurred())
		s, err := c.Logical().ReadWithContext(ctx, "secret/data/e2e")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Data["data"]).To(HaveKeyWithValue("answer", "42"))
	}, SpecTimeout(time.Minute))

	It("serves its metrics over HTTPS only to callers the API server authorizes", func(ctx SpecContext) {
		expectMetricsServedSecurely(ctx, ns, name)
	}, SpecTimeout(2*time.Minute))

	It("brings back a deleted follower with its data, as a voter", func(ctx SpecContext) {
		follower := ""
		for _, p := range []string{"bao-0", "bao-1", "bao-2"} {
			if p != autopilot(ctx, caPEM).Leader {
				follower = p
				break
			}
		}
		obs := adoptTestCluster(ctx, caPEM).observe(ctx)
		obs.beginWindow()
		replaceMember(ctx, caPEM, follower)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("follower " + follower + " deleted and back")
		res.expectNoLoss()
		res.expectElections(0, "")
		s, err := memberClient(ctx, caPEM, follower, appToken(ctx)).Logical().ReadWithContext(ctx, "secret/data/e2e")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Data["data"]).To(HaveKeyWithValue("answer", "42"))
	}, SpecTimeout(recovery+time.Minute))

	It("elects a new leader when the leader's pod is deleted, and the old member rejoins", func(ctx SpecContext) {
		old := autopilot(ctx, caPEM).Leader
		obs := adoptTestCluster(ctx, caPEM).observe(ctx)
		obs.beginWindow()
		replaceMember(ctx, caPEM, old)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("leader " + old + " deleted and back")
		res.expectNoLoss()
		res.expectElections(1, "2.4.0")
		st := autopilot(ctx, caPEM)
		Expect(st.Leader).NotTo(BeEmpty())
		s, err := serviceClient(ctx, caPEM, name, appToken(ctx)).Logical().ReadWithContext(ctx, "secret/data/e2e")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Data["data"]).To(HaveKeyWithValue("answer", "42"))
	}, SpecTimeout(recovery+time.Minute))

	It("gives the controller a read-only identity", func(ctx SpecContext) {
		c := serviceClient(ctx, caPEM, name, login(ctx, caPEM, operatorToken(ctx, ns), workload.ControllerRole))
		_, err := c.Logical().ReadWithContext(ctx, "sys/storage/raft/configuration")
		Expect(err).NotTo(HaveOccurred())
		expectDenied(c.Sys().StepDownWithContext(ctx))
		_, err = c.Logical().WriteWithContext(ctx, "sys/policies/acl/evil", map[string]any{"policy": `path "*" { capabilities = ["sudo"] }`})
		expectDenied(err)
		_, err = c.Logical().WriteWithContext(ctx, "secret/data/e2e", map[string]any{"data": map[string]any{"answer": "43"}})
		expectDenied(err)
	}, SpecTimeout(time.Minute))

	It("keeps no root token in any Secret, ConfigMap, status or log", func(ctx SpecContext) {
		tokenLike := regexp.MustCompile(`\b(s|hvs|b|hvb)\.[A-Za-z0-9_-]{20,}\b|root_token`)
		var texts []string
		for _, n := range []string{ns, "baokeeper-system"} {
			secrets := &corev1.SecretList{}
			Expect(k8s.List(ctx, secrets, client.InNamespace(n))).To(Succeed())
			for _, s := range secrets.Items {
				for k, v := range s.Data {
					texts = append(texts, fmt.Sprintf("secret %s/%s[%s]: %s", n, s.Name, k, v))
				}
			}
			cms := &corev1.ConfigMapList{}
			Expect(k8s.List(ctx, cms, client.InNamespace(n))).To(Succeed())
			for _, cm := range cms.Items {
				for k, v := range cm.Data {
					texts = append(texts, fmt.Sprintf("configmap %s/%s[%s]: %s", n, cm.Name, k, v))
				}
			}
		}
		c := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)).To(Succeed())
		texts = append(texts, fmt.Sprintf("status: %+v", c.Status))
		logs, _ := filepath.Glob(filepath.Join(rigDir, "nodes", "pods", "*", "*.log"))
		Expect(logs).NotTo(BeEmpty())
		for _, l := range logs {
			b, err := os.ReadFile(l)
			Expect(err).NotTo(HaveOccurred())
			texts = append(texts, "log "+l+": "+string(b))
		}
		for _, t := range texts {
			Expect(tokenLike.FindString(t)).To(BeEmpty(), "token-like string in %s", t[:min(len(t), 120)])
		}
	}, SpecTimeout(time.Minute))

	// Issue 38: a ServiceAccount allowed only to patch ConfigMaps removed a voter of a
	// healthy cluster through the executor mailbox. Now the same writes run nothing.
	It("refuses what a tenant who may only patch ConfigMaps writes into the executor mailbox, a labelled flood, role rewrites with an executor token and a borrowed identity: no Raft change, no election, nothing lost", func(ctx SpecContext) {
		tenant := asConfigMapWriter(ctx, ns)
		before, restarts := refusedCount(ctx, ns, name), operatorRestarts(ctx)
		voters, leader := votersOf(ctx, caPEM), autopilot(ctx, caPEM).Leader
		Expect(voters).To(Equal("bao-0,bao-1,bao-2"))
		obs := adoptTestCluster(ctx, caPEM).observe(ctx)
		obs.beginWindow()
		keys := forgeMailbox(ctx, tenant, ns, name, leader)
		By("an edit user floods the namespace with 48 labelled 1 MB ConfigMaps")
		DeferCleanup(floodConfigMaps(ctx, ns, 48))
		expectRefused(ctx, ns, name, keys, before)
		By("a holder of an executor token tries to widen the JWT roles")
		rewriteRolesAsExecutor(ctx, caPEM, ns, name, adoptTestCluster(ctx, caPEM).get(ctx, Default).Status.JWTAudience)
		By("a cluster author restores a snapshot bao never listed, to borrow its seal key and identity")
		thief := borrowIdentity(ctx, ns, name)
		DeferCleanup(func(ctx context.Context) {
			_ = k8s.Delete(ctx, &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: thief}})
		})
		expectIdentityKept(ctx, ns, thief, name)
		By("nothing moves in Raft while the executor would have run: 30 s")
		Consistently(func(g Gomega) {
			g.Expect(votersOf(ctx, caPEM)).To(Equal(voters))
			g.Expect(autopilot(ctx, caPEM).Leader).To(Equal(leader))
		}, 30*time.Second, 2*time.Second).Should(Succeed())
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("a tenant's forged mailbox entries (remove-peer of bao-2, step-down of the leader, a forged answer), a 48 MB labelled flood, role rewrites with an executor token, a borrowed identity",
			fmt.Sprintf("refused inputs: %d; operator restarts: %d", refusedCount(ctx, ns, name)-before, operatorRestarts(ctx)-restarts))
		res.expectNoLoss()
		res.expectElections(0, "")
		Expect(operatorRestarts(ctx)).To(Equal(restarts), "the operator did not restart")
	}, SpecTimeout(4*time.Minute))

	// Issue 39: a member removed from Raft while its pod keeps serving (by hand, by a
	// tool) was reported and never brought back. Now baokeeper waits
	// scaling.RejoinAfter for it to reappear, deletes its stale data and pod, and
	// promotes it once it rejoined, as one scaling in status.history.
	It("brings back a follower removed from Raft by hand while its pod serves: a voter again, no election, nothing lost", func(ctx SpecContext) {
		leader := autopilot(ctx, caPEM).Leader
		out := ""
		for _, p := range []string{"bao-2", "bao-1", "bao-0"} {
			if p != leader {
				out = p
				break
			}
		}
		tc := adoptTestCluster(ctx, caPEM)
		historyBefore := len(tc.get(ctx, Default).Status.History)
		obs := tc.observe(ctx)
		obs.beginWindow()
		removed := time.Now()
		removeFromRaftByHand(ctx, caPEM, out)
		By("a voter again within the bound: " + rejoinBound.String())
		Eventually(func(g Gomega) {
			g.Expect(votersOf(ctx, caPEM)).To(Equal("bao-0,bao-1,bao-2"))
			c := tc.get(ctx, g)
			g.Expect(c.Status.Scaling).To(BeNil(), "the heal ended")
			g.Expect(c.Status.Phase).To(Equal(baov1.PhaseRunning), c.Status.Message)
		}, rejoinBound, pollEvery).Should(Succeed())
		healed := time.Since(removed)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("follower "+out+" removed from Raft by hand and brought back", fmt.Sprintf("a voter again after %s", healed.Round(time.Second)))
		res.expectNoLoss()
		res.expectElections(0, "")
		h := tc.get(ctx, Default).Status.History
		Expect(len(h)).To(BeNumerically(">", historyBefore), "the heal is in status.history")
		Expect(h[0].Kind).To(Equal(baov1.HistoryScaling))
		Expect(h[0].Outcome).To(Equal(baov1.OutcomeSucceeded))
		Expect(h[0].Message).To(ContainSubstring("Every member votes"))
		Expect(eventMessages(ctx, ns, name, "ScalingStarted")).To(ContainElement(ContainSubstring(out + " serves but is not in the Raft configuration")))
		s, err := memberClient(ctx, caPEM, out, appToken(ctx)).Logical().ReadWithContext(ctx, "secret/data/e2e")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Data["data"]).To(HaveKeyWithValue("answer", "42"), "the member holds the data again, from the leader")
	}, SpecTimeout(rejoinBound+time.Minute))

	// Last: it upgrades this cluster (through a broken image, then the fixed one).
	It("fails an upgrade after stepTimeout naming the member and those not started, and a retry after the fix completes", func(ctx SpecContext) {
		tc := adoptTestCluster(ctx, caPEM)
		obs := tc.observe(ctx)
		failingFrom := time.Now()
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) {
			c.Spec.Version = "2.4.1"
			c.Spec.Image = flakyImage
			c.Spec.Upgrade.Rolling.StepTimeout = baov1.DurationOf(30 * time.Second)
			c.Spec.Upgrade.Rolling.SettleTime = baov1.DurationOf(0)        // the default, as newTestCluster's
			c.Spec.Upgrade.PreUpgradeSnapshot.Policy = baov1.SnapshotNever // this cluster has no snapshot target
		})

		var failure *baov1.UpgradeFailure
		var plan []string
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.Failure).NotTo(BeNil(), "%s", c.Status.Message)
			failure, plan = c.Status.Upgrade.Failure, c.Status.Upgrade.Plan.Pods
			g.Expect(c.Status.Message).To(ContainSubstring("baokeeper.dev/retry"))
		}, 3*time.Minute, pollEvery).Should(Succeed())
		Expect(failure.Reason).To(Equal(baov1.FailureStepTimeout))
		Expect(failure.Pod).To(Equal(plan[0]), "the first member of the plan is the one that never became ready")
		Expect(failure.Message).To(ContainSubstring(plan[0] + " did not finish within 30s"))
		Expect(failure.Message).To(ContainSubstring("not started: " + plan[1] + ", " + plan[2]))
		Consistently(func(g Gomega) { g.Expect(tc.get(ctx, g).Status.Upgrade.Failure).NotTo(BeNil()) }, 5*time.Second, pollEvery).
			Should(Succeed(), "a failed upgrade waits for a person")
		recordScenario(scenarioFailed, ns, failingFrom, time.Now())

		By("fixing the cause, restarting the crash-looping pod instead of waiting out its back-off, and retrying")
		Expect(os.WriteFile(fixMarker(), []byte("fixed"), 0o600)).To(Succeed())
		Expect(cs.CoreV1().Pods(ns).Delete(ctx, failure.Pod, metav1.DeleteOptions{})).To(Succeed())
		tc.update(ctx, func(c *baov1.OpenBaoCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[baov1.AnnotationRetry] = "1"
		})
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).To(BeNil(), "%s", c.Status.Message)
			g.Expect(c.Status.CurrentVersion).To(Equal("2.4.1"))
			g.Expect(c.Status.Requests.Retry).To(Equal("1"))
		}, 5*time.Minute, pollEvery).Should(Succeed())
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("upgrade through a member that never became ready, failed, fixed and retried")
		// The failed member's pod is replaced twice (the broken image, then the test's
		// restart), so not expectClean's once per member.
		res.expectNoLoss()
		res.expectElections(1, "2.4.1")
		tc.expectAllOn(ctx, "2.4.1")
	}, SpecTimeout(10*time.Minute))

	// Last of all: it takes the cluster through a loss it cannot heal by itself.
	// Issue 39: two of three volumes lost under writes (a zone gone with its local
	// disks): baokeeper says so at once (break-glass MajorityLost naming the survivor),
	// refuses a recovery with a wrong nonce or from the wrong member, and kubectl bao
	// recover-quorum brings back three voters with every acknowledged write.
	It("recovers from two followers' volumes lost under writes: break-glass MajorityLost naming the leader as the survivor, wrong requests refused, kubectl bao recover-quorum back to three voters with every write", func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) { deleteNamespace(ctx, ns) }, NodeTimeout(2*time.Minute))
		leader := autopilot(ctx, caPEM).Leader
		var followers []string
		for _, m := range memberNames(3) {
			if m != leader {
				followers = append(followers, m)
			}
		}
		loseMajorityAndRecover(ctx, adoptTestCluster(ctx, caPEM), leader, followers)
	}, SpecTimeout(majorityLostBound+15*time.Minute))
})

// majorityLostBound is how soon break-glass MajorityLost must follow two of three
// volumes deleted at rest: the members' pods go (graceful stop), the StatefulSet
// re-creates one with a new claim, and the next pass that cannot read autopilot
// judges (an idle cluster's passes come at least every 30 s).
const majorityLostBound = 90 * time.Second

// adoptTestCluster is this Describe's cluster as a testCluster, for the shared
// observer: its members, their addresses and the CA.
func adoptTestCluster(ctx context.Context, caPEM []byte) *testCluster {
	GinkgoHelper()
	tc := &testCluster{ns: ns, caPEM: caPEM, ips: map[string]string{}}
	tc.setMembers(memberNames(3)...)
	for _, m := range tc.memberList() {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		tc.setIP(m, p.Status.PodIP)
	}
	return tc
}

// replaceMember deletes a member's pod and waits until a new pod is Ready, OpenBao is
// unsealed on it, it is a voter again and autopilot is healthy.
func replaceMember(ctx context.Context, caPEM []byte, pod string) {
	GinkgoHelper()
	old, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(cs.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{})).To(Succeed())
	Eventually(func(g Gomega) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.UID).NotTo(Equal(old.UID))
		g.Expect(isReady(p)).To(BeTrue())
		st := autopilot(ctx, caPEM)
		g.Expect(st.Healthy).To(BeTrue())
		g.Expect(st.Voters).To(ContainElement(pod))
		g.Expect(st.Servers[pod].Healthy).To(BeTrue())
	}, recovery, pollEvery).Should(Succeed())
}

func cluster(ctx context.Context, g Gomega) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)).To(Succeed())
	return c
}

func clusterCA(ctx context.Context) []byte {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name + "-tls"}, s)).To(Succeed())
	return s.Data["ca.crt"]
}

// autopilot reads autopilot state with the controller's read-only identity.
func autopilot(ctx context.Context, caPEM []byte) *baoapi.AutopilotState {
	GinkgoHelper()
	var st *baoapi.AutopilotState
	Eventually(func(g Gomega) {
		c := serviceClient(ctx, caPEM, name, login(ctx, caPEM, operatorToken(ctx, ns), workload.ControllerRole))
		var err error
		st, err = c.Sys().RaftAutopilotStateWithContext(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st).NotTo(BeNil())
	}, 30*time.Second, pollEvery).Should(Succeed())
	return st
}

// memberClient talks to one member at its pod IP, verifying its certificate for the
// member's DNS name.
func memberClient(ctx context.Context, caPEM []byte, pod, tok string) *baoapi.Client {
	GinkgoHelper()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return apiClient(caPEM, p.Status.PodIP, fmt.Sprintf("%s.%s-internal.%s.svc", pod, name, ns), tok)
}

// serviceClient talks to a Service the way a client in the cluster would: there is
// no kube-proxy in the rig, so the Service is resolved to a ready endpoint from its
// EndpointSlices.
func serviceClient(ctx context.Context, caPEM []byte, svc, tok string) *baoapi.Client {
	GinkgoHelper()
	slices := &discoveryv1.EndpointSliceList{}
	Expect(k8s.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svc})).To(Succeed())
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready && len(ep.Addresses) > 0 {
				return apiClient(caPEM, ep.Addresses[0], fmt.Sprintf("%s.%s.svc", svc, ns), tok)
			}
		}
	}
	Fail(fmt.Sprintf("Service %s/%s has no ready endpoint", ns, svc))
	return nil
}

func apiClient(caPEM []byte, ip, serverName, tok string) *baoapi.Client {
	GinkgoHelper()
	conf := baoapi.DefaultConfig()
	conf.Address = fmt.Sprintf("https://%s:8200", ip)
	conf.MaxRetries = 0
	conf.Timeout = 10 * time.Second
	Expect(conf.ConfigureTLS(&baoapi.TLSConfig{CACertBytes: caPEM, TLSServerName: serverName})).To(Succeed())
	c, err := baoapi.NewClient(conf)
	Expect(err).NotTo(HaveOccurred())
	c.SetToken(tok)
	return c
}

func appToken(ctx context.Context) string {
	GinkgoHelper()
	return login(ctx, clusterCA(ctx), token(ctx, ns, appSA), "app")
}

func login(ctx context.Context, caPEM []byte, jwt, role string) string {
	GinkgoHelper()
	var tok string
	Eventually(func(g Gomega) {
		s, err := serviceClient(ctx, caPEM, name, "").Logical().WriteWithContext(ctx, "auth/"+workload.AuthMount+"/login", map[string]any{"role": role, "jwt": jwt})
		g.Expect(err).NotTo(HaveOccurred())
		tok = s.Auth.ClientToken
	}, 30*time.Second, pollEvery).Should(Succeed())
	return tok
}

// token is a token of an application's service account, for the audience the specs'
// application roles name (bound_audiences ["baokeeper"]).
func token(ctx context.Context, namespace, sa string) string {
	GinkgoHelper()
	return tokenFor(ctx, namespace, sa, workload.LegacyTokenAudience)
}

func tokenFor(ctx context.Context, namespace, sa, audience string) string {
	GinkgoHelper()
	exp := int64(600)
	res, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return res.Status.Token
}

func expectDenied(err error) {
	GinkgoHelper()
	var re *baoapi.ResponseError
	Expect(errors.As(err, &re)).To(BeTrue(), "want a 403, got %v", err)
	Expect(re.StatusCode).To(Equal(403), "%v", err)
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func raw(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
