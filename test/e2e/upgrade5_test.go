//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	baoapi "github.com/openbao/openbao/api/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/rolling"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// The operator as config/default installs it.
const (
	operatorNS        = "baokeeper-system"
	operatorLease     = "baokeeper.openbao.baokeeper.dev"
	operatorPodsLabel = "app.kubernetes.io/name=baokeeper"
)

var _ = Describe("A rolling upgrade of a 5-member cluster whose leader sits at a middle ordinal", Ordered, SpecPriority(110), func() {
	const fiveNS = "e2e-upgrade5"
	var tc *testCluster

	BeforeAll(func(ctx SpecContext) {
		tc = newTestCluster(ctx, fiveNS, 5)
	}, NodeTimeout(bringUp+time.Minute))
	AfterAll(func(ctx SpecContext) { deleteNamespace(ctx, fiveNS) }, NodeTimeout(3*time.Minute))

	It("keeps every acknowledged write, changes leader once, onto 2.4.1, and replaces the old leader last", func(ctx SpecContext) {
		By("moving leadership off the edge ordinals with the operator's own step-down Job")
		oldLeader, stepDowns := tc.moveLeaderToMiddle(ctx)
		GinkgoWriter.Printf("leader before the upgrade: %s, after %d step-down Job(s)\n", oldLeader, stepDowns)

		obs := tc.observe(ctx)
		Expect(obs.leaderLog()).To(Equal([]string{oldLeader}), "the leader did not move before the upgrade")
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })

		var plan []string
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.Plan).NotTo(BeNil())
			plan = c.Status.Upgrade.Plan.Pods
		}, time.Minute, 200*time.Millisecond).Should(Succeed())
		tc.waitUpgraded(ctx, "2.4.1", 6*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		res.report("rolling upgrade 5 members")
		res.recordWindow(scenarioRolling, tc.ns)

		Expect(plan).To(HaveLen(5))
		Expect(plan[4]).To(Equal(oldLeader), "the old leader is replaced last")
		followers := slices.DeleteFunc(tc.memberList(), func(m string) bool { return m == oldLeader })
		slices.Reverse(followers)
		Expect(plan[:4]).To(Equal(followers), "followers from the highest ordinal down")
		res.expectClean(tc, 1, "2.4.1")
		Expect(res.leaders[1]).NotTo(Equal(oldLeader))
		tc.expectAllOn(ctx, "2.4.1")
	}, SpecTimeout(10*time.Minute))

	// Last: it takes the cluster through a loss it cannot heal by itself (issue 39).
	// Three of five volumes lost leave two survivors that answer: the leader, whom
	// break-glass names, and a follower, whose old copy the recovery replaces.
	It("recovers from three of five volumes lost under writes with kubectl bao recover-quorum: five voters again with every write", func(ctx SpecContext) {
		leader := tc.settledLeader(ctx)
		var lose []string
		for _, m := range tc.memberList() {
			if m != leader && len(lose) < 3 {
				lose = append(lose, m)
			}
		}
		loseMajorityAndRecover(ctx, tc, leader, lose)
	}, SpecTimeout(majorityLostBound+15*time.Minute))
})

