package kubectlbao

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func micro(m int) metav1.MicroTime {
	return metav1.NewMicroTime(testNow().Add(-time.Duration(m) * time.Minute))
}

func TestTimeline(t *testing.T) {
	cases := []struct {
		reason string
		events []corev1.Event
		want   []string // reasons, in order
		check  func(g Gomega, es []TimelineEntry)
	}{
		{reason: "events.k8s.io events order by eventTime, whatever the list order",
			events: []corev1.Event{
				{ObjectMeta: metav1.ObjectMeta{Name: "c"}, EventTime: micro(1), Reason: "UpgradeCompleted"},
				{ObjectMeta: metav1.ObjectMeta{Name: "a"}, EventTime: micro(9), Reason: "UpgradePlanned"},
				{ObjectMeta: metav1.ObjectMeta{Name: "b"}, EventTime: micro(5), Reason: "MemberUpgraded"},
			},
			want: []string{"UpgradePlanned", "MemberUpgraded", "UpgradeCompleted"}},
		{reason: "core events order by firstTimestamp, then creation time",
			events: []corev1.Event{
				{ObjectMeta: metav1.ObjectMeta{Name: "x", CreationTimestamp: *minutesAgo(2)}, Reason: "Late"},
				{ObjectMeta: metav1.ObjectMeta{Name: "y"}, FirstTimestamp: *minutesAgo(8), LastTimestamp: *minutesAgo(3), Count: 4, Reason: "Early"},
			},
			want: []string{"Early", "Late"},
			check: func(g Gomega, es []TimelineEntry) {
				g.Expect(es[0].Count).To(Equal(int32(4)))
				g.Expect(es[0].Last.Time).To(Equal(minutesAgo(3).Time))
				g.Expect(es[1].Last).To(BeNil(), "an event that happened once has no last time")
			}},
		{reason: "a series counts and ends at its last observation",
			events: []corev1.Event{{ObjectMeta: metav1.ObjectMeta{Name: "s"}, EventTime: micro(10), Reason: "RequestRefused",
				Series: &corev1.EventSeries{Count: 3, LastObservedTime: micro(2)}, ReportingController: "baokeeper-upgrade"}},
			want: []string{"RequestRefused"},
			check: func(g Gomega, es []TimelineEntry) {
				g.Expect(es[0].Count).To(Equal(int32(3)))
				g.Expect(es[0].Last.Time).To(BeTemporally("==", micro(2).Time))
				g.Expect(es[0].Reporter).To(Equal("baokeeper-upgrade"))
			}},
		{reason: "events at the same time keep the order of their names",
			events: []corev1.Event{
				{ObjectMeta: metav1.ObjectMeta{Name: "bao.2"}, EventTime: micro(4), Reason: "Second"},
				{ObjectMeta: metav1.ObjectMeta{Name: "bao.1"}, EventTime: micro(4), Reason: "First"},
			},
			want: []string{"First", "Second"}},
		{reason: "no events", events: nil, want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			es := Timeline(tc.events)
			got := []string{}
			for _, e := range es {
				got = append(got, e.Reason)
			}
			g.Expect(got).To(Equal(tc.want))
			if tc.check != nil {
				tc.check(g, es)
			}
		})
	}
}

func TestRenderTimeline(t *testing.T) {
	g := NewWithT(t)
	es := Timeline([]corev1.Event{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, EventTime: micro(9), Type: "Normal", Reason: "UpgradePlanned", Message: "Upgrading from 2.4.0 to 2.4.1"},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, EventTime: micro(5), Type: "Warning", Reason: "RequestRefused", Message: "Ignoring\nbaokeeper.dev/promote",
			Series: &corev1.EventSeries{Count: 2, LastObservedTime: micro(3)}},
	})
	var b bytes.Buffer
	g.Expect(RenderTimeline(&b, "vault/bao", es, testNow())).To(Succeed())
	g.Expect(b.String()).To(Equal("Events of openbaocluster vault/bao, oldest first:\n" +
		"TIME                  AGE                      TYPE     REASON          MESSAGE\n" +
		"2026-12-01T09:51:00Z  9m ago                   Normal   UpgradePlanned  Upgrading from 2.4.0 to 2.4.1\n" +
		"2026-12-01T09:55:00Z  5m ago, x2, last 3m ago  Warning  RequestRefused  Ignoring baokeeper.dev/promote\n"))

	b.Reset()
	g.Expect(RenderTimeline(&b, "vault/bao", nil, testNow())).To(Succeed())
	g.Expect(b.String()).To(ContainSubstring("No events recorded for openbaocluster vault/bao"))
}

func TestPrintObject(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-bao/alice"}}
	var b bytes.Buffer
	g.Expect(PrintObject(&b, OutputJSON, Printable(c))).To(Succeed())
	got := &baov1.OpenBaoCluster{}
	g.Expect(json.Unmarshal(b.Bytes(), got)).To(Succeed())
	g.Expect(got.Kind).To(Equal("OpenBaoCluster"))
	g.Expect(got.APIVersion).To(Equal("openbao.baokeeper.dev/v1alpha1"))
	g.Expect(got.ManagedFields).To(BeEmpty(), "like kubectl get -o, without managedFields")
	g.Expect(got.Status.Leader).To(Equal("bao-0"))
	g.Expect(c.ManagedFields).To(HaveLen(1), "the read object is not changed")

	b.Reset()
	g.Expect(PrintObject(&b, OutputYAML, &Plan{Cluster: "vault/bao", TargetVersion: "2.4.1"})).To(Succeed())
	p := &Plan{}
	g.Expect(yaml.Unmarshal(b.Bytes(), p)).To(Succeed())
	g.Expect(p.TargetVersion).To(Equal("2.4.1"))

	g.Expect(ValidateOutput("wide")).To(MatchError(ContainSubstring(`unknown output format "wide": use -o json or -o yaml`)))
	g.Expect(PrintObject(&b, "wide", p)).NotTo(Succeed())
}
