package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/raftops"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

var testMembers = []string{
	"https://bao-0.bao-internal.ns.svc:8200",
	"https://bao-1.bao-internal.ns.svc:8200",
	"https://bao-2.bao-internal.ns.svc:8200",
}

// fakeBao is an in-memory openbao.MemberClient: one active node that moves to the
// next member on an accepted step-down, and a Raft configuration in which
// promotions, demotions and removals take effect at once (unless stalled).
type fakeBao struct {
	mu        sync.Mutex
	active    int
	stepErr   error
	stepDowns int
	snapData  []byte
	snapErrs  []error
	snapshots []string

	// voters is the Raft configuration, node ID → voter flag; nil means
	// bao-0 to bao-2, all voters.
	voters map[string]bool
	// stalled accepts promotions and demotions without ever applying them.
	stalled bool
	// memberErr fails every promote, demote and remove-peer.
	memberErr error
	// membership records "<op> <node ID> via <receiving node>".
	membership []string

	// restoreErrs fails Restore calls, one each, in order; restores records the
	// address of every call and restored the archive of every accepted one.
	restoreErrs []error
	restores    []string
	restored    [][]byte
	// roleErrs fails every WriteRole of a role; roleWrites records every call.
	roleErrs   map[string]error
	roleWrites []roleWrite

	// canaryErr fails every WriteCanary; canaries records each value written.
	canaryErr error
	canaries  []string
	// committed is the active node's Raft committed index; an accepted restore
	// raises it (the restore's index and the no-op after it).
	committed uint64
}

// roleWrite is one WriteRole call.
type roleWrite struct {
	addr, mount, role string
	data              map[string]any
}

func (f *fakeBao) Leader(_ context.Context, addr string) (*openbao.Leader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &openbao.Leader{IsSelf: addr == testMembers[f.active], LeaderAddress: testMembers[f.active], RaftCommittedIndex: f.committed}, nil
}

// WriteCanary records the value; a standby is ErrNotActive.
func (f *fakeBao) WriteCanary(_ context.Context, addr, path, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.canaryErr != nil {
		return f.canaryErr
	}
	if addr != testMembers[f.active] {
		return openbao.ErrNotActive
	}
	if path != workload.CanaryPath {
		return fmt.Errorf("canary written to %s, not %s", path, workload.CanaryPath)
	}
	f.canaries = append(f.canaries, value)
	return nil
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

func (f *fakeBao) peers() map[string]bool {
	if f.voters == nil {
		f.voters = map[string]bool{"bao-0": true, "bao-1": true, "bao-2": true}
	}
	return f.voters
}

func (f *fakeBao) RaftConfiguration(context.Context, string) (*openbao.RaftConfiguration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	leader := raftops.NodeID(testMembers[f.active])
	cfg := &openbao.RaftConfiguration{}
	for _, id := range slices.Sorted(maps.Keys(f.peers())) {
		cfg.Servers = append(cfg.Servers, openbao.RaftServer{NodeID: id, Leader: id == leader, Voter: f.voters[id]})
	}
	return cfg, nil
}

// change records a membership request and applies it to the active node.
func (f *fakeBao) change(op, addr, id string, apply func(peers map[string]bool)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.membership = append(f.membership, op+" "+id+" via "+raftops.NodeID(addr))
	switch {
	case f.memberErr != nil:
		return f.memberErr
	case addr != testMembers[f.active]:
		return openbao.ErrNotActive
	}
	apply(f.peers())
	return nil
}

func (f *fakeBao) Promote(_ context.Context, addr, id string) error {
	return f.change("promote", addr, id, func(p map[string]bool) {
		if !f.stalled {
			p[id] = true
		}
	})
}

func (f *fakeBao) Demote(_ context.Context, addr, id string) error {
	return f.change("demote", addr, id, func(p map[string]bool) {
		if !f.stalled {
			p[id] = false
		}
	})
}

func (f *fakeBao) RemovePeer(_ context.Context, addr, id string) error {
	return f.change("remove-peer", addr, id, func(p map[string]bool) { delete(p, id) })
}

// Snapshot serves snapData from the active node; a standby is ErrNotActive.
// Each entry of snapErrs fails one call, in order.
func (f *fakeBao) Snapshot(_ context.Context, addr string, w io.Writer) (openbao.SnapshotInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots = append(f.snapshots, addr)
	if len(f.snapErrs) > 0 {
		err := f.snapErrs[0]
		f.snapErrs = f.snapErrs[1:]
		return openbao.SnapshotInfo{}, err
	}
	if addr != testMembers[f.active] {
		return openbao.SnapshotInfo{}, openbao.ErrNotActive
	}
	n, err := w.Write(f.snapData)
	return openbao.SnapshotInfo{Bytes: int64(n), Index: 812, Term: 3}, err
}

// Restore takes the archive on the active node; a standby is ErrNotActive.
func (f *fakeBao) Restore(_ context.Context, addr string, r io.ReadSeeker) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restores = append(f.restores, addr)
	if len(f.restoreErrs) > 0 {
		err := f.restoreErrs[0]
		f.restoreErrs = f.restoreErrs[1:]
		return err
	}
	if addr != testMembers[f.active] {
		return openbao.ErrNotActive
	}
	b, err := io.ReadAll(r)
	f.restored = append(f.restored, b)
	f.committed += 2
	return err
}

