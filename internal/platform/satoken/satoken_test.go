package satoken

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestSource(t *testing.T) {
	g := NewWithT(t)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	cs := fake.NewClientset()
	var requests []string
	cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authv1.TokenRequest)
		requests = append(requests, ca.GetNamespace()+"/"+a.(k8stesting.CreateActionImpl).Name+" "+tr.Spec.Audiences[0])
		out := tr.DeepCopy()
		out.Status = authv1.TokenRequestStatus{
			Token:               fmt.Sprintf("token-%d-for-%s", len(requests), tr.Spec.Audiences[0]),
			ExpirationTimestamp: metav1.NewTime(clk.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)),
		}
		return true, out, nil
	})
	s := &Source{Client: cs.CoreV1(), ServiceAccount: types.NamespacedName{Namespace: "baokeeper-system", Name: "baokeeper"}, Clock: clk}
	ctx := context.Background()

	a1, err := s.Token(ctx, "openbao.baokeeper.dev/apps/a")
	g.Expect(err).NotTo(HaveOccurred())
	b1, err := s.Token(ctx, "openbao.baokeeper.dev/apps/b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a1).NotTo(Equal(b1), "one token per audience")
	again, _ := s.Token(ctx, "openbao.baokeeper.dev/apps/a")
	g.Expect(again).To(Equal(a1), "cached while most of its life is ahead")
	g.Expect(requests).To(HaveLen(2))

	clk.SetTime(clk.Now().Add(7 * time.Minute))
	still, _ := s.Token(ctx, "openbao.baokeeper.dev/apps/a")
	g.Expect(still).To(Equal(a1))
	clk.SetTime(clk.Now().Add(time.Minute + time.Second))
	renewed, _ := s.Token(ctx, "openbao.baokeeper.dev/apps/a")
	g.Expect(renewed).NotTo(Equal(a1), "renewed after 80 % of its 10 minutes")
	g.Expect(requests).To(Equal([]string{
		"baokeeper-system/baokeeper openbao.baokeeper.dev/apps/a",
		"baokeeper-system/baokeeper openbao.baokeeper.dev/apps/b",
		"baokeeper-system/baokeeper openbao.baokeeper.dev/apps/a",
	}))
}
