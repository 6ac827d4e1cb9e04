package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/raftops"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// rebindFlags are the flags of "executor rebind".
type rebindFlags struct {
	connFlags
	executorSubject, controllerSubject, audience string
	timeout                                      time.Duration
	terminationLog                               string
}

func parseRebindFlags(args []string, stderr io.Writer) (rebindFlags, error) {
	var f rebindFlags
	fs := flag.NewFlagSet("baokeeper executor "+snapshot.ActionRebind, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.bind(fs)
	fs.StringVar(&f.executorSubject, "executor-subject", "", "system:serviceaccount:NS:NAME of this cluster's executor service account: the executor role's new bound subject.")
	fs.StringVar(&f.controllerSubject, "controller-subject", "", "system:serviceaccount:NS:NAME of the operator's service account: the controller role's new bound subject.")
	fs.StringVar(&f.audience, "audience", "", "This cluster's JWT audience (status.jwtAudience): both roles' new bound audience.")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "How long retryable failures are retried.")
	fs.StringVar(&f.terminationLog, "termination-log", "/dev/termination-log", "File that receives the result for the controller; empty disables it.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	empty := f.parsed()
	empty["--executor-subject"] = f.executorSubject == ""
	empty["--controller-subject"] = f.controllerSubject == ""
	empty["--audience"] = f.audience == ""
	missing := missingFlags(empty)
	switch {
	case len(missing) > 0:
		return f, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	case !isServiceAccountSubject(f.executorSubject):
		return f, fmt.Errorf("--executor-subject %q is not a service account's subject: give system:serviceaccount:NAMESPACE:NAME", f.executorSubject)
	case !isServiceAccountSubject(f.controllerSubject):
		return f, fmt.Errorf("--controller-subject %q is not a service account's subject: give system:serviceaccount:NAMESPACE:NAME", f.controllerSubject)
	case f.timeout <= 0:
		return f, fmt.Errorf("--timeout %s must be positive", f.timeout)
	}
	return f, nil
}

// isServiceAccountSubject reports whether s is system:serviceaccount:NS:NAME.
func isServiceAccountSubject(s string) bool {
	rest, ok := strings.CutPrefix(s, "system:serviceaccount:")
	if !ok {
		return false
	}
	ns, name, ok := strings.Cut(rest, ":")
	return ok && ns != "" && name != "" && !strings.Contains(name, ":")
}

// runRebind rewrites the executor and controller JWT roles of a cluster restored
// from another cluster's snapshot, which hold the source's identities, to the
// identities the flags give: it logs in with the source's executor identity (the
// Job runs as it) and writes exactly what self-initialization writes
// (workload.ExecutorRoleData, workload.ControllerRoleData). The result
// (snapshot.RebindResult) goes to stdout and the termination log.
func runRebind(ctx context.Context, args []string, env executorEnv) int {
	f, err := parseRebindFlags(args, env.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	a := resultAction{name: snapshot.ActionRebind, timeout: f.timeout, terminationLog: f.terminationLog}
	if err != nil {
		return a.failed(env, exitFatal, fmt.Errorf("invalid flags: %w", err))
	}
	bao, err := env.newClient(f.config())
	if err != nil {
		return a.failed(env, exitFatal, err)
	}
	return a.run(ctx, env, func(ctx context.Context) (any, error) { return rebind(ctx, bao, f) })
}

// rebind writes both roles through the active node.
func rebind(ctx context.Context, bao openbao.MemberClient, f rebindFlags) (any, error) {
	_, addr, err := raftops.FindActive(ctx, bao, f.members)
	if err != nil {
		return nil, err
	}
	cfg := f.config()
	type write struct {
		role string
		data map[string]any
	}
	writes := []write{
		{workload.ControllerRole, workload.ControllerRoleData(f.controllerSubject, f.audience)},
		{workload.ExecutorRole, workload.ExecutorRoleData(f.executorSubject, f.audience)},
	}
	// The role this executor logs in with goes last: until it is rewritten, a
	// fresh login (after a refused token) still finds it bound to the identity
	// the Job carries.
	if cfg.Role == workload.ControllerRole {
		writes[0], writes[1] = writes[1], writes[0]
	}
	for _, w := range writes {
		err := bao.WriteRole(ctx, addr, cfg.AuthMount, w.role, w.data)
		switch {
		case err == nil:
			continue
		case errors.Is(err, openbao.ErrLoginFailed) && raftops.Classify(err) == raftops.ClassFatal:
			return nil, fmt.Errorf("the %s role the snapshot holds did not accept the source cluster's executor identity "+
				"(the Job's service account and audience): %w", cfg.Role, err)
		case errors.Is(err, openbao.ErrPermissionDenied):
			return nil, fmt.Errorf("the snapshot's executor policy does not allow the executor to rewrite its roles "+
				"(the source cluster was initialized by a baokeeper release before this one); "+
				"restore into a cluster with the source's name instead, or add update on auth/%[1]s/role/%[2]s and auth/%[1]s/role/%[3]s "+
				"to the source's executor policy before taking the snapshot: %[4]w",
				cfg.AuthMount, workload.ExecutorRole, workload.ControllerRole, err)
		default:
			return nil, err
		}
	}
	return snapshot.RebindResult{
		Rebound: true, ExecutorSubject: f.executorSubject, ControllerSubject: f.controllerSubject, Audience: f.audience,
	}, nil
}
