package openbao

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	baoapi "github.com/openbao/openbao/api/v2"
	"golang.org/x/time/rate"
)

// DefaultTimeout bounds each call (all but MemberClient.Snapshot and
// MemberClient.Restore) when the configured timeout is zero.
const DefaultTimeout = 10 * time.Second

// API paths the clients use, relative to /v1/.
const (
	pathHealth            = "sys/health"
	pathLeader            = "sys/leader"
	pathMetrics           = "sys/metrics"
	pathStepDown          = "sys/step-down"
	pathRaftConfiguration = "sys/storage/raft/configuration"
	pathAutopilotState    = "sys/storage/raft/autopilot/state"
	pathSnapshot          = "sys/storage/raft/snapshot"
	pathSnapshotForce     = "sys/storage/raft/snapshot-force"
	pathRaftPromote       = "sys/storage/raft/promote"
	pathRaftDemote        = "sys/storage/raft/demote"
	pathRaftRemovePeer    = "sys/storage/raft/remove-peer"
)

// Reader is the controller's read-only view of one OpenBao cluster: Leader,
// RaftConfiguration and AutopilotState go through the cluster's client
// Service (Config.Address), Health to one member.
//
// Every method bounds its work by ctx and by Config.Timeout, whichever ends
// first; that bound covers a login and a retry the call may need. Errors
// never contain tokens and can be tested with errors.Is against
// ErrLoginFailed, ErrPermissionDenied, ErrNotFound and
// context.DeadlineExceeded. Implementations are safe for concurrent use.
type Reader interface {
	// Health reads sys/health from the one member at addr (for example
	// https://bao-0.bao-internal.ns.svc:8200) without a token. Standby,
	// sealed and uninitialized members are reported in Health, not as
	// errors.
	Health(ctx context.Context, addr string) (*Health, error)
	// Leader reads sys/leader through the cluster Service without a token.
	Leader(ctx context.Context) (*Leader, error)
	// MemberLeader reads sys/leader from the one member at addr without a
	// token: which active node that member follows, and its Raft indexes.
	MemberLeader(ctx context.Context, addr string) (*Leader, error)
	// MemberReplication reads the Raft replication the one member at addr
	// received, from its own sys/metrics without a token (baokeeper's
	// listener allows unauthenticated metrics access).
	MemberReplication(ctx context.Context, addr string) (*Replication, error)
	// RaftConfiguration reads sys/storage/raft/configuration through the
	// cluster Service with the controller's token.
	RaftConfiguration(ctx context.Context) (*RaftConfiguration, error)
	// AutopilotState reads sys/storage/raft/autopilot/state through the
	// cluster Service with the controller's token.
	AutopilotState(ctx context.Context) (*AutopilotState, error)
}

// MemberReader finds the active node: the token-less reads of one member,
// addressed directly by its API address (for example
// https://bao-0.bao-internal.ns.svc:8200), never through a Service.
//
// The per-member interfaces (MemberReader, Leadership, Membership, Roles and
// MemberClient) bound every method by ctx and, all but Snapshot and Restore,
// also by MemberConfig.Timeout, whichever ends first; that bound covers a
// login and one retry. Errors never contain tokens; callers sort them with
// errors.Is and TransienceOf. Implementations are safe for concurrent use.
type MemberReader interface {
	// Leader reads sys/leader from addr without a token.
	Leader(ctx context.Context, addr string) (*Leader, error)
	// Health reads sys/health from addr without a token. Standby, sealed and
	// uninitialized members are reported in Health, not as errors.
	Health(ctx context.Context, addr string) (*Health, error)
}

