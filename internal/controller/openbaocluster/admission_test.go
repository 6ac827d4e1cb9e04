package openbaocluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/test/testenv"
)

// The opt-in admission policy of config/admission, as shipped, bound to one
// namespace for the test (the suite's other specs use images the policy would
// refuse), judged by the real API server for a user who may edit OpenBaoClusters
// and read one Secret.
var _ = Describe("The opt-in admission policy (config/admission)", Ordered, func() {
	var ns string
	var alice client.Client
	ctx := context.Background()

	BeforeAll(func() {
		ns = newNamespace(ctx)
		raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "admission", "policy.yaml"))
		Expect(err).NotTo(HaveOccurred())
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		var policy *admissionv1.ValidatingAdmissionPolicy
		for {
			var probe struct {
				Kind string `json:"kind"`
			}
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				Expect(errors.Is(err, io.EOF)).To(BeTrue(), "%v", err)
				break
			}
			b, _ := yamlToJSON(doc)
			Expect(jsonUnmarshal(b, &probe)).To(Succeed())
			if probe.Kind == "ValidatingAdmissionPolicy" {
				policy = &admissionv1.ValidatingAdmissionPolicy{}
				Expect(jsonUnmarshal(b, policy)).To(Succeed())
			}
		}
		Expect(policy).NotTo(BeNil())
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "baokeeper-openbaoclusters-" + ns},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
				MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}}}
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() {
			_ = k8s.Delete(ctx, binding)
			_ = k8s.Delete(ctx, policy)
		})

		By("alice may edit OpenBaoClusters in the namespace, and read the Secret hook-ok only")
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{baov1.GroupVersion.Group}, Resources: []string{"openbaoclusters"}, Verbs: []string{"create", "get", "update"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"hook-ok"}, Verbs: []string{"get"}},
		}}
		Expect(k8s.Create(ctx, role)).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "alice"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}})).To(Succeed())
		ac := rest.CopyConfig(cfg)
		ac.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
		alice, err = client.New(ac, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())

		By("waiting until the policy judges")
		Eventually(func() error {
			err := alice.Create(ctx, newCluster(ns, "probe", withImage("evil.example/openbao:2.4.0")), client.DryRunAll)
			if err == nil {
				return errors.New("not judging yet")
			}
			return nil
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	hook := func(env ...corev1.EnvVar) clusterOpt {
		return func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy
			c.Spec.Upgrade.BlueGreen.ValidationHook = &baov1.ValidationHookSpec{Image: "ghcr.io/openbao/openbao:2.4.0", Env: env}
		}
	}
	fromSecret := func(name string) corev1.EnvVar {
		return corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "token"}}}
	}
	executorImage := func(img string) clusterOpt {
		return func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Executor.Image = img }
	}

	DescribeTable("judges alice's clusters",
		func(opts []clusterOpt, want string) {
			err := alice.Create(ctx, newCluster(ns, "bao", opts...), client.DryRunAll)
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("no image: the default, allowed", nil, ""),
		Entry("an image of Docker Hub's openbao", []clusterOpt{withImage("openbao/openbao:2.4.0")}, ""),
		Entry("a member image from another registry", []clusterOpt{withImage("evil.example/openbao:2.4.0")},
			"images of OpenBaoClusters must come from ghcr.io/openbao/, docker.io/openbao/, quay.io/openbao/, ghcr.io/baokeeper/ (the policy baokeeper-openbaoclusters); refused: evil.example/openbao:2.4.0"),
		Entry("an image of another Docker Hub account", []clusterOpt{withImage("mallory/openbao:2.4.0")}, "refused: mallory/openbao:2.4.0"),
		Entry("an executor image from another registry", []clusterOpt{executorImage("evil.example/baokeeper:0.2.0")}, "refused: evil.example/baokeeper:0.2.0"),
		Entry("a hook reading a Secret alice may not read", []clusterOpt{hook(fromSecret("bao-seal"))},
			"spec.upgrade.blueGreen.validationHook.env reads a Secret you may not read (it reads bao-seal): the hook would hand it to its image"),
		Entry("a hook reading one Secret alice may read and one she may not", []clusterOpt{hook(fromSecret("hook-ok"), fromSecret("bao-ca"))},
			"(it reads hook-ok, bao-ca)"),
		Entry("a hook reading the Secret alice may read", []clusterOpt{hook(fromSecret("hook-ok"))}, ""),
		Entry("a hook with plain values", []clusterOpt{hook(corev1.EnvVar{Name: "A", Value: "b"})}, ""),
		Entry("a TLS Secret alice may not read", []clusterOpt{tlsSecret("other-tls")},
			"the cluster names Secrets you may not read (it names other-tls): baokeeper would use them on your behalf"),
		Entry("an image pull Secret alice may not read", []clusterOpt{func(c *baov1.OpenBaoCluster) {
			c.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "hook-ok"}, {Name: "regcred"}}
		}}, "(it names hook-ok, regcred)"),
		Entry("S3 credentials alice may not read", []clusterOpt{func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots.S3 = &baov1.S3Target{Endpoint: "http://s3:9000", Bucket: "b", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-admin"}}
		}}, "(it names s3-admin)"),
		Entry("a restore of another cluster's snapshot without the right to read its seal key (issue 38)", []clusterOpt{restoreOf("prod", "", "hook-ok")},
			"(it names hook-ok, prod-seal)"),
		Entry("a restore whose seal key and credentials alice may read", []clusterOpt{restoreOf("prod", "hook-ok", "hook-ok")}, ""),
	)

	It("lets alice change the version of a cluster whose Secrets she may not read (only names an update adds are judged)", func() {
		c := newCluster(ns, "tls", tlsSecret("other-tls"))
		Expect(k8s.Create(ctx, c)).To(Succeed())
		// The operator writes the object meanwhile: each try reads it afresh.
		update := func(mutate func(*baov1.OpenBaoCluster)) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur := &baov1.OpenBaoCluster{}
				if err := alice.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
					return err
				}
				mutate(cur)
				return alice.Update(ctx, cur, client.DryRunAll)
			})
		}
		Expect(update(func(cur *baov1.OpenBaoCluster) { cur.Spec.Version = "2.4.1" })).To(Succeed())
		err := update(func(cur *baov1.OpenBaoCluster) { cur.Spec.Version, cur.Spec.TLS.SecretName = "2.4.1", "another-tls" })
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("the cluster names Secrets you may not read"))
	})
})

func tlsSecret(name string) clusterOpt {
	return func(c *baov1.OpenBaoCluster) { c.Spec.TLS.SecretName = name }
}

// restoreOf starts the cluster from a snapshot of source, its seal key in sealRef
// (empty: <source>-seal) and the bucket's credentials in creds.
func restoreOf(source, sealRef, creds string) clusterOpt {
	return func(c *baov1.OpenBaoCluster) {
		fs := baov1.SnapshotSource{S3: baov1.S3Target{Endpoint: "http://s3:9000", Bucket: "b", CredentialsSecretRef: corev1.LocalObjectReference{Name: creds}},
			Key: "x.snap", SHA256: strings.Repeat("a", 64), SourceCluster: source}
		if sealRef != "" {
			fs.SealKeySecretRef = &corev1.LocalObjectReference{Name: sealRef}
		}
		c.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: fs}
	}
}

func yamlToJSON(doc map[string]any) ([]byte, error) { return json.Marshal(doc) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
