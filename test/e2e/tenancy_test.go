//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// tenantNS holds an application that a new cluster must not take over.
const tenantNS = "e2e-tenant"

// The takeover of issue 21, as a user tried it on the rig: an application "victim"
// and an OpenBaoCluster named victim beside it. The operator that refuses it is the
// one installed from the image, in namespace mode.
var _ = Describe("A new cluster beside another application's objects", Ordered, SpecPriority(40), func() {
	It("is refused with NameConflict, and the application's objects stay byte for byte as they were", func(ctx SpecContext) {
		createNamespace(ctx, tenantNS)
		om := func(name string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: tenantNS, Name: name, Labels: map[string]string{"app": "victim"}}
		}
		app := []client.Object{
			&corev1.Secret{ObjectMeta: om("victim-tls"), Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: []byte("the application's certificate"), corev1.TLSPrivateKeyKey: []byte("its key")}},
			&corev1.Service{ObjectMeta: om("victim"), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "victim"},
				Ports: []corev1.ServicePort{{Name: "postgres", Port: 5432, TargetPort: intstr.FromInt32(5432)}}}},
			&corev1.ConfigMap{ObjectMeta: om("victim-config"), Data: map[string]string{"app.conf": "listen=5432"}},
			&corev1.ServiceAccount{ObjectMeta: om("victim")},
		}
		for _, o := range app {
			Expect(k8s.Create(ctx, o)).To(Succeed())
		}
		before := rawObjects(ctx, app)

		c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "victim"},
			Spec: baov1.OpenBaoClusterSpec{Version: "2.4.0"}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &baov1.OpenBaoCluster{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
			cond := meta.FindStatusCondition(got.Status.Conditions, string(baov1.ConditionSpecValid))
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(string(baov1.ReasonNameConflict)))
			for _, want := range []string{"Secret victim-tls", "Service victim", "ConfigMap victim-config", "ServiceAccount victim"} {
				g.Expect(cond.Message).To(ContainSubstring(want))
			}
			GinkgoWriter.Printf("refused: %s\n", cond.Message)
		}, time.Minute, pollEvery).Should(Succeed())

		By("nothing changes while the cluster exists, across several checks (every 10 s)")
		Consistently(func(g Gomega) {
			g.Expect(rawObjects(ctx, app)).To(Equal(before))
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "victim-internal"}, &corev1.Service{}))).To(BeTrue())
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(tenantNS))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}, 25*time.Second, time.Second).Should(Succeed())

		By("deleting the refused cluster deletes nothing of the application")
		Expect(k8s.Delete(ctx, c)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(c), &baov1.OpenBaoCluster{}))
		}, time.Minute, pollEvery).Should(BeTrue())
		Consistently(func() map[string][]byte { return rawObjects(ctx, app) }, 5*time.Second, time.Second).Should(Equal(before))
	})
})

// rawObjects reads each object as the API server returns it, whole, as JSON.
func rawObjects(ctx context.Context, objs []client.Object) map[string][]byte {
	GinkgoHelper()
	out := map[string][]byte{}
	for _, o := range objs {
		cp := o.DeepCopyObject().(client.Object)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), cp)).To(Succeed())
		raw, err := json.Marshal(cp)
		Expect(err).NotTo(HaveOccurred())
		out[fmt.Sprintf("%T/%s", o, o.GetName())] = raw
	}
	return out
}