var _ = Describe("A rolling upgrade whose operator is killed mid-way", Ordered, SpecPriority(85), func() {
	const killNS = "e2e-opkill"
	var tc *testCluster

	BeforeAll(func(ctx SpecContext) {
		tc = newTestCluster(ctx, killNS, 3)
	}, NodeTimeout(bringUp+time.Minute))
	AfterAll(func(ctx SpecContext) {
		deleteNamespace(ctx, killNS)
		kubectl(ctx, "-n", operatorNS, "rollout", "status", "deployment/baokeeper", "--timeout=120s")
	}, NodeTimeout(5*time.Minute))

	It("completes after a crash at the persisted ShutdownLeader step and another after the leader's pod deletion", func(ctx SpecContext) {
		oldLeader := tc.settledLeader(ctx)
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })

		By("killing the operator once the leader's ShutdownLeader step is persisted")
		var step baov1.UpgradeStep
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.CurrentStep).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.CurrentStep.Action).To(Equal(rolling.StepShutdownLeader))
			step = *c.Status.Upgrade.CurrentStep
		}, 4*time.Minute, 50*time.Millisecond).Should(Succeed())
		Expect(step.Pod).To(Equal(oldLeader))
		killA := killOperator(ctx)
		GinkgoWriter.Printf("killed the operator at %s of %s; a new process took the lease after %s\n",
			step.Action, step.Pod, killA.Round(100*time.Millisecond))

		By("killing the operator again once the old leader's pod deletion is issued")
		oldUID := obs.firstUID(oldLeader)
		var seen string
		Eventually(func(g Gomega) {
			c := tc.get(ctx, g)
			g.Expect(c.Status.Upgrade).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.CurrentStep).NotTo(BeNil())
			g.Expect(c.Status.Upgrade.CurrentStep.Action).To(Equal(rolling.StepShutdownLeader))
			g.Expect(c.Status.Upgrade.CurrentStep.Pod).To(Equal(oldLeader))
			p, err := cs.CoreV1().Pods(killNS).Get(ctx, oldLeader, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				seen = "pod gone"
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.DeletionTimestamp != nil || p.UID != oldUID).To(BeTrue(), "pod %s not deleted yet", oldLeader)
			seen = fmt.Sprintf("deletionTimestamp %v, new UID %v", p.DeletionTimestamp != nil, p.UID != oldUID)
		}, 4*time.Minute, 100*time.Millisecond).Should(Succeed())
		killB := killOperator(ctx)
		GinkgoWriter.Printf("killed the operator during ShutdownLeader of %s (%s); a new process took the lease after %s\n",
			oldLeader, seen, killB.Round(100*time.Millisecond))

		tc.waitUpgraded(ctx, "2.4.1", 6*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx)
		stepDowns := stepNames(tc.executorSteps(ctx, executorjob.StepStepDown))
		res.report("rolling upgrade, operator killed twice",
			fmt.Sprintf("takeovers %s and %s, step-downs %d", killA.Round(100*time.Millisecond), killB.Round(100*time.Millisecond), len(stepDowns)))

		res.expectClean(tc, 1, "2.4.1")
		Expect(res.leaders[0]).To(Equal(oldLeader))
		Expect(stepDowns).To(BeEmpty(), "the Shutdown hand-off asks the executor for no step-down")
		tc.expectAllOn(ctx, "2.4.1")
	}, SpecTimeout(10*time.Minute))

	// A fault no step plans: the member that just took over is killed outright. The
	// old leader's member is still restarting on its replacement pod, so for a moment
	// one voter of three answers; the killed member's container restarts, and the
	// two that answer elect a leader. Expected: the upgrade completes, with exactly
	// one unplanned election beside the planned one, no acknowledged write lost, and
	// no break-glass (the quorum is back well within its grace).
	It("completes when the new leader is killed (SIGKILL) right after the hand-off: one unplanned election, no write lost", func(ctx SpecContext) {
		oldLeader := tc.settledLeader(ctx)
		obs := tc.observe(ctx)
		obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.5.0" })

		By("waiting for the hand-off: a leader other than " + oldLeader)
		var newLeader string
		Eventually(func(g Gomega) {
			log := obs.leaderLog()
			g.Expect(log).NotTo(BeEmpty())
			g.Expect(log[0]).To(Equal(oldLeader))
			newLeader = log[len(log)-1]
			g.Expect(newLeader).NotTo(Equal(oldLeader))
		}, 6*time.Minute, 20*time.Millisecond).Should(Succeed())
		By(fmt.Sprintf("killing %s, the new leader, with SIGKILL", newLeader))
		killedAt := time.Now()
		signalMember(killNS, newLeader, syscall.SIGKILL)

		tc.waitUpgraded(ctx, "2.5.0", 6*time.Minute)
		obs.endWindow()
		res := obs.finish(ctx).allowGap(15*time.Second,
			"a leader killed without a hand-off is noticed only when its followers' election timeout runs out, and a quorum needs its container back or the old leader's replacement up").
			allowDown(newLeader, killedAt, time.Time{}, "its process was killed; its container restarts in the same pod, which the pod watch does not see")
		res.report("rolling upgrade, the new leader killed right after the hand-off",
			fmt.Sprintf("killed %s %s after the change", newLeader, killedAt.Sub(obs.windowStart).Round(100*time.Millisecond)))
		res.expectNoLoss()
		// The killed leader may die before its version is read; the leader that
		// follows it runs the target.
		res.expectElections(2, "")
		Expect(res.terms[1].leader).To(Equal(newLeader))
		Expect(res.versions[2]).To(Equal("2.5.0"), "the leader after the kill runs the target: %s", res.termsString())
		res.expectRaftMembership(tc.memberList())
		c := tc.get(ctx, Default)
		Expect(c.Status.BreakGlass == nil || !c.Status.BreakGlass.Active).To(BeTrue(), "no break-glass: %s", c.Status.Message)
		tc.expectAllOn(ctx, "2.5.0")
	}, SpecTimeout(10*time.Minute))
})