// WriteRole records the write; a standby is ErrNotActive.
func (f *fakeBao) WriteRole(_ context.Context, addr, mount, role string, data map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roleWrites = append(f.roleWrites, roleWrite{addr: addr, mount: mount, role: role, data: data})
	if err := f.roleErrs[role]; err != nil {
		return err
	}
	if addr != testMembers[f.active] {
		return openbao.ErrNotActive
	}
	return nil
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
		wantConfig    *openbao.MemberConfig
	}{
		{
			reason:        "the leader steps down: one JSON line, exit 0",
			args:          append([]string{"step-down"}, validFlags...),
			bao:           &fakeBao{active: 0},
			wantCode:      exitOK,
			wantStdout:    `{"action":"step-down","member":"bao-0","newLeader":"bao-1","benign":false}` + "\n",
			wantStepDowns: 1,
			wantConfig:    &openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: "baokeeper-jwt", Role: "baokeeper-executor"},
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
			bao:           &fakeBao{stepErr: openbao.ErrPermissionDenied},
			wantCode:      exitFatal,
			wantStderr:    "fatal: openbao: permission denied",
			wantStepDowns: 1,
		},
		{
			reason:        "a retryable error that outlasts --timeout: exit 2",
			args:          append([]string{"step-down", "--timeout", "300ms"}, validFlags...),
			bao:           &fakeBao{stepErr: openbao.ErrNotActive},
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
			wantConfig: &openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", TLSServerName: "bao.ns.svc", AuthMount: "jwt2", Role: "r2"},
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
			args:       []string{"join", "--member", "bao-0"},
			bao:        &fakeBao{},
			wantCode:   exitRetryable,
			wantStderr: `unknown action "join"; known actions: step-down, promote, demote, remove-peer, write-peers, snapshot`,
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
			var gotConfig openbao.MemberConfig
			env := executorEnv{
				stdout: &stdout,
				stderr: &stderr,
				newClient: func(cfg openbao.MemberConfig) (openbao.MemberClient, error) {
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

// TestRunMembershipActions runs promote, demote and remove-peer against the in-memory
// cluster, with retry pauses and polls passing at once on a fake clock.
func TestRunMembershipActions(t *testing.T) {
	conn := []string{"--members", strings.Join(testMembers, ","), "--ca-file", "/ca.crt", "--token-file", "/token"}
	args := func(action, member string, extra ...string) []string {
		return append(append([]string{action, "--member", member}, conn...), extra...)
	}
	withNonVoter := func() map[string]bool {
		return map[string]bool{"bao-0": true, "bao-1": true, "bao-2": true, "bao-3": false}
	}
	tests := []struct {
		reason         string
		args           []string
		bao            *fakeBao
		wantCode       int
		wantStdout     string
		wantStderr     string
		wantMembership []string
		wantVoters     map[string]bool
	}{
		{
			reason:         "a non-voter that is not in --members (a new ordinal) is promoted through the leader: one JSON line, exit 0",
			args:           args("promote", "bao-3"),
			bao:            &fakeBao{active: 1, voters: withNonVoter()},
			wantCode:       exitOK,
			wantStdout:     `{"action":"promote","member":"bao-3","leader":"bao-1","benign":false,"voter":true,"present":true}` + "\n",
			wantMembership: []string{"promote bao-3 via bao-1"},
			wantVoters:     map[string]bool{"bao-0": true, "bao-1": true, "bao-2": true, "bao-3": true},
		},
		{
			reason:     "a voter already: benign, nothing sent",
			args:       args("promote", "bao-2"),
			bao:        &fakeBao{},
			wantCode:   exitOK,
			wantStdout: `{"action":"promote","member":"bao-2","leader":"bao-0","benign":true,"voter":true,"present":true}` + "\n",
		},
		{
			reason:     "a member that has not joined: fatal, exit 1",
			args:       args("promote", "bao-7"),
			bao:        &fakeBao{},
			wantCode:   exitFatal,
			wantStderr: "baokeeper executor promote: fatal: raftops: the member is not in the Raft configuration: bao-7 is not in the Raft configuration: it has not joined",
		},
		{
			reason:         "autopilot never applies the promotion within --timeout: exit 2",
			args:           args("promote", "bao-3", "--timeout", "2s"),
			bao:            &fakeBao{voters: withNonVoter(), stalled: true},
			wantCode:       exitRetryable,
			wantStderr:     "retryable failure (gave up after retrying for up to 2s)",
			wantMembership: []string{"promote bao-3 via bao-0"},
		},
		{
			reason:         "the executor may not promote: fatal, not retried",
			args:           args("promote", "bao-3"),
			bao:            &fakeBao{voters: withNonVoter(), memberErr: openbao.ErrPermissionDenied},
			wantCode:       exitFatal,
			wantStderr:     "fatal: openbao: permission denied",
			wantMembership: []string{"promote bao-3 via bao-0"},
		},
		{
			reason:         "a voter is demoted, then removed: one JSON line, exit 0",
			args:           args("remove-peer", "bao-2"),
			bao:            &fakeBao{},
			wantCode:       exitOK,
			wantStdout:     `{"action":"remove-peer","member":"bao-2","leader":"bao-0","benign":false,"voter":false,"present":false}` + "\n",
			wantMembership: []string{"demote bao-2 via bao-0", "remove-peer bao-2 via bao-0"},
			wantVoters:     map[string]bool{"bao-0": true, "bao-1": true},
		},
		{
			reason:     "gone already: benign",
			args:       args("remove-peer", "bao-7"),
			bao:        &fakeBao{},
			wantCode:   exitOK,
			wantStdout: `{"action":"remove-peer","member":"bao-7","leader":"bao-0","benign":true,"voter":false,"present":false}` + "\n",
		},
		{
			reason:     "the leader is refused: fatal, nothing sent",
			args:       args("remove-peer", "bao-1"),
			bao:        &fakeBao{active: 1},
			wantCode:   exitFatal,
			wantStderr: "must step down before it is removed",
		},
		{
			reason:         "a voter is demoted through the leader and stays in the configuration: one JSON line, exit 0",
			args:           args("demote", "bao-2"),
			bao:            &fakeBao{active: 1},
			wantCode:       exitOK,
			wantStdout:     `{"action":"demote","member":"bao-2","leader":"bao-1","benign":false,"voter":false,"present":true}` + "\n",
			wantMembership: []string{"demote bao-2 via bao-1"},
			wantVoters:     map[string]bool{"bao-0": true, "bao-1": true, "bao-2": false},
		},
		{
			reason:     "a non-voter already: benign, nothing sent",
			args:       args("demote", "bao-3"),
			bao:        &fakeBao{voters: withNonVoter()},
			wantCode:   exitOK,
			wantStdout: `{"action":"demote","member":"bao-3","leader":"bao-0","benign":true,"voter":false,"present":true}` + "\n",
		},
		{
			reason:     "not in the configuration: benign, nothing sent",
			args:       args("demote", "bao-7"),
			bao:        &fakeBao{},
			wantCode:   exitOK,
			wantStdout: `{"action":"demote","member":"bao-7","leader":"bao-0","benign":true,"voter":false,"present":false}` + "\n",
		},
		{
			reason:     "the leader is refused: fatal, nothing sent",
			args:       args("demote", "bao-1"),
			bao:        &fakeBao{active: 1},
			wantCode:   exitFatal,
			wantStderr: "baokeeper executor demote: fatal: raftops: the member is the active node and must step down before it is demoted",
		},
		{
			reason:         "autopilot never applies the demotion within --timeout: exit 2",
			args:           args("demote", "bao-2", "--timeout", "2s"),
			bao:            &fakeBao{stalled: true},
			wantCode:       exitRetryable,
			wantStderr:     "baokeeper executor demote: retryable failure (gave up after retrying for up to 2s)",
			wantMembership: []string{"demote bao-2 via bao-0"},
		},
		{
			reason:         "the executor may not demote: fatal, not retried",
			args:           args("demote", "bao-2"),
			bao:            &fakeBao{memberErr: openbao.ErrPermissionDenied},
			wantCode:       exitFatal,
			wantStderr:     "fatal: openbao: permission denied",
			wantMembership: []string{"demote bao-2 via bao-0"},
		},
		{
			reason:     "no --members: fatal",
			args:       []string{"remove-peer", "--member", "bao-2", "--ca-file", "/c", "--token-file", "/t"},
			bao:        &fakeBao{},
			wantCode:   exitFatal,
			wantStderr: "baokeeper executor remove-peer: invalid flags: missing --members",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				// Let polls and retry pauses pass at once.
				for ctx.Err() == nil {
					if clk.HasWaiters() {
						clk.Step(raftops.DefaultMembershipPollInterval)
					}
					time.Sleep(time.Millisecond)
				}
			}()
			env := executorEnv{
				stdout: &stdout, stderr: &stderr,
				newClient: func(openbao.MemberConfig) (openbao.MemberClient, error) { return tt.bao, nil },
				clock:     clk,
			}
			start := time.Now()
			code := runExecutor(ctx, tt.args, env)
			g.Expect(code).To(Equal(tt.wantCode), "%s; stderr: %s", tt.reason, stderr.String())
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
			g.Expect(stdout.String()).To(Equal(tt.wantStdout), tt.reason)
			if tt.wantStderr != "" {
				g.Expect(stderr.String()).To(ContainSubstring(tt.wantStderr), tt.reason)
			}
			g.Expect(tt.bao.membership).To(Equal(tt.wantMembership), tt.reason)
			if tt.wantVoters != nil {
				g.Expect(tt.bao.voters).To(Equal(tt.wantVoters), "%s: the final Raft configuration", tt.reason)
			}
		})
	}
}

func TestParseMemberFlags(t *testing.T) {
	conn := []string{"--members", strings.Join(testMembers, ","), "--ca-file", "/ca.crt", "--token-file", "/token"}
	tests := []struct {
		reason      string
		action      memberAction
		args        []string
		wantErr     string
		wantMember  string
		wantTimeout time.Duration
		wantConfig  openbao.MemberConfig
	}{
		{
			reason: "step-down defaults to a 60 s budget and the executor identity",
			action: stepDownAction, args: append([]string{"--member", "bao-1"}, conn...),
			wantMember: "bao-1", wantTimeout: 60 * time.Second,
			wantConfig: openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: "baokeeper-jwt", Role: "baokeeper-executor"},
		},
		{
			reason: "promote defaults to 90 s",
			action: promoteAction, args: append([]string{"--member", "bao-1"}, conn...),
			wantMember: "bao-1", wantTimeout: 90 * time.Second,
			wantConfig: openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: "baokeeper-jwt", Role: "baokeeper-executor"},
		},
		{
			reason:     "remove-peer takes a member outside --members (its pod may be gone), and the connection flags",
			action:     removePeerAction,
			args:       append([]string{"--member", "bao-5", "--timeout", "30s", "--tls-server-name", "bao.ns.svc", "--auth-mount", "jwt2", "--role", "r2"}, conn...),
			wantMember: "bao-5", wantTimeout: 30 * time.Second,
			wantConfig: openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", TLSServerName: "bao.ns.svc", AuthMount: "jwt2", Role: "r2"},
		},
		{
			reason: "promote takes a member outside --members (a new ordinal)",
			action: promoteAction, args: append([]string{"--member", "bao-3"}, conn...),
			wantMember: "bao-3", wantTimeout: 90 * time.Second,
			wantConfig: openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: "baokeeper-jwt", Role: "baokeeper-executor"},
		},
		{
			reason: "demote defaults to 90 s and takes a member outside --members",
			action: demoteAction, args: append([]string{"--member", "bao-4"}, conn...),
			wantMember: "bao-4", wantTimeout: 90 * time.Second,
			wantConfig: openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: "baokeeper-jwt", Role: "baokeeper-executor"},
		},
		{
			reason: "demote takes --timeout",
			action: demoteAction, args: append([]string{"--member", "bao-1", "--timeout", "45s"}, conn...),
			wantMember: "bao-1", wantTimeout: 45 * time.Second,
			wantConfig: openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: "baokeeper-jwt", Role: "baokeeper-executor"},
		},
		{reason: "demote: everything missing is named, sorted", action: demoteAction, args: nil, wantErr: "missing --ca-file, --member, --members, --token-file"},
		{
			reason: "step-down needs the member among --members",
			action: stepDownAction, args: append([]string{"--member", "bao-3"}, conn...),
			wantErr: "--member bao-3 is not one of --members",
		},
		{reason: "everything missing is named, sorted", action: promoteAction, args: nil, wantErr: "missing --ca-file, --member, --members, --token-file"},
		{reason: "empty entries of --members do not count", action: removePeerAction,
			args: []string{"--member", "bao-1", "--members", " , ", "--ca-file", "/c", "--token-file", "/t"}, wantErr: "missing --members"},
		{reason: "a negative timeout", action: promoteAction, args: append([]string{"--member", "bao-1", "--timeout", "-1s"}, conn...),
			wantErr: "--timeout -1s must be positive"},
		{reason: "stray arguments", action: removePeerAction, args: append(append([]string{"--member", "bao-1"}, conn...), "bao-2"),
			wantErr: `unexpected arguments ["bao-2"]`},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			f, err := parseMemberFlags(tt.action, tt.args, io.Discard)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)), tt.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tt.reason)
			g.Expect(f.member).To(Equal(tt.wantMember))
			g.Expect(f.members).To(Equal(testMembers))
			g.Expect(f.timeout).To(Equal(tt.wantTimeout))
			g.Expect(f.config()).To(Equal(tt.wantConfig))
		})
	}
}

