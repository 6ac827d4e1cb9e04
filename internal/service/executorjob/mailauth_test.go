package executorjob

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

const testOp = "1a2b3c4d"

var testKey = bytes.Repeat([]byte{7}, KeyBytes)

// step is a persisted current step.
func step(action baov1.StepAction, pod string, attempts int32) *baov1.UpgradeStep {
	return &baov1.UpgradeStep{Action: action, Pod: pod, Attempts: attempts}
}

func rolling(s *baov1.UpgradeStep) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Upgrade = &baov1.UpgradeStatus{ID: testOp, CurrentStep: s}
	}
}

func blueGreen(s *baov1.UpgradeStep) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		c.Status.Upgrade = &baov1.UpgradeStatus{ID: testOp, Strategy: baov1.BlueGreenStrategy}
		c.Status.BlueGreen = &baov1.BlueGreenStatus{CurrentStep: s,
			Blue: baov1.MemberSet{StatefulSet: "bao", Replicas: 3}, Green: baov1.MemberSet{StatefulSet: "bao-" + testOp, Replicas: 3}}
	}
}

func scalingTo(from, to int32, s *baov1.UpgradeStep) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		c.Spec.Replicas = &to
		c.Status.Scaling = &baov1.ScalingStatus{ID: testOp, FromReplicas: from, TargetReplicas: to, CurrentStep: s}
	}
}

func TestPlannedSteps(t *testing.T) {
	tests := []struct {
		name string
		opts []func(*baov1.OpenBaoCluster)
		want []PlannedStep
	}{
		{"an idle cluster plans nothing", nil, nil},
		{"a rolling step-down, attempt 2", []func(*baov1.OpenBaoCluster){rolling(step(baov1.StepTransferLeadership, "bao-0", 2))},
			[]PlannedStep{{Operation: testOp, Name: "bao-stepdown-1a2b3c4d-0-2", Step: StepStepDown, Member: "bao-0"}}},
		{"a rolling replacement promotes its member back", []func(*baov1.OpenBaoCluster){rolling(step(baov1.StepReplaceMember, "bao-1", 1))},
			[]PlannedStep{{Operation: testOp, Name: "bao-promote-1a2b3c4d-1-1", Step: StepPromote, Member: "bao-1"}}},
		{"a step whose attempt is not counted yet runs nothing", []func(*baov1.OpenBaoCluster){rolling(step(baov1.StepTransferLeadership, "bao-0", 0))}, nil},
		{"a snapshot step is no membership step", []func(*baov1.OpenBaoCluster){rolling(step(baov1.StepTakeSnapshot, "bao-0", 1))}, nil},
		{"a blue-green promotion of a green member", []func(*baov1.OpenBaoCluster){blueGreen(step(baov1.StepPromoteMember, "bao-1a2b3c4d-0", 1))},
			[]PlannedStep{{Operation: testOp, Name: "bao-promote-1a2b3c4d-bao-1a2b3c4d-0-1", Step: StepPromote, Member: "bao-1a2b3c4d-0"}}},
		{"a blue-green validation is a hook, not the executor's", []func(*baov1.OpenBaoCluster){blueGreen(step(baov1.StepValidate, "", 1))}, nil},
		{"a scaling removal", []func(*baov1.OpenBaoCluster){scalingTo(5, 3, step(baov1.StepRemoveMember, "bao-4", 1))},
			[]PlannedStep{{Operation: testOp, Name: "bao-removepeer-1a2b3c4d-4-1", Step: StepRemovePeer, Member: "bao-4"}}},
		{"a scaling demotion", []func(*baov1.OpenBaoCluster){scalingTo(5, 3, step(baov1.StepDemoteMember, "bao-4", 3))},
			[]PlannedStep{{Operation: testOp, Name: "bao-demote-1a2b3c4d-4-3", Step: StepDemote, Member: "bao-4"}}},
		{"an upgrade started before operation IDs has no mailed step", []func(*baov1.OpenBaoCluster){func(c *baov1.OpenBaoCluster) {
			c.Status.Upgrade = &baov1.UpgradeStatus{CurrentStep: step(baov1.StepTransferLeadership, "bao-0", 1)}
		}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(PlannedSteps(newCluster(tc.opts...))).To(Equal(tc.want))
		})
	}
}

