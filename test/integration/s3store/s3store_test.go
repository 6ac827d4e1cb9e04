// Package s3store tests the snapshot store (internal/service/snapshot)
// against a real S3-compatible server, SeaweedFS, built from Go modules into bin/
// and listening on 127.0.0.1 only.
package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/test/rig/s3server"
	"github.com/baokeeper/baokeeper/test/testenv"
)

const bucket = "snapshots"

func startServer(t *testing.T) *s3server.Server {
	t.Helper()
	bin := os.Getenv("S3_BIN")
	if bin == "" {
		if testenv.Required() {
			t.Fatal("S3_BIN is not set: run `make test`, which builds the S3 server into bin/ and sets it")
		}
		t.Skip("S3_BIN is not set: run `make test`, which builds the S3 server into bin/ and sets it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := s3server.Start(ctx, bin, t.TempDir(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func store(t *testing.T, s *s3server.Server, mutate func(*snapshot.S3Config)) *snapshot.Store {
	t.Helper()
	cfg := snapshot.S3Config{Endpoint: s.Endpoint, Bucket: bucket, PathStyle: true,
		AccessKeyID: s3server.AccessKeyID, SecretAccessKey: s3server.SecretAccessKey}
	if mutate != nil {
		mutate(&cfg)
	}
	st, err := snapshot.NewStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStoreAgainstARealS3Server(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	cl, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a 40 MiB stream becomes a multipart object whose size and SHA-256 are read back", func(t *testing.T) {
		g := NewWithT(t)
		data := make([]byte, 40<<20)
		rnd := rand.NewChaCha8([32]byte{1})
		_, _ = rnd.Read(data)
		sum := sha256.Sum256(data)
		up, err := store(t, s, nil).Upload(ctx, "ns/bao/a.snap", func(w io.Writer) error {
			// Write in odd chunks, as a network stream would.
			for r := bytes.NewReader(data); r.Len() > 0; {
				if _, err := io.CopyN(w, r, 777_777); err != nil && !errors.Is(err, io.EOF) {
					return err
				}
			}
			return nil
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(up).To(Equal(snapshot.Uploaded{Location: "s3://snapshots/ns/bao/a.snap", SizeBytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}))
		info, err := cl.StatObject(ctx, bucket, "ns/bao/a.snap", minio.StatObjectOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Size).To(BeEquivalentTo(len(data)))
		g.Expect(info.ETag).To(ContainSubstring("-"), "more than one part: a multipart upload")
	})

	t.Run("a stream that fails midway leaves no object", func(t *testing.T) {
		g := NewWithT(t)
		_, err := store(t, s, nil).Upload(ctx, "ns/bao/broken.snap", func(w io.Writer) error {
			if _, err := w.Write(bytes.Repeat([]byte("x"), 20<<20)); err != nil {
				return err
			}
			return errors.New("leader went away")
		})
		g.Expect(err).To(MatchError(ContainSubstring("leader went away")))
		_, err = cl.StatObject(ctx, bucket, "ns/bao/broken.snap", minio.StatObjectOptions{})
		g.Expect(minio.ToErrorResponse(err).Code).To(Equal("NoSuchKey"), "no partial snapshot is left behind")
	})

	t.Run("reachability: the bucket and the credentials are checked", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(store(t, s, nil).Reachable(ctx)).To(Succeed())
		g.Expect(store(t, s, func(c *snapshot.S3Config) { c.Bucket = "missing-bucket" }).Reachable(ctx)).
			To(MatchError(ContainSubstring("bucket missing-bucket does not exist")))
		err := store(t, s, func(c *snapshot.S3Config) { c.SecretAccessKey = "wrong" }).Reachable(ctx)
		g.Expect(err).To(HaveOccurred(), "a wrong secret is refused")
		_, err = store(t, s, func(c *snapshot.S3Config) { c.SecretAccessKey = "wrong" }).Upload(ctx, "ns/bao/x.snap", func(w io.Writer) error {
			_, err := w.Write([]byte("data"))
			return err
		})
		g.Expect(err).To(HaveOccurred(), "a wrong secret cannot upload")

		readOnly := func(c *snapshot.S3Config) {
			c.AccessKeyID, c.SecretAccessKey = s3server.ReadOnlyAccessKeyID, s3server.ReadOnlySecretAccessKey
		}
		g.Expect(store(t, s, readOnly).Reachable(ctx)).To(Succeed(), "a read-only identity sees the bucket")
		_, err = store(t, s, readOnly).Upload(ctx, "ns/bao/ro.snap", func(w io.Writer) error {
			_, err := w.Write([]byte("data"))
			return err
		})
		g.Expect(err).To(MatchError(ContainSubstring("failed to upload the snapshot to s3://snapshots/ns/bao/ro.snap")),
			"but cannot upload: the snapshot Job fails, and the e2e suite relies on that")
	})

	t.Run("invalid settings are refused before any request, saying what to change", func(t *testing.T) {
		g := NewWithT(t)
		for _, tc := range []struct {
			cfg  snapshot.S3Config
			want string
		}{
			{snapshot.S3Config{Endpoint: "127.0.0.1:22833", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"}, "give the URL of the S3 API"},
			{snapshot.S3Config{Endpoint: "http://h/path", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"}, "give the URL of the S3 API"},
			{snapshot.S3Config{Endpoint: "http://h", AccessKeyID: "a", SecretAccessKey: "s"}, "set spec.upgrade.preUpgradeSnapshot.s3.bucket"},
			{snapshot.S3Config{Endpoint: "http://h", Bucket: "b", AccessKeyID: "a"}, "needs both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		} {
			_, err := snapshot.NewStore(tc.cfg)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		}
	})
}
