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

// snapshotRetryInterval is the pause before taking the snapshot again after a
// retryable failure (no leader yet, the leader changed midstream).
const snapshotRetryInterval = 3 * time.Second

// runSnapshot streams a Raft snapshot from the leader into object storage,
// verifies it there, and reports a receipt on stdout and in the termination log.
func runSnapshot(ctx context.Context, args []string, env executorEnv) int {
	f, err := parseSnapshotFlags(args, env.getenv, env.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return snapshotFailed(env, f, exitFatal, fmt.Errorf("invalid flags: %w", err))
	}
	bao, err := env.newClient(f.config())
	if err != nil {
		return snapshotFailed(env, f, exitFatal, err)
	}
	store, err := env.newStore(f.s3)
	if err != nil {
		return snapshotFailed(env, f, exitFatal, err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	log := logr.FromContextOrDiscard(ctx).WithValues("object", snapshot.Location(f.s3.Bucket, f.key))

	for attempt := 1; ; attempt++ {
		receipt, err := takeSnapshot(ctx, bao, store, f, env)
		if err == nil {
			out, merr := json.Marshal(receipt)
			if merr != nil {
				return snapshotFailed(env, f, exitFatal, fmt.Errorf("failed to encode the receipt: %w", merr))
			}
			fmt.Fprintln(env.stdout, string(out))
			if f.terminationLog != "" {
				if werr := os.WriteFile(f.terminationLog, out, 0o644); werr != nil {
					fmt.Fprintf(env.stderr, "baokeeper executor snapshot: fatal: failed to write the receipt to %s: %v\n", f.terminationLog, werr)
					return exitFatal
				}
			}
			return exitOK
		}
		if raftops.Classify(err) != raftops.ClassRetryable || ctx.Err() != nil {
			// Unanticipated errors are fatal here, as for every executor action: the
			// controller retries the whole Job a bounded number of times.
			code := exitRetryable
			if raftops.Classify(err) == raftops.ClassFatal {
				code = exitFatal
			}
			return snapshotFailed(env, f, code, err)
		}
		log.Info("Retrying the snapshot", "attempt", attempt, "reason", err.Error())
		select {
		case <-ctx.Done():
			return snapshotFailed(env, f, exitRetryable, fmt.Errorf("gave up after %s: %w", f.timeout, err))
		case <-env.clock.After(snapshotRetryInterval):
		}
	}
}

// takeSnapshot finds the leader and streams its snapshot into the store.
func takeSnapshot(ctx context.Context, bao openbao.Leadership, store snapshotStore, f snapshotFlags, env executorEnv) (snapshot.Receipt, error) {
	leader, addr, err := raftops.FindActive(ctx, bao, f.members)
	if err != nil {
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
		RaftIndex: info.Index, RaftTerm: info.Term, FromMember: leader, TakenAt: env.clock.Now().UTC(),
	}, nil
}

// snapshotStore is what the snapshot and check-target actions need from object
// storage; *snapshot.Store in production.
type snapshotStore interface {
	Upload(ctx context.Context, key string, write func(io.Writer) error) (snapshot.Uploaded, error)
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

// snapshotFailed reports a failure on stderr and in the termination log, which the
// controller copies into the upgrade's failure message.
func snapshotFailed(env executorEnv, f snapshotFlags, code int, err error) int {
	kind := "fatal"
	if code == exitRetryable {
		kind = "retryable failure"
	}
	msg := fmt.Sprintf("baokeeper executor snapshot: %s: %v", kind, err)
	fmt.Fprintln(env.stderr, msg)
	if f.terminationLog != "" {
		_ = os.WriteFile(f.terminationLog, []byte(msg), 0o644)
	}
	return code
}
