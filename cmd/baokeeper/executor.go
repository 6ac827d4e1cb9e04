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

	"github.com/baokeeper/baokeeper/internal/service/upgrade/raftops"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Exit codes of the executor mode. The controller reads a Job's outcome from
// its conditions; the codes tell a person reading the pod whether a retry can
// help.
const (
	// exitOK: the action succeeded, or its goal already held.
	exitOK = 0
	// exitFatal: retrying will not help (permission denied, bad request, TLS
	// verification, invalid flags).
	exitFatal = 1
	// exitRetryable: a transient failure outlasted --timeout, or the action
	// is unknown.
	exitRetryable = 2
)

// knownExecutorActions lists the executor actions, for usage messages.
const knownExecutorActions = "step-down, snapshot"

// stepDownGrace is how long past --timeout the step-down may take to finish
// a call that is in flight before it is cancelled.
const stepDownGrace = 10 * time.Second

// executorEnv is what the executor mode needs from its process.
type executorEnv struct {
	stdout, stderr io.Writer
	// newClient builds the OpenBao client; raftops.New in production.
	newClient func(raftops.Config) (raftops.Client, error)
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
		newClient: raftops.New,
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
	case "step-down":
		return runStepDown(ctx, rest, env)
	case "snapshot":
		return runSnapshot(ctx, rest, env)
	default:
		fmt.Fprintf(env.stderr, "baokeeper executor: unknown action %q; known actions: %s\n", action, knownExecutorActions)
		return exitRetryable
	}
}

// stepDownOutput is the one JSON line a successful step-down prints.
type stepDownOutput struct {
	Action    string `json:"action"`
	Member    string `json:"member"`
	NewLeader string `json:"newLeader"`
	Benign    bool   `json:"benign"`
}

// stepDownFlags are the flags of "executor step-down".
type stepDownFlags struct {
	member        string
	members       []string
	caFile        string
	tokenFile     string
	tlsServerName string
	authMount     string
	role          string
	timeout       time.Duration
}

func parseStepDownFlags(args []string, stderr io.Writer) (stepDownFlags, error) {
	var f stepDownFlags
	fs := flag.NewFlagSet("baokeeper executor step-down", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.member, "member", "", "Pod name (= Raft node ID) of the member that must give up leadership.")
	members := fs.String("members", "", "Comma-separated API addresses of every member, https://<pod>.<headless service>.<namespace>.svc:8200.")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM file of the cluster CA that verifies the members' certificates.")
	fs.StringVar(&f.tokenFile, "token-file", "", "Projected service-account token (audience "+workload.TokenAudience+") to log in with.")
	fs.StringVar(&f.tlsServerName, "tls-server-name", "", "Verify member certificates against this name instead of the address host (for addresses by IP).")
	fs.StringVar(&f.authMount, "auth-mount", workload.AuthMount, "Path of the JWT auth method under auth/.")
	fs.StringVar(&f.role, "role", workload.ExecutorRole, "JWT auth role to log in with.")
	fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "How long retryable failures are retried.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	f.members = splitMembers(*members)
	missing := missingFlags(map[string]bool{
		"--member": f.member == "", "--members": len(f.members) == 0, "--ca-file": f.caFile == "", "--token-file": f.tokenFile == "",
	})
	switch {
	case len(missing) > 0:
		return f, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	case f.timeout <= 0:
		return f, fmt.Errorf("--timeout %s must be positive", f.timeout)
	case !slices.ContainsFunc(f.members, func(addr string) bool { return raftops.NodeID(addr) == f.member }):
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

// runStepDown moves leadership off --member, retrying retryable failures for
// at most --timeout and never stepping one node down twice within OpenBao's
// 10 s cooldown.
func runStepDown(ctx context.Context, args []string, env executorEnv) int {
	f, err := parseStepDownFlags(args, env.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "baokeeper executor step-down: invalid flags: %v\n", err)
		return exitFatal
	}
	c, err := env.newClient(raftops.Config{
		CAFile:        f.caFile,
		TLSServerName: f.tlsServerName,
		AuthMount:     f.authMount,
		Role:          f.role,
		TokenFile:     f.tokenFile,
	})
	if err != nil {
		fmt.Fprintf(env.stderr, "baokeeper executor step-down: fatal: %v\n", err)
		return exitFatal
	}

	ctx, cancel := context.WithTimeout(ctx, f.timeout+stepDownGrace)
	defer cancel()
	res, err := raftops.TransferLeadership(ctx, c, f.members, f.member, raftops.Options{RetryFor: f.timeout, Clock: env.clock})
	switch class := raftops.Classify(err); class {
	case raftops.ClassNone, raftops.ClassBenign:
		out, merr := json.Marshal(stepDownOutput{Action: "step-down", Member: f.member, NewLeader: res.NewLeader, Benign: res.Benign || class == raftops.ClassBenign})
		if merr != nil {
			fmt.Fprintf(env.stderr, "baokeeper executor step-down: fatal: failed to encode the result: %v\n", merr)
			return exitFatal
		}
		fmt.Fprintln(env.stdout, string(out))
		return exitOK
	case raftops.ClassRetryable:
		fmt.Fprintf(env.stderr, "baokeeper executor step-down: retryable failure (gave up after retrying for up to %s): %v\n", f.timeout, err)
		return exitRetryable
	default:
		fmt.Fprintf(env.stderr, "baokeeper executor step-down: fatal: %v\n", err)
		return exitFatal
	}
}
