package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/clock"

	"github.com/baokeeper/baokeeper/internal/service/snapshot"
)

// TestRunCheckTarget runs the check against an S3 endpoint served over TLS with a
// certificate of a CA no system trusts (httptest's), through the real store: the
// CA bundle option is what makes it reachable, and every failure says what to fix.
func TestRunCheckTarget(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// HEAD /<bucket>/ is how the client asks whether a bucket exists.
		if r.Method == http.MethodHead && (r.URL.Path == "/snaps/" || r.URL.Path == "/snaps") {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	NewWithT(t).Expect(os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)).To(Succeed())
	notPEM := filepath.Join(dir, "not.pem")
	NewWithT(t).Expect(os.WriteFile(notPEM, []byte("not a certificate"), 0o600)).To(Succeed())
	creds := map[string]string{snapshot.EnvAccessKeyID: "id", snapshot.EnvSecretAccessKey: "secret"}
	base := []string{snapshot.ActionCheckTarget, "--s3-endpoint", srv.URL, "--s3-path-style", "--timeout", "5s"}

	tests := []struct {
		reason   string
		args     []string
		env      map[string]string
		wantCode int
		want     string
	}{
		{reason: "the private CA trusted through --s3-ca-file: the bucket is reachable",
			args: append(base, "--s3-bucket", "snaps", "--s3-ca-file", caFile), env: creds, wantCode: exitOK, want: "bucket snaps at " + srv.URL + " is reachable"},
		{reason: "without the CA bundle the endpoint's certificate is refused, and the message says so",
			args: append(base, "--s3-bucket", "snaps"), env: creds, wantCode: exitFatal, want: "name it in spec.upgrade.preUpgradeSnapshot.s3.caBundle"},
		{reason: "a bucket that does not exist is named, with what to do",
			args: append(base, "--s3-bucket", "other", "--s3-ca-file", caFile), env: creds, wantCode: exitFatal, want: "bucket other does not exist"},
		{reason: "a CA bundle without a certificate is refused before any connection",
			args: append(base, "--s3-bucket", "snaps", "--s3-ca-file", notPEM), env: creds, wantCode: exitFatal, want: "holds no PEM certificate"},
		{reason: "missing credentials are named",
			args: append(base, "--s3-bucket", "snaps"), env: map[string]string{}, wantCode: exitFatal, want: "missing $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			term := filepath.Join(t.TempDir(), "termination-log")
			var stdout, stderr bytes.Buffer
			code := runExecutor(context.Background(), append(tc.args, "--termination-log", term), executorEnv{
				stdout: &stdout, stderr: &stderr,
				newStore: func(c snapshot.S3Config) (snapshotStore, error) { return snapshot.NewStore(c) },
				getenv:   func(k string) string { return tc.env[k] },
				clock:    clock.RealClock{},
			})
			g.Expect(code).To(Equal(tc.wantCode), stderr.String())
			msg, err := os.ReadFile(term)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(msg)).To(ContainSubstring(tc.want), "the termination message is the precheck's")
			g.Expect(string(msg)).NotTo(ContainSubstring("secret"), "no credential is echoed")
		})
	}
}
