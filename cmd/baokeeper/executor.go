package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/raftops"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Exit codes of the executor mode. The controller reads a Job's outcome from
// its conditions; the codes tell a person reading the pod whether a retry can
// help.
const (
	// exitOK: the action succeeded, or its goal already held.
	exitOK = 0
	// exitFatal: retrying will not help (permission denied, bad request, TLS
	// verification, invalid flags, a member to promote that has not joined, a
	// member to demote or remove that leads).
	exitFatal = 1
	// exitRetryable: a transient failure outlasted --timeout, or the action
	// is unknown.
	exitRetryable = 2
)

// knownExecutorActions lists the executor actions, for usage messages.
const knownExecutorActions = "step-down, promote, demote, remove-peer, write-peers, snapshot, check-target, prune, restore, rebind, serve"

// actionGrace is how long past --timeout an action may take to finish a call
// that is in flight before it is cancelled.
const actionGrace = executorjob.ExecutorGrace

// executorEnv is what the executor mode needs from its process.
type executorEnv struct {
	stdout, stderr io.Writer
	// newClient builds the OpenBao client; openbao.NewMemberClient in
	// production.
	newClient func(openbao.MemberConfig) (openbao.MemberClient, error)
	// newStore builds the object store client; snapshot.NewStore in production.
	newStore func(snapshot.S3Config) (snapshotStore, error)
	getenv   func(string) string
	clock    clock.Clock
}

// executorMain runs "baokeeper executor <action> [flags]" in this process and
// returns its exit code. Logs go to stderr; stdout carries only the result.
func executorMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx = logr.NewContext(ctx, zap.New(zap.WriteTo(os.Stderr)))
	return runExecutor(ctx, args, executorEnv{
		stdout:    os.Stdout,
		stderr:    os.Stderr,
		newClient: openbao.NewMemberClient,
		newStore:  func(c snapshot.S3Config) (snapshotStore, error) { return snapshot.NewStore(c) },
		getenv:    os.Getenv,
		clock:     clock.RealClock{},
	})
}

// runExecutor dispatches to the named action.
func runExecutor(ctx context.Context, args []string, env executorEnv) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(env.stderr, "baokeeper executor: name an action; known actions: %s\n", knownExecutorActions)
		return exitRetryable
	}
	switch action, rest := args[0], args[1:]; action {
	case executorjob.ActionStepDown:
		return runMemberAction(ctx, stepDownAction, rest, env)
	case executorjob.ActionPromote:
		return runMemberAction(ctx, promoteAction, rest, env)
	case executorjob.ActionDemote:
		return runMemberAction(ctx, demoteAction, rest, env)
	case executorjob.ActionRemovePeer:
		return runMemberAction(ctx, removePeerAction, rest, env)
	case executorjob.ActionWritePeers:
		return runWritePeers(rest, env)
	case "snapshot":
		return runSnapshot(ctx, rest, env)
	case snapshot.ActionCheckTarget:
		return runCheckTarget(ctx, rest, env)
	case snapshot.ActionPrune:
		return runPrune(ctx, rest, env)
	case snapshot.ActionRestore:
		return runRestore(ctx, rest, env)
	case snapshot.ActionRebind:
		return runRebind(ctx, rest, env)
	case executorjob.ActionServe:
		return runServe(ctx, rest, env)
	default:
		fmt.Fprintf(env.stderr, "baokeeper executor: unknown action %q; known actions: %s\n", action, knownExecutorActions)
		return exitRetryable
	}
}

// connFlags are the flags of every action that talks to OpenBao: where the
// members are and how to reach and log in to them.
type connFlags struct {
	members       []string
	caFile        string
	tokenFile     string
	tlsServerName string
	authMount     string
	role          string

	rawMembers string
}

// bind registers the flags on fs.
func (c *connFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.rawMembers, "members", "", "Comma-separated API addresses of the members to ask for the active node, https://<pod>.<headless service>.<namespace>.svc:8200.")
	fs.StringVar(&c.caFile, "ca-file", "", "PEM file of the cluster CA that verifies the members' certificates.")
	fs.StringVar(&c.tokenFile, "token-file", "", "Projected service-account token (the cluster's audience, status.jwtAudience) to log in with.")
	fs.StringVar(&c.tlsServerName, "tls-server-name", "", "Verify member certificates against this name instead of the address host (for addresses by IP).")
	fs.StringVar(&c.authMount, "auth-mount", workload.AuthMount, "Path of the JWT auth method under auth/.")
	fs.StringVar(&c.role, "role", workload.ExecutorRole, "JWT auth role to log in with.")
}

