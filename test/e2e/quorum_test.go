//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// loseMajorityAndRecover deletes, under the observer's writes, the volume claims and
// pods of lose (a majority of tc's voters, never the leader) at once, as a zone lost
// with its local disks, and checks what follows (issue 39): break-glass MajorityLost
// within majorityLostBound naming the leader as the survivor, with nothing
// acknowledged lost and the committed indexes read; kubectl bao recover-quorum
// refusing a wrong nonce and a member that is not the survivor, writing nothing; the
// right request recovering, then every member a voter again; and the observer's
// read-back of every acknowledged write, with one election (the survivor's own).
func loseMajorityAndRecover(ctx context.Context, tc *testCluster, leader string, lose []string) {
	GinkgoHelper()
	ns, members := tc.ns, len(tc.memberList())
	By(fmt.Sprintf("waiting until the quorum watch recorded the %d voters with their volume claims", members))
	Eventually(func(g Gomega) {
		q := tc.get(ctx, g).Status.Quorum
		g.Expect(q).NotTo(BeNil())
		g.Expect(q.LastVoters).To(HaveLen(members))
		for _, v := range q.LastVoters {
			g.Expect(v.VolumeClaimUID).NotTo(BeEmpty(), v.Name)
		}
	}, time.Minute, pollEvery).Should(Succeed())
	obs := tc.observe(ctx)
	time.Sleep(3 * time.Second) // writes acknowledged before the loss
	By("deleting the volume claims and pods of " + strings.Join(lose, ", "))
	obs.beginWindow()
	lost := time.Now()
	for _, f := range lose {
		Expect(cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data-"+f, metav1.DeleteOptions{})).To(Succeed())
		// The pod may be gone already (seen on the rig: bao-2 was not found 2 s after
		// its claim's deletion, during bao-1's).
		Expect(client.IgnoreNotFound(cs.CoreV1().Pods(ns).Delete(ctx, f, metav1.DeleteOptions{}))).To(Succeed())
	}
	var bg *baov1.BreakGlassStatus
	Eventually(func(g Gomega) {
		// The cluster object alone: its members' pods are gone.
		c := &baov1.OpenBaoCluster{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
		g.Expect(c.Status.Phase).To(Equal(baov1.PhaseBreakGlass), "%s; status.quorum: %+v", c.Status.Message, c.Status.Quorum)
		bg = c.Status.BreakGlass
		g.Expect(bg.Reason).To(Equal(baov1.BreakGlassMajorityLost))
	}, majorityLostBound, pollEvery).Should(Succeed())
	took := time.Since(lost)
	GinkgoWriter.Printf("majority lost: break-glass after %s: %s\nsurvivor %s: %s\n", took.Round(time.Second), bg.Message, bg.Survivor, bg.Loss)
	Expect(bg.Survivor).To(Equal(leader), "the last leader survives and holds the highest committed index")
	Expect(bg.Loss).To(ContainSubstring("nothing acknowledged is lost"))
	Expect(bg.Message).To(ContainSubstring(fmt.Sprintf("a majority of %d cannot come back", members/2+1)))
	byName := map[string]baov1.BreakGlassMember{}
	for _, m := range bg.Members {
		byName[m.Name] = m
	}
	Expect(byName[leader].CommittedIndex).To(BeNumerically(">", 0), "the survivor's sys/leader answers without a leader")
	for _, f := range lose {
		Expect(byName[f].Lost).To(ContainSubstring("data-"+f), f)
	}
	steps := strings.Join(bg.RecoverySteps, "\n")
	Expect(steps).To(ContainSubstring(fmt.Sprintf("kubectl bao recover-quorum %s -n %s --from %s --nonce %s", name, ns, leader, bg.Nonce)))
	Expect(eventMessages(ctx, ns, name, "BreakGlassEntered")).To(ContainElement(ContainSubstring("MajorityLost")))
	out := kubectlBao(ctx, "-n", ns, "status", name)
	Expect(out).To(ContainSubstring("Survivor:"))
	Expect(out).To(ContainSubstring("break-glass-majority-lost.md"))

	By("refusing a wrong nonce and a member that is not the best survivor, writing nothing")
	_, stderr, err := runKubectlBao(ctx, "-n", ns, "recover-quorum", name, "--from", leader, "--nonce", "0123abcd")
	Expect(err).To(HaveOccurred())
	Expect(stderr).To(ContainSubstring(`"0123abcd" is not the current nonce`))
	_, stderr, err = runKubectlBao(ctx, "-n", ns, "recover-quorum", name, "--from", lose[0], "--nonce", bg.Nonce)
	Expect(err).To(HaveOccurred())
	Expect(stderr).To(ContainSubstring(lose[0] + " is not the most up-to-date survivor: " + leader))
	c := &baov1.OpenBaoCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
	Expect(c.Annotations).NotTo(HaveKey(baov1.AnnotationRecoverQuorum), "nothing was written")

	By("kubectl bao recover-quorum from " + leader + " with the nonce")
	asked := time.Now()
	done := kubectlBaoAsync(ctx, "-n", ns, "recover-quorum", name, "--from", leader, "--nonce", bg.Nonce, "--wait", "--timeout", "6m")
	var res kubectlBaoResult
	if leader != memberNames(1)[0] {
		// Above ordinal 0, a deleted survivor would come back only once the lower
		// ordinals are Ready (OrderedReady), which they cannot be without a leader:
		// the operator asks a person to restart it in place, as kubectl exec ... kill 1
		// would (the rig sends the same SIGTERM to its process).
		By("restarting " + leader + " in place, as the operator asks")
		Eventually(func(g Gomega) {
			r := tc.get(ctx, g).Status.QuorumRecovery
			g.Expect(r).NotTo(BeNil())
			g.Expect(r.WaitingFor).To(ContainSubstring(fmt.Sprintf("kubectl exec -n %s %s -c openbao -- kill 1", ns, leader)))
		}, 3*time.Minute, pollEvery).Should(Succeed())
		Expect(eventMessages(ctx, ns, name, "QuorumRecoveryNeedsRestart")).NotTo(BeEmpty())
		signalMember(ns, leader, syscall.SIGTERM)
	}
	Eventually(done, 7*time.Minute).Should(Receive(&res))
	GinkgoWriter.Printf("kubectl bao recover-quorum: %s%s\n", res.out, res.stderr)
	Expect(res.err).NotTo(HaveOccurred(), "%s%s", res.out, res.stderr)
	Expect(res.out).To(ContainSubstring("Recovered from a lost majority:"))
	recovered := time.Since(asked)
	By(fmt.Sprintf("waiting until the %d members vote again", members))
	Eventually(func(g Gomega) {
		ap, err := tc.autopilot(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ap.Leader).To(Equal(leader))
		g.Expect(ap.Voters).To(HaveLen(members), "%+v", ap)
		g.Expect(ap.Healthy).To(BeTrue())
	}, 5*time.Minute, pollEvery).Should(Succeed())
	voters := time.Since(asked)
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
	Expect(c.Status.BreakGlass.Active).To(BeFalse())
	Expect(c.Status.QuorumRecovery.Step).To(Equal(baov1.QuorumRecoveryDone))
	Expect(c.Status.History).To(ContainElement(SatisfyAll(HaveField("Kind", baov1.HistoryQuorumRecovery), HaveField("Outcome", baov1.OutcomeSucceeded),
		HaveField("ID", c.Status.QuorumRecovery.ID))), "the recovery's own history entry")
	Expect(eventMessages(ctx, ns, name, "QuorumRecovered")).NotTo(BeEmpty())
	obs.endWindow()
	// No write can land from the loss until the survivor leads alone: the spec asks
	// for the recovery as soon as break-glass says so, and the recovery takes what
	// kubectl bao recover-quorum --wait measured.
	outage := asked.Sub(lost) + recovered
	fin := obs.finish(ctx).
		allowGap(outage+5*time.Second, "no leader from the loss until the survivor leads alone after its recovery").
		allowFloorShare(0, "no write can land while the cluster has no leader")
	for _, m := range tc.memberList() {
		switch {
		case m == leader:
			fin = fin.allowDown(m, lost, asked.Add(recovered), "it has no leader to answer about, then restarts to recover")
		default:
			// Lost with its data, or a survivor without a leader whose old copy the
			// recovery replaces: each joins afresh.
			fin = fin.allowDown(m, lost, time.Time{}, "it has no leader, then joins the recovered survivor afresh")
		}
	}
	what := fmt.Sprintf("%d of %d volumes lost, recovered with kubectl bao recover-quorum", len(lose), members)
	figures := fmt.Sprintf("break-glass MajorityLost %s after the loss; recover-quorum done %s after the request, %d voters %s after it",
		took.Round(time.Second), recovered.Round(time.Second), members, voters.Round(time.Second))
	fin.report(what, figures)
	AddReportEntry(what, figures)
	fin.expectNoLoss()
	Expect(fin.elections).To(Equal(1), "the survivor's own new term after its restart, nothing else: %s", fin.termsString())
	for _, l := range fin.leaders {
		Expect(l).To(Equal(leader), "no other member led: %s", fin.termsString())
	}
}