// TestAuthorize holds the executor's side of docs/bad-inputs.md: a request runs only
// when it is the operation's current step as the status persists it.
func TestAuthorize(t *testing.T) {
	c := newCluster(scalingTo(5, 3, step(baov1.StepRemoveMember, "bao-4", 2)))
	planned := "bao-removepeer-1a2b3c4d-4-2"
	ok := Request{Operation: testOp, Step: StepRemovePeer, Member: "bao-4"}
	tests := []struct {
		name    string
		op      string
		reqName string
		req     Request
		wantErr string
	}{
		{"the persisted step", testOp, planned, ok, ""},
		{"an operation that is not in status (the forged remove-peer of issue 38)", testOp, "bao-removepeer-zz1-2-1",
			Request{Operation: "zz1", Step: StepRemovePeer, Member: "bao-2"}, `request bao-removepeer-zz1-2-1 is for operation "zz1", and this executor serves operation 1a2b3c4d only`},
		{"a member not in the plan", testOp, "bao-removepeer-1a2b3c4d-2-2",
			Request{Operation: testOp, Step: StepRemovePeer, Member: "bao-2"}, "is not the current step of operation 1a2b3c4d in the status of OpenBaoCluster ns/bao, which plans bao-removepeer-1a2b3c4d-4-2"},
		{"the planned name with another member", testOp, planned,
			Request{Operation: testOp, Step: StepRemovePeer, Member: "bao-0"}, `asks for removepeer of "bao-0", and the status plans removepeer of bao-4`},
		{"the planned name with another action", testOp, planned,
			Request{Operation: testOp, Step: StepStepDown, Member: "bao-4"}, `asks for stepdown of "bao-4"`},
		{"an earlier attempt", testOp, "bao-removepeer-1a2b3c4d-4-1", ok, "is not the current step"},
		{"a later attempt", testOp, "bao-removepeer-1a2b3c4d-4-3", ok, "is not the current step"},
		{"the executor of another operation", "5e6f7a8b", planned, ok, "this executor serves operation 5e6f7a8b only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := Authorize(c, tc.op, tc.reqName, tc.req)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Name).To(Equal(planned))
		})
	}
	g := NewWithT(t)
	_, err := Authorize(newCluster(), testOp, planned, ok)
	g.Expect(err).To(MatchError(ContainSubstring("which plans no membership step")), "an idle cluster runs nothing")
}

// TestStepArgsAreWhatTheStepsJobRuns: the executor builds a step's arguments itself,
// and they are exactly what the operation's Job would have run (its timeout capped at
// the step's own, its members the cluster's own).
func TestStepArgsAreWhatTheStepsJobRuns(t *testing.T) {
	tests := []struct {
		name string
		c    *baov1.OpenBaoCluster
		job  func(c *baov1.OpenBaoCluster) []string
	}{
		{"a rolling step-down", newCluster(rolling(step(baov1.StepTransferLeadership, "bao-0", 1))), func(c *baov1.OpenBaoCluster) []string {
			return StepDownJobFor(c, testOp, "bao-0", 1, "img", MemberAddresses(c)).Spec.Template.Spec.Containers[0].Args
		}},
		{"a blue-green promotion asks blue and green", newCluster(blueGreen(step(baov1.StepPromoteMember, "bao-1a2b3c4d-1", 1))), func(c *baov1.OpenBaoCluster) []string {
			addrs := append(SetAddresses(c, c.Status.BlueGreen.Blue), SetAddresses(c, c.Status.BlueGreen.Green)...)
			return PromoteJob(c, testOp, "bao-1a2b3c4d-1", 1, "img", addrs).Spec.Template.Spec.Containers[0].Args
		}},
		{"a scaling down from 5 asks every ordinal that may lead", newCluster(scalingTo(5, 3, step(baov1.StepRemoveMember, "bao-4", 1))), func(c *baov1.OpenBaoCluster) []string {
			return RemovePeerJob(c, testOp, "bao-4", 1, "img", MemberAddressesN(c, 5)).Spec.Template.Spec.Containers[0].Args
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			planned := PlannedSteps(tc.c)
			g.Expect(planned).To(HaveLen(1))
			args, err := StepArgs(tc.c, planned[0])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(append([]string{"executor"}, args...)).To(Equal(tc.job(tc.c)))
			for _, a := range strings.Split(args[4], ",") {
				g.Expect(a).To(MatchRegexp(`^https://bao(-1a2b3c4d)?-\d\.bao-internal\.ns\.svc:8200$`), "the cluster's own members only")
			}
		})
	}
}