// parsed completes the flags once fs is parsed and says which required ones
// are missing, for missingFlags.
func (c *connFlags) parsed() map[string]bool {
	c.members = splitMembers(c.rawMembers)
	return map[string]bool{"--members": len(c.members) == 0, "--ca-file": c.caFile == "", "--token-file": c.tokenFile == ""}
}

// config is the OpenBao member client configuration the flags describe. The
// executor logs in as itself (workload.AuthMount, workload.ExecutorRole)
// unless the flags name another mount or role; empty flags count as unset.
func (c connFlags) config() openbao.MemberConfig {
	cfg := openbao.MemberConfig{CAFile: c.caFile, TLSServerName: c.tlsServerName, AuthMount: c.authMount, Role: c.role, TokenFile: c.tokenFile}
	if cfg.AuthMount == "" {
		cfg.AuthMount = workload.AuthMount
	}
	if cfg.Role == "" {
		cfg.Role = workload.ExecutorRole
	}
	return cfg
}

// memberFlags are the flags of the actions on one member: step-down, promote,
// demote and remove-peer.
type memberFlags struct {
	connFlags
	member  string
	timeout time.Duration
}

// memberAction describes one action on a member: its flags and what it does.
type memberAction struct {
	name string
	// memberUsage documents --member.
	memberUsage string
	// defaultTimeout is the default of --timeout.
	defaultTimeout time.Duration
	// memberListed requires --member to be the node ID of one of --members.
	memberListed bool
	// do runs the action and returns the result to print, also with a benign
	// error.
	do func(ctx context.Context, c openbao.MemberClient, f memberFlags, env executorEnv) (any, error)
}

var (
	stepDownAction = memberAction{
		name:           executorjob.ActionStepDown,
		memberUsage:    "Pod name (= Raft node ID) of the member that must give up leadership.",
		defaultTimeout: executorjob.StepDownTimeout,
		// Leadership can only be on a member the executor can ask.
		memberListed: true,
		do:           stepDown,
	}
	promoteAction = memberAction{
		name:           executorjob.ActionPromote,
		memberUsage:    "Raft node ID of the member to make a voter (it must have joined).",
		defaultTimeout: executorjob.MembershipTimeout,
		do:             promote,
	}
	demoteAction = memberAction{
		name:           executorjob.ActionDemote,
		memberUsage:    "Raft node ID of the member to make a non-voter, left in the configuration (it must not be the leader).",
		defaultTimeout: executorjob.MembershipTimeout,
		do:             demote,
	}
	removePeerAction = memberAction{
		name:           executorjob.ActionRemovePeer,
		memberUsage:    "Raft node ID of the member to demote and remove (its pod may be gone; it must not be the leader).",
		defaultTimeout: executorjob.MembershipTimeout,
		do:             removePeer,
	}
)