// testCluster is an OpenBaoCluster named `name` in a namespace of its own, with what a
// spec needs to talk to its members directly.
type testCluster struct {
	ns    string
	caPEM []byte

	// members is the set of members, which can change during an operation (a spec
	// that scales the cluster calls setMembers): the observer's writer and pollers
	// follow it. Read it with memberList.
	membersMu sync.Mutex
	members   []string

	// ips is each member's current pod address. A re-created pod usually gets its
	// old address back in the rig (the lowest free one), but not when a lower one was
	// freed meanwhile, so an observer's pod watch keeps it current (setIP).
	ipsMu sync.Mutex
	ips   map[string]string
}

// newTestCluster creates a namespace, the app and admin service accounts and a cluster
// of replicas members on 2.4.0 with a KV mount, an app role and an admin role (for the
// runbooks), and waits until it is
// Running with every member a healthy voter.
func newTestCluster(ctx context.Context, namespace string, replicas int32) *testCluster {
	GinkgoHelper()
	return newTestClusterWith(ctx, namespace, replicas, nil)
}

// newTestClusterWith is newTestCluster with the spec changed by mutate before the
// cluster is created.
func newTestClusterWith(ctx context.Context, namespace string, replicas int32, mutate func(*baov1.OpenBaoCluster)) *testCluster {
	GinkgoHelper()
	tc, created := createTestCluster(ctx, namespace, replicas, mutate)
	tc.waitFormed(ctx, created)
	return tc
}