func signedRequest(name string, r Request) string {
	b, _ := json.Marshal(r.Signed(testKey, name))
	return string(b)
}

func signedResult(name string, r Result) string {
	b, _ := json.Marshal(r.Signed(testKey, name))
	return string(b)
}

// TestTrusted holds the operator's side of docs/bad-inputs.md: it counts only what it
// and its executor signed.
func TestTrusted(t *testing.T) {
	c := newCluster()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	name := "bao-removepeer-1a2b3c4d-4-1"
	req := Request{Operation: testOp, Step: StepRemovePeer, Member: "bao-4", At: now, Deadline: time.Minute}
	res := Result{Operation: testOp, ExitCode: 0, Output: "{}", Executor: "bao-executor-1a2b3c4d-x7k2p", StartedAt: now, FinishedAt: now}
	keys := map[string][]byte{testOp: testKey}
	forgedMember := req
	forgedMember.Member = "bao-2"
	altered, _ := json.Marshal(Request{Operation: testOp, Step: StepRemovePeer, Member: "bao-2", At: now, Deadline: time.Minute, MAC: req.Signed(testKey, name).MAC})
	otherKey := bytes.Repeat([]byte{9}, KeyBytes)
	unsigned, _ := json.Marshal(req)
	wrongKey, _ := json.Marshal(req.Signed(otherKey, name))
	tests := []struct {
		name        string
		data        map[string]string
		wantReqs    []string
		wantResults []string
		wantRefused map[string]string
	}{
		{name: "the operator's request and the executor's answer", data: map[string]string{
			RequestKey(name): signedRequest(name, req), ResultKey(name): signedResult(name, res)},
			wantReqs: []string{name}, wantResults: []string{name}},
		{name: "an unsigned request", data: map[string]string{RequestKey(name): string(unsigned)},
			wantRefused: map[string]string{RequestKey(name): "does not verify"}},
		{name: "a request signed with another key", data: map[string]string{RequestKey(name): string(wrongKey)},
			wantRefused: map[string]string{RequestKey(name): "does not verify"}},
		{name: "the operator's request with its member changed", data: map[string]string{RequestKey(name): string(altered)},
			wantRefused: map[string]string{RequestKey(name): "does not verify"}},
		{name: "a signed request moved under another step's name", data: map[string]string{RequestKey("bao-removepeer-1a2b3c4d-2-1"): signedRequest(name, req)},
			wantRefused: map[string]string{RequestKey("bao-removepeer-1a2b3c4d-2-1"): "does not verify"}},
		{name: "a request of an operation baokeeper did not start", data: map[string]string{RequestKey("bao-removepeer-zz1-2-1"): signedRequest("bao-removepeer-zz1-2-1", Request{Operation: "zz1", Step: StepRemovePeer, Member: "bao-2"})},
			wantRefused: map[string]string{RequestKey("bao-removepeer-zz1-2-1"): `operation "zz1" has no mailbox key`}},
		{name: "a forged failure answer", data: map[string]string{RequestKey(name): signedRequest(name, req), ResultKey(name): `{"operation":"1a2b3c4d","exitCode":1}`},
			wantReqs: []string{name}, wantRefused: map[string]string{ResultKey(name): "no executor of baokeeper wrote it"}},
		{name: "an answer signed but naming another writer", data: map[string]string{RequestKey(name): signedRequest(name, req),
			ResultKey(name): signedResult(name, Result{Operation: testOp, Executor: "intruder", StartedAt: now, FinishedAt: now})},
			wantReqs: []string{name}, wantRefused: map[string]string{ResultKey(name): `names "intruder" as its writer`}},
		{name: "an answer to no request", data: map[string]string{ResultKey(name): signedResult(name, res)},
			wantRefused: map[string]string{ResultKey(name): "answers no request"}},
		{name: "keys that are no request or answer", data: map[string]string{"zz1": "x", "request.Not_A_Name": "{}", "request.x": strings.Repeat("a", 9000),
			"request.y": `{"operation":"1a2b3c4d","args":["remove-peer"]}`},
			wantRefused: map[string]string{"zz1": "keys only", "request.Not_A_Name": "is not a step name", "request.x": "more than any entry",
				"request.y": `unknown field "args"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			m, refused := Trusted(c, ReadMailbox(&corev1.ConfigMap{Data: tc.data}), keys)
			g.Expect(sortedNames(m.Requests)).To(Equal(tc.wantReqs))
			g.Expect(sortedNames(m.Results)).To(Equal(tc.wantResults))
			got := map[string]string{}
			for _, r := range refused {
				got[r.Key] = r.Reason
			}
			g.Expect(got).To(HaveLen(len(tc.wantRefused)))
			for k, why := range tc.wantRefused {
				g.Expect(got).To(HaveKeyWithValue(k, ContainSubstring(why)))
			}
		})
	}
}

func sortedNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	if out == nil {
		return nil
	}
	slices.Sort(out)
	return out
}

// FuzzMailbox writes anything under any key next to the operator's one request, and
// checks that nothing but that request is ever trusted or authorized.
func FuzzMailbox(f *testing.F) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	name := "bao-removepeer-1a2b3c4d-4-1"
	req := Request{Operation: testOp, Step: StepRemovePeer, Member: "bao-4", At: now, Deadline: time.Minute}
	f.Add("request.bao-removepeer-zz1-2-1", `{"operation":"zz1","step":"removepeer","member":"bao-2"}`)
	f.Add("request."+name, `{"operation":"1a2b3c4d","step":"removepeer","member":"bao-2","mac":"00"}`)
	f.Add("result."+name, `{"operation":"1a2b3c4d","exitCode":1,"executor":"bao-executor-1a2b3c4d-x"}`)
	f.Add("request.bao-stepdown-1a2b3c4d-0-1", signedRequest("bao-stepdown-1a2b3c4d-0-1", Request{Operation: testOp, Step: StepStepDown, Member: "bao-0"}))
	f.Add("request.", "")
	f.Add("result.\u00e9", "null")
	c := newCluster(scalingTo(5, 3, step(baov1.StepRemoveMember, "bao-4", 1)))
	f.Fuzz(func(t *testing.T, key, value string) {
		data := map[string]string{RequestKey(name): signedRequest(name, req)}
		if key == RequestKey(name) {
			return // overwriting the operator's own entry is covered by TestTrusted
		}
		data[key] = value
		m, _ := Trusted(c, ReadMailbox(&corev1.ConfigMap{Data: data}), map[string][]byte{testOp: testKey})
		for n, r := range m.Requests {
			if n != name && n != strings.TrimPrefix(key, RequestKeyPrefix) {
				t.Fatalf("trusted a request nobody wrote: %s", n)
			}
			if n != name {
				// Signed by the test itself (a seed): it must still not be authorized.
				if _, err := Authorize(c, testOp, n, r); err == nil {
					t.Fatalf("authorized %s, which is not the persisted step", n)
				}
			}
		}
		if len(m.Results) > 0 {
			t.Fatalf("trusted an answer no executor signed: %v", m.Results)
		}
	})
}
