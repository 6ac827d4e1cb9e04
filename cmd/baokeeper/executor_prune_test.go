package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/baokeeper/baokeeper/internal/service/snapshot"
)

func TestRunPrune(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	creds := map[string]string{snapshot.EnvAccessKeyID: "id", snapshot.EnvSecretAccessKey: "secret"}
	base := []string{"prune", "--s3-endpoint", "http://127.0.0.1:1", "--s3-bucket", "snaps", "--s3-folder", "p/ns/bao/"}
	// Five snapshots an hour apart (k0 newest), another cluster's, and a file that is
	// not a snapshot.
	objects := func() *fakeStore {
		s := &fakeStore{objects: map[string][]byte{}, modified: map[string]time.Time{}, removeErr: map[string]error{}}
		for i := range 5 {
			k := fmt.Sprintf("p/ns/bao/k%d.snap", i)
			s.objects[k], s.modified[k] = []byte("x"), now.Add(-time.Duration(i)*time.Hour)
		}
		s.objects["p/ns/other/k9.snap"], s.modified["p/ns/other/k9.snap"] = []byte("x"), now.Add(-100*time.Hour)
		s.objects["p/ns/bao/README"], s.modified["p/ns/bao/README"] = []byte("x"), now.Add(-100*time.Hour)
		return s
	}
	keys := func(s *fakeStore) []string {
		var out []string
		for k := range s.objects {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		reason     string
		args       []string
		store      func() *fakeStore
		wantCode   int
		wantLeft   []string
		wantResult *snapshot.PruneResult
		wantMsg    string
	}{
		{reason: "keeps the newest two and the protected one, deletes the rest of this cluster's snapshots only",
			args: []string{"--keep-count", "2", "--protect", "p/ns/bao/k3.snap"}, store: objects, wantCode: exitOK,
			wantLeft:   []string{"p/ns/bao/README", "p/ns/bao/k0.snap", "p/ns/bao/k1.snap", "p/ns/bao/k3.snap", "p/ns/other/k9.snap"},
			wantResult: &snapshot.PruneResult{Listed: 5, Deleted: []string{"p/ns/bao/k4.snap", "p/ns/bao/k2.snap"}, Kept: 3}},
		{reason: "a deletion the bucket refuses stops the pruning, and the result says which",
			args: []string{"--keep-count", "1"}, wantCode: exitOK,
			store: func() *fakeStore {
				s := objects()
				s.removeErr["p/ns/bao/k3.snap"] = errors.New("AccessDenied")
				return s
			},
			wantLeft:   []string{"p/ns/bao/README", "p/ns/bao/k0.snap", "p/ns/bao/k1.snap", "p/ns/bao/k2.snap", "p/ns/bao/k3.snap", "p/ns/other/k9.snap"},
			wantResult: &snapshot.PruneResult{Listed: 5, Deleted: []string{"p/ns/bao/k4.snap"}, Kept: 4, Failed: "AccessDenied; nothing after it was deleted (3 objects left to prune)"}},
		{reason: "a listing that fails fails the Job and deletes nothing",
			args: []string{"--max-age", "90m"}, wantCode: exitFatal,
			store: func() *fakeStore {
				s := objects()
				s.listErr = errors.New("NoSuchBucket")
				return s
			},
			wantLeft: keys(objects()), wantMsg: "NoSuchBucket"},
		{reason: "no retention given: refused, nothing deleted",
			args: nil, store: objects, wantCode: exitFatal, wantLeft: keys(objects()), wantMsg: "give --keep-count, --max-age or both"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			termLog := filepath.Join(t.TempDir(), "termination-log")
			store := tt.store()
			env := executorEnv{
				stdout: &stdout, stderr: &stderr,
				newStore: func(snapshot.S3Config) (snapshotStore, error) { return store, nil },
				getenv:   func(k string) string { return creds[k] },
				clock:    testingclock.NewFakeClock(now),
			}
			args := append(append(slices.Clone(base), tt.args...), "--termination-log", termLog)
			code := runExecutor(context.Background(), args, env)
			g.Expect(code).To(Equal(tt.wantCode), "stderr: %s", stderr.String())
			g.Expect(keys(store)).To(Equal(tt.wantLeft))
			msg, err := os.ReadFile(termLog)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.wantResult != nil {
				var got snapshot.PruneResult
				g.Expect(json.Unmarshal(msg, &got)).To(Succeed())
				g.Expect(got).To(Equal(*tt.wantResult))
			}
			if tt.wantMsg != "" {
				g.Expect(string(msg)).To(ContainSubstring(tt.wantMsg))
			}
		})
	}
}