func parseMemberFlags(a memberAction, args []string, stderr io.Writer) (memberFlags, error) {
	var f memberFlags
	fs := flag.NewFlagSet("baokeeper executor "+a.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.bind(fs)
	fs.StringVar(&f.member, "member", "", a.memberUsage)
	fs.DurationVar(&f.timeout, "timeout", a.defaultTimeout, "How long retryable failures are retried.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	empty := f.parsed()
	empty["--member"] = f.member == ""
	missing := missingFlags(empty)
	switch {
	case len(missing) > 0:
		return f, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	case f.timeout <= 0:
		return f, fmt.Errorf("--timeout %s must be positive", f.timeout)
	case a.memberListed && !slices.ContainsFunc(f.members, func(addr string) bool { return raftops.NodeID(addr) == f.member }):
		return f, fmt.Errorf("--member %s is not one of --members (the first DNS label of each address is its node ID)", f.member)
	}
	return f, nil
}

// missingFlags lists, sorted, the names whose value is missing.
func missingFlags(empty map[string]bool) []string {
	var missing []string
	for name, e := range empty {
		if e {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return missing
}

// splitMembers splits a comma-separated --members value, dropping empty entries.
func splitMembers(v string) []string {
	var out []string
	for _, m := range strings.Split(v, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// runMemberAction parses the flags of an action on one member, runs it with
// retries bounded by --timeout (plus actionGrace for a call in flight), and
// prints its result as one JSON line on stdout. The exit code says whether a
// retry can help.
func runMemberAction(ctx context.Context, a memberAction, args []string, env executorEnv) int {
	prefix := "baokeeper executor " + a.name
	f, err := parseMemberFlags(a, args, env.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "%s: invalid flags: %v\n", prefix, err)
		return exitFatal
	}
	c, err := env.newClient(f.config())
	if err != nil {
		fmt.Fprintf(env.stderr, "%s: fatal: %v\n", prefix, err)
		return exitFatal
	}

	ctx, cancel := context.WithTimeout(ctx, f.timeout+actionGrace)
	defer cancel()
	res, err := a.do(ctx, c, f, env)
	switch raftops.Classify(err) {
	case raftops.ClassNone, raftops.ClassBenign:
		out, merr := json.Marshal(res)
		if merr != nil {
			fmt.Fprintf(env.stderr, "%s: fatal: failed to encode the result: %v\n", prefix, merr)
			return exitFatal
		}
		fmt.Fprintln(env.stdout, string(out))
		return exitOK
	case raftops.ClassRetryable:
		fmt.Fprintf(env.stderr, "%s: retryable failure (gave up after retrying for up to %s): %v\n", prefix, f.timeout, err)
		return exitRetryable
	default:
		fmt.Fprintf(env.stderr, "%s: fatal: %v\n", prefix, err)
		return exitFatal
	}
}

// stepDownOutput is the one JSON line a successful step-down prints.
type stepDownOutput struct {
	Action    string `json:"action"`
	Member    string `json:"member"`
	NewLeader string `json:"newLeader"`
	Benign    bool   `json:"benign"`
}

// stepDown moves leadership off --member, never stepping one node down twice
// within OpenBao's 10 s cooldown.
func stepDown(ctx context.Context, c openbao.MemberClient, f memberFlags, env executorEnv) (any, error) {
	res, err := raftops.TransferLeadership(ctx, c, f.members, f.member, raftops.Options{RetryFor: f.timeout, Clock: env.clock})
	return stepDownOutput{
		Action: executorjob.ActionStepDown, Member: f.member, NewLeader: res.NewLeader,
		Benign: res.Benign || raftops.Classify(err) == raftops.ClassBenign,
	}, err
}

// membershipOutput is the one JSON line a successful promote, demote or
// remove-peer prints: what the Raft configuration, read back from the active node
// (leader), shows of the member at the end.
type membershipOutput struct {
	Action  string `json:"action"`
	Member  string `json:"member"`
	Leader  string `json:"leader"`
	Benign  bool   `json:"benign"`
	Voter   bool   `json:"voter"`
	Present bool   `json:"present"`
}

func newMembershipOutput(action string, res raftops.MembershipResult, err error, member string) membershipOutput {
	return membershipOutput{
		Action: action, Member: member, Leader: res.Leader,
		Benign: res.Benign || raftops.Classify(err) == raftops.ClassBenign,
		Voter:  res.Voter, Present: res.Present,
	}
}

// promote makes --member a voter and verifies it in the Raft configuration.
func promote(ctx context.Context, c openbao.MemberClient, f memberFlags, env executorEnv) (any, error) {
	res, err := raftops.PromoteMember(ctx, c, f.members, f.member, raftops.MembershipOptions{RetryFor: f.timeout, Clock: env.clock})
	return newMembershipOutput(executorjob.ActionPromote, res, err, f.member), err
}

// demote makes --member a non-voter and verifies it in the Raft configuration;
// it refuses the leader.
func demote(ctx context.Context, c openbao.MemberClient, f memberFlags, env executorEnv) (any, error) {
	res, err := raftops.DemoteMember(ctx, c, f.members, f.member, raftops.MembershipOptions{RetryFor: f.timeout, Clock: env.clock})
	return newMembershipOutput(executorjob.ActionDemote, res, err, f.member), err
}

// removePeer demotes --member if it votes, removes it, and verifies both in the
// Raft configuration; it refuses the leader.
func removePeer(ctx context.Context, c openbao.MemberClient, f memberFlags, env executorEnv) (any, error) {
	res, err := raftops.RemoveMember(ctx, c, f.members, f.member, raftops.MembershipOptions{RetryFor: f.timeout, Clock: env.clock})
	return newMembershipOutput(executorjob.ActionRemovePeer, res, err, f.member), err
}
