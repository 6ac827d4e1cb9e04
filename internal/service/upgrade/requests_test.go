package upgrade

import (
	"testing"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestPendingRequests(t *testing.T) {
	cases := []struct {
		name     string
		reason   string
		ann      map[string]string
		handled  baov1.RequestsStatus
		want     []Request
		wantErrs int
	}{
		{name: "none", reason: "no annotation, nothing to do", ann: nil},
		{name: "new retry", reason: "a value never handled is a request",
			ann: map[string]string{baov1.AnnotationRetry: "1"}, want: []Request{{RequestRetry, "1"}}},
		{name: "already handled", reason: "edge-triggered: the same value is never acted on twice",
			ann: map[string]string{baov1.AnnotationRetry: "1"}, handled: baov1.RequestsStatus{Retry: "1"}},
		{name: "changed value", reason: "a new value is a new request",
			ann: map[string]string{baov1.AnnotationRetry: "2"}, handled: baov1.RequestsStatus{Retry: "1"}, want: []Request{{RequestRetry, "2"}}},
		{name: "fixed order", reason: "break-glass acknowledgement is considered before anything else",
			ann:  map[string]string{baov1.AnnotationPromote: "p", baov1.AnnotationBreakGlassAck: "n", baov1.AnnotationRetry: "r"},
			want: []Request{{RequestBreakGlassAck, "n"}, {RequestRetry, "r"}, {RequestPromote, "p"}}},
		{name: "invalid value", reason: "spaces and quotes are refused with an error, not acted on",
			ann: map[string]string{baov1.AnnotationRollback: "please roll back"}, wantErrs: 1},
		{name: "emptied value", reason: "clearing a handled value is not a token: say so instead of acting",
			ann: map[string]string{baov1.AnnotationPromote: ""}, handled: baov1.RequestsStatus{Promote: "p0"}, wantErrs: 1},
		{name: "empty value never handled", reason: "an empty annotation on a fresh cluster requests nothing",
			ann: map[string]string{baov1.AnnotationPromote: ""}},
		{name: "unrelated annotations", reason: "only baokeeper's controls count",
			ann: map[string]string{"baokeeper.dev/other": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, errs := PendingRequests(tc.ann, tc.handled)
			g.Expect(got).To(Equal(tc.want), tc.reason)
			g.Expect(errs).To(HaveLen(tc.wantErrs), tc.reason)
			for _, e := range errs {
				g.Expect(e.Error()).To(ContainSubstring("annotation baokeeper.dev/"), "errors name the annotation")
			}
		})
	}
}

func TestMarkHandledMakesRequestsEdgeTriggered(t *testing.T) {
	g := NewWithT(t)
	ann := map[string]string{baov1.AnnotationRetry: "t1", baov1.AnnotationPromote: "p1", baov1.AnnotationRollback: "r1", baov1.AnnotationBreakGlassAck: "n1"}
	var st baov1.RequestsStatus
	reqs, _ := PendingRequests(ann, st)
	g.Expect(reqs).To(HaveLen(4))
	for _, r := range reqs {
		MarkHandled(&st, r)
	}
	again, errs := PendingRequests(ann, st)
	g.Expect(again).To(BeEmpty())
	g.Expect(errs).To(BeEmpty())
}

func FuzzPendingRequests(f *testing.F) {
	for _, s := range []string{"", "1", "2026-11-29T10:00:00Z", "a b", "x\ny", "\"", "ok.v1_2-3+4:5", string(make([]byte, 200))} {
		f.Add(s, "1")
	}
	f.Fuzz(func(t *testing.T, value, handled string) {
		ann := map[string]string{baov1.AnnotationRetry: value}
		reqs, errs := PendingRequests(ann, baov1.RequestsStatus{Retry: handled})
		if value == handled {
			if len(reqs)+len(errs) != 0 {
				t.Fatalf("a handled value produced %v %v", reqs, errs)
			}
			return
		}
		if len(reqs)+len(errs) != 1 {
			t.Fatalf("want exactly one request or error for a new value, got %v %v", reqs, errs)
		}
		if len(reqs) == 1 {
			if ValidateRequestValue(reqs[0].Value) != nil || reqs[0].Value != value {
				t.Fatalf("accepted an invalid or altered value %q", reqs[0].Value)
			}
			var st baov1.RequestsStatus
			MarkHandled(&st, reqs[0])
			if st.Retry != value {
				t.Fatalf("MarkHandled did not record %q", value)
			}
		}
	})
}

func TestInvalidRequestIsReportedOnce(t *testing.T) {
	g := NewWithT(t)
	ann := map[string]string{baov1.AnnotationRetry: "Tue Dec  1 13:57:12 UTC 2026"}
	var st baov1.RequestsStatus
	reqs, errs := PendingRequests(ann, st)
	g.Expect(reqs).To(BeEmpty())
	g.Expect(errs).To(HaveLen(1), "the value of date, with spaces, is refused")
	g.Expect(errs[0].Error()).To(ContainSubstring("use a token such as $(date +%s)"))
	MarkInvalidHandled(&st, errs[0])
	g.Expect(st.Retry).To(HavePrefix("invalid-"), "the value itself is not stored")
	again, errs2 := PendingRequests(ann, st)
	g.Expect(again).To(BeEmpty())
	g.Expect(errs2).To(BeEmpty(), "bug: an invalid value gave a Warning on every pass; it is reported once")
	ann[baov1.AnnotationRetry] = "1764597432"
	fixed, _ := PendingRequests(ann, st)
	g.Expect(fixed).To(Equal([]Request{{Kind: RequestRetry, Value: "1764597432"}}), "a corrected value is acted on")
}

func TestRequestRefusal(t *testing.T) {
	rolling := &baov1.OpenBaoCluster{Status: baov1.OpenBaoClusterStatus{Upgrade: &baov1.UpgradeStatus{
		Strategy: baov1.RollingUpdateStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1"}}}
	idle := &baov1.OpenBaoCluster{}
	blueGreen := func(phase baov1.BlueGreenPhase, promotion baov1.PromotionState) *baov1.OpenBaoCluster {
		return &baov1.OpenBaoCluster{Status: baov1.OpenBaoClusterStatus{
			Upgrade:   &baov1.UpgradeStatus{Strategy: baov1.BlueGreenStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1"},
			BlueGreen: &baov1.BlueGreenStatus{Phase: phase, Promotion: promotion, Green: baov1.MemberSet{StatefulSet: "bao-1a2b3c4d"}},
		}}
	}
	cases := []struct {
		name, reason string
		req          Request
		c            *baov1.OpenBaoCluster
		want         string
	}{
		{"promote during rolling", "bug: the answer said no upgrade waits, while one runs", Request{RequestPromote, "1"}, rolling,
			"it applies to blue-green upgrades only, and the upgrade in progress (2.4.0 to 2.4.1) is a rolling upgrade"},
		{"rollback during rolling", "says how a rolling upgrade is undone instead", Request{RequestRollback, "1"}, rolling, "see status.upgrade.plan.undoPath"},
		{"promote when idle", "nothing runs", Request{RequestPromote, "1"}, idle, "none runs"},
		{"retry while running", "nothing failed", Request{RequestRetry, "1"}, rolling, "nothing has failed"},
		{"retry when idle", "nothing runs", Request{RequestRetry, "1"}, idle, "nothing to retry"},
		{"promote before the blue-green hold", "a token set before the hold releases nothing, and says when a new one will",
			Request{RequestPromote, "early"}, blueGreen(baov1.BlueGreenSync, baov1.PromotionPending),
			"the blue-green upgrade is in phase Sync and does not wait for promotion yet; a value set before the hold, or left from an earlier upgrade, releases nothing"},
		{"promote after the release", "a second value does nothing more", Request{RequestPromote, "again"},
			blueGreen(baov1.BlueGreenPromoteGreen, baov1.PromotionRequested), "green bao-1a2b3c4d is already released for promotion (Requested)"},
		{"rollback when idle", "nothing runs to roll back", Request{RequestRollback, "1"}, idle, "none runs"},
		{"ack without break-glass", "nothing to acknowledge", Request{RequestBreakGlassAck, "n"}, idle, "break-glass is not active"},
	}
	for _, tc := range cases {
		NewWithT(t).Expect(RequestRefusal(tc.req, tc.c)).To(ContainSubstring(tc.want), tc.reason)
	}
}

func TestSentenceKeepsNames(t *testing.T) {
	cases := []struct{ in, want, reason string }{
		{"bao-0 is a non-voter", "bao-0 is a non-voter", "a member's name keeps its case"},
		{"promoting bao-1 to voter", "Promoting bao-1 to voter", "a sentence starts with a capital"},
		{"bao-2a1b3c4d-0 left Raft", "bao-2a1b3c4d-0 left Raft", "a green member's name keeps its case"},
		{"", "", "nothing stays nothing"},
	}
	for _, tc := range cases {
		if got := Sentence(tc.in); got != tc.want {
			t.Errorf("Sentence(%q) = %q, want %q: %s", tc.in, got, tc.want, tc.reason)
		}
	}
}
