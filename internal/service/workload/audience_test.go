package workload

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestJWTAudience(t *testing.T) {
	initialized := []metav1.Condition{{Type: string(baov1.ConditionInitialized), Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name   string
		status baov1.OpenBaoClusterStatus
		want   string
	}{
		{"a new cluster: its own audience", baov1.OpenBaoClusterStatus{}, "openbao.baokeeper.dev/apps/bao"},
		{"recorded: kept", baov1.OpenBaoClusterStatus{JWTAudience: "openbao.baokeeper.dev/apps/bao", Conditions: initialized}, "openbao.baokeeper.dev/apps/bao"},
		{"initialized before audiences were recorded: the legacy one its roles have", baov1.OpenBaoClusterStatus{Conditions: initialized}, "baokeeper"},
		{"recorded legacy", baov1.OpenBaoClusterStatus{JWTAudience: "baokeeper"}, "baokeeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "bao"}, Status: tc.status}
			NewWithT(t).Expect(JWTAudience(c)).To(Equal(tc.want))
		})
	}
	a := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "bao"}}
	b := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "bao"}}
	NewWithT(t).Expect(ClusterAudience(a)).NotTo(Equal(ClusterAudience(b)), "same name, other namespace: another audience")
}

func TestRenderInitializeBindsTheClusterAudience(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "bao"}, Spec: baov1.OpenBaoClusterSpec{Version: "2.4.0"}}
	hcl, err := RenderInitialize(c, AuthParams{Issuer: "https://kubernetes.default.svc", PublicKeysPEM: []string{"k"}, ControllerSubject: "system:serviceaccount:baokeeper-system:baokeeper"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hcl).To(ContainSubstring(`"openbao.baokeeper.dev/apps/bao"`))
	g.Expect(hcl).NotTo(ContainSubstring(`["baokeeper"]`))
}
