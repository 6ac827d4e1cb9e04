package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/raftops"
)

var testMembers = []string{
	"https://bao-0.bao-internal.ns.svc:8200",
	"https://bao-1.bao-internal.ns.svc:8200",
	"https://bao-2.bao-internal.ns.svc:8200",
}

// fakeBao is an in-memory raftops.Client: one active node that moves to the
// next member on an accepted step-down.
type fakeBao struct {
	mu        sync.Mutex
	active    int
	stepErr   error
	stepDowns int
	snapData  []byte
	snapErrs  []error
	snapshots []string
}

func (f *fakeBao) Leader(_ context.Context, addr string) (*openbao.Leader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &openbao.Leader{IsSelf: addr == testMembers[f.active], LeaderAddress: testMembers[f.active]}, nil
}

func (f *fakeBao) Health(_ context.Context, addr string) (*openbao.Health, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &openbao.Health{Initialized: true, Standby: addr != testMembers[f.active]}, nil
}

func (f *fakeBao) StepDown(context.Context, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stepDowns++
	if f.stepErr != nil {
		return f.stepErr
	}
	f.active = (f.active + 1) % len(testMembers)
	return nil
}

func (f *fakeBao) AutopilotState(context.Context, string) (*openbao.AutopilotState, error) {
	return nil, errors.New("not used")
}

// Snapshot serves snapData from the active node; a standby is ErrNotActive.
// Each entry of snapErrs fails one call, in order.
func (f *fakeBao) Snapshot(_ context.Context, addr string, w io.Writer) (raftops.SnapshotInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots = append(f.snapshots, addr)
	if len(f.snapErrs) > 0 {
		err := f.snapErrs[0]
		f.snapErrs = f.snapErrs[1:]
		return raftops.SnapshotInfo{}, err
	}
	if addr != testMembers[f.active] {
		return raftops.SnapshotInfo{}, raftops.ErrNotActive
	}
	n, err := w.Write(f.snapData)
	return raftops.SnapshotInfo{Bytes: int64(n), Index: 812, Term: 3}, err
}

