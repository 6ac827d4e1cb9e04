package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/raftops"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
)

// fakeStore keeps uploaded objects in memory and hashes them as S3 would read
// them back.
type fakeStore struct {
	objects map[string][]byte
	err     error
	// modified is each object's time for List; removeErr fails Remove of that key.
	modified  map[string]time.Time
	removeErr map[string]error
	listErr   error
	// downloadErrs fails Download calls, one each, in order; downloads records the
	// key of every call.
	downloadErrs []error
	downloads    []string
}

// Download copies a stored object; a missing one is snapshot.ErrObjectMissing.
func (s *fakeStore) Download(_ context.Context, key string, w io.Writer) (int64, error) {
	s.downloads = append(s.downloads, key)
	if len(s.downloadErrs) > 0 {
		err := s.downloadErrs[0]
		s.downloadErrs = s.downloadErrs[1:]
		return 0, err
	}
	b, ok := s.objects[key]
	if !ok {
		return 0, fmt.Errorf("%w: %s does not exist", snapshot.ErrObjectMissing, snapshot.Location("snaps", key))
	}
	n, err := w.Write(b)
	return int64(n), err
}

func (s *fakeStore) List(_ context.Context, prefix string) ([]snapshot.Object, error) {
	if s.listErr != nil {
		return nil, s.listErr
	}
	var out []snapshot.Object
	for k, b := range s.objects {
		if strings.HasPrefix(k, prefix) {
			out = append(out, snapshot.Object{Key: k, Size: int64(len(b)), LastModified: s.modified[k]})
		}
	}
	return out, nil
}

func (s *fakeStore) Remove(_ context.Context, key string) error {
	if err := s.removeErr[key]; err != nil {
		return err
	}
	delete(s.objects, key)
	return nil
}

func (s *fakeStore) Upload(_ context.Context, key string, write func(io.Writer) error) (snapshot.Uploaded, error) {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return snapshot.Uploaded{}, err
	}
	if s.err != nil {
		return snapshot.Uploaded{}, s.err
	}
	s.objects[key] = buf.Bytes()
	sum := sha256.Sum256(buf.Bytes())
	return snapshot.Uploaded{Location: snapshot.Location("snaps", key), SizeBytes: int64(buf.Len()), SHA256: hex.EncodeToString(sum[:])}, nil
}

func (s *fakeStore) Reachable(context.Context) error { return s.err }

