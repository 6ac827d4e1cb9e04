package snapshot

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// errUploadEnded is what a source still writing sees once the upload stopped.
var errUploadEnded = errors.New("the upload ended")

// ErrObjectMissing reports that the object (or its bucket) does not exist.
var ErrObjectMissing = errors.New("no such object")

// removeTimeout bounds the clean-up of a partial object.
const removeTimeout = 30 * time.Second

// S3Config says where and as whom the executor writes a snapshot.
type S3Config struct {
	// Endpoint is the URL of the S3 API (http:// or https://).
	Endpoint string
	Bucket   string
	Region   string
	// PathStyle addresses the bucket as endpoint/bucket.
	PathStyle bool
	// AccessKeyID and SecretAccessKey are static credentials.
	AccessKeyID, SecretAccessKey string
	// CAFile holds PEM certificates trusted besides the system's roots (a private CA
	// of an https:// endpoint); empty trusts the system's roots only.
	CAFile string
}

// Store writes and reads back snapshot objects.
type Store struct {
	cfg    S3Config
	client *minio.Client
}

// NewStore validates cfg and builds a client. It does not contact the server.
func NewStore(cfg S3Config) (*Store, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err == nil && u.User != nil {
		// Not echoed: the URL carries credentials.
		return nil, errors.New("invalid S3 endpoint: it carries credentials (user:password@), which would show in logs and status; " +
			"put them in the Secret spec.upgrade.preUpgradeSnapshot.s3.credentialsSecretRef names and give the endpoint as https://HOST[:PORT]")
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("invalid S3 endpoint %q: give the URL of the S3 API, such as https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:8333", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("the S3 bucket is empty: set spec.upgrade.preUpgradeSnapshot.s3.bucket")
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, fmt.Errorf("the S3 credentials are incomplete: the credentials Secret needs both %s and %s", EnvAccessKeyID, EnvSecretAccessKey)
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	opts := &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:       u.Scheme == "https",
		Region:       region,
		BucketLookup: lookup,
	}
	tr, err := minio.DefaultTransport(opts.Secure)
	if err != nil {
		return nil, fmt.Errorf("failed to build the S3 transport: %w", err)
	}
	if cfg.CAFile != "" {
		if tr, err = transportTrusting(cfg.CAFile, tr); err != nil {
			return nil, err
		}
	}
	opts.Transport = unknownAuthorityTransport{tr}
	cl, err := minio.New(u.Host, opts)
	if err != nil {
		return nil, fmt.Errorf("failed to build an S3 client for %s: %w", cfg.Endpoint, err)
	}
	return &Store{cfg: cfg, client: cl}, nil
}

// unknownAuthorityTransport reports an endpoint certificate of an authority nobody
// trusts as x509.UnknownAuthorityError itself, the one transport error minio's client
// does not retry: since Go 1.20 it comes wrapped in a tls.CertificateVerificationError,
// which the client retries until the deadline, so that the attempt ended with
// "context deadline exceeded", naming nothing to fix, instead of the certificate.
type unknownAuthorityTransport struct{ http.RoundTripper }

func (t unknownAuthorityTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(r)
	var ua x509.UnknownAuthorityError
	if err != nil && errors.As(err, &ua) {
		return nil, ua
	}
	return resp, err
}

// untrustedAuthority reports whether err is (or, through a client that keeps only
// the text, says) x509.UnknownAuthorityError.
func untrustedAuthority(err error) bool {
	var ua x509.UnknownAuthorityError
	return errors.As(err, &ua) || strings.Contains(err.Error(), "certificate signed by unknown authority")
}

// transportTrusting is tr trusting the PEM certificates in caFile besides the
// system's roots.
func transportTrusting(caFile string, tr *http.Transport) (*http.Transport, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read the S3 CA bundle (spec.upgrade.preUpgradeSnapshot.s3.caBundle): %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("the S3 CA bundle (spec.upgrade.preUpgradeSnapshot.s3.caBundle) holds no PEM certificate: " +
			"give the key of the Secret that holds the CA's certificate, -----BEGIN CERTIFICATE----- included")
	}
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.RootCAs = pool
	return tr, nil
}

// Reachable checks that the bucket exists and the credentials may see it.
func (s *Store) Reachable(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.cfg.Bucket)
	if err != nil && untrustedAuthority(err) {
		return fmt.Errorf("failed to reach bucket %s at %s: its certificate is signed by an authority this executor does not trust; "+
			"put that CA's certificate in a Secret and name it in spec.upgrade.preUpgradeSnapshot.s3.caBundle: %w", s.cfg.Bucket, s.cfg.Endpoint, err)
	}
	if err != nil {
		return fmt.Errorf("failed to reach bucket %s at %s (check spec.upgrade.preUpgradeSnapshot.s3.endpoint and the credentials Secret): %w",
			s.cfg.Bucket, s.cfg.Endpoint, err)
	}
	if !ok {
		return fmt.Errorf("bucket %s does not exist at %s: create it, or fix spec.upgrade.preUpgradeSnapshot.s3.bucket", s.cfg.Bucket, s.cfg.Endpoint)
	}
	return nil
}

// Uploaded describes a verified object.
type Uploaded struct {
	Location  string
	SizeBytes int64
	// SHA256 is hex-encoded; it is the hash of what was read back.
	SHA256 string
}