func TestRunExecutor(t *testing.T) {
	validFlags := []string{
		"--member", "bao-0",
		"--members", strings.Join(testMembers, ","),
		"--ca-file", "/ca.crt",
		"--token-file", "/token",
	}
	tests := []struct {
		reason        string
		args          []string
		bao           *fakeBao
		clientErr     error
		wantCode      int
		wantStdout    string
		wantStderr    string
		wantStepDowns int
		wantConfig    *raftops.Config
	}{
		{
			reason:        "the leader steps down: one JSON line, exit 0",
			args:          append([]string{"step-down"}, validFlags...),
			bao:           &fakeBao{active: 0},
			wantCode:      exitOK,
			wantStdout:    `{"action":"step-down","member":"bao-0","newLeader":"bao-1","benign":false}` + "\n",
			wantStepDowns: 1,
			wantConfig:    &raftops.Config{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: "baokeeper-jwt", Role: "baokeeper-executor"},
		},
		{
			reason:     "leadership already moved: benign, exit 0, no step-down",
			args:       append([]string{"step-down"}, validFlags...),
			bao:        &fakeBao{active: 2},
			wantCode:   exitOK,
			wantStdout: `{"action":"step-down","member":"bao-0","newLeader":"bao-2","benign":true}` + "\n",
		},
		{
			reason:        "a fatal error: a clear message, exit 1",
			args:          append([]string{"step-down"}, validFlags...),
			bao:           &fakeBao{stepErr: raftops.ErrPermissionDenied},
			wantCode:      exitFatal,
			wantStderr:    "fatal: raftops: permission denied",
			wantStepDowns: 1,
		},
		{
			reason:        "a retryable error that outlasts --timeout: exit 2",
			args:          append([]string{"step-down", "--timeout", "300ms"}, validFlags...),
			bao:           &fakeBao{stepErr: raftops.ErrNotActive},
			wantCode:      exitRetryable,
			wantStderr:    "retryable failure",
			wantStepDowns: 1,
		},
		{
			reason:     "the client cannot be built (say, a bad CA file): fatal",
			args:       append([]string{"step-down"}, validFlags...),
			bao:        &fakeBao{},
			clientErr:  errors.New("invalid CAFile /ca.crt"),
			wantCode:   exitFatal,
			wantStderr: "invalid CAFile",
		},
		{
			reason:     "TLS server name, mount and role are passed on",
			args:       append([]string{"step-down", "--tls-server-name", "bao.ns.svc", "--auth-mount", "jwt2", "--role", "r2"}, validFlags...),
			bao:        &fakeBao{active: 0},
			wantCode:   exitOK,
			wantStdout: `{"action":"step-down","member":"bao-0","newLeader":"bao-1","benign":false}` + "\n", wantStepDowns: 1,
			wantConfig: &raftops.Config{CAFile: "/ca.crt", TokenFile: "/token", TLSServerName: "bao.ns.svc", AuthMount: "jwt2", Role: "r2"},
		},
		{
			reason:     "missing flags are named: fatal",
			args:       []string{"step-down", "--member", "bao-0"},
			bao:        &fakeBao{},
			wantCode:   exitFatal,
			wantStderr: "missing --ca-file, --members, --token-file",
		},
		{
			reason:     "a member that is not in --members: fatal",
			args:       []string{"step-down", "--member", "bao-7", "--members", strings.Join(testMembers, ","), "--ca-file", "/c", "--token-file", "/t"},
			bao:        &fakeBao{},
			wantCode:   exitFatal,
			wantStderr: "--member bao-7 is not one of --members",
		},
		{
			reason:     "a zero timeout: fatal",
			args:       append([]string{"step-down", "--timeout", "0s"}, validFlags...),
			bao:        &fakeBao{},
			wantCode:   exitFatal,
			wantStderr: "--timeout 0s must be positive",
		},
		{
			reason:     "an unknown action lists the known ones: exit 2",
			args:       []string{"promote", "--member", "bao-0"},
			bao:        &fakeBao{},
			wantCode:   exitRetryable,
			wantStderr: `unknown action "promote"; known actions: step-down`,
		},
		{
			reason:     "no action lists the known ones: exit 2",
			args:       nil,
			bao:        &fakeBao{},
			wantCode:   exitRetryable,
			wantStderr: "known actions: step-down",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			var gotConfig raftops.Config
			env := executorEnv{
				stdout: &stdout,
				stderr: &stderr,
				newClient: func(cfg raftops.Config) (raftops.Client, error) {
					gotConfig = cfg
					if tt.clientErr != nil {
						return nil, tt.clientErr
					}
					return tt.bao, nil
				},
				clock: clock.RealClock{},
			}
			start := time.Now()
			code := runExecutor(context.Background(), tt.args, env)
			g.Expect(code).To(Equal(tt.wantCode), "%s; stderr: %s", tt.reason, stderr.String())
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
			g.Expect(stdout.String()).To(Equal(tt.wantStdout), tt.reason)
			if tt.wantStderr != "" {
				g.Expect(stderr.String()).To(ContainSubstring(tt.wantStderr), tt.reason)
			}
			g.Expect(tt.bao.stepDowns).To(Equal(tt.wantStepDowns), tt.reason)
			if tt.wantConfig != nil {
				g.Expect(gotConfig).To(Equal(*tt.wantConfig), tt.reason)
			}
		})
	}
}

// TestStepDownJobArgumentsParse checks that what raftops.StepDownJob writes
// into the container is what the executor mode reads.
func TestStepDownJobArgumentsParse(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao"},
		Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.0"},
	}
	args := raftops.StepDownJob(c, "bao-1", 1, "baokeeper:test").Spec.Template.Spec.Containers[0].Args
	g.Expect(args[:2]).To(Equal([]string{"executor", "step-down"}))

	f, err := parseStepDownFlags(args[2:], io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.member).To(Equal("bao-1"))
	g.Expect(f.members).To(Equal(testMembers))
	g.Expect(f.caFile).To(Equal(raftops.CAFile))
	g.Expect(f.tokenFile).To(Equal(raftops.TokenFile))
	g.Expect(f.timeout).To(Equal(60*time.Second), "the default fits the Job's 120 s deadline")
}
