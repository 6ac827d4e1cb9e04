package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
)

// raftArchive builds a snapshot archive as OpenBao streams it: a gzip tar of
// meta.json (index 812, term 3), state.bin, SHA256SUMS and, when sealed,
// a non-empty SHA256SUMS.sealed.
func raftArchive(t *testing.T, sealed bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	files := []struct{ name, body string }{
		{"meta.json", `{"Version":1,"ID":"3-812-1764404473","Index":812,"Term":3}`},
		{"state.bin", strings.Repeat("raft state ", 2000)},
		{"SHA256SUMS", "0123 meta.json\n4567 state.bin\n"},
	}
	if sealed {
		files = append(files, struct{ name, body string }{"SHA256SUMS.sealed", "sealed-sums"})
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o600, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha256Of(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestParseRestoreFlags(t *testing.T) {
	sum := sha256Of([]byte("x"))
	valid := []string{
		"--members", testMembers[0], "--ca-file", "/ca.crt", "--token-file", "/token",
		"--s3-endpoint", "https://s3.example.com", "--s3-bucket", "snaps", "--s3-key", "ns/bao/a.snap",
		"--sha256", sum, "--work-dir", "/work",
	}
	creds := map[string]string{snapshot.EnvAccessKeyID: "id", snapshot.EnvSecretAccessKey: "secret"}
	tests := []struct {
		reason  string
		args    []string
		env     map[string]string
		wantErr string
		check   func(g Gomega, f restoreFlags)
	}{
		{
			reason: "defaults: 25 minutes, the kubelet's termination log, the executor identity",
			args:   valid, env: creds,
			check: func(g Gomega, f restoreFlags) {
				g.Expect(f.timeout).To(Equal(25 * time.Minute))
				g.Expect(f.terminationLog).To(Equal("/dev/termination-log"))
				g.Expect(f.key).To(Equal("ns/bao/a.snap"))
				g.Expect(f.sha256).To(Equal(sum))
				g.Expect(f.workDir).To(Equal("/work"))
				g.Expect(f.members).To(Equal(testMembers[:1]))
				g.Expect(f.s3).To(Equal(snapshot.S3Config{Endpoint: "https://s3.example.com", Bucket: "snaps", AccessKeyID: "id", SecretAccessKey: "secret"}))
				g.Expect(f.config()).To(Equal(openbao.MemberConfig{CAFile: "/ca.crt", TokenFile: "/token", AuthMount: "baokeeper-jwt", Role: "baokeeper-executor"}))
			},
		},
		{
			reason: "everything missing is named, sorted",
			args:   nil, env: nil,
			wantErr: "missing $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY, --ca-file, --members, --s3-bucket, --s3-endpoint, --s3-key, --sha256, --token-file, --work-dir",
		},
		{reason: "an uppercase checksum is refused", args: append(slices.Clone(valid), "--sha256", strings.ToUpper(sum)), env: creds, wantErr: "is not a SHA-256"},
		{reason: "a short checksum is refused", args: append(slices.Clone(valid), "--sha256", sum[:63]), env: creds, wantErr: "give the 64 lowercase hex digits"},
		{reason: "a checksum that is not hex is refused", args: append(slices.Clone(valid), "--sha256", strings.Repeat("g", 64)), env: creds, wantErr: "is not a SHA-256"},
		{reason: "a zero timeout", args: append(slices.Clone(valid), "--timeout", "0s"), env: creds, wantErr: "--timeout 0s must be positive"},
		{reason: "stray arguments", args: append(slices.Clone(valid), "extra"), env: creds, wantErr: `unexpected arguments ["extra"]`},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			f, err := parseRestoreFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)), tt.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tt.reason)
			tt.check(g, f)
		})
	}
}

// runWithFakes runs the executor with bao and store, letting retry pauses pass at
// once on a fake clock, and returns the exit code, stdout, stderr, the termination
// log and the clock.
func runWithFakes(t *testing.T, args []string, bao openbao.MemberClient, store *fakeStore) (int, string, string, string, *testingclock.FakeClock) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	termLog := filepath.Join(t.TempDir(), "termination-log")
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if clk.HasWaiters() {
				clk.Step(snapshotRetryInterval)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	env := executorEnv{
		stdout: &stdout, stderr: &stderr,
		newClient: func(openbao.MemberConfig) (openbao.MemberClient, error) { return bao, nil },
		newStore:  func(snapshot.S3Config) (snapshotStore, error) { return store, nil },
		getenv: func(k string) string {
			return map[string]string{snapshot.EnvAccessKeyID: "id", snapshot.EnvSecretAccessKey: "secret"}[k]
		},
		clock: clk,
	}
	code := runExecutor(ctx, append(slices.Clone(args), "--termination-log", termLog), env)
	msg, _ := os.ReadFile(termLog)
	return code, stdout.String(), stderr.String(), string(msg), clk
}

