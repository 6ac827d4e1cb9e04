package statusapply

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/test/testenv"
)

// The writes against a real kube-apiserver: what a status write does with a read that
// another write has overtaken (the informer cache lags behind the operator's own
// writes for a few milliseconds).
func TestApplyEnvtest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "statusapply against a real kube-apiserver")
}

var k8s client.Client

var _ = BeforeSuite(func() {
	scheme := runtime.NewScheme()
	Expect(baov1.AddToScheme(scheme)).To(Succeed())
	env := testenv.StartEnvtest(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases"))
	var err error
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = Describe("Apply", func() {
	ctx := context.Background()
	var c *baov1.OpenBaoCluster

	BeforeEach(func() {
		c = &baov1.OpenBaoCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "bao-"},
			Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.0"},
		}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, c))).To(Succeed()) })
	})

	breakGlass := func(nonce string) *baov1.BreakGlassStatus {
		return &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost, Nonce: nonce, Message: "m"}
	}

	It("refuses the upgrade owner's write from a read another write overtook, and changes nothing", func() {
		read := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), read)).To(Succeed())
		stale, before := read.DeepCopy(), read.Status.DeepCopy()

		read.Status.BreakGlass = breakGlass("first")
		wrote, err := Apply(ctx, k8s, Upgrade(), read, before)
		Expect(err).NotTo(HaveOccurred())
		Expect(wrote).To(BeTrue())

		// A second pass on the read before that write: it would enter break-glass again
		// with a nonce of its own and overwrite the one a person already holds.
		stale.Status.BreakGlass = breakGlass("second")
		_, err = Apply(ctx, k8s, Upgrade(), stale, before)
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "want a Conflict, got %v", err)
		Expect(err.Error()).To(ContainSubstring("runs again on a fresh read"), "the error says what happens next")

		got := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
		Expect(got.Status.BreakGlass).NotTo(BeNil())
		Expect(got.Status.BreakGlass.Nonce).To(Equal("first"))

		By("a pass on the fresh read writes")
		got.Status.BreakGlass.Message = "later"
		before = got.Status.DeepCopy()
		before.BreakGlass.Message = "m"
		wrote, err = Apply(ctx, k8s, Upgrade(), got, before)
		Expect(err).NotTo(HaveOccurred())
		Expect(wrote).To(BeTrue())
	})

	It("lets the workload owner's write from an overtaken read through: it only reports what it observed, and the next pass corrects it", func() {
		read := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), read)).To(Succeed())
		stale, before := read.DeepCopy(), read.Status.DeepCopy()
		read.Status.BreakGlass = breakGlass("first")
		_, err := Apply(ctx, k8s, Upgrade(), read, before)
		Expect(err).NotTo(HaveOccurred())

		stale.Status.Message = "observed"
		wrote, err := Apply(ctx, k8s, Workload(), stale, before)
		Expect(err).NotTo(HaveOccurred())
		Expect(wrote).To(BeTrue())
		got := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
		Expect(got.Status.Message).To(Equal("observed"))
		Expect(got.Status.BreakGlass.Nonce).To(Equal("first"), "owners never touch each other's fields")
	})
})