// createTestCluster creates the namespace, its service accounts and the cluster, and
// returns at once; waitFormed waits for it. Several clusters come up together this way.
func createTestCluster(ctx context.Context, namespace string, replicas int32, mutate func(*baov1.OpenBaoCluster)) (*testCluster, time.Time) {
	GinkgoHelper()
	createNamespace(ctx, namespace)
	for _, sa := range []string{appSA, adminSA} {
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}})).To(Succeed())
	}
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: baov1.OpenBaoClusterSpec{
			Version:  "2.4.0",
			Replicas: &replicas,
			Upgrade: baov1.UpgradeSpec{
				PreUpgradeSnapshot: baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotNever},
			},
			Initialization: baov1.InitializationSpec{ExtraRequests: []baov1.InitRequest{
				{Name: "kv", Path: "sys/mounts/secret", Data: raw(`{"type":"kv","options":{"version":"2"}}`)},
				{Name: "app-policy", Path: "sys/policies/acl/app", Data: raw(`{"policy":"path \"secret/data/*\" { capabilities = [\"create\",\"update\",\"read\"] }"}`)},
				{Name: "app-role", Path: "auth/baokeeper-jwt/role/app", Data: raw(`{"role_type":"jwt","user_claim":"sub","bound_subject":"system:serviceaccount:` + namespace + `:` + appSA + `","bound_audiences":["baokeeper"],"token_policies":["app"],"token_ttl":"30m","token_max_ttl":"30m"}`)},
				// For the runbooks (docs/runbooks/restore-from-snapshot.md).
				{Name: "admin-policy", Path: "sys/policies/acl/admin", Data: raw(`{"policy":"` + adminPolicy + `"}`)},
				{Name: "admin-role", Path: "auth/baokeeper-jwt/role/admin", Data: raw(`{"role_type":"jwt","user_claim":"sub","bound_subject":"system:serviceaccount:` + namespace + `:` + adminSA + `","bound_audiences":["baokeeper"],"token_policies":["admin"],"token_ttl":"15m"}`)},
			}},
		},
	}
	if mutate != nil {
		mutate(c)
	}
	Expect(k8s.Create(ctx, c)).To(Succeed())
	tc := &testCluster{ns: namespace, ips: map[string]string{}}
	tc.setMembers(memberNames(int(replicas))...)
	return tc, time.Now()
}

// waitFormed waits, within bringUp, until the cluster created at created is Running
// with every member a voter, and records its CA and its members' addresses.
func (tc *testCluster) waitFormed(ctx context.Context, created time.Time) {
	GinkgoHelper()
	namespace, replicas := tc.ns, len(tc.memberList())
	// A new cluster, left alone, is Running only once every member votes: each
	// cluster of the suite (3 and 5 members) shows it, within bringUp.
	Eventually(func(g Gomega) {
		got := tc.get(ctx, g)
		g.Expect(got.Status.Phase).To(Equal(baov1.PhaseRunning), got.Status.Message)
		g.Expect(got.Status.CurrentVersion).To(Equal("2.4.0"))
		g.Expect(got.Status.Voters).To(Equal(fmt.Sprintf("%d/%d", replicas, replicas)), "every member a voter")
	}, bringUp, pollEvery).Should(Succeed())
	AddReportEntry(fmt.Sprintf("%s: %d members, every one a voter %s after the cluster was created", namespace, replicas, time.Since(created).Round(time.Second)))
	s := &corev1.Secret{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name + "-tls"}, s)).To(Succeed())
	tc.caPEM = s.Data["ca.crt"]
	for _, m := range tc.memberList() {
		p, err := cs.CoreV1().Pods(namespace).Get(ctx, m, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		tc.setIP(m, p.Status.PodIP)
	}
	Eventually(func(g Gomega) {
		st, err := tc.autopilot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Healthy).To(BeTrue())
		g.Expect(st.Voters).To(ConsistOf(tc.memberList()))
	}, time.Minute, pollEvery).Should(Succeed())
}

// deleteNamespace deletes a spec's namespace and waits until it is gone, so that its
// OpenBao processes stop before the next spec runs.
func deleteNamespace(ctx context.Context, namespace string) {
	GinkgoHelper()
	deleteNamespaces(ctx, namespace)
}

// deleteNamespaces deletes the namespaces together and waits until every one is
// gone: their members stop in parallel, not one namespace after another.
func deleteNamespaces(ctx context.Context, namespaces ...string) {
	GinkgoHelper()
	for _, namespace := range namespaces {
		err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	for _, namespace := range namespaces {
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: namespace}, &corev1.Namespace{}))
		}, 2*time.Minute, pollEvery).Should(BeTrue(), "namespace %s is still there", namespace)
	}
}

// memberNames names the members of a cluster of n: bao-0 to bao-<n-1>.
func memberNames(n int) []string {
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%d", name, i))
	}
	return out
}

// memberList is the current set of members.
func (tc *testCluster) memberList() []string {
	tc.membersMu.Lock()
	defer tc.membersMu.Unlock()
	return slices.Clone(tc.members)
}