// Leadership is what a leadership transfer and a snapshot need from the
// member at addr, besides finding the active node.
type Leadership interface {
	MemberReader
	// StepDown asks the node at addr to give up the active role. It must be
	// the active node: OpenBao forwards a standby's request to whichever node
	// is active, which may not be the intended one.
	StepDown(ctx context.Context, addr string) error
	// AutopilotState reads sys/storage/raft/autopilot/state from addr.
	AutopilotState(ctx context.Context, addr string) (*AutopilotState, error)
	// Snapshot streams a Raft snapshot from addr, which must be the active
	// node (a 2.4 standby answers with a redirect and no body; that is
	// ErrNotActive). It returns the number of bytes written to w and checks
	// that the archive is complete (ErrIncompleteSnapshot otherwise), and
	// reports the Raft index and term the snapshot contains. Only ctx bounds
	// it, since a snapshot may be large.
	Snapshot(ctx context.Context, addr string, w io.Writer) (SnapshotInfo, error)
	// Restore sends the snapshot archive r holds, from its current offset to
	// its end, to addr's sys/storage/raft/snapshot-force, which must be the
	// active node (a redirect is ErrNotActive): the cluster's data becomes the
	// snapshot's, also when the snapshot comes from another cluster, whose
	// keyring this one does not share. It streams r; a 403 sends it again after
	// a fresh login, from the same offset, hence the Seeker. Only ctx bounds
	// it, since a snapshot may be large. Check the archive first
	// (InspectSnapshot): OpenBao refuses a broken one, but only after reading
	// it.
	Restore(ctx context.Context, addr string, r io.ReadSeeker) error
}

// Membership is what changing the Raft voter set needs from the member at
// addr, besides finding the active node.
type Membership interface {
	MemberReader
	// RaftConfiguration reads sys/storage/raft/configuration from addr: the
	// Raft peers with their node IDs, voter flags and which one leads.
	RaftConfiguration(ctx context.Context, addr string) (*RaftConfiguration, error)
	// Promote asks autopilot, through the active node at addr, to make nodeID
	// a voter (sys/storage/raft/promote). It only takes the node off the list
	// of permanent non-voters: autopilot promotes it seconds later, so read
	// the configuration back. "server is not a non-voter" is ErrNotNonVoter.
	Promote(ctx context.Context, addr, nodeID string) error
	// Demote asks autopilot, through the active node at addr, to make nodeID
	// a non-voter (sys/storage/raft/demote); applied seconds later, like
	// Promote. "server is already a non-voter" is ErrAlreadyNonVoter.
	Demote(ctx context.Context, addr, nodeID string) error
	// RemovePeer removes nodeID from the Raft configuration through the
	// active node at addr (sys/storage/raft/remove-peer).
	RemovePeer(ctx context.Context, addr, nodeID string) error
}

// Roles is what rewriting the JWT auth roles needs from the member at addr,
// besides finding the active node: a cluster restored from another cluster's
// snapshot holds that cluster's roles, which its executor rebinds to its own
// identities.
type Roles interface {
	MemberReader
	// WriteRole writes data to auth/<mount>/role/<role> through addr (the
	// active node: a redirect is ErrNotActive), creating or replacing the
	// role. A policy that does not grant update there is ErrPermissionDenied.
	WriteRole(ctx context.Context, addr, mount, role string, data map[string]any) error
}

// MemberClient is every per-member operation: what an executor Job holds.
// NewMemberClient returns one.
type MemberClient interface {
	Leadership
	Membership
	Roles
	CanaryWriter
}

// Config describes how the controller reaches and authenticates to one
// OpenBao cluster through its client Service.
type Config struct {
	// Address is the https URL of the cluster's client Service, for example
	// https://bao.ns.svc:8200. Plain http is refused.
	Address string
	// CACertPEM is the PEM-encoded cluster CA. Server certificates are
	// verified against it alone; verification is never skipped.
	CACertPEM []byte
	// AuthMount is the path of the JWT auth method under auth/, for example
	// "baokeeper-jwt".
	AuthMount string
	// Role is the JWT auth role to log in with, for example
	// "baokeeper-controller".
	Role string
	// TokenPath is the path of the projected service-account token file. It
	// is read again on every login because kubelet rotates it.
	TokenPath string
	// TokenSource, when set, gives the service-account token of every login
	// instead of TokenPath: the operator requests one per cluster, for that
	// cluster's audience (TokenRequest), so that no token is good at two
	// clusters.
	TokenSource func(ctx context.Context) (string, error)
	// Timeout bounds each call; a sooner ctx deadline wins. Zero means
	// DefaultTimeout; negative values are rejected.
	Timeout time.Duration
	// WrapTransport, when set, wraps the HTTP transport, for example to count
	// requests (as client-go's rest.Config.WrapTransport does).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Limiter, when set, bounds the request rate: every HTTP request waits for a
	// token first, within its context, or fails with the context's error. Counting
	// wrappers from WrapTransport see only the requests that were sent.
	Limiter *rate.Limiter
}