func TestRunRestore(t *testing.T) {
	const key = "ns/src/2.4.0-to-2.4.1-20261129T120000Z-1.snap"
	archive := raftArchive(t, true)
	unsealed := raftArchive(t, false)
	notArchive := []byte("this is not a snapshot")
	args := func(members []string, sum string, extra ...string) []string {
		return append([]string{
			snapshot.ActionRestore,
			"--members", strings.Join(members, ","), "--ca-file", "/ca.crt", "--token-file", "/token",
			"--s3-endpoint", "http://127.0.0.1:22833", "--s3-bucket", "snaps", "--s3-key", key,
			"--sha256", sum,
		}, extra...)
	}
	connReset := &url.Error{Op: "Get", URL: "http://127.0.0.1:22833/snaps/" + key, Err: syscall.ECONNRESET}
	tests := []struct {
		reason        string
		object        []byte
		sum           string
		members       []string
		bao           *fakeBao
		downloadErrs  []error
		extra         []string
		wantCode      int
		wantStderr    string
		wantRestores  []string
		wantDownloads int
		wantLeader    string
		// wantNothingSent: not one byte reaches OpenBao.
		wantNothingSent bool
	}{
		{
			reason: "the one member of a new cluster takes the snapshot: the result names it",
			object: archive, sum: sha256Of(archive), members: testMembers[:1], bao: &fakeBao{},
			wantCode: exitOK, wantRestores: []string{testMembers[0]}, wantDownloads: 1, wantLeader: "bao-0",
		},
		{
			reason: "the snapshot goes to the active node, not to the first member",
			object: archive, sum: sha256Of(archive), members: testMembers, bao: &fakeBao{active: 2},
			wantCode: exitOK, wantRestores: []string{testMembers[2]}, wantDownloads: 1, wantLeader: "bao-2",
		},
		{
			reason: "leadership moved (and the node was sealed a moment): found again and sent again, downloaded once",
			object: archive, sum: sha256Of(archive), members: testMembers[:1],
			bao:      &fakeBao{restoreErrs: []error{openbao.ErrNotActive, fmt.Errorf("sealed: %w", openbao.ErrNotActive)}},
			wantCode: exitOK, wantRestores: slices.Repeat([]string{testMembers[0]}, 3), wantDownloads: 1, wantLeader: "bao-0",
		},
		{
			reason: "a connection reset during the download: downloaded again",
			object: archive, sum: sha256Of(archive), members: testMembers[:1], bao: &fakeBao{}, downloadErrs: []error{connReset},
			wantCode: exitOK, wantRestores: []string{testMembers[0]}, wantDownloads: 2, wantLeader: "bao-0",
		},
		{
			reason: "an object that is not what the receipt says: fatal, nothing sent to OpenBao",
			object: archive, sum: sha256Of([]byte("the snapshot baokeeper verified")), members: testMembers[:1], bao: &fakeBao{},
			wantCode: exitFatal, wantDownloads: 1, wantNothingSent: true,
			wantStderr: fmt.Sprintf("baokeeper executor restore: fatal: the object s3://snaps/%s has sha256 %s, not %s as its receipt says: "+
				"it is not the snapshot baokeeper verified; nothing was restored", key, sha256Of(archive), sha256Of([]byte("the snapshot baokeeper verified"))),
		},
		{
			reason: "an object that matches its checksum but is no archive: fatal, nothing sent",
			object: notArchive, sum: sha256Of(notArchive), members: testMembers[:1], bao: &fakeBao{},
			wantCode: exitFatal, wantDownloads: 1, wantNothingSent: true,
			wantStderr: "baokeeper executor restore: fatal: the object s3://snaps/" + key + " (sha256 " + sha256Of(notArchive) + ") is not an OpenBao Raft snapshot",
		},
		{
			reason: "an archive without SHA256SUMS.sealed (a stream cut short): fatal, nothing sent",
			object: unsealed, sum: sha256Of(unsealed), members: testMembers[:1], bao: &fakeBao{},
			wantCode: exitFatal, wantDownloads: 1, wantNothingSent: true, wantStderr: "non-empty SHA256SUMS.sealed",
		},
		{
			reason: "a missing object is named: fatal, nothing sent",
			sum:    sha256Of(archive), members: testMembers[:1], bao: &fakeBao{},
			wantCode: exitFatal, wantDownloads: 1, wantNothingSent: true, wantStderr: "s3://snaps/" + key + " does not exist; nothing was restored",
		},
		{
			reason: "the executor may not restore: fatal, sent once",
			object: archive, sum: sha256Of(archive), members: testMembers[:1], bao: &fakeBao{restoreErrs: []error{openbao.ErrPermissionDenied}},
			wantCode: exitFatal, wantDownloads: 1, wantRestores: []string{testMembers[0]}, wantStderr: "baokeeper executor restore: fatal: openbao: permission denied",
		},
		{
			reason: "a retryable failure that outlasts --timeout: exit 2",
			object: archive, sum: sha256Of(archive), members: testMembers[:1],
			bao:      &fakeBao{restoreErrs: slices.Repeat([]error{openbao.ErrNotActive}, 1_000_000)},
			extra:    []string{"--timeout", "300ms"},
			wantCode: exitRetryable, wantDownloads: 1, wantStderr: "baokeeper executor restore: retryable failure: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			workDir := t.TempDir()
			store := &fakeStore{objects: map[string][]byte{}, downloadErrs: tt.downloadErrs}
			if tt.object != nil {
				store.objects[key] = tt.object
			}
			code, stdout, stderr, msg, clk := runWithFakes(t, args(tt.members, tt.sum, append([]string{"--work-dir", workDir}, tt.extra...)...), tt.bao, store)
			g.Expect(code).To(Equal(tt.wantCode), "%s; stderr: %s", tt.reason, stderr)
			g.Expect(store.downloads).To(HaveLen(tt.wantDownloads), tt.reason)
			if tt.wantRestores != nil {
				g.Expect(tt.bao.restores).To(Equal(tt.wantRestores), tt.reason)
			}
			left, err := os.ReadDir(workDir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(left).To(BeEmpty(), "the downloaded copy of the cluster's data is removed")
			if tt.wantCode != exitOK {
				g.Expect(stdout).To(BeEmpty())
				g.Expect(stderr).To(ContainSubstring(tt.wantStderr), tt.reason)
				g.Expect(msg).To(ContainSubstring(tt.wantStderr), "the controller reads the failure from the termination log")
				if tt.wantNothingSent {
					g.Expect(tt.bao.restores).To(BeEmpty(), "%s: nothing may reach OpenBao", tt.reason)
				}
				return
			}
			g.Expect(tt.bao.restored).To(HaveLen(1))
			g.Expect(tt.bao.restored[0]).To(Equal(tt.object), "the archive is sent whole, from its start, also when sent again")
			g.Expect(strings.TrimSpace(stdout)).To(Equal(msg), "stdout and the termination log carry the same result")
			res, err := snapshot.ParseRestoreResult(msg)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res).To(Equal(snapshot.RestoreResult{
				Location: "s3://snaps/" + key, SHA256: tt.sum, SizeBytes: int64(len(tt.object)),
				RaftIndex: 812, RaftTerm: 3, RestoredTo: tt.wantLeader, RestoredAt: clk.Now().UTC(),
			}))
			g.Expect(msg).To(HavePrefix(`{"location":"s3://snaps/` + key + `","sha256":"` + tt.sum + `","sizeBytes":`))
		})
	}
}