func (tc *testCluster) isMember(m string) bool {
	tc.membersMu.Lock()
	defer tc.membersMu.Unlock()
	return slices.Contains(tc.members, m)
}

// setMembers replaces the set of members. A spec that scales the cluster calls it
// when it applies the change: a member added is written to and polled as soon as its
// pod has an address, and a member removed is no longer written to, polled or read
// back through.
func (tc *testCluster) setMembers(members ...string) {
	tc.membersMu.Lock()
	defer tc.membersMu.Unlock()
	tc.members = slices.Clone(members)
}

func (tc *testCluster) get(ctx context.Context, g Gomega) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{}
	g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: tc.ns, Name: name}, c)).To(Succeed())
	return c
}

func (tc *testCluster) update(ctx context.Context, mutate func(*baov1.OpenBaoCluster)) {
	GinkgoHelper()
	Eventually(func() error {
		c := &baov1.OpenBaoCluster{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: tc.ns, Name: name}, c); err != nil {
			return err
		}
		mutate(c)
		return k8s.Update(ctx, c)
	}, 30*time.Second, pollEvery).Should(Succeed())
}

// client talks to one member at its pod IP, verifying its certificate for the
// member's DNS name.
func (tc *testCluster) client(m, tok string) *baoapi.Client {
	return tc.clientAt(m, tc.ip(m), tok)
}

func (tc *testCluster) clientAt(m, ip, tok string) *baoapi.Client {
	return apiClient(tc.caPEM, ip, fmt.Sprintf("%s.%s-internal.%s.svc", m, name, tc.ns), tok)
}

func (tc *testCluster) ip(m string) string {
	tc.ipsMu.Lock()
	defer tc.ipsMu.Unlock()
	return tc.ips[m]
}

func (tc *testCluster) setIP(m, ip string) {
	tc.ipsMu.Lock()
	defer tc.ipsMu.Unlock()
	tc.ips[m] = ip
}

// login logs in to the JWT auth method through the first member that answers.
func (tc *testCluster) login(ctx context.Context, jwt, role string) (string, error) {
	var err error
	for _, m := range tc.memberList() {
		var s *baoapi.Secret
		s, err = tc.client(m, "").Logical().WriteWithContext(ctx, "auth/"+workload.AuthMount+"/login", map[string]any{"role": role, "jwt": jwt})
		if err == nil {
			return s.Auth.ClientToken, nil
		}
	}
	return "", err
}

// autopilot reads autopilot state with the controller's read-only identity, from the
// first member that answers.
func (tc *testCluster) autopilot(ctx context.Context) (*baoapi.AutopilotState, error) {
	tok, err := tc.login(ctx, operatorToken(ctx, tc.ns), workload.ControllerRole)
	if err != nil {
		return nil, err
	}
	for _, m := range tc.memberList() {
		var st *baoapi.AutopilotState
		st, err = tc.client(m, tok).Sys().RaftAutopilotStateWithContext(ctx)
		if err == nil && st != nil {
			return st, nil
		}
	}
	return nil, fmt.Errorf("no member answered with autopilot state: %w", err)
}

// follower is a member that is not the settled leader.
func (tc *testCluster) follower(ctx context.Context) string {
	GinkgoHelper()
	leader := tc.settledLeader(ctx)
	for _, m := range slices.Backward(tc.memberList()) {
		if m != leader {
			return m
		}
	}
	Fail("no follower: the cluster has one member")
	return ""
}

// signalMember sends sig to the OpenBao processes of a member's pod and returns
// their pids.
func signalMember(ns, member string, sig syscall.Signal) []int {
	GinkgoHelper()
	pids := podPIDs(ns, member, "/bin/bao-")
	Expect(pids).NotTo(BeEmpty(), "no OpenBao process of %s", member)
	for _, pid := range pids {
		Expect(syscall.Kill(pid, sig)).To(Succeed(), "%s to %s (pid %d)", sig, member, pid)
	}
	GinkgoWriter.Printf("%s: sent %s to %s (pids %v)\n", time.Now().Format(clock), sig, member, pids)
	return pids
}

