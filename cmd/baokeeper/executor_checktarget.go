package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/baokeeper/baokeeper/internal/service/snapshot"
)

// checkTargetFlags are the flags of "executor check-target".
type checkTargetFlags struct {
	s3             snapshot.S3Config
	timeout        time.Duration
	terminationLog string
}

func parseCheckTargetFlags(args []string, getenv func(string) string, env executorEnv) (checkTargetFlags, error) {
	var f checkTargetFlags
	fs := flag.NewFlagSet("baokeeper executor "+snapshot.ActionCheckTarget, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	bindS3(fs, &f.s3)
	fs.DurationVar(&f.timeout, "timeout", 20*time.Second, "How long the check may take.")
	fs.StringVar(&f.terminationLog, "termination-log", "/dev/termination-log", "File that receives the outcome for the controller; empty disables it.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	missing := missingFlags(s3Missing(&f.s3, getenv))
	switch {
	case len(missing) > 0:
		return f, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	case f.timeout <= 0:
		return f, fmt.Errorf("--timeout %s must be positive", f.timeout)
	}
	return f, nil
}

// runCheckTarget checks, from the pod it runs in, that the bucket exists and that
// the credentials may see it: the SnapshotTarget precheck of an upgrade. The
// outcome goes to stdout and the termination log; a failure's message is the
// precheck's, as it is (the controller adds where the target is).
func runCheckTarget(ctx context.Context, args []string, env executorEnv) int {
	f, err := parseCheckTargetFlags(args, env.getenv, env)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	report := func(code int, msg string) int {
		out := env.stdout
		if code != exitOK {
			out = env.stderr
		}
		fmt.Fprintln(out, msg)
		if f.terminationLog != "" {
			if werr := os.WriteFile(f.terminationLog, []byte(msg), 0o644); werr != nil {
				fmt.Fprintf(env.stderr, "baokeeper executor %s: failed to write %s: %v\n", snapshot.ActionCheckTarget, f.terminationLog, werr)
			}
		}
		return code
	}
	if err != nil {
		return report(exitFatal, fmt.Sprintf("invalid flags: %v", err))
	}
	store, err := env.newStore(f.s3)
	if err != nil {
		return report(exitFatal, err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if err := store.Reachable(ctx); err != nil {
		return report(exitFatal, err.Error())
	}
	return report(exitOK, fmt.Sprintf("bucket %s at %s is reachable", f.s3.Bucket, f.s3.Endpoint))
}