func TestRunSnapshot(t *testing.T) {
	archive := bytes.Repeat([]byte("raft snapshot "), 1000)
	sum := sha256.Sum256(archive)
	flags := []string{
		"snapshot",
		"--members", strings.Join(testMembers, ","),
		"--ca-file", "/ca.crt", "--token-file", "/token",
		"--s3-endpoint", "http://127.0.0.1:22833", "--s3-bucket", "snaps", "--s3-key", "ns/bao/2.4.0-to-2.4.1-1.snap",
	}
	creds := map[string]string{snapshot.EnvAccessKeyID: "id", snapshot.EnvSecretAccessKey: "secret"}
	tests := []struct {
		reason        string
		args          []string
		env           map[string]string
		bao           *fakeBao
		storeErr      error
		wantCode      int
		wantSnapshots []string
		wantStderr    string
	}{
		{
			reason: "the snapshot is taken from the leader (bao-1), not from the first member",
			args:   flags, env: creds, bao: &fakeBao{active: 1, snapData: archive},
			wantCode: exitOK, wantSnapshots: []string{testMembers[1]},
		},
		{
			reason: "leadership moved between discovery and snapshot: found again and retried",
			args:   flags, env: creds, bao: &fakeBao{active: 0, snapData: archive, snapErrs: []error{openbao.ErrNotActive}},
			wantCode: exitOK, wantSnapshots: []string{testMembers[0], testMembers[0]},
		},
		{
			reason: "an incomplete archive is retried",
			args:   flags, env: creds, bao: &fakeBao{active: 2, snapData: archive, snapErrs: []error{openbao.ErrIncompleteSnapshot}},
			wantCode: exitOK, wantSnapshots: []string{testMembers[2], testMembers[2]},
		},
		{
			reason: "a cluster initialized before the canary (no mount): the snapshot is taken without one",
			args:   flags, env: creds, bao: &fakeBao{active: 1, snapData: archive, canaryErr: fmt.Errorf("no handler for route: %w", openbao.ErrNotFound)},
			wantCode: exitOK, wantSnapshots: []string{testMembers[1]},
		},
		{
			reason: "a policy without the canary: the snapshot is taken without one",
			args:   flags, env: creds, bao: &fakeBao{active: 1, snapData: archive, canaryErr: openbao.ErrPermissionDenied},
			wantCode: exitOK, wantSnapshots: []string{testMembers[1]},
		},
		{
			reason: "missing credentials are named: fatal, nothing read",
			args:   flags, env: map[string]string{snapshot.EnvAccessKeyID: "id"}, bao: &fakeBao{snapData: archive},
			wantCode: exitFatal, wantStderr: "missing $AWS_SECRET_ACCESS_KEY",
		},
		{
			reason: "missing flags are named: fatal",
			args:   []string{"snapshot", "--members", testMembers[0]}, env: creds, bao: &fakeBao{},
			wantCode: exitFatal, wantStderr: "missing --ca-file, --s3-bucket, --s3-endpoint, --s3-key, --token-file",
		},
		{
			reason: "the executor may not take snapshots: fatal, not retried",
			args:   flags, env: creds, bao: &fakeBao{snapErrs: []error{openbao.ErrPermissionDenied}},
			wantCode: exitFatal, wantSnapshots: []string{testMembers[0]}, wantStderr: "permission denied",
		},
		{
			reason: "the store reports a mismatch on read-back: an unanticipated error is not retried in the Job (the controller retries the Job)",
			args:   flags, env: creds, bao: &fakeBao{snapData: archive}, storeErr: errors.New("the object does not match what was sent"),
			wantCode: exitFatal, wantSnapshots: []string{testMembers[0]}, wantStderr: "does not match",
		},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			termLog := filepath.Join(t.TempDir(), "termination-log")
			store := &fakeStore{objects: map[string][]byte{}, err: tt.storeErr}
			clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				// Let retry pauses pass at once.
				for ctx.Err() == nil {
					if clk.HasWaiters() {
						clk.Step(snapshotRetryInterval)
					}
					time.Sleep(time.Millisecond)
				}
			}()
			env := executorEnv{
				stdout: &stdout, stderr: &stderr,
				newClient: func(openbao.MemberConfig) (openbao.MemberClient, error) { return tt.bao, nil },
				newStore:  func(snapshot.S3Config) (snapshotStore, error) { return store, nil },
				getenv:    func(k string) string { return tt.env[k] },
				clock:     clk,
			}
			code := runExecutor(ctx, append(tt.args, "--termination-log", termLog), env)
			g.Expect(code).To(Equal(tt.wantCode), "%s; stderr: %s", tt.reason, stderr.String())
			g.Expect(tt.bao.snapshots).To(Equal(tt.wantSnapshots), tt.reason)
			msg, _ := os.ReadFile(termLog)
			if tt.wantCode != exitOK {
				g.Expect(stdout.String()).To(BeEmpty())
				g.Expect(stderr.String()).To(ContainSubstring(tt.wantStderr), tt.reason)
				if len(tt.wantSnapshots) > 0 {
					g.Expect(string(msg)).To(ContainSubstring(tt.wantStderr), "the controller reads the failure from the termination log")
				}
				return
			}
			g.Expect(store.objects).To(HaveKeyWithValue("ns/bao/2.4.0-to-2.4.1-1.snap", archive))
			g.Expect(strings.TrimSpace(stdout.String())).To(Equal(string(msg)), "stdout and the termination log carry the same receipt")
			r, err := snapshot.ParseReceipt(string(msg))
			g.Expect(err).NotTo(HaveOccurred())
			leader := raftops.NodeID(tt.wantSnapshots[len(tt.wantSnapshots)-1])
			canary := "ns/bao/2.4.0-to-2.4.1-1.snap"
			if tt.bao.canaryErr != nil {
				canary = ""
			}
			g.Expect(*r).To(Equal(snapshot.Receipt{
				Location: "s3://snaps/ns/bao/2.4.0-to-2.4.1-1.snap", SizeBytes: int64(len(archive)), SHA256: hex.EncodeToString(sum[:]),
				RaftIndex: 812, RaftTerm: 3, FromMember: leader, TakenAt: clk.Now().UTC(), Canary: canary,
			}))
			if canary != "" {
				g.Expect(tt.bao.canaries).To(HaveLen(len(tt.wantSnapshots)), "the canary is written through the leader before every attempt's snapshot")
				g.Expect(tt.bao.canaries).To(HaveEach(canary))
			}
		})
	}
}

// TestSnapshotJobArgumentsParse checks that what snapshot.Job writes into the
// container is what the executor mode reads, with the credentials from the
// Secret's environment variables.
func TestSnapshotJobArgumentsParse(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns"}}
	c.Spec.Replicas = new(int32(3))
	c.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways, S3: &baov1.S3Target{
		Endpoint: "https://s3.example.com", Bucket: "snaps", Prefix: "/bao/", Region: "eu-west-1", ForcePathStyle: true,
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"},
	}}
	started := metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	up := &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", StartedAt: &started}
	job := snapshot.Job(c, up, 2, "baokeeper:dev")
	ctr := job.Spec.Template.Spec.Containers[0]
	g.Expect(ctr.Args[:2]).To(Equal([]string{"executor", "snapshot"}))
	g.Expect(ctr.Env).To(ConsistOf(
		HaveField("ValueFrom.SecretKeyRef", HaveField("Key", snapshot.EnvAccessKeyID)),
		HaveField("ValueFrom.SecretKeyRef", HaveField("Key", snapshot.EnvSecretAccessKey)),
	))
	f, err := parseSnapshotFlags(ctr.Args[2:], func(k string) string { return "from-" + k }, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.members).To(HaveLen(3))
	g.Expect(f.s3).To(Equal(snapshot.S3Config{Endpoint: "https://s3.example.com", Bucket: "snaps", Region: "eu-west-1", PathStyle: true,
		AccessKeyID: "from-AWS_ACCESS_KEY_ID", SecretAccessKey: "from-AWS_SECRET_ACCESS_KEY"}))
	g.Expect(f.key).To(Equal("bao/ns/bao/2.4.0-to-2.4.1-20261129T120000Z-2.snap"))
	g.Expect(f.terminationLog).To(Equal(ctr.TerminationMessagePath), "the receipt lands where the kubelet reads the termination message")
}
