package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
)

// clusterMailbox is kubeMailbox with the cluster read from a fixed object (the fake
// clientset has no REST client for the OpenBaoCluster API).
type clusterMailbox struct {
	kubeMailbox
	c *baov1.OpenBaoCluster
}

func (m clusterMailbox) cluster(context.Context) (*baov1.OpenBaoCluster, error) {
	return m.c.DeepCopy(), nil
}

// scalingCluster is apps/bao scaling from 3 to 4 members, its current step the
// promotion of bao-3 (attempt 1) of operation op1.
func scalingCluster() *baov1.OpenBaoCluster {
	four := int32(4)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao"}, Spec: baov1.OpenBaoClusterSpec{Replicas: &four}}
	c.Status.Scaling = &baov1.ScalingStatus{ID: "op1", FromReplicas: 3, TargetReplicas: 4,
		CurrentStep: &baov1.UpgradeStep{Action: baov1.StepPromoteMember, Pod: "bao-3", Attempts: 1}}
	return c
}

var serveKey = bytes.Repeat([]byte{3}, executorjob.KeyBytes)

// TestServeRunsOnlyThePersistedStep: of everything in the mailbox, the executor runs
// the one request the operator signed that is the step the status persists, with
// arguments it builds itself; forged requests (an invented operation, a member not in
// the plan, connection flags of their own) run nothing and get no answer.
func TestServeRunsOnlyThePersistedStep(t *testing.T) {
	g := NewWithT(t)
	now := time.Now().UTC()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao-executor"}, Data: map[string]string{}}
	put := func(key string, v any) {
		b, err := json.Marshal(v)
		g.Expect(err).NotTo(HaveOccurred())
		cm.Data[key] = string(b)
	}
	signed := func(name string, r executorjob.Request) executorjob.Request { return r.Signed(serveKey, name) }
	planned := "bao-promote-op1-3-1"
	put("request."+planned, signed(planned, executorjob.Request{Operation: "op1", Step: "promote", Member: "bao-3", At: now, Deadline: time.Minute}))
	// The forged remove-peer of issue 38: an invented operation, unsigned.
	cm.Data["request.bao-executor-zz1"] = `{"operation":"op1","step":"removepeer","member":"bao-2","at":"2026-12-07T12:00:00Z","deadline":0}`
	// Signed with the operation's key (a Secret reader could), but not the persisted step.
	put("request.bao-removepeer-op1-2-1", signed("bao-removepeer-op1-2-1", executorjob.Request{Operation: "op1", Step: "removepeer", Member: "bao-2", At: now}))
	put("request.bao-demote-op1-1-1", signed("bao-demote-op1-1-1", executorjob.Request{Operation: "op1", Step: "demote", Member: "bao-1", At: now}))
	// Connection flags of its own: a request that carries args does not even decode.
	cm.Data["request.bao-stepdown-op1-0-1"] = `{"operation":"op1","step":"stepdown","member":"bao-0","args":["step-down","--members","https://attacker:8200","--timeout","8760h"]}`

	cs := fake.NewClientset(cm)
	bao := &fakeBao{voters: map[string]bool{"bao-0": true, "bao-1": true, "bao-2": true, "bao-3": false}}
	var stderr bytes.Buffer
	var ran [][]string
	env := executorEnv{stdout: &bytes.Buffer{}, stderr: &stderr, clock: clock.RealClock{},
		newClient: func(openbao.MemberConfig) (openbao.MemberClient, error) { return bao, nil }}
	inProcess := runInProcess(env)
	run := func(ctx context.Context, args []string) (int, string, string) {
		ran = append(ran, args)
		return inProcess(ctx, args)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := serveFlags{namespace: "ns", cluster: "bao", mailbox: "bao-executor", operation: "op1", keyFile: "unused", idleExit: 500 * time.Millisecond}
	api := clusterMailbox{kubeMailbox{cs: cs, namespace: "ns", name: "bao-executor", clusterName: "bao"}, scalingCluster()}
	code := serve(ctx, f, serveKey, api, "bao-executor-op1-abcde", run, env)
	g.Expect(code).To(Equal(exitOK), "an idle executor exits 0; stderr: %s", stderr.String())
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "it exits on its own once idle")

	got, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, "bao-executor", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	c := scalingCluster()
	m, _ := executorjob.Trusted(c, executorjob.ReadMailbox(got), map[string][]byte{"op1": serveKey})
	g.Expect(m.Results).To(HaveLen(1), "one answer, signed, to the one persisted step")
	promoted := m.Results[planned]
	g.Expect(promoted.ExitCode).To(Equal(exitOK))
	g.Expect(promoted.Output).To(Equal(`{"action":"promote","member":"bao-3","leader":"bao-0","benign":false,"voter":true,"present":true}`))
	g.Expect(promoted.Executor).To(Equal("bao-executor-op1-abcde"))
	g.Expect(ran).To(Equal([][]string{{"promote", "--member", "bao-3", "--members", strings.Join(executorjob.MemberAddressesN(c, 4), ","),
		"--ca-file", executorjob.CAFile, "--token-file", executorjob.TokenFile, "--timeout", executorjob.MembershipTimeout.String()}}),
		"the arguments are the executor's own: the cluster's members, the pod's files, the step's timeout")
	g.Expect(bao.membership).To(Equal([]string{"promote bao-3 via bao-0"}), "one Raft change: the persisted step")
	for _, k := range []string{"result.bao-executor-zz1", "result.bao-removepeer-op1-2-1", "result.bao-demote-op1-1-1", "result.bao-stepdown-op1-0-1"} {
		g.Expect(got.Data).NotTo(HaveKey(k), "a refused request gets no answer: the operator removes and reports it")
	}
}

