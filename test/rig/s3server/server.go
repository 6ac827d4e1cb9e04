// Package s3server runs the rig's S3-compatible object store: SeaweedFS `weed mini`
// built from Go modules (hack/build-bins.sh s3), bound to 127.0.0.1 inside the rig's
// network namespace, with one static identity and a fresh data directory. Pods of
// the rig share that network stack, so snapshot Jobs reach it at Endpoint. See
// docs/design/s3-server.md for the flags and their pitfalls.
package s3server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Credentials of the rig's identities: one that may do everything, and one that
// may only read and list (a bucket that is reachable but refuses uploads).
const (
	AccessKeyID             = "baokeeper-test"
	SecretAccessKey         = "baokeeper-test-secret-0123456789"
	ReadOnlyAccessKeyID     = "baokeeper-readonly"
	ReadOnlySecretAccessKey = "baokeeper-readonly-secret-0123456789"
)

// Ports of the server's components (gRPC ports are these + 10000), all below the
// ephemeral range.
const (
	S3Port     = 22833
	masterPort = 22333
	volumePort = 22080
	filerPort  = 22888
	adminPort  = 22535
)

// Server is a running S3 server.
type Server struct {
	// Endpoint is the URL of the S3 API.
	Endpoint string
	dir      string
	cmd      *exec.Cmd
	done     chan error
}

// Start starts bin (the weed binary) with its data and logs under dir, creates the
// buckets, and returns once an object can be written, or fails within ctx.
func Start(ctx context.Context, bin, dir string, buckets ...string) (*Server, error) {
	for _, d := range []string{"data", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("failed to create the S3 server's directory: %w", err)
		}
	}
	conf := map[string]any{"identities": []any{
		map[string]any{
			"name":        "baokeeper",
			"credentials": []any{map[string]any{"accessKey": AccessKeyID, "secretKey": SecretAccessKey}},
			"actions":     []string{"Admin", "Read", "List", "Tagging", "Write"},
		},
		map[string]any{
			"name":        "readonly",
			"credentials": []any{map[string]any{"accessKey": ReadOnlyAccessKeyID, "secretKey": ReadOnlySecretAccessKey}},
			"actions":     []string{"Read", "List"},
		},
	}}
	b, _ := json.Marshal(conf)
	confFile := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(confFile, b, 0o600); err != nil {
		return nil, fmt.Errorf("failed to write the S3 identities: %w", err)
	}
	p := strconv.Itoa
	args := []string{
		"-logdir=" + filepath.Join(dir, "logs"), "mini",
		"-dir=" + filepath.Join(dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + p(masterPort), "-master.port.grpc=" + p(masterPort+10000), "-master.telemetry=false", "-master.electionTimeout=1s",
		"-volume.port=" + p(volumePort), "-volume.port.grpc=" + p(volumePort+10000),
		"-filer.port=" + p(filerPort), "-filer.port.grpc=" + p(filerPort+10000), "-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3.port=" + p(S3Port), "-s3.port.grpc=" + p(S3Port+10000), "-s3.localSocket=" + filepath.Join(dir, "s3.sock"),
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-webdav=false", "-admin.ui=false", "-admin.port=" + p(adminPort), "-admin.port.grpc=" + p(adminPort+10000), "-admin.port.legacy=0",
		"-s3.config=" + confFile,
	}
	out, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("failed to start %s: %w", bin, err)
	}
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", S3Port), dir: dir, cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait(); out.Close() }()
	if err := s.waitWritable(ctx, buckets); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Client returns a client of the rig's identity.
func (s *Server) Client() (*minio.Client, error) {
	return minio.New(fmt.Sprintf("127.0.0.1:%d", S3Port), &minio.Options{
		Creds: credentials.NewStaticV4(AccessKeyID, SecretAccessKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath,
	})
}

// waitWritable creates the buckets and writes a probe object: /healthz answers
// before writes work.
func (s *Server) waitWritable(ctx context.Context, buckets []string) error {
	cl, err := s.Client()
	if err != nil {
		return err
	}
	var last error
	for {
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("the S3 server exited: %v (see %s)", err, filepath.Join(s.dir, "weed.log"))
		default:
		}
		last = s.tryWrite(ctx, cl, buckets)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the S3 server did not accept writes: %w (last: %v; see %s)", ctx.Err(), last, filepath.Join(s.dir, "weed.log"))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *Server) tryWrite(ctx context.Context, cl *minio.Client, buckets []string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for _, b := range buckets {
		ok, err := cl.BucketExists(ctx, b)
		if err != nil {
			return err
		}
		if !ok {
			if err := cl.MakeBucket(ctx, b, minio.MakeBucketOptions{}); err != nil {
				return err
			}
		}
	}
	if len(buckets) == 0 {
		return errors.New("no bucket to probe")
	}
	_, err := cl.PutObject(ctx, buckets[0], ".probe", bytes.NewReader([]byte("ok")), 2, minio.PutObjectOptions{})
	return err
}

// Freeze stops every process of the server (SIGSTOP): connections are still
// accepted by the kernel, but no request is answered, as with a server that hangs
// or a network that drops its replies. Thaw undoes it.
func (s *Server) Freeze() error {
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("failed to freeze the S3 server: %w", err)
	}
	return nil
}

// Thaw lets a frozen server go on (SIGCONT).
func (s *Server) Thaw() error {
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("failed to thaw the S3 server: %w", err)
	}
	return nil
}

// Stop stops the server (SIGTERM, SIGKILL after 30 s) and removes the unix sockets
// it leaves in /tmp.
func (s *Server) Stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	_ = s.Thaw() // a frozen process acts on SIGTERM only once it runs
	select {
	case err := <-s.done:
		s.done <- err
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	for _, svc := range []struct {
		name string
		port int
	}{{"master", masterPort}, {"volume", volumePort}, {"filer", filerPort}, {"s3", S3Port}, {"admin", adminPort}} {
		_ = os.Remove(fmt.Sprintf("/tmp/seaweedfs-%s-grpc-%d.sock", svc.name, svc.port+10000))
	}
}
