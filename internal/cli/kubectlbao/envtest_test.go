package kubectlbao

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/test/testenv"
)

// Every command against a real kube-apiserver: clusters are created and their status
// written (status subresource) as the operator would, then each command runs through
// its cobra root with a kubeconfig for envtest's user alice. No operator runs.
func TestKubectlBaoEnvtest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl bao against a real kube-apiserver")
}

// suite is what the specs share, set once by BeforeSuite.
type suite struct {
	k8s        client.Client
	kubeconfig string
}

var env suite

const ns = "vault"

var _ = BeforeSuite(func() {
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(baov1.AddToScheme(scheme)).To(Succeed())
	te := testenv.StartEnvtest(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases"))
	var err error
	env.k8s, err = client.New(te.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	alice, err := te.AddUser(envtest.User{Name: "alice", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kc, err := alice.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	env.kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(env.kubeconfig, kc, 0o600)).To(Succeed())

	Expect(env.k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
})

// kubectlBao runs the plugin's root command with args, as alice.
func kubectlBao(args ...string) (stdout string, err error) {
	return run(append(args, "--kubeconfig", env.kubeconfig)...)
}

// run runs the plugin's root command with args as they are.
func run(args ...string) (stdout string, err error) {
	var out, errOut bytes.Buffer
	root := NewRootCommand(Options{Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}})
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), err
}

// createCluster creates a cluster from newCluster(opts...), then writes its status
// through the status subresource as the operator does.
func createCluster(name string, opts ...option) *baov1.OpenBaoCluster {
	ctx := context.Background()
	want := newCluster(opts...)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: want.Annotations}, Spec: want.Spec}
	Expect(env.k8s.Create(ctx, c)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(env.k8s.Delete(context.Background(), c))).To(Succeed()) })
	c.Status = want.Status
	// The fixtures name members, blue and green after "bao"; follow the cluster's name.
	renameMembers(c, "bao", name)
	Expect(env.k8s.Status().Update(ctx, c)).To(Succeed())
	return get(name)
}

// renameMembers moves the fixtures' member names from the cluster from to to.
func renameMembers(c *baov1.OpenBaoCluster, from, to string) {
	r := func(s string) string {
		if s == from || strings.HasPrefix(s, from+"-") {
			return to + strings.TrimPrefix(s, from)
		}
		return s
	}
	st := &c.Status
	st.Leader = r(st.Leader)
	for i := range st.Members {
		st.Members[i].Name = r(st.Members[i].Name)
	}
	if bg := st.BlueGreen; bg != nil {
		bg.Blue.StatefulSet, bg.Green.StatefulSet = r(bg.Blue.StatefulSet), r(bg.Green.StatefulSet)
		if bg.CurrentStep != nil {
			bg.CurrentStep.Pod = r(bg.CurrentStep.Pod)
		}
	}
	if up := st.Upgrade; up != nil {
		if up.Plan != nil {
			for i := range up.Plan.Pods {
				up.Plan.Pods[i] = r(up.Plan.Pods[i])
			}
		}
		for i := range up.CompletedPods {
			up.CompletedPods[i] = r(up.CompletedPods[i])
		}
		if up.CurrentStep != nil {
			up.CurrentStep.Pod = r(up.CurrentStep.Pod)
		}
	}
	if bg := st.BreakGlass; bg != nil {
		bg.Leader = r(bg.Leader)
		for i := range bg.Members {
			bg.Members[i].Name = r(bg.Members[i].Name)
		}
	}
}

func get(name string) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{}
	Expect(env.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
	return c
}

// managerOf is the field manager that owns the annotation, from managedFields, as
// the operator reads it for status.breakGlass.acknowledgedBy.
func managerOf(c *baov1.OpenBaoCluster, annotation string) string {
	key := []byte(`"f:` + annotation + `"`)
	for _, mf := range c.ManagedFields {
		if mf.FieldsV1 != nil && bytes.Contains(mf.FieldsV1.Raw, key) {
			return mf.Manager
		}
	}
	return ""
}

var tokenPattern = regexp.MustCompile(`^[0-9]{10}-[0-9a-f]{8}$`)

