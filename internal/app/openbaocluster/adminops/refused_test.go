package adminops

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
)

func TestRecordRefused(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "bao"}}
	g := NewWithT(t)

	g.Expect(recordRefused(c, nil, now)).To(BeEmpty(), "nothing refused: no event")
	g.Expect(c.Status.RefusedInput).To(BeNil(), "and nothing in status")
	ok, reason, _ := refusedCondition(c, now)
	g.Expect(ok).To(BeFalse())
	g.Expect(reason).To(Equal(baov1.ReasonNoInputRefused))

	msg := recordRefused(c, []executorjob.Refusal{{Key: "request.zz1", Reason: `operation "zz1" has no mailbox key: baokeeper did not start it`}}, now)
	g.Expect(msg).To(ContainSubstring(`Refused and removed 1 entries of the executor mailbox ConfigMap apps/bao-executor that baokeeper did not write: request.zz1: operation "zz1" has no mailbox key`))
	g.Expect(msg).To(ContainSubstring("None of them ran"))
	g.Expect(c.Status.RefusedInput.Count).To(BeEquivalentTo(1))
	g.Expect(c.Status.RefusedInput.Last).To(ConsistOf(HaveField("Source", "ConfigMap bao-executor, key request.zz1")))
	ok, reason, cmsg := refusedCondition(c, now.Add(59*time.Minute))
	g.Expect(ok).To(BeTrue())
	g.Expect(reason).To(Equal(baov1.ReasonMailboxEntryRefused))
	g.Expect(cmsg).To(ContainSubstring("ConfigMap bao-executor, key request.zz1"))
	ok, _, _ = refusedCondition(c, now.Add(time.Hour))
	g.Expect(ok).To(BeFalse(), "an hour without a refusal: the condition clears")

	flood := func(n int) []executorjob.Refusal {
		var out []executorjob.Refusal
		for i := range n {
			out = append(out, executorjob.Refusal{Key: fmt.Sprintf("request.flood-%03d", i), Reason: strings.Repeat("x", 600)})
		}
		return out
	}
	msg = recordRefused(c, flood(500), now.Add(time.Minute))
	g.Expect(msg).To(ContainSubstring("Refused and removed 500 entries"))
	g.Expect(msg).To(ContainSubstring("(and 495 more)"), "a flood is one event, bounded")
	g.Expect(len(msg)).To(BeNumerically("<", 1500))
	g.Expect(c.Status.RefusedInput.Count).To(BeEquivalentTo(501))
	g.Expect(c.Status.RefusedInput.Last).To(HaveLen(maxRefusedShown), "status keeps the newest few")
	g.Expect(c.Status.RefusedInput.Last[0].Source).To(HaveSuffix("request.flood-000"))
	for _, r := range c.Status.RefusedInput.Last {
		g.Expect(len(r.Reason)).To(BeNumerically("<=", 512), "within the CRD's MaxLength")
	}
}
