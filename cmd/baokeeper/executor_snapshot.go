package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/raftops"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// snapshotFlags are the flags of "executor snapshot".
type snapshotFlags struct {
	connFlags
	s3             snapshot.S3Config
	key            string
	timeout        time.Duration
	terminationLog string
}

func parseSnapshotFlags(args []string, getenv func(string) string, stderr io.Writer) (snapshotFlags, error) {
	var f snapshotFlags
	fs := flag.NewFlagSet("baokeeper executor snapshot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.bind(fs)
	bindS3(fs, &f.s3)
	fs.StringVar(&f.key, "s3-key", "", "Object key of the snapshot.")
	fs.DurationVar(&f.timeout, "timeout", 25*time.Minute, "How long the whole snapshot may take, retries included.")
	fs.StringVar(&f.terminationLog, "termination-log", "/dev/termination-log", "File that receives the receipt for the controller; empty disables it.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	empty := f.parsed()
	maps.Copy(empty, s3Missing(&f.s3, getenv))
	empty["--s3-key"] = f.key == ""
	missing := missingFlags(empty)
	switch {
	case len(missing) > 0:
		return f, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	case f.timeout <= 0:
		return f, fmt.Errorf("--timeout %s must be positive", f.timeout)
	}
	return f, nil
}

// snapshotRetryInterval is the pause before the next attempt of a snapshot,
// restore or rebind after a retryable failure (no leader yet, the leader
// changed midstream).
const snapshotRetryInterval = 3 * time.Second

// runSnapshot streams a Raft snapshot from the leader into object storage,
// verifies it there, and reports a receipt on stdout and in the termination log.
func runSnapshot(ctx context.Context, args []string, env executorEnv) int {
	f, err := parseSnapshotFlags(args, env.getenv, env.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	a := resultAction{name: "snapshot", timeout: f.timeout, terminationLog: f.terminationLog}
	if err != nil {
		return a.failed(env, exitFatal, fmt.Errorf("invalid flags: %w", err))
	}
	bao, err := env.newClient(f.config())
	if err != nil {
		return a.failed(env, exitFatal, err)
	}
	store, err := env.newStore(f.s3)
	if err != nil {
		return a.failed(env, exitFatal, err)
	}
	ctx = logr.NewContext(ctx, logr.FromContextOrDiscard(ctx).WithValues("object", snapshot.Location(f.s3.Bucket, f.key)))
	return a.run(ctx, env, func(ctx context.Context) (any, error) {
		return takeSnapshot(ctx, bao, store, f, env)
	})
}

// resultAction is an executor action that reports one JSON result (snapshot,
// restore, rebind): its name, its budget and where its outcome goes besides
// stdout and stderr.
type resultAction struct {
	name           string
	timeout        time.Duration
	terminationLog string
}

// run calls attempt until it succeeds, fails for good or the action's timeout
// passes, pausing snapshotRetryInterval after each retryable failure
// (raftops.Classify; an error marked permanent is fatal whatever its cause).
// The result goes as one JSON line to stdout and to the termination log; a
// failure goes to failed.
func (a resultAction) run(ctx context.Context, env executorEnv, attempt func(context.Context) (any, error)) int {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	log := logr.FromContextOrDiscard(ctx)
	for n := 1; ; n++ {
		res, err := attempt(ctx)
		if err == nil {
			out, merr := json.Marshal(res)
			if merr != nil {
				return a.failed(env, exitFatal, fmt.Errorf("failed to encode the result: %w", merr))
			}
			fmt.Fprintln(env.stdout, string(out))
			if a.terminationLog != "" {
				if werr := os.WriteFile(a.terminationLog, out, 0o644); werr != nil {
					fmt.Fprintf(env.stderr, "baokeeper executor %s: fatal: failed to write the result to %s: %v\n", a.name, a.terminationLog, werr)
					return exitFatal
				}
			}
			return exitOK
		}
		class := classifyAttempt(err)
		if class != raftops.ClassRetryable || ctx.Err() != nil {
			// Unanticipated errors are fatal here, as for every executor action: the
			// controller retries the whole Job a bounded number of times.
			code := exitRetryable
			if class == raftops.ClassFatal {
				code = exitFatal
			}
			return a.failed(env, code, err)
		}
		log.Info("Retrying", "action", a.name, "attempt", n, "reason", err.Error())
		select {
		case <-ctx.Done():
			return a.failed(env, exitRetryable, fmt.Errorf("gave up after %s: %w", a.timeout, err))
		case <-env.clock.After(snapshotRetryInterval):
		}
	}
}

// failed reports a failure on stderr and in the termination log, which the
// controller copies into the operation's failure message, as
// "baokeeper executor <action>: fatal: ..." or "...: retryable failure: ...".
func (a resultAction) failed(env executorEnv, code int, err error) int {
	kind := "fatal"
	if code == exitRetryable {
		kind = "retryable failure"
	}
	msg := fmt.Sprintf("baokeeper executor %s: %s: %v", a.name, kind, err)
	fmt.Fprintln(env.stderr, msg)
	if a.terminationLog != "" {
		_ = os.WriteFile(a.terminationLog, []byte(msg), 0o644)
	}
	return code
}

// permanentError marks a failure that no retry mends (a download that is not
// the snapshot the receipt names, an object that is not a snapshot), whatever
// the class of its cause.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// classifyAttempt is raftops.Classify, with permanentError fatal.
func classifyAttempt(err error) raftops.Class {
	var p permanentError
	if errors.As(err, &p) {
		return raftops.ClassFatal
	}
	return raftops.Classify(err)
}

// snapshotter is what taking a snapshot needs of OpenBao: the leader, its
// snapshot, and the restore canary written before it.
type snapshotter interface {
	openbao.Leadership
	openbao.CanaryWriter
}

// takeSnapshot finds the leader, writes the restore canary through it and streams
// its snapshot into the store. The canary's value is the object's key: a restore
// of this snapshot must read it back. A cluster initialized before the canary
// (no mount, or a policy without it) takes its snapshot without one.
func takeSnapshot(ctx context.Context, bao snapshotter, store snapshotStore, f snapshotFlags, env executorEnv) (snapshot.Receipt, error) {
	leader, addr, err := raftops.FindActive(ctx, bao, f.members)
	if err != nil {
		return snapshot.Receipt{}, err
	}
	canary := f.key
	switch err := bao.WriteCanary(ctx, addr, workload.CanaryPath, canary); {
	case errors.Is(err, openbao.ErrNotFound) || errors.Is(err, openbao.ErrPermissionDenied):
		logr.FromContextOrDiscard(ctx).Info("Taking the snapshot without a restore canary: the cluster was initialized before baokeeper wrote one", "path", workload.CanaryPath, "reason", err.Error())
		canary = ""
	case err != nil:
		return snapshot.Receipt{}, err
	}
	var info openbao.SnapshotInfo
	up, err := store.Upload(ctx, f.key, func(w io.Writer) error {
		var serr error
		info, serr = bao.Snapshot(ctx, addr, w)
		return serr
	})
	if err != nil {
		return snapshot.Receipt{}, err
	}
	return snapshot.Receipt{
		Location: up.Location, SizeBytes: up.SizeBytes, SHA256: up.SHA256,
		RaftIndex: info.Index, RaftTerm: info.Term, FromMember: leader, TakenAt: env.clock.Now().UTC(), Canary: canary,
	}, nil
}

// snapshotStore is what the snapshot, check-target, prune and restore actions
// need from object storage; *snapshot.Store in production.
type snapshotStore interface {
	Upload(ctx context.Context, key string, write func(io.Writer) error) (snapshot.Uploaded, error)
	// Download copies an object into w and returns its size; a missing one is
	// snapshot.ErrObjectMissing.
	Download(ctx context.Context, key string, w io.Writer) (int64, error)
	Reachable(ctx context.Context) error
	List(ctx context.Context, prefix string) ([]snapshot.Object, error)
	Remove(ctx context.Context, key string) error
}

// bindS3 binds the flags that say where the target is.
func bindS3(fs *flag.FlagSet, c *snapshot.S3Config) {
	fs.StringVar(&c.Endpoint, "s3-endpoint", "", "URL of the S3 API.")
	fs.StringVar(&c.Bucket, "s3-bucket", "", "Bucket of the snapshots.")
	fs.StringVar(&c.Region, "s3-region", "", "Region of the bucket (default us-east-1).")
	fs.BoolVar(&c.PathStyle, "s3-path-style", false, "Address the bucket as endpoint/bucket.")
	fs.StringVar(&c.CAFile, "s3-ca-file", "", "PEM certificates trusted for an https:// endpoint besides the system's roots.")
}

// s3Missing reads the credentials from the environment into c and reports which
// of the target's settings are empty.
func s3Missing(c *snapshot.S3Config, getenv func(string) string) map[string]bool {
	c.AccessKeyID, c.SecretAccessKey = getenv(snapshot.EnvAccessKeyID), getenv(snapshot.EnvSecretAccessKey)
	return map[string]bool{
		"--s3-endpoint": c.Endpoint == "", "--s3-bucket": c.Bucket == "",
		"$" + snapshot.EnvAccessKeyID: c.AccessKeyID == "", "$" + snapshot.EnvSecretAccessKey: c.SecretAccessKey == "",
	}
}
