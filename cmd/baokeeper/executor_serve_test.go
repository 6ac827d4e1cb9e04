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

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
)

func TestServeAnswersItsOperationsRequestsOnce(t *testing.T) {
	g := NewWithT(t)
	now := time.Now().UTC()
	conn := []string{"--members", strings.Join(testMembers, ","), "--ca-file", "/ca.crt", "--token-file", "/token"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "bao-executor"}, Data: map[string]string{}}
	put := func(key string, v any) {
		b, err := json.Marshal(v)
		g.Expect(err).NotTo(HaveOccurred())
		cm.Data[key] = string(b)
	}
	put("request.bao-promote-op1-3-1", executorjob.Request{Operation: "op1", Step: "promote", Member: "bao-3",
		Args: append([]string{"promote", "--member", "bao-3"}, conn...), At: now, Deadline: time.Minute})
	put("request.bao-snapshot-op1-0-1", executorjob.Request{Operation: "op1", Step: "snapshot", Args: []string{"snapshot"}, At: now})
	put("request.bao-demote-op2-2-1", executorjob.Request{Operation: "op2", Step: "demote", Member: "bao-2",
		Args: append([]string{"demote", "--member", "bao-2"}, conn...), At: now})
	put("request.bao-demote-op1-1-1", executorjob.Request{Operation: "op1", Step: "demote", Member: "bao-1",
		Args: append([]string{"demote", "--member", "bao-1"}, conn...), At: now})
	put("result.bao-demote-op1-1-1", executorjob.Result{ExitCode: 0, Executor: "an earlier executor", FinishedAt: now})

	cs := fake.NewClientset(cm)
	bao := &fakeBao{voters: map[string]bool{"bao-0": true, "bao-1": true, "bao-2": true, "bao-3": false}}
	var stderr bytes.Buffer
	env := executorEnv{stdout: &bytes.Buffer{}, stderr: &stderr, clock: clock.RealClock{},
		newClient: func(openbao.MemberConfig) (openbao.MemberClient, error) { return bao, nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := serve(ctx, serveFlags{namespace: "apps", mailbox: "bao-executor", operation: "op1", idleExit: 500 * time.Millisecond},
		kubeMailbox{cs: cs, namespace: "apps", name: "bao-executor"}, "bao-executor-op1-abcde", runInProcess(env), env)
	g.Expect(code).To(Equal(exitOK), "an idle executor exits 0; stderr: %s", stderr.String())
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "it exits on its own once idle")

	got, err := cs.CoreV1().ConfigMaps("apps").Get(ctx, "bao-executor", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	m := executorjob.ReadMailbox(got)
	g.Expect(m.Unreadable).To(BeEmpty())
	promoted := m.Results["bao-promote-op1-3-1"]
	g.Expect(promoted.ExitCode).To(Equal(exitOK))
	g.Expect(promoted.Output).To(Equal(`{"action":"promote","member":"bao-3","leader":"bao-0","benign":false,"voter":true,"present":true}`))
	g.Expect(promoted.Executor).To(Equal("bao-executor-op1-abcde"))
	g.Expect(m.Results["bao-snapshot-op1-0-1"].ExitCode).To(Equal(exitFatal), "a request for anything but a membership step is refused")
	g.Expect(m.Results["bao-snapshot-op1-0-1"].Message).To(ContainSubstring(`this executor runs only step-down, promote, demote, remove-peer, not ["snapshot"]`))
	g.Expect(m.Results).NotTo(HaveKey("bao-demote-op2-2-1"), "another operation's request is not this executor's")
	g.Expect(m.Results["bao-demote-op1-1-1"].Executor).To(Equal("an earlier executor"), "an answered request is not run again")
	g.Expect(bao.membership).To(Equal([]string{"promote bao-3 via bao-0"}), "one Raft change: the one request of its operation that had no answer")
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