// freezePIDs stops the processes pids (SIGSTOP) and returns the function that lets
// them go on (SIGCONT): idempotent, and registered with DeferCleanup, so that a spec
// that fails while they are frozen leaves nothing frozen behind.
func freezePIDs(pids []int) (thaw func()) {
	GinkgoHelper()
	Expect(pids).NotTo(BeEmpty(), "no process to freeze")
	for _, pid := range pids {
		Expect(syscall.Kill(pid, syscall.SIGSTOP)).To(Succeed(), "SIGSTOP to pid %d", pid)
	}
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}
	}
	DeferCleanup(thaw)
	return thaw
}

// autopilotString is autopilot's view of every server, for a failure message:
// status, health and since when it has been stable.
func (tc *testCluster) autopilotString(ctx context.Context) string {
	st, err := tc.autopilot(ctx)
	if err != nil {
		return "autopilot: " + err.Error()
	}
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(st.Servers)) {
		s := st.Servers[id]
		parts = append(parts, fmt.Sprintf("%s %s healthy=%t stable_since=%s last_index=%d", id, s.Status, s.Healthy, s.StableSince, s.LastIndex))
	}
	return fmt.Sprintf("autopilot: healthy=%t failure_tolerance=%d; %s", st.Healthy, st.FailureTolerance, strings.Join(parts, "; "))
}

// leaderName maps a leader_address (https://bao-2.bao-internal.<ns>.svc:8200) to the
// member's name.
func leaderName(addr string) string {
	u, err := url.Parse(addr)
	if err != nil {
		return addr
	}
	host, _, _ := strings.Cut(u.Hostname(), ".")
	return host
}

// settledLeader waits until autopilot is healthy and every member's sys/leader names
// the leader autopilot names, and returns it.
func (tc *testCluster) settledLeader(ctx context.Context) string {
	GinkgoHelper()
	var leader string
	Eventually(func(g Gomega) {
		st, err := tc.autopilot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Healthy).To(BeTrue())
		g.Expect(st.Leader).NotTo(BeEmpty())
		for _, m := range tc.memberList() {
			l, err := tc.client(m, "").Sys().LeaderWithContext(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(leaderName(l.LeaderAddress)).To(Equal(st.Leader), "sys/leader of %s", m)
		}
		leader = st.Leader
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	return leader
}

// moveLeaderToMiddle steps the leader down, with the Job the operator itself builds
// (executor identity, operator image), until the leader is neither the first nor the
// last ordinal. It returns the leader and how many step-downs it took. The Jobs use
// attempt numbers from 101 on, so that their names never collide with the operator's
// own step-down Jobs (attempts 1 to rolling.MaxStepDownAttempts), and are deleted
// once complete.
func (tc *testCluster) moveLeaderToMiddle(ctx context.Context) (string, int) {
	GinkgoHelper()
	image := operatorImage(ctx)
	for n := 0; ; n++ {
		leader := tc.settledLeader(ctx)
		members := tc.memberList()
		if leader != members[0] && leader != members[len(members)-1] {
			return leader, n
		}
		Expect(n).To(BeNumerically("<", 5), "leadership kept landing on an edge ordinal")
		job := executorjob.StepDownJob(tc.get(ctx, Default), leader, int32(101+n), image)
		Expect(k8s.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &batchv1.Job{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), got)).To(Succeed())
			phase, _, msg := executorjob.JobPhaseOf(got)
			if phase == operation.JobFailed {
				StopTrying(fmt.Sprintf("step-down Job %s failed: %s", job.Name, msg)).Now()
			}
			g.Expect(phase).To(Equal(operation.JobSucceeded), "step-down Job %s", job.Name)
		}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
		Expect(k8s.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func(g Gomega) {
			st, err := tc.autopilot(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Leader).NotTo(BeEmpty())
			g.Expect(st.Leader).NotTo(Equal(leader))
		}, time.Minute, 500*time.Millisecond).Should(Succeed())
	}
}