// TestConfigDefaultsToTheExecutorIdentity checks that the executor logs in as
// itself when --auth-mount or --role is given empty, as the member client it
// builds needs both, and leaves the per-call timeout to the client's default.
func TestConfigDefaultsToTheExecutorIdentity(t *testing.T) {
	g := NewWithT(t)
	cfg := connFlags{caFile: "/ca.crt", tokenFile: "/token"}.config()
	g.Expect(cfg.AuthMount).To(Equal(workload.AuthMount))
	g.Expect(cfg.Role).To(Equal(workload.ExecutorRole))
	g.Expect(cfg.Timeout).To(BeZero(), "openbao.DefaultTimeout applies")
	g.Expect(cfg).To(Equal(openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: workload.AuthMount, Role: workload.ExecutorRole}))

	f, err := parseMemberFlags(promoteAction, []string{"--member", "bao-1", "--members", testMembers[0],
		"--ca-file", "/ca.crt", "--token-file", "/token", "--auth-mount", "", "--role", ""}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.config()).To(Equal(cfg), "empty flags count as unset")
}

// TestJobArgumentsParse checks that what the raftops Job builders write into
// the container is what the executor mode reads, and that each Job's deadline
// covers the executor's own budget.
func TestJobArgumentsParse(t *testing.T) {
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bao"},
		Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.0"},
	}
	scaled := executorjob.MemberAddressesN(c, 4)
	tests := []struct {
		reason      string
		job         *batchv1.Job
		action      memberAction
		wantMember  string
		wantMembers []string
		wantTimeout time.Duration
	}{
		{reason: "the deprecated step-down Job", job: executorjob.StepDownJob(c, "bao-1", 1, "baokeeper:test"),
			action: stepDownAction, wantMember: "bao-1", wantMembers: testMembers, wantTimeout: 60 * time.Second},
		{reason: "a step-down Job of an operation", job: executorjob.StepDownJobFor(c, "1f2e3d4c", "bao-1", 1, "baokeeper:test", testMembers),
			action: stepDownAction, wantMember: "bao-1", wantMembers: testMembers, wantTimeout: 60 * time.Second},
		{reason: "a promote Job during a scale-up", job: executorjob.PromoteJob(c, "1f2e3d4c", "bao-3", 1, "baokeeper:test", scaled),
			action: promoteAction, wantMember: "bao-3", wantMembers: scaled, wantTimeout: 90 * time.Second},
		{reason: "a remove-peer Job during a scale-down", job: executorjob.RemovePeerJob(c, "1f2e3d4c", "bao-3", 1, "baokeeper:test", scaled),
			action: removePeerAction, wantMember: "bao-3", wantMembers: scaled, wantTimeout: 90 * time.Second},
		{reason: "a demote Job", job: executorjob.DemoteJob(c, "1f2e3d4c", "bao-2", 1, "baokeeper:test", testMembers),
			action: demoteAction, wantMember: "bao-2", wantMembers: testMembers, wantTimeout: 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			args := tt.job.Spec.Template.Spec.Containers[0].Args
			g.Expect(args[:2]).To(Equal([]string{"executor", tt.action.name}))
			f, err := parseMemberFlags(tt.action, args[2:], io.Discard)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f.member).To(Equal(tt.wantMember))
			g.Expect(f.members).To(Equal(tt.wantMembers))
			g.Expect(f.caFile).To(Equal(executorjob.CAFile))
			g.Expect(f.tokenFile).To(Equal(executorjob.TokenFile))
			g.Expect(f.timeout).To(Equal(tt.wantTimeout))
			deadline := time.Duration(*tt.job.Spec.ActiveDeadlineSeconds) * time.Second
			g.Expect(deadline).To(BeNumerically(">=", f.timeout+actionGrace+20*time.Second),
				"the Job outlives the executor's budget, its grace and a pod start")
		})
	}
}
