package openbaocluster_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// conflictRetry is how long a refused cluster takes to notice that the conflict was
// resolved: the other application's objects are not watched, so the check runs on
// a timer (app.ConflictRecheck, 10 s).
const conflictRetry = 25 * time.Second

// victimObjects are an application "victim": the objects a cluster named victim
// would otherwise write.
func victimObjects(ns string, opaque bool) []client.Object {
	secretType := corev1.SecretTypeTLS
	data := map[string][]byte{corev1.TLSCertKey: []byte("app certificate"), corev1.TLSPrivateKeyKey: []byte("app key")}
	if opaque {
		secretType, data = corev1.SecretTypeOpaque, map[string][]byte{"password": []byte("app password")}
	}
	om := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "victim"}}
	}
	return []client.Object{
		&corev1.Secret{ObjectMeta: om("victim-tls"), Type: secretType, Data: data},
		&corev1.Service{ObjectMeta: om("victim"), Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "victim"},
			Ports:    []corev1.ServicePort{{Name: "postgres", Port: 5432, TargetPort: intstr.FromInt32(5432)}},
		}},
		&corev1.ConfigMap{ObjectMeta: om("victim-config"), Data: map[string]string{"app.conf": "listen=5432"}},
		&corev1.ServiceAccount{ObjectMeta: om("victim")},
	}
}

// snapshotObjects reads each object again, whole: the comparison after the cluster
// was refused is of everything, not of selected fields.
func snapshotObjects(ctx context.Context, objs []client.Object) []client.Object {
	GinkgoHelper()
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		cp := o.DeepCopyObject().(client.Object)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), cp)).To(Succeed())
		out = append(out, cp)
	}
	return out
}

// expectUnchanged: every object is as before, byte for byte (same resourceVersion,
// same content), and none of the cluster's other objects was created.
func expectUnchanged(ctx context.Context, c *baov1.OpenBaoCluster, before []client.Object) {
	GinkgoHelper()
	taken := map[string]bool{}
	for _, o := range before {
		gvk, err := apiutil.GVKForObject(o, k8s.Scheme())
		Expect(err).NotTo(HaveOccurred())
		taken[gvk.Kind+" "+o.GetName()] = true
	}
	Consistently(func(g Gomega) {
		for i, o := range snapshotObjects(ctx, before) {
			g.Expect(o).To(Equal(before[i]), "%T %s", o, o.GetName())
		}
		for _, ref := range workload.CreatedObjects(c) {
			if taken[ref.String()] {
				continue
			}
			pm := &metav1.PartialObjectMetadata{}
			pm.SetGroupVersionKind(ref.GroupVersionKind())
			err := k8s.Get(ctx, key(c.Namespace, ref.Name), pm)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "bug: the refused cluster created %s: %v", ref, err)
		}
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
}

func expectRefused(ctx context.Context, c *baov1.OpenBaoCluster, reason baov1.Reason, parts ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := getCluster(ctx, c)
		cond := condition(got, baov1.ConditionSpecValid)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(string(reason)))
		for _, p := range parts {
			g.Expect(cond.Message).To(ContainSubstring(p))
			g.Expect(got.Status.Message).To(ContainSubstring(p))
		}
	}, timeout, interval).Should(Succeed())
	Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement(string(baov1.EventSpecRefused)))
}