var _ = Describe("status", func() {
	It("shows members, Raft health, the upgrade, the snapshot and break-glass like kubectl describe", func() {
		createCluster("st", withRollingUpgrade(), withVoters("1/3"), withBreakGlass("9f2c4e1a"))
		out, err := kubectlBao("status", "st", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		got := squash(out)
		for _, want := range []string{
			"Name: st", "Namespace: vault", "Phase: BreakGlass", "Version: 2.4.1 wanted, 2.4.0 runs",
			"Failure tolerance: 0: QUORUM LOST, 1 healthy voters of the 2 a majority needs",
			"st-0 Leader 2.4.0 yes yes", "st-1 Voter 2.4.1 no no",
			"Plan: 1. st-2 (done) 2. st-1 (in progress) 3. st-0 (leader)",
			"Waiting for: waiting for bao-1 to rejoin Raft as a voter",
			"Location: s3://snaps/prod/vault/bao/2.4.0-to-2.4.1-20261201T095300Z-1.snap",
			"Break-glass: ACTIVE since", "Reason: QuorumLost", "Nonce: 9f2c4e1a",
			"kubectl bao break-glass ack st -n vault --nonce 9f2c4e1a",
		} {
			Expect(got).To(ContainSubstring(want))
		}
	})

	It("prints the object with -o json and -o yaml", func() {
		createCluster("st-json")
		out, err := kubectlBao("status", "st-json", "-n", ns, "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		c := &baov1.OpenBaoCluster{}
		Expect(json.Unmarshal([]byte(out), c)).To(Succeed())
		Expect(c.Kind).To(Equal("OpenBaoCluster"))
		Expect(c.Status.Voters).To(Equal("3/3"))
		Expect(c.ManagedFields).To(BeEmpty())

		out, err = kubectlBao("status", "st-json", "-n", ns, "-o", "yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal([]byte(out), c)).To(Succeed())
		Expect(c.Status.Leader).To(Equal("st-json-0"))
	})

	It("says how to find a cluster that is not there", func() {
		_, err := kubectlBao("status", "nope", "-n", ns)
		Expect(err).To(MatchError(ContainSubstring("openbaocluster vault/nope not found")))
		Expect(err).To(MatchError(ContainSubstring("kubectl get bao -A lists them")))
	})
})

var _ = Describe("plan", func() {
	It("orders followers first and the leader last, with prechecks, snapshot and undo, and changes nothing", func() {
		before := createCluster("pl", withLeader("pl-1"))
		out, err := kubectlBao("plan", "pl", "-n", ns, "--to", "2.4.1")
		Expect(err).NotTo(HaveOccurred())
		got := squash(out)
		Expect(got).To(ContainSubstring("Plan for vault/pl: 2.4.0 -> 2.4.1 (RollingUpdate). Nothing was changed."))
		Expect(got).To(MatchRegexp(`1\. pl-2 Voter .* 2\. pl-0 Voter .* 3\. pl-1 Leader last: its pod is deleted once every other member runs the target`))
		Expect(got).To(ContainSubstring("SnapshotTarget Pending snapshots go to s3://snaps/prod (https://s3.example)"))
		Expect(got).To(ContainSubstring("Undo: OpenBao does not support downgrades in place"))
		Expect(get("pl").ResourceVersion).To(Equal(before.ResourceVersion), "plan writes nothing")

		out, err = kubectlBao("plan", "pl", "-n", ns, "--to", "2.4.1", "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		p := &Plan{}
		Expect(json.Unmarshal([]byte(out), p)).To(Succeed())
		Expect(stepMembers(p)).To(Equal([]string{"pl-2", "pl-0", "pl-1"}))
	})

	It("refuses a downgrade and an invalid version with the policy's message", func() {
		createCluster("pl-bad")
		_, err := kubectlBao("plan", "pl-bad", "-n", ns, "--to", "2.3.0")
		Expect(errors.Is(err, ErrRefused)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring("DowngradeRefused")))
		Expect(err).To(MatchError(ContainSubstring("OpenBao does not support downgrades in place")))
		_, err = kubectlBao("plan", "pl-bad", "-n", ns, "--to", "2.4")
		Expect(err).To(MatchError(ContainSubstring("InvalidVersion")))
		_, err = kubectlBao("plan", "pl-bad", "-n", ns)
		Expect(err).To(MatchError(ContainSubstring("--to VERSION")))
	})
})

var _ = Describe("promote", func() {
	It("writes a fresh token under kubectl-bao/alice while green waits for promotion", func() {
		createCluster("pr", withBlueGreen(baov1.BlueGreenAwaitPromotion, baov1.PromotionWaiting))
		out, err := kubectlBao("promote", "pr", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		c := get("pr")
		tok := c.Annotations[baov1.AnnotationPromote]
		Expect(tok).To(MatchRegexp(tokenPattern.String()))
		Expect(managerOf(c, baov1.AnnotationPromote)).To(Equal("kubectl-bao/alice"))
		Expect(out).To(ContainSubstring(fmt.Sprintf("Set metadata.annotations[baokeeper.dev/promote]=%s on openbaocluster vault/pr (field manager kubectl-bao/alice).", tok)))
		Expect(out).To(ContainSubstring("Next: On its next pass the operator releases the hold"))
		Expect(out).To(ContainSubstring("kubectl bao timeline pr -n vault"))

		By("a second promote draws another token")
		out, err = kubectlBao("promote", "pr", "-n", ns, "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		res := &RequestResult{}
		Expect(json.Unmarshal([]byte(out), res)).To(Succeed())
		Expect(res.Written).To(BeTrue())
		Expect(res.Value).NotTo(Equal(tok))
		Expect(get("pr").Annotations[baov1.AnnotationPromote]).To(Equal(res.Value))
	})

	It("writes nothing and says so when no promotion is awaited", func() {
		before := createCluster("pr-early", withBlueGreen(baov1.BlueGreenSync, baov1.PromotionPending))
		_, err := kubectlBao("promote", "pr-early", "-n", ns)
		Expect(errors.Is(err, ErrRefused)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring("no promotion is awaited: the blue-green upgrade is in phase Sync")))
		Expect(err).To(MatchError(ContainSubstring("nothing was written")))
		after := get("pr-early")
		Expect(after.Annotations).NotTo(HaveKey(baov1.AnnotationPromote))
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
	})
})

var _ = Describe("rollback", func() {
	It("writes a token before the point of no return", func() {
		createCluster("rb", withBlueGreen(baov1.BlueGreenSync, baov1.PromotionPending))
		out, err := kubectlBao("rollback", "rb", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(get("rb").Annotations[baov1.AnnotationRollback]).To(MatchRegexp(tokenPattern.String()))
		Expect(out).To(ContainSubstring("the operator starts the rollback"))
	})

	It("refuses past the point of no return, naming the snapshot, and writes nothing", func() {
		before := createCluster("rb-late", withBlueGreen(baov1.BlueGreenCutover, baov1.PromotionRequested), func(c *baov1.OpenBaoCluster) {
			c.Status.BlueGreen.LeaderMovedAt = minutesAgo(1)
			c.Status.LastSnapshot = receipt()
		})
		_, err := kubectlBao("rollback", "rb-late", "-n", ns)
		Expect(err).To(MatchError(ContainSubstring("the point of no return")))
		Expect(err).To(MatchError(ContainSubstring("the snapshot is s3://snaps/prod/")))
		Expect(get("rb-late").ResourceVersion).To(Equal(before.ResourceVersion))
	})
})

var _ = Describe("retry", func() {
	It("writes a token after a failure", func() {
		createCluster("rt", withRollingUpgrade(), withUpgradeFailure(baov1.FailureStepTimeout))
		out, err := kubectlBao("retry", "rt", "-n", ns, "-o", "yaml")
		Expect(err).NotTo(HaveOccurred())
		res := &RequestResult{}
		Expect(yaml.Unmarshal([]byte(out), res)).To(Succeed())
		Expect(res.Control).To(Equal(ControlRetry))
		Expect(res.Next).To(ContainSubstring("clears status.upgrade.failure (StepTimeout on bao-1"))
		Expect(get("rt").Annotations[baov1.AnnotationRetry]).To(Equal(res.Value))
	})

	It("refuses when nothing failed", func() {
		createCluster("rt-ok", withRollingUpgrade())
		_, err := kubectlBao("retry", "rt-ok", "-n", ns)
		Expect(err).To(MatchError(ContainSubstring("nothing has failed")))
		Expect(get("rt-ok").Annotations).NotTo(HaveKey(baov1.AnnotationRetry))
	})
})

var _ = Describe("pause and resume", func() {
	It("set spec.upgrade.paused, and write nothing when it already says so", func() {
		createCluster("pa", withRollingUpgrade())
		out, err := kubectlBao("pause", "pa", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Set spec.upgrade.paused=true on openbaocluster vault/pa"))
		Expect(out).To(ContainSubstring("The member in progress (pa-1) finishes"))
		paused := get("pa")
		Expect(paused.Spec.Upgrade.Paused).To(BeTrue())

		out, err = kubectlBao("pause", "pa", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Nothing to write on openbaocluster vault/pa: spec.upgrade.paused is true already"))
		Expect(get("pa").ResourceVersion).To(Equal(paused.ResourceVersion))

		out, err = kubectlBao("resume", "pa", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("Set spec.upgrade.paused=false"))
		Expect(get("pa").Spec.Upgrade.Paused).To(BeFalse())
	})
})

var _ = Describe("break-glass ack", func() {
	It("refuses a wrong nonce before writing anything, and writes the current one under the plugin's field manager", func() {
		before := createCluster("bg", withRollingUpgrade(), withBreakGlass("9f2c4e1a0b3d5c7e"))
		_, err := kubectlBao("break-glass", "ack", "bg", "-n", ns, "--nonce", "0000")
		Expect(errors.Is(err, ErrRefused)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring(`"0000" is not the current nonce (status.breakGlass.nonce)`)))
		after := get("bg")
		Expect(after.Annotations).NotTo(HaveKey(baov1.AnnotationBreakGlassAck))
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "a wrong nonce writes nothing")

		out, err := kubectlBao("break-glass", "ack", "bg", "-n", ns, "--nonce", "9f2c4e1a0b3d5c7e")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("acknowledgedBy (kubectl-bao/alice"))
		c := get("bg")
		Expect(c.Annotations).To(HaveKeyWithValue(baov1.AnnotationBreakGlassAck, "9f2c4e1a0b3d5c7e"))
		Expect(managerOf(c, baov1.AnnotationBreakGlassAck)).To(Equal("kubectl-bao/alice"), "what the operator records as acknowledgedBy")
	})

	It("refuses when break-glass is not active, and takes --field-manager", func() {
		createCluster("bg-off")
		_, err := kubectlBao("break-glass", "ack", "bg-off", "-n", ns, "--nonce", "9f2c")
		Expect(err).To(MatchError(ContainSubstring("break-glass is not active")))
		Expect(get("bg-off").Annotations).NotTo(HaveKey(baov1.AnnotationBreakGlassAck))

		createCluster("bg-fm", withBreakGlass("abcd"))
		_, err = kubectlBao("break-glass", "ack", "bg-fm", "-n", ns, "--nonce", "abcd", "--field-manager", "alice@ops")
		Expect(err).NotTo(HaveOccurred())
		Expect(managerOf(get("bg-fm"), baov1.AnnotationBreakGlassAck)).To(Equal("alice@ops"))

		_, err = kubectlBao("break-glass", "ack", "bg-fm", "-n", ns)
		Expect(err).To(MatchError(ContainSubstring("--nonce NONCE")))
	})
})

var _ = Describe("timeline", func() {
	It("lists the cluster's events oldest first, from both event APIs, and no one else's", func() {
		ctx := context.Background()
		c := createCluster("tl")
		other := createCluster("tl-other")
		now := time.Now()
		emit := func(of *baov1.OpenBaoCluster, name, reason, note string, at time.Time) {
			Expect(env.k8s.Create(ctx, &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				EventTime:  metav1.NewMicroTime(at), ReportingController: "baokeeper-upgrade", ReportingInstance: "baokeeper-upgrade-0",
				Action: "Request", Reason: reason, Note: note, Type: corev1.EventTypeNormal,
				Regarding: corev1.ObjectReference{APIVersion: baov1.GroupVersion.String(), Kind: "OpenBaoCluster", Namespace: ns, Name: of.Name, UID: of.UID},
			})).To(Succeed())
		}
		emit(c, "tl.3", "UpgradeCompleted", "Upgraded to 2.4.1", now.Add(-1*time.Minute))
		emit(c, "tl.1", "UpgradePlanned", "Upgrading from 2.4.0 to 2.4.1 (rolling) in the order [tl-2 tl-1 tl-0]", now.Add(-9*time.Minute))
		emit(other, "tl-other.1", "UpgradePlanned", "not this cluster", now.Add(-5*time.Minute))
		Expect(env.k8s.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "tl.2", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{APIVersion: baov1.GroupVersion.String(), Kind: "OpenBaoCluster", Namespace: ns, Name: c.Name, UID: c.UID},
			Reason:         "MemberUpgraded", Message: "tl-2 runs 2.4.1", Type: corev1.EventTypeNormal,
			FirstTimestamp: metav1.NewTime(now.Add(-5 * time.Minute)), LastTimestamp: metav1.NewTime(now.Add(-4 * time.Minute)), Count: 2,
			Source: corev1.EventSource{Component: "baokeeper"},
		})).To(Succeed())

		out, err := kubectlBao("timeline", "tl", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(HavePrefix("Events of openbaocluster vault/tl, oldest first:\n"))
		// The core Event's timestamps have whole seconds, and the plugin reads its own
		// clock later: "4m" or, a second or more later under load, "4m1s".
		Expect(out).To(MatchRegexp(`(?s)UpgradePlanned.*x2, last 4m([0-9]s)? ago +Normal +MemberUpgraded.*UpgradeCompleted`))
		Expect(out).NotTo(ContainSubstring("not this cluster"))

		out, err = kubectlBao("timeline", "tl", "-n", ns, "-o", "json")
		Expect(err).NotTo(HaveOccurred())
		tl := &TimelineOutput{}
		Expect(json.Unmarshal([]byte(out), tl)).To(Succeed())
		Expect(tl.Cluster).To(Equal("vault/tl"))
		reasons := []string{}
		for _, e := range tl.Events {
			reasons = append(reasons, e.Reason)
		}
		Expect(reasons).To(Equal([]string{"UpgradePlanned", "MemberUpgraded", "UpgradeCompleted"}))
		Expect(tl.Events[0].Reporter).To(Equal("baokeeper-upgrade"))
	})
})

var _ = Describe("completion", func() {
	It("prints cobra's scripts for bash, zsh and fish, and completes cluster names", func() {
		for _, shell := range []string{"bash", "zsh", "fish"} {
			out, err := kubectlBao("completion", shell)
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(ContainSubstring("kubectl-bao"), shell)
		}
		createCluster("cmp-one")
		// The word being completed comes last, as the shell passes it.
		out, err := run("__complete", "--kubeconfig", env.kubeconfig, "status", "-n", ns, "cmp-")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Split(out, "\n")).To(ContainElement("cmp-one"))
	})
})

var _ = Describe("restore --in-place", func() {
	It("writes the newest receipt's checksum with a fresh token, and refuses during an upgrade without writing", func() {
		createCluster("rip", withReceipts(takenReceipt("a", 30, "2.4.0"), takenReceipt("b", 60, "2.4.0")), func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots.S3 = &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}
			c.Status.CurrentVersion = "2.4.0"
		})
		out, err := kubectlBao("restore", "rip", "--in-place", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		v := get("rip").Annotations[baov1.AnnotationRestore]
		Expect(v).To(HavePrefix(strings.Repeat("a", 64)+"-"), "bound to the newest receipt")
		Expect(strings.TrimPrefix(v, strings.Repeat("a", 64)+"-")).To(MatchRegexp(tokenPattern.String()))
		Expect(managerOf(get("rip"), baov1.AnnotationRestore)).To(Equal("kubectl-bao/alice"))
		Expect(out).To(ContainSubstring("Every write made to rip since"))

		By("--sha256 picks another receipt")
		_, err = kubectlBao("restore", "rip", "--in-place", "--sha256", strings.Repeat("b", 64), "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(get("rip").Annotations[baov1.AnnotationRestore]).To(HavePrefix(strings.Repeat("b", 64) + "-"))

		By("during an upgrade: refused, nothing written")
		before := createCluster("rip-up", withReceipts(takenReceipt("a", 30, "2.4.0")), withRollingUpgrade(), func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots.S3 = &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}
		})
		_, err = kubectlBao("restore", "rip-up", "--in-place", "-n", ns)
		Expect(errors.Is(err, ErrRefused)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring("the cluster is upgrading")))
		Expect(get("rip-up").ResourceVersion).To(Equal(before.ResourceVersion))
	})
})