// TestRunRestoreWaitsApplied: with --wait-applied (an in-place restore) the result
// carries the active node's committed index once it rose above the one before.
func TestRunRestoreWaitsApplied(t *testing.T) {
	g := NewWithT(t)
	archive := raftArchive(t, true)
	store := &fakeStore{objects: map[string][]byte{"k": archive}}
	bao := &fakeBao{active: 1, committed: 400}
	code, _, stderr, msg, _ := runWithFakes(t, []string{
		snapshot.ActionRestore, "--members", strings.Join(testMembers, ","), "--ca-file", "/ca.crt", "--token-file", "/token",
		"--s3-endpoint", "http://127.0.0.1:22833", "--s3-bucket", "snaps", "--s3-key", "k", "--sha256", sha256Of(archive),
		"--work-dir", t.TempDir(), "--wait-applied",
	}, bao, store)
	g.Expect(code).To(Equal(exitOK), stderr)
	res, err := snapshot.ParseRestoreResult(msg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RestoredTo).To(Equal("bao-1"))
	g.Expect(res.AppliedIndex).To(BeEquivalentTo(402), "above the 400 the active node had before")

	// An active node that never applies it fails the attempt, naming it.
	stuck := &stuckApply{fakeBao: &fakeBao{active: 1, committed: 400}}
	code, _, stderr, _, _ = runWithFakes(t, []string{
		snapshot.ActionRestore, "--members", strings.Join(testMembers, ","), "--ca-file", "/ca.crt", "--token-file", "/token",
		"--s3-endpoint", "http://127.0.0.1:22833", "--s3-bucket", "snaps", "--s3-key", "k", "--sha256", sha256Of(archive),
		"--work-dir", t.TempDir(), "--wait-applied", "--apply-timeout", "2s", "--timeout", "3s",
	}, stuck, store)
	g.Expect(code).NotTo(Equal(exitOK))
	g.Expect(stderr).To(ContainSubstring("took the snapshot but did not apply it within 2s"))
}