// Dialer opens network connections; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// MemberConfig describes how an executor reaches and authenticates to the
// members of one OpenBao cluster, each addressed directly.
type MemberConfig struct {
	// CAFile is the PEM file of the cluster CA. Server certificates are
	// verified against it alone; verification is never skipped.
	CAFile string
	// TLSServerName, when set, is the name server certificates are verified
	// against instead of the host of the address, so that a member can be
	// addressed by IP.
	TLSServerName string
	// AuthMount is the path of the JWT auth method under auth/, for example
	// "baokeeper-jwt".
	AuthMount string
	// Role is the JWT auth role to log in with, for example
	// "baokeeper-executor".
	Role string
	// TokenFile is the projected service-account token. It is read again on
	// every login because kubelet rotates it.
	TokenFile string
	// Timeout bounds each call, and the login of Snapshot and Restore, which
	// only ctx bounds otherwise; a sooner ctx deadline wins. Zero means
	// DefaultTimeout; negative values are refused.
	Timeout time.Duration
	// Dialer opens connections; nil means a net.Dialer with a 30 s timeout.
	Dialer Dialer
}

// settings is what both configurations come down to.
type settings struct {
	caPEM []byte
	// caField names the CA setting in configuration errors ("CACertPEM",
	// "CAFile /ca.crt"); caSource names it in hints ("the CA file").
	caField, caSource string
	// serverName is MemberConfig.TLSServerName; serverNameOption says
	// whether the configuration has that option, for hints.
	serverName       string
	serverNameOption bool
	authMount        string
	role             string
	tokenPath        string
	tokenSource      func(ctx context.Context) (string, error)
	// tokenField names the token setting in configuration errors.
	tokenField string
	timeout    time.Duration
	dialer     Dialer
	// proxyFromEnvironment lets HTTPS_PROXY and friends route requests;
	// members addressed directly inside the cluster never go through one.
	proxyFromEnvironment bool
	// followRedirects lets the api client follow one redirect itself. A
	// member client never does: a redirect means the addressed node is not
	// the active one, and following it would send the request (and the
	// token) to a node the caller did not pick.
	followRedirects bool
	// wrapTransport is Config.WrapTransport, limiter Config.Limiter.
	wrapTransport func(http.RoundTripper) http.RoundTripper
	// maxResponseBytes bounds every response body read; 0 reads them whole (the
	// executor's snapshot download).
	maxResponseBytes int64
	limiter          *rate.Limiter
}

// client is the one implementation behind Reader and MemberClient: it
// addresses each request at the member it is given, logs in there when it
// needs a token and caches the token for every later request.
type client struct {
	s          settings
	httpClient *http.Client
	now        func() time.Time

	// loginSlot serializes logins without ignoring ctx while waiting.
	loginSlot chan struct{}

	mu sync.Mutex // guards token and refreshAt
	// token is the cached client token; empty when none is usable.
	token string
	// refreshAt is when the token is within 20% of its TTL of expiring and
	// must be replaced; zero when OpenBao reported no TTL.
	refreshAt time.Time
}

var _ MemberClient = (*client)(nil)

// New validates cfg and returns the Reader for the cluster it describes. It
// does not contact OpenBao; the first authenticated call logs in.
func New(cfg Config) (Reader, error) {
	r, err := newReader(cfg, time.Now)
	if err != nil {
		return nil, err // not a nil *reader in a non-nil Reader
	}
	return r, nil
}

func newReader(cfg Config, now func() time.Time) (*reader, error) {
	if err := ValidateAddress(cfg.Address); err != nil {
		return nil, fmt.Errorf("invalid OpenBao Address %q: %w", cfg.Address, err)
	}
	c, err := newClient(settings{
		caPEM:                append([]byte(nil), cfg.CACertPEM...),
		caField:              "CACertPEM",
		caSource:             "CACertPEM",
		authMount:            cfg.AuthMount,
		role:                 cfg.Role,
		tokenPath:            cfg.TokenPath,
		tokenSource:          cfg.TokenSource,
		tokenField:           "TokenPath",
		timeout:              cfg.Timeout,
		proxyFromEnvironment: true,
		followRedirects:      true,
		wrapTransport:        cfg.WrapTransport,
		maxResponseBytes:     MaxResponseBytes,
		limiter:              cfg.Limiter,
	}, now)
	if err != nil {
		return nil, err
	}
	// Fail now, not on every call, when BAO_* variables cannot be read.
	if _, _, err := c.apiClient(cfg.Address, ""); err != nil {
		return nil, err
	}
	return &reader{c: c, addr: cfg.Address}, nil
}