func operatorImage(ctx context.Context) string {
	GinkgoHelper()
	d, err := cs.AppsV1().Deployments(operatorNS).Get(ctx, "baokeeper", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return d.Spec.Template.Spec.Containers[0].Image
}

// killOperator crashes the operator: SIGKILL to its process (no graceful shutdown,
// no Lease release, requests cut mid-way), then a delete of its pod with grace
// period 0 so that the Deployment brings a new one. It waits until a new process
// holds the leader-election Lease and returns how long that took.
func killOperator(ctx context.Context) time.Duration {
	GinkgoHelper()
	lease, err := cs.CoordinationV1().Leases(operatorNS).Get(ctx, operatorLease, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	holder := ptrValue(lease.Spec.HolderIdentity)
	Expect(holder).NotTo(BeEmpty())
	pods, err := cs.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{LabelSelector: operatorPodsLabel})
	Expect(err).NotTo(HaveOccurred())
	pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	Expect(pods.Items).To(HaveLen(1), "one operator pod")
	pod := pods.Items[0].Name
	start := time.Now()
	pids := operatorPIDs(pod)
	Expect(pids).NotTo(BeEmpty(), "no baokeeper process with HOSTNAME=%s", pod)
	for _, pid := range pids {
		Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	}
	zero := int64(0)
	Expect(cs.CoreV1().Pods(operatorNS).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero})).To(Succeed())
	Eventually(func(g Gomega) {
		l, err := cs.CoordinationV1().Leases(operatorNS).Get(ctx, operatorLease, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ptrValue(l.Spec.HolderIdentity)).NotTo(BeElementOf("", holder))
	}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
	return time.Since(start)
}

// operatorPIDs finds the manager process of an operator pod.
func operatorPIDs(pod string) []int {
	var out []int
	for _, pid := range processesOf(operatorNS, pod) {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		if err == nil && strings.HasSuffix(exe, "/baokeeper") {
			out = append(out, pid)
		}
	}
	return out
}

// processesOf lists the processes of a pod: the rig runs containers as host
// processes, with the pod's name as HOSTNAME. Pods of the same name in other
// namespaces (every Describe names its cluster bao, and Ginkgo processes run them at
// once) are told apart by POD_NAMESPACE, which baokeeper's containers carry.
func processesOf(ns, pod string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		env := strings.Split(string(b), "\x00")
		if !slices.Contains(env, "HOSTNAME="+pod) {
			continue
		}
		if i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, "POD_NAMESPACE=") }); i >= 0 && env[i] != "POD_NAMESPACE="+ns {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// waitUpgraded waits until the upgrade is over and currentVersion is version.
func (tc *testCluster) waitUpgraded(ctx context.Context, version string, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		g.Expect(c.Status.Upgrade).To(BeNil(), "%s", c.Status.Message)
		g.Expect(c.Status.CurrentVersion).To(Equal(version))
	}, timeout, pollEvery).Should(Succeed())
}

// expectAllOn checks that the cluster is Running and every member reports version.
func (tc *testCluster) expectAllOn(ctx context.Context, version string) {
	GinkgoHelper()
	n := len(tc.memberList())
	Eventually(func(g Gomega) {
		c := tc.get(ctx, g)
		g.Expect(c.Status.Phase).To(Equal(baov1.PhaseRunning))
		g.Expect(c.Status.CurrentVersion).To(Equal(version))
		// After a rollback the message goes on with what to do about spec.version.
		g.Expect(c.Status.Message).To(HavePrefix(fmt.Sprintf("%d of %d members Ready, running %s", n, n, version)))
	}, 30*time.Second, pollEvery).Should(Succeed())
	for _, m := range tc.memberList() {
		h, err := tc.client(m, "").Sys().HealthWithContext(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.Version).To(Equal(version), m)
	}
}