// Upload streams what write produces into the object key, hashing it on the way,
// then reads the object back and checks that its size and SHA-256 match. A write
// that fails aborts the upload; no object is left that claims to be a snapshot.
func (s *Store) Upload(ctx context.Context, key string, write func(io.Writer) error) (Uploaded, error) {
	loc := Location(s.cfg.Bucket, key)
	pr, pw := io.Pipe()
	sum := sha256.New()
	counter := &countWriter{}
	writeErr := make(chan error, 1)
	go func() {
		err := write(io.MultiWriter(pw, sum, counter))
		pw.CloseWithError(err)
		writeErr <- err
	}()
	_, putErr := s.client.PutObject(ctx, s.cfg.Bucket, key, pr, -1, minio.PutObjectOptions{
		PartSize: PartSize, ContentType: "application/gzip",
	})
	// Unblock the writer if the upload stopped reading early.
	pr.CloseWithError(errUploadEnded)
	werr := <-writeErr
	// A source that failed only because the upload stopped reading reports the
	// pipe's error; clients that wrap errors without %w keep just its text.
	stoppedByUpload := werr != nil && (errors.Is(werr, errUploadEnded) || strings.Contains(werr.Error(), errUploadEnded.Error()))
	switch {
	case werr != nil && !stoppedByUpload:
		// The source failed (and so, through the pipe, the upload): that is the cause.
		s.removeQuietly(key, putErr)
		return Uploaded{}, fmt.Errorf("failed to stream the snapshot into %s: %w", loc, werr)
	case putErr != nil:
		return Uploaded{}, fmt.Errorf("failed to upload the snapshot to %s: %w", loc, putErr)
	case werr != nil:
		return Uploaded{}, fmt.Errorf("failed to stream the snapshot into %s: the upload stopped reading before the end", loc)
	}
	want := Uploaded{Location: loc, SizeBytes: counter.n, SHA256: hex.EncodeToString(sum.Sum(nil))}
	got, err := s.Verify(ctx, key)
	if err != nil {
		return Uploaded{}, err
	}
	if got.SizeBytes != want.SizeBytes || got.SHA256 != want.SHA256 {
		return Uploaded{}, fmt.Errorf("the object %s does not match what was sent: %d bytes with sha256 %s read back, %d bytes with sha256 %s sent",
			loc, got.SizeBytes, got.SHA256, want.SizeBytes, want.SHA256)
	}
	return got, nil
}

// Verify reads an object back whole and returns its size and SHA-256.
func (s *Store) Verify(ctx context.Context, key string) (Uploaded, error) {
	loc := Location(s.cfg.Bucket, key)
	info, err := s.client.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Uploaded{}, fmt.Errorf("failed to stat %s after the upload: %w", loc, err)
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return Uploaded{}, fmt.Errorf("failed to read %s back: %w", loc, err)
	}
	defer obj.Close()
	sum := sha256.New()
	n, err := io.Copy(sum, obj)
	if err != nil {
		return Uploaded{}, fmt.Errorf("failed to read %s back: %w", loc, err)
	}
	if n != info.Size {
		return Uploaded{}, fmt.Errorf("reading %s back gave %d bytes, but the store reports %d", loc, n, info.Size)
	}
	return Uploaded{Location: loc, SizeBytes: n, SHA256: hex.EncodeToString(sum.Sum(nil))}, nil
}

// Download copies the object key into w and returns its size. It checks that it
// read as many bytes as the store reports; what they hash to is the caller's to
// check against the receipt. An object or bucket that does not exist is
// ErrObjectMissing.
func (s *Store) Download(ctx context.Context, key string, w io.Writer) (int64, error) {
	loc := Location(s.cfg.Bucket, key)
	info, err := s.client.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return 0, s.readError(loc, err)
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return 0, s.readError(loc, err)
	}
	defer obj.Close()
	n, err := io.Copy(w, obj)
	if err != nil {
		return n, s.readError(loc, err)
	}
	if n != info.Size {
		return n, fmt.Errorf("reading %s gave %d bytes, but the store reports %d", loc, n, info.Size)
	}
	return n, nil
}

// readError describes a failed read of the object at loc.
func (s *Store) readError(loc string, err error) error {
	switch resp := minio.ToErrorResponse(err); {
	case resp.Code == "NoSuchKey" || resp.Code == "NoSuchBucket" || resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s does not exist at %s: check the snapshot's bucket and key: %w", ErrObjectMissing, loc, s.cfg.Endpoint, err)
	case untrustedAuthority(err):
		return fmt.Errorf("failed to read %s at %s: its certificate is signed by an authority this executor does not trust; "+
			"name that CA's certificate in the S3 target's caBundle: %w", loc, s.cfg.Endpoint, err)
	}
	return fmt.Errorf("failed to read %s at %s: %w", loc, s.cfg.Endpoint, err)
}

// removeQuietly deletes a partial object when the stream failed but the store
// accepted what it got (a writer that fails after the last part).
func (s *Store) removeQuietly(key string, putErr error) {
	if putErr != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	_ = s.client.RemoveObject(ctx, s.cfg.Bucket, key, minio.RemoveObjectOptions{})
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// List returns the objects under prefix (recursively).
func (s *Store) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	for o := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("failed to list %s: %w", Location(s.cfg.Bucket, prefix), o.Err)
		}
		out = append(out, Object{Key: o.Key, Size: o.Size, LastModified: o.LastModified})
	}
	return out, nil
}

// Remove deletes one object.
func (s *Store) Remove(ctx context.Context, key string) error {
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("failed to delete %s: %w", Location(s.cfg.Bucket, key), err)
	}
	return nil
}
