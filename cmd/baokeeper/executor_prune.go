package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/baokeeper/baokeeper/internal/service/snapshot"
)

// pruneFlags are the flags of "executor prune".
type pruneFlags struct {
	s3             snapshot.S3Config
	folder         string
	retention      snapshot.Retention
	protected      []string
	terminationLog string
}

func parsePruneFlags(args []string, getenv func(string) string, env executorEnv) (pruneFlags, error) {
	var f pruneFlags
	fs := flag.NewFlagSet("baokeeper executor "+snapshot.ActionPrune, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	bindS3(fs, &f.s3)
	fs.StringVar(&f.folder, "s3-folder", "", "The cluster's folder in the bucket, <prefix>/<namespace>/<cluster>/: only objects under it are listed and pruned.")
	fs.IntVar(&f.retention.Count, "keep-count", 0, "Keep the newest N snapshot objects; 0 keeps any number.")
	fs.DurationVar(&f.retention.MaxAge, "max-age", 0, "Delete snapshot objects older than this; 0 keeps any age.")
	fs.Func("protect", "Object key never to delete (repeatable): the newest verified snapshot, an upgrade's.", func(v string) error {
		f.protected = append(f.protected, v)
		return nil
	})
	fs.StringVar(&f.terminationLog, "termination-log", "/dev/termination-log", "File that receives the result for the controller; empty disables it.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	missing := s3Missing(&f.s3, getenv)
	missing["--s3-folder"] = f.folder == ""
	if m := missingFlags(missing); len(m) > 0 {
		return f, fmt.Errorf("missing %s", strings.Join(m, ", "))
	}
	switch {
	case !strings.HasSuffix(f.folder, "/") || strings.HasPrefix(f.folder, "/"):
		return f, fmt.Errorf("--s3-folder %q must be a folder: no leading slash, a trailing one (<prefix>/<namespace>/<cluster>/)", f.folder)
	case f.retention.Count < 0 || f.retention.MaxAge < 0:
		return f, errors.New("--keep-count and --max-age must not be negative")
	case f.retention.Count == 0 && f.retention.MaxAge == 0:
		return f, errors.New("give --keep-count, --max-age or both: without either, nothing would be pruned")
	}
	return f, nil
}

// runPrune lists the cluster's snapshot objects, lets snapshot.PlanPrune decide
// what retention deletes, and deletes it oldest first. A deletion the bucket
// refuses stops the pruning: nothing after it is deleted, and the result says which
// one failed. The result goes to stdout and the termination log as JSON
// (snapshot.PruneResult); the Job succeeds whenever it could list, so that the
// controller reads the result, and fails when it could not.
func runPrune(ctx context.Context, args []string, env executorEnv) int {
	f, err := parsePruneFlags(args, env.getenv, env)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	write := func(msg string) {
		if f.terminationLog != "" {
			if werr := os.WriteFile(f.terminationLog, []byte(msg), 0o644); werr != nil {
				fmt.Fprintf(env.stderr, "baokeeper executor %s: failed to write %s: %v\n", snapshot.ActionPrune, f.terminationLog, werr)
			}
		}
	}
	fail := func(msg string) int {
		fmt.Fprintln(env.stderr, msg)
		write(msg)
		return exitFatal
	}
	if err != nil {
		return fail(fmt.Sprintf("invalid flags: %v", err))
	}
	store, err := env.newStore(f.s3)
	if err != nil {
		return fail(err.Error())
	}
	objects, err := store.List(ctx, f.folder)
	if err != nil {
		return fail(err.Error())
	}
	plan := snapshot.PlanPrune(objects, f.retention, f.protected, env.clock.Now())
	res := snapshot.PruneResult{Listed: len(plan.Delete) + len(plan.Keep), Deleted: []string{}}
	// Oldest first: a pruning cut short leaves the newest objects.
	for i := len(plan.Delete) - 1; i >= 0; i-- {
		o := plan.Delete[i]
		if err := store.Remove(ctx, o.Key); err != nil {
			res.Failed = fmt.Sprintf("%v; nothing after it was deleted (%d objects left to prune)", err, i+1)
			break
		}
		res.Deleted = append(res.Deleted, o.Key)
		fmt.Fprintf(env.stderr, "deleted %s (%s old)\n", o.Key, env.clock.Since(o.LastModified).Round(time.Second))
	}
	res.Kept = res.Listed - len(res.Deleted)
	b, _ := json.Marshal(res)
	fmt.Fprintln(env.stdout, string(b))
	write(string(b))
	return exitOK
}