// NewMemberClient validates cfg, reads the CA file and returns the
// MemberClient it describes. It does not contact OpenBao; the first call
// that needs a token logs in.
func NewMemberClient(cfg MemberConfig) (MemberClient, error) {
	c, err := newMemberClient(cfg, time.Now)
	if err != nil {
		return nil, err // not a nil *client in a non-nil MemberClient
	}
	return c, nil
}

func newMemberClient(cfg MemberConfig, now func() time.Time) (*client, error) {
	if cfg.CAFile == "" {
		return nil, errors.New("invalid OpenBao CAFile: it is empty; set the path of the cluster CA certificate")
	}
	caPEM, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read the cluster CA: %w", err)
	}
	return newClient(settings{
		caPEM:            caPEM,
		caField:          "CAFile " + cfg.CAFile,
		caSource:         "the CA file",
		serverName:       cfg.TLSServerName,
		serverNameOption: true,
		authMount:        cfg.AuthMount,
		role:             cfg.Role,
		tokenPath:        cfg.TokenFile,
		tokenField:       "TokenFile",
		timeout:          cfg.Timeout,
		dialer:           cfg.Dialer,
	}, now)
}

func newClient(s settings, now func() time.Time) (*client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.caPEM) {
		return nil, fmt.Errorf("invalid OpenBao %s: it holds no PEM-encoded certificate; check the cluster CA secret", s.caField)
	}
	s.authMount = strings.Trim(s.authMount, "/")
	if s.authMount == "" {
		return nil, errors.New("invalid OpenBao AuthMount: it is empty; set the path of the JWT auth method under auth/")
	}
	if s.role == "" {
		return nil, errors.New("invalid OpenBao Role: it is empty; set the JWT auth role to log in with")
	}
	if s.tokenPath == "" && s.tokenSource == nil {
		return nil, fmt.Errorf("invalid OpenBao %s: it is empty; set the path of the projected service-account token", s.tokenField)
	}
	switch {
	case s.timeout < 0:
		return nil, fmt.Errorf("invalid OpenBao Timeout %s: it must not be negative", s.timeout)
	case s.timeout == 0:
		s.timeout = DefaultTimeout
	}
	if s.dialer == nil {
		s.dialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	}

	transport := &http.Transport{
		DialContext: s.dialer.DialContext,
		TLSClientConfig: &tls.Config{
			RootCAs:    pool,
			ServerName: s.serverName,
			MinVersion: tls.VersionTLS12,
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if s.proxyFromEnvironment {
		transport.Proxy = http.ProxyFromEnvironment
	}
	fresh := transport.Clone()
	fresh.DisableKeepAlives = true
	var rt http.RoundTripper = servedCertTransport{next: transport, fresh: fresh}
	if s.maxResponseBytes > 0 {
		rt = boundedTransport{next: rt, max: s.maxResponseBytes}
	}
	if s.wrapTransport != nil {
		rt = s.wrapTransport(rt)
	}
	if s.limiter != nil {
		rt = limitedTransport{limiter: s.limiter, next: rt}
	}
	return &client{
		s: s,
		httpClient: &http.Client{
			Transport: rt,
			// The api client follows a redirect itself when it may (and
			// refuses protocol downgrades); net/http must never follow one
			// on its own.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now:       now,
		loginSlot: make(chan struct{}, 1),
	}, nil
}

// limitedTransport sends each request once limiter allows it.
type limitedTransport struct {
	limiter *rate.Limiter
	next    http.RoundTripper
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.limiter.Wait(r.Context()); err != nil {
		return nil, fmt.Errorf("OpenBao request rate limit: %w", err)
	}
	return t.next.RoundTrip(r)
}

// ValidateAddress checks that addr is an https URL with a host, as every
// OpenBao address must be. Its errors say what is wrong and are no
// *url.Error, which would read as a transport failure.
func ValidateAddress(addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		// Not wrapped: a *url.Error would read as a transport failure.
		return fmt.Errorf("it is not a URL: %v", err)
	}
	if u.Scheme != "https" {
		return errors.New("the scheme must be https")
	}
	if u.Host == "" {
		return errors.New("the host is missing")
	}
	return nil
}

// lastStatus records the HTTP status of the last answer an api client got,
// so that a redirect, which the api client reports as success when redirects
// are disabled, is not mistaken for one.
type lastStatus struct {
	mu       sync.Mutex
	code     int
	location string
}

func (s *lastStatus) record(r *baoapi.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.code = r.StatusCode
	s.location = r.Header.Get("Location")
}

// redirected returns an ErrNotActive error when the last answer was a
// redirect.
func (s *lastStatus) redirected(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code < 300 || s.code >= 400 {
		return nil
	}
	where := ""
	if s.location != "" {
		if u, err := url.Parse(s.location); err == nil {
			where = " to " + u.Scheme + "://" + u.Host
		}
	}
	return fmt.Errorf("%w: %s answered HTTP %d (redirect%s)", ErrNotActive, addr, s.code, where)
}

// apiClient returns an api client addressed at addr carrying token (none when
// empty) that records the status of each answer. A fresh one per call, with
// the token and namespace cleared, keeps BAO_* environment variables from
// injecting a token or a namespace; the shared http.Client keeps the TLS
// configuration and the connections.
func (c *client) apiClient(addr, token string) (*baoapi.Client, *lastStatus, error) {
	cl, err := baoapi.NewClient(&baoapi.Config{
		Address:    addr,
		HttpClient: c.httpClient,
		// Timeouts come from the per-call context, which also covers a
		// login and a retry; no separate per-request timeout.
		Timeout: 0,
		// No hidden retries: callers decide what to retry, and retries
		// would eat their deadline.
		MaxRetries:       0,
		DisableRedirects: !c.s.followRedirects,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to create an OpenBao api client for %s: %w; check the BAO_* environment variables", addr, err)
	}
	cl.ClearNamespace()
	if token == "" {
		cl.ClearToken()
	} else {
		cl.SetToken(token)
	}
	st := &lastStatus{}
	return cl.WithResponseCallbacks(st.record), st, nil
}

// redirected reports a redirect the api client did not follow.
func (c *client) redirected(st *lastStatus, addr string) error {
	if c.s.followRedirects {
		return nil
	}
	return st.redirected(addr)
}

// withoutToken runs call with a token-less client addressed at addr.
func (c *client) withoutToken(action, addr, path string, call func(*baoapi.Client) error) error {
	if err := ValidateAddress(addr); err != nil {
		return fmt.Errorf("%s: invalid member address: %w", action, err)
	}
	cl, st, err := c.apiClient(addr, "")
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	err = call(cl)
	if rerr := c.redirected(st, addr); rerr != nil {
		return newOpError(action, rerr, "", nil)
	}
	if err != nil {
		return newOpError(action, err, c.hint(err, path, "read"), kindsFor(err))
	}
	return nil
}

// withToken runs call with a client addressed at addr that carries the
// client token, logging in first when no fresh token is cached. When OpenBao
// refuses the token with 403 (it expired or was revoked), it logs in again
// and runs call exactly once more; a 403 means the request was not carried
// out, so repeating it (a step-down too) is safe. A second 403 yields
// ErrPermissionDenied. capability names what the role's policy must grant
// on path, for the hint.
func (c *client) withToken(ctx context.Context, action, addr, path, capability string, call func(*baoapi.Client) error) error {
	if err := ValidateAddress(addr); err != nil {
		return fmt.Errorf("%s: invalid member address: %w", action, err)
	}
	token, err := c.clientToken(ctx, addr, "")
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	err = c.callWithToken(action, addr, path, capability, token, call)
	if err == nil || !errors.Is(err, ErrPermissionDenied) {
		return err
	}
	logFrom(ctx).Info("OpenBao refused the client token; logging in again",
		"address", addr, "path", path, "role", c.s.role)
	fresh, err := c.clientToken(ctx, addr, token)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	return c.callWithToken(action, addr, path, capability, fresh, call, token)
}

// callWithToken runs call once with token; stale names earlier tokens that
// must not show in an error either.
func (c *client) callWithToken(action, addr, path, capability, token string, call func(*baoapi.Client) error, stale ...string) error {
	cl, st, err := c.apiClient(addr, token)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	secrets := append([]string{token}, stale...)
	err = call(cl)
	if rerr := c.redirected(st, addr); rerr != nil {
		return newOpError(action, rerr, "send it to the active node's address from sys/leader", nil, secrets...)
	}
	if err != nil {
		return newOpError(action, err, c.hint(err, path, capability), kindsFor(err), secrets...)
	}
	return nil
}