var _ = Describe("Objects baokeeper did not create", func() {
	var ns string
	ctx := context.Background()
	BeforeEach(func() { ns = newNamespace(ctx) })

	for _, opaque := range []bool{false, true} {
		name := "a kubernetes.io/tls Secret"
		if opaque {
			name = "an Opaque Secret"
		}
		It("refuses to take over another application's objects ("+name+"), changes none of them, and starts once they are gone", func() {
			objs := victimObjects(ns, opaque)
			for _, o := range objs {
				Expect(k8s.Create(ctx, o)).To(Succeed())
			}
			before := snapshotObjects(ctx, objs)

			c := newCluster(ns, "victim")
			Expect(k8s.Create(ctx, c)).To(Succeed())
			expectRefused(ctx, c, baov1.ReasonNameConflict,
				"Secret victim-tls (not created by baokeeper)", "Service victim (not created by baokeeper)",
				"ConfigMap victim-config", "ServiceAccount victim", "Nothing was changed", "another name")
			Expect(getCluster(ctx, c).Status.Phase).To(Equal(baov1.PhaseFailed))
			expectUnchanged(ctx, c, before)

			By("the application's objects go: the cluster starts on the next check")
			for _, o := range objs {
				Expect(k8s.Delete(ctx, o)).To(Succeed())
			}
			Eventually(func() error { return k8s.Get(ctx, key(ns, "victim"), &appsv1.StatefulSet{}) }, conflictRetry, interval).Should(Succeed())
			Eventually(func() string { return condition(getCluster(ctx, c), baov1.ConditionSpecValid).Reason }, timeout, interval).
				Should(Equal(string(baov1.ReasonSpecAccepted)))
		})
	}

	om := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	DescribeTable("refuses a cluster whose object name is taken, touching nothing",
		func(build func(ns string) client.Object, want string) {
			obj := build(ns)
			Expect(k8s.Create(ctx, obj)).To(Succeed())
			before := snapshotObjects(ctx, []client.Object{obj})
			c := newCluster(ns, "bao")
			Expect(k8s.Create(ctx, c)).To(Succeed())
			expectRefused(ctx, c, baov1.ReasonNameConflict, want)
			expectUnchanged(ctx, c, before)
		},
		Entry("a kubernetes.io/tls Secret", func(ns string) client.Object {
			return &corev1.Secret{ObjectMeta: om(ns, "bao-tls"), Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: []byte("c"), corev1.TLSPrivateKeyKey: []byte("k")}}
		}, "Secret bao-tls (not created by baokeeper)"),
		Entry("an Opaque Secret under the seal key's name", func(ns string) client.Object {
			return &corev1.Secret{ObjectMeta: om(ns, "bao-seal"), Data: map[string][]byte{"key": []byte("someone else's")}}
		}, "Secret bao-seal (not created by baokeeper)"),
		Entry("a Service", func(ns string) client.Object {
			return &corev1.Service{ObjectMeta: om(ns, "bao-active"), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		}, "Service bao-active"),
		Entry("a ConfigMap", func(ns string) client.Object {
			return &corev1.ConfigMap{ObjectMeta: om(ns, "bao-config"), Data: map[string]string{"k": "v"}}
		}, "ConfigMap bao-config"),
		Entry("a ServiceAccount", func(ns string) client.Object {
			return &corev1.ServiceAccount{ObjectMeta: om(ns, "bao-executor")}
		}, "ServiceAccount bao-executor"),
		Entry("a PodDisruptionBudget", func(ns string) client.Object {
			one := intstr.FromInt32(1)
			return &policyv1.PodDisruptionBudget{ObjectMeta: om(ns, "bao"), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		}, "PodDisruptionBudget bao"),
		Entry("a StatefulSet", func(ns string) client.Object {
			labels := map[string]string{"app": "db"}
			return &appsv1.StatefulSet{ObjectMeta: om(ns, "bao"), Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:17.2"}}}},
			}}
		}, "StatefulSet bao"),
		Entry("a Role", func(ns string) client.Object {
			return &rbacv1.Role{ObjectMeta: om(ns, "bao-service-registration"), Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
		}, "Role bao-service-registration"),
	)

	It("refuses a cluster whose Service is another cluster's (bao-internal beside bao)", func() {
		first := newCluster(ns, "bao")
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, key(ns, "bao"), &appsv1.StatefulSet{}) }, timeout, interval).Should(Succeed())
		firstVersions := workloadVersions(ctx, first)

		second := newCluster(ns, "bao-internal")
		Expect(k8s.Create(ctx, second)).To(Succeed())
		expectRefused(ctx, second, baov1.ReasonNameConflict, "Service bao-internal (owned by OpenBaoCluster bao)")
		Consistently(func() map[string]string { return workloadVersions(ctx, first) }, 2*time.Second, 250*time.Millisecond).Should(Equal(firstVersions))
	})

	It("refuses clusters in the operator's namespace and in kube-system", func() {
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorSA.Namespace}}))).To(Succeed())
		for _, protected := range []string{operatorSA.Namespace, "kube-system"} {
			c := newCluster(protected, "bao")
			Expect(k8s.Create(ctx, c)).To(Succeed())
			expectRefused(ctx, c, baov1.ReasonProtectedNamespace, protected, "a namespace of its own")
			Expect(apierrors.IsNotFound(k8s.Get(ctx, key(protected, "bao-tls"), &corev1.Secret{}))).To(BeTrue(), "nothing is created")
			Expect(apierrors.IsNotFound(k8s.Get(ctx, key(protected, "bao"), &corev1.ServiceAccount{}))).To(BeTrue())
			Expect(k8s.Delete(ctx, c)).To(Succeed())
		}
	})

	It("says in status and an event when the API server refuses a write", func() {
		By("an admission policy that refuses the cluster's ConfigMap")
		policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-config-" + ns},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
						Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					}}}},
				Validations: []admissionv1.Validation{{Expression: "object.metadata.name != 'bao-config'", Message: "the platform team forbids this ConfigMap"}},
			}}
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		deny := admissionv1.Deny
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-config-" + ns},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name, ValidationActions: []admissionv1.ValidationAction{deny},
				MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}}}
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() {
			_ = k8s.Delete(ctx, binding)
			_ = k8s.Delete(ctx, policy)
		})
		Eventually(func() error {
			probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bao-config"}}
			err := k8s.Create(ctx, probe, client.DryRunAll)
			if err == nil {
				return errors.New("the policy does not refuse yet")
			}
			return nil
		}, timeout, interval).Should(Succeed())

		c := newCluster(ns, "bao")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getCluster(ctx, c)
			cond := condition(got, baov1.ConditionDegraded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Reason).To(Equal(string(baov1.ReasonApplyFailed)))
			g.Expect(cond.Message).To(ContainSubstring("The API server refused a write of the cluster's config objects"))
			g.Expect(cond.Message).To(ContainSubstring("bao-config"))
			g.Expect(cond.Message).To(ContainSubstring("the platform team forbids this ConfigMap"))
			g.Expect(got.Status.Message).To(Equal(cond.Message))
		}, timeout, interval).Should(Succeed())
		Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement(string(baov1.EventApplyFailed)))

		By("the policy goes: the cluster goes on")
		Expect(k8s.Delete(ctx, binding)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, key(ns, "bao"), &appsv1.StatefulSet{}) }, conflictRetry, interval).Should(Succeed())
	})
})