// TestServeKeepsItsAnswers: an answer already there (an earlier executor's) is not run
// again; an answer of this executor that someone removes or alters is written again,
// not run again.
func TestServeKeepsItsAnswers(t *testing.T) {
	g := NewWithT(t)
	now := time.Now().UTC()
	planned := "bao-promote-op1-3-1"
	req, _ := json.Marshal(executorjob.Request{Operation: "op1", Step: "promote", Member: "bao-3", At: now, Deadline: time.Minute}.Signed(serveKey, planned))
	earlier, _ := json.Marshal(executorjob.Result{Operation: "op1", Executor: "bao-executor-op1-earlier", StartedAt: now, FinishedAt: now}.Signed(serveKey, planned))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao-executor"},
		Data: map[string]string{"request." + planned: string(req), "result." + planned: string(earlier)}}
	cs := fake.NewClientset(cm)
	var runs int
	run := func(context.Context, []string) (int, string, string) { runs++; return exitOK, "{}", "" }
	env := executorEnv{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, clock: clock.RealClock{}}
	f := serveFlags{namespace: "ns", cluster: "bao", mailbox: "bao-executor", operation: "op1", idleExit: 300 * time.Millisecond}
	api := clusterMailbox{kubeMailbox{cs: cs, namespace: "ns", name: "bao-executor", clusterName: "bao"}, scalingCluster()}
	g.Expect(serve(context.Background(), f, serveKey, api, "bao-executor-op1-abcde", run, env)).To(Equal(exitOK))
	g.Expect(runs).To(BeZero(), "an answered request is not run again")

	_, _, lost := lostAnswer(executorjob.Mailbox{Requests: map[string]executorjob.Request{planned: {}}, Results: map[string]executorjob.Result{}},
		map[string]executorjob.Result{planned: {MAC: "m1"}})
	g.Expect(lost).To(BeTrue(), "its answer removed: written again")
	_, _, lost = lostAnswer(executorjob.Mailbox{Requests: map[string]executorjob.Request{planned: {}}, Results: map[string]executorjob.Result{planned: {MAC: "forged"}}},
		map[string]executorjob.Result{planned: {MAC: "m1"}})
	g.Expect(lost).To(BeTrue(), "its answer altered: written again")
	var name string
	var res executorjob.Result
	name, res, lost = lostAnswer(executorjob.Mailbox{Requests: map[string]executorjob.Request{planned: {}}, Results: map[string]executorjob.Result{planned: {MAC: "m1"}}},
		map[string]executorjob.Result{planned: {MAC: "m1"}})
	g.Expect(lost).To(BeFalse(), "its answer is there as written: %s %v", name, res)
	_, _, lost = lostAnswer(executorjob.Mailbox{Requests: map[string]executorjob.Request{}, Results: map[string]executorjob.Result{}},
		map[string]executorjob.Result{planned: {MAC: "m1"}})
	g.Expect(lost).To(BeFalse(), "the operator dropped the request: nothing to answer")
}

func TestRunSubprocessReportsHowTheActionEnded(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name       string
		argv0      string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"success: its JSON line", script("ok", `echo "{\"args\":\"$*\"}"`), exitOK, `{"args":"executor promote --member bao-3"}` + "\n", ""},
		{"a retryable failure: its exit code and log", script("retry", `echo "gave up" >&2; exit 2`), exitRetryable, "", "gave up"},
		{"killed right after acting: 128+9, and it says so", script("killed", `kill -9 $$`), 137, "", "the action was killed by killed"},
		{"an entrypoint that cannot run: fatal", filepath.Join(dir, "missing"), exitFatal, "", "failed to run the action"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			code, stdout, stderr := runSubprocess(tc.argv0)(context.Background(), []string{"promote", "--member", "bao-3"})
			g.Expect(code).To(Equal(tc.wantCode), stderr)
			g.Expect(stdout).To(Equal(tc.wantStdout))
			g.Expect(stderr).To(ContainSubstring(tc.wantStderr))
		})
	}
}