// stuckApply is an OpenBao whose active node takes a restore and never applies it.
type stuckApply struct{ *fakeBao }

func (s *stuckApply) Restore(ctx context.Context, addr string, r io.ReadSeeker) error {
	committed := s.committed
	err := s.fakeBao.Restore(ctx, addr, r)
	s.mu.Lock()
	s.committed = committed
	s.mu.Unlock()
	return err
}

func TestRunRestoreNeedsAWritableWorkDir(t *testing.T) {
	g := NewWithT(t)
	archive := raftArchive(t, true)
	store := &fakeStore{objects: map[string][]byte{"k": archive}}
	bao := &fakeBao{}
	code, _, stderr, msg, _ := runWithFakes(t, []string{
		snapshot.ActionRestore, "--members", testMembers[0], "--ca-file", "/ca.crt", "--token-file", "/token",
		"--s3-endpoint", "http://127.0.0.1:22833", "--s3-bucket", "snaps", "--s3-key", "k", "--sha256", sha256Of(archive),
		"--work-dir", filepath.Join(t.TempDir(), "missing"),
	}, bao, store)
	g.Expect(code).To(Equal(exitFatal))
	g.Expect(stderr).To(ContainSubstring("baokeeper executor restore: fatal: failed to create the download file in --work-dir"))
	g.Expect(msg).To(ContainSubstring("mount a writable volume"))
	g.Expect(store.downloads).To(BeEmpty())
	g.Expect(bao.restores).To(BeEmpty())
}

// TestRestoreJobArgumentsParse checks that what snapshot.RestoreJob writes into
// the container is what the executor mode reads.
func TestRestoreJobArgumentsParse(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns"}}
	c.Spec.Replicas = new(int32(3))
	sum := sha256Of([]byte("x"))
	c.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{
		S3: baov1.S3Target{Endpoint: "https://s3.example.com", Bucket: "snaps", Region: "eu-west-1", ForcePathStyle: true,
			CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}},
		Key: "bao/ns/src/a.snap", SHA256: sum,
	}}
	job := snapshot.RestoreJob(c, &baov1.RestoreStatus{ID: "1f2e3d4c", Attempts: 1}, "baokeeper:dev")
	ctr := job.Spec.Template.Spec.Containers[0]
	g.Expect(ctr.Args[:2]).To(Equal([]string{"executor", snapshot.ActionRestore}))
	f, err := parseRestoreFlags(ctr.Args[2:], func(k string) string { return "from-" + k }, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.members).To(HaveLen(1), "a new cluster restores into its first member")
	g.Expect(f.key).To(Equal("bao/ns/src/a.snap"))
	g.Expect(f.sha256).To(Equal(sum))
	g.Expect(f.s3.Bucket).To(Equal("snaps"))
	g.Expect(f.s3.AccessKeyID).To(Equal("from-AWS_ACCESS_KEY_ID"))
	g.Expect(ctr.VolumeMounts).To(ContainElement(HaveField("MountPath", f.workDir)), "--work-dir is a mounted volume")
	g.Expect(f.terminationLog).To(Equal(ctr.TerminationMessagePath), "the result lands where the kubelet reads the termination message")
}
