package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// restoreFlags are the flags of "executor restore".
type restoreFlags struct {
	connFlags
	s3 snapshot.S3Config
	// key is the object; sha256 the hex SHA-256 its receipt records.
	key, sha256    string
	workDir        string
	timeout        time.Duration
	terminationLog string
	// waitApplied waits, after sending, until the active node applied the
	// snapshot (a running cluster: OpenBao applies it after it answered).
	waitApplied bool
	// applyTimeout bounds that wait.
	applyTimeout time.Duration
}

func parseRestoreFlags(args []string, getenv func(string) string, stderr io.Writer) (restoreFlags, error) {
	var f restoreFlags
	fs := flag.NewFlagSet("baokeeper executor "+snapshot.ActionRestore, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.bind(fs)
	bindS3(fs, &f.s3)
	fs.StringVar(&f.key, "s3-key", "", "Object key of the snapshot to restore.")
	fs.StringVar(&f.sha256, "sha256", "", "SHA-256 of the snapshot object as its receipt records it (64 lowercase hex digits); an object that hashes otherwise is not restored.")
	fs.StringVar(&f.workDir, "work-dir", "", "Writable directory the object is downloaded into (the root filesystem is read-only; the Job mounts an emptyDir).")
	fs.DurationVar(&f.timeout, "timeout", 25*time.Minute, "How long the whole restore may take, download and retries included.")
	fs.StringVar(&f.terminationLog, "termination-log", "/dev/termination-log", "File that receives the result for the controller; empty disables it.")
	fs.BoolVar(&f.waitApplied, "wait-applied", false, "After sending, wait until the active node answers again with a Raft committed index above the one it had before: it applied the snapshot (OpenBao applies it after answering).")
	fs.DurationVar(&f.applyTimeout, "apply-timeout", 5*time.Minute, "How long --wait-applied waits for the active node to apply the snapshot.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	empty := f.parsed()
	maps.Copy(empty, s3Missing(&f.s3, getenv))
	empty["--s3-key"] = f.key == ""
	empty["--sha256"] = f.sha256 == ""
	empty["--work-dir"] = f.workDir == ""
	missing := missingFlags(empty)
	switch {
	case len(missing) > 0:
		return f, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	case !isSHA256Hex(f.sha256):
		return f, fmt.Errorf("--sha256 %q is not a SHA-256: give the 64 lowercase hex digits of the snapshot's receipt", f.sha256)
	case f.timeout <= 0:
		return f, fmt.Errorf("--timeout %s must be positive", f.timeout)
	case f.applyTimeout <= 0:
		return f, fmt.Errorf("--apply-timeout %s must be positive", f.applyTimeout)
	}
	return f, nil
}

// isSHA256Hex reports whether s is a SHA-256 in lowercase hex, as receipts
// record it.
func isSHA256Hex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// runRestore downloads a snapshot object into --work-dir, checks that it is the
// one its receipt names (SHA-256) and a complete snapshot archive, and sends it
// to the active node's sys/storage/raft/snapshot-force. The result
// (snapshot.RestoreResult) goes to stdout and the termination log. Nothing is
// sent to OpenBao unless both checks pass.
func runRestore(ctx context.Context, args []string, env executorEnv) int {
	f, err := parseRestoreFlags(args, env.getenv, env.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	a := resultAction{name: snapshot.ActionRestore, timeout: f.timeout, terminationLog: f.terminationLog}
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
	// Readable by this process only: the file is a copy of the cluster's data.
	file, err := os.CreateTemp(f.workDir, "snapshot-*.tar.gz")
	if err != nil {
		return a.failed(env, exitFatal, fmt.Errorf("failed to create the download file in --work-dir %s (mount a writable volume, an emptyDir, there): %w", f.workDir, err))
	}
	defer func() {
		_ = file.Close()
		_ = os.Remove(file.Name())
	}()
	r := &restoreRun{f: f, bao: bao, store: store, file: file, env: env}
	ctx = logr.NewContext(ctx, logr.FromContextOrDiscard(ctx).WithValues("object", r.location()))
	return a.run(ctx, env, r.attempt)
}

// restoreRun is one restore: the object is downloaded and checked once, then
// sent until OpenBao takes it.
type restoreRun struct {
	f     restoreFlags
	bao   openbao.Leadership
	store snapshotStore
	file  *os.File
	env   executorEnv

	// checked is the verified download; nil until one is.
	checked *checkedSnapshot
}

// checkedSnapshot is a download whose SHA-256 matched the receipt's and that is a
// complete snapshot archive.
type checkedSnapshot struct {
	size int64
	info openbao.SnapshotInfo
}

func (r *restoreRun) location() string { return snapshot.Location(r.f.s3.Bucket, r.f.key) }

// attempt downloads and checks the object unless done already, finds the active
// node and sends it the snapshot.
func (r *restoreRun) attempt(ctx context.Context) (any, error) {
	if r.checked == nil {
		c, err := r.download(ctx)
		if err != nil {
			return nil, err
		}
		r.checked = &c
	}
	leader, addr, err := raftops.FindActive(ctx, r.bao, r.f.members)
	if err != nil {
		return nil, err
	}
	var before uint64
	if r.f.waitApplied {
		l, err := r.bao.Leader(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("failed to read the Raft index of the active node %s before the restore: %w", leader, err)
		}
		before = l.RaftCommittedIndex
	}
	if _, err := r.file.Seek(0, io.SeekStart); err != nil {
		return nil, permanentError{fmt.Errorf("failed to rewind the downloaded snapshot %s: %w", r.file.Name(), err)}
	}
	if err := r.bao.Restore(ctx, addr, r.file); err != nil {
		return nil, err
	}
	res := snapshot.RestoreResult{
		Location: r.location(), SHA256: r.f.sha256, SizeBytes: r.checked.size,
		RaftIndex: r.checked.info.Index, RaftTerm: r.checked.info.Term,
		RestoredTo: leader, RestoredAt: r.env.clock.Now().UTC(),
	}
	if r.f.waitApplied {
		applied, err := r.waitApplied(ctx, leader, addr, before)
		if err != nil {
			return nil, err
		}
		res.AppliedIndex = applied
	}
	return res, nil
}

// waitApplied polls the active node the snapshot went to until it answers as the
// active node with a Raft committed index above before: OpenBao answers the
// restore request once it holds the upload, then applies it through Raft (an index
// of its own, and a no-op after it) and reloads its keyring, answering nothing
// meanwhile. A node that answers as a standby lost the lead (it may have sealed
// itself on a snapshot it could not use); the attempt then fails, and the next one
// sends the snapshot to whichever node is active.
func (r *restoreRun) waitApplied(ctx context.Context, leader, addr string, before uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.f.applyTimeout)
	defer cancel()
	var last string
	for {
		l, err := r.bao.Leader(ctx, addr)
		switch {
		case err != nil:
			last = err.Error()
		case !l.IsSelf:
			last = fmt.Sprintf("it answers as a standby (leader %s)", l.LeaderAddress)
		case l.RaftCommittedIndex > before:
			return l.RaftCommittedIndex, nil
		default:
			last = fmt.Sprintf("its committed index is still %d", l.RaftCommittedIndex)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("the active node %s took the snapshot but did not apply it within %s (Raft committed index %d before; last: %s): "+
				"read its log (kubectl logs %s -c openbao)", leader, r.f.applyTimeout, before, last, leader)
		case <-r.env.clock.After(500 * time.Millisecond):
		}
	}
}

// download copies the object into the work file (anew on every call), hashing
// it on the way, and checks it against the receipt and as an archive.
func (r *restoreRun) download(ctx context.Context) (checkedSnapshot, error) {
	loc := r.location()
	if err := rewind(r.file, true); err != nil {
		return checkedSnapshot{}, permanentError{fmt.Errorf("failed to prepare the download file %s: %w", r.file.Name(), err)}
	}
	sum := sha256.New()
	n, err := r.store.Download(ctx, r.f.key, io.MultiWriter(r.file, sum))
	switch {
	case errors.Is(err, snapshot.ErrObjectMissing):
		return checkedSnapshot{}, permanentError{fmt.Errorf("%w; nothing was restored", err)}
	case err != nil:
		return checkedSnapshot{}, err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != r.f.sha256 {
		return checkedSnapshot{}, permanentError{fmt.Errorf("the object %s has sha256 %s, not %s as its receipt says: "+
			"it is not the snapshot baokeeper verified; nothing was restored", loc, got, r.f.sha256)}
	}
	if err := rewind(r.file, false); err != nil {
		return checkedSnapshot{}, permanentError{fmt.Errorf("failed to rewind the downloaded snapshot %s: %w", r.file.Name(), err)}
	}
	info, err := openbao.InspectSnapshot(r.file)
	if err != nil {
		return checkedSnapshot{}, permanentError{fmt.Errorf("the object %s (sha256 %s) is not an OpenBao Raft snapshot: %w; nothing was restored", loc, r.f.sha256, err)}
	}
	return checkedSnapshot{size: n, info: info}, nil
}

// rewind moves to the start of f and, with truncate, empties it.
func rewind(f *os.File, truncate bool) error {
	if truncate {
		if err := f.Truncate(0); err != nil {
			return err
		}
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}
