package raftops

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
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

	"github.com/go-logr/logr"
	baoapi "github.com/openbao/openbao/api/v2"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// DefaultTimeout bounds each Client call except Snapshot when Config.Timeout
// is zero.
const DefaultTimeout = 10 * time.Second

// API paths the Client uses, relative to /v1/.
const (
	pathLeader         = "sys/leader"
	pathHealth         = "sys/health"
	pathStepDown       = "sys/step-down"
	pathAutopilotState = "sys/storage/raft/autopilot/state"
	pathSnapshot       = "sys/storage/raft/snapshot"
	pathRaftConfig     = "sys/storage/raft/configuration"
	pathRaftPromote    = "sys/storage/raft/promote"
	pathRaftDemote     = "sys/storage/raft/demote"
	pathRaftRemovePeer = "sys/storage/raft/remove-peer"
)

// Client is what the executor needs from OpenBao. Every method addresses one
// member directly by its API address (for example
// https://bao-0.bao-internal.ns.svc:8200) and never through a Service, so the
// caller always knows which node it talks to.
//
// Every method is bounded by ctx; all but Snapshot also by Config.Timeout,
// whichever ends first, and that bound covers a login and one retry. Errors
// never contain tokens; sort them with Classify and errors.Is.
// Implementations are safe for concurrent use.
type Client interface {
	// Leader reads sys/leader from addr without a token.
	Leader(ctx context.Context, addr string) (*openbao.Leader, error)
	// Health reads sys/health from addr without a token. Standby, sealed and
	// uninitialized members are reported in Health, not as errors.
	Health(ctx context.Context, addr string) (*openbao.Health, error)
	// StepDown asks the node at addr to give up the active role. It must be
	// the active node: OpenBao forwards a standby's request to whichever node
	// is active, which may not be the intended one.
	StepDown(ctx context.Context, addr string) error
	// AutopilotState reads sys/storage/raft/autopilot/state from addr.
	AutopilotState(ctx context.Context, addr string) (*openbao.AutopilotState, error)
	// Snapshot streams a Raft snapshot from addr, which must be the active
	// node (a 2.4 standby answers with a redirect and no body; that is
	// ErrNotActive). It returns the number of bytes written to w and checks
	// that the archive is complete (ErrIncompleteSnapshot otherwise), and
	// reports the Raft index and term the snapshot contains. Only ctx bounds it,
	// since a snapshot may be large.
	Snapshot(ctx context.Context, addr string, w io.Writer) (SnapshotInfo, error)
	// RaftConfiguration reads sys/storage/raft/configuration from addr: the
	// Raft peers with their node IDs, voter flags and which one leads.
	RaftConfiguration(ctx context.Context, addr string) (*openbao.RaftConfiguration, error)
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

// MembershipClient is what PromoteMember and RemoveMember need: finding the
// active node, reading the Raft configuration and changing it. Client is one.
type MembershipClient interface {
	// Leader is Client.Leader.
	Leader(ctx context.Context, addr string) (*openbao.Leader, error)
	// Health is Client.Health.
	Health(ctx context.Context, addr string) (*openbao.Health, error)
	// RaftConfiguration is Client.RaftConfiguration.
	RaftConfiguration(ctx context.Context, addr string) (*openbao.RaftConfiguration, error)
	// Promote is Client.Promote.
	Promote(ctx context.Context, addr, nodeID string) error
	// Demote is Client.Demote.
	Demote(ctx context.Context, addr, nodeID string) error
	// RemovePeer is Client.RemovePeer.
	RemovePeer(ctx context.Context, addr, nodeID string) error
}

// Dialer opens network connections; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config describes how the executor reaches and authenticates to OpenBao.
type Config struct {
	// CAFile is the PEM file of the cluster CA. Server certificates are
	// verified against it alone; verification is never skipped.
	CAFile string
	// TLSServerName, when set, is the name server certificates are verified
	// against instead of the host of the address, so that a member can be
	// addressed by IP.
	TLSServerName string
	// AuthMount is the path of the JWT auth method under auth/. Empty means
	// workload.AuthMount.
	AuthMount string
	// Role is the JWT role to log in with. Empty means workload.ExecutorRole.
	Role string
	// TokenFile is the projected service-account token. It is read again on
	// every login because kubelet rotates it.
	TokenFile string
	// Timeout bounds each call but Snapshot; a sooner ctx deadline wins. Zero
	// means DefaultTimeout; negative values are refused.
	Timeout time.Duration
	// Dialer opens connections; nil means a net.Dialer with a 30 s timeout.
	Dialer Dialer
}

// client implements Client on top of the OpenBao api client.
type client struct {
	cfg        Config
	authMount  string
	timeout    time.Duration
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

var _ Client = (*client)(nil)

// New validates cfg, reads the CA file and returns a Client. It does not
// contact OpenBao; the first call that needs a token logs in.
func New(cfg Config) (Client, error) {
	return newClient(cfg, time.Now)
}

func newClient(cfg Config, now func() time.Time) (*client, error) {
	if cfg.CAFile == "" {
		return nil, errors.New("invalid CAFile: it is empty; set the path of the cluster CA certificate")
	}
	caPEM, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("invalid CAFile %s: it holds no PEM-encoded certificate; check the cluster TLS secret's %s", cfg.CAFile, workload.CACertKey)
	}
	if cfg.TokenFile == "" {
		return nil, errors.New("invalid TokenFile: it is empty; set the path of the projected service-account token")
	}
	if cfg.AuthMount == "" {
		cfg.AuthMount = workload.AuthMount
	}
	mount := strings.Trim(cfg.AuthMount, "/")
	if mount == "" {
		return nil, fmt.Errorf("invalid AuthMount %q: set the path of the JWT auth method under auth/", cfg.AuthMount)
	}
	if cfg.Role == "" {
		cfg.Role = workload.ExecutorRole
	}
	timeout := cfg.Timeout
	switch {
	case timeout < 0:
		return nil, fmt.Errorf("invalid Timeout %s: it must not be negative", timeout)
	case timeout == 0:
		timeout = DefaultTimeout
	}
	dialer := cfg.Dialer
	if dialer == nil {
		dialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	}

	transport := &http.Transport{
		// No proxy: members are addressed directly, inside the cluster.
		Proxy:       nil,
		DialContext: dialer.DialContext,
		TLSClientConfig: &tls.Config{
			RootCAs:    pool,
			ServerName: cfg.TLSServerName,
			MinVersion: tls.VersionTLS12,
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &client{
		cfg:       cfg,
		authMount: mount,
		timeout:   timeout,
		httpClient: &http.Client{
			Transport: transport,
			// Redirects are never followed: a redirect means the addressed
			// node is not the active one, and following it would send the
			// request (and the token) to a node the caller did not pick.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now:       now,
		loginSlot: make(chan struct{}, 1),
	}, nil
}

func validateAddress(addr string) error {
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
// empty), which never follows redirects and records the status of each
// answer. A fresh one per call keeps BAO_* environment variables from
// injecting a token or a namespace.
func (c *client) apiClient(addr, token string) (*baoapi.Client, *lastStatus, error) {
	cl, err := baoapi.NewClient(&baoapi.Config{
		Address:    addr,
		HttpClient: c.httpClient,
		// Timeouts come from the per-call context.
		Timeout: 0,
		// No hidden retries: TransferLeadership decides what to retry.
		MaxRetries:       0,
		DisableRedirects: true,
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

// Leader implements Client.
func (c *client) Leader(ctx context.Context, addr string) (*openbao.Leader, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to read %s from %s", pathLeader, addr)
	var out *openbao.Leader
	err := c.withoutToken(ctx, action, addr, func(cl *baoapi.Client) error {
		resp, err := cl.Sys().LeaderWithContext(ctx)
		if err != nil {
			return err
		}
		out = &openbao.Leader{
			IsSelf:               resp.IsSelf,
			LeaderAddress:        resp.LeaderAddress,
			LeaderClusterAddress: resp.LeaderClusterAddress,
			RaftCommittedIndex:   resp.RaftCommittedIndex,
			RaftAppliedIndex:     resp.RaftAppliedIndex,
		}
		return nil
	})
	return out, err
}

// Health implements Client.
//
// The api client's typed sys/health call asks OpenBao to answer standby,
// sealed and uninitialized members with a 2xx code, so every state arrives as
// a parsed body rather than as an error.
func (c *client) Health(ctx context.Context, addr string) (*openbao.Health, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to read %s from %s", pathHealth, addr)
	var out *openbao.Health
	err := c.withoutToken(ctx, action, addr, func(cl *baoapi.Client) error {
		resp, err := cl.Sys().HealthWithContext(ctx)
		if err != nil {
			return err
		}
		out = &openbao.Health{
			Initialized: resp.Initialized,
			Sealed:      resp.Sealed,
			Standby:     resp.Standby,
			Version:     resp.Version,
			ClusterID:   resp.ClusterID,
			ClusterName: resp.ClusterName,
		}
		return nil
	})
	return out, err
}

// StepDown implements Client.
func (c *client) StepDown(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to step down %s", addr)
	return c.withToken(ctx, action, addr, pathStepDown, func(cl *baoapi.Client) error {
		return cl.Sys().StepDownWithContext(ctx)
	})
}

// AutopilotState implements Client.
func (c *client) AutopilotState(ctx context.Context, addr string) (*openbao.AutopilotState, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to read autopilot state from %s", addr)
	var out *openbao.AutopilotState
	err := c.withToken(ctx, action, addr, pathAutopilotState, func(cl *baoapi.Client) error {
		state, err := cl.Sys().RaftAutopilotStateWithContext(ctx)
		if err != nil {
			return err
		}
		if state == nil { // the api client turns 404 into (nil, nil)
			return fmt.Errorf("OpenBao returned no data (HTTP 404); %s requires Raft integrated storage", pathAutopilotState)
		}
		out, err = mapAutopilotState(state)
		return err
	})
	return out, err
}

// Snapshot implements Client.
func (c *client) Snapshot(ctx context.Context, addr string, w io.Writer) (SnapshotInfo, error) {
	action := fmt.Sprintf("failed to take a Raft snapshot from %s", addr)
	cw := &countingWriter{w: w}
	var meta archiveMeta
	err := c.withToken(ctx, action, addr, pathSnapshot, func(cl *baoapi.Client) error {
		resp, err := cl.Logical().ReadRawWithContext(ctx, pathSnapshot)
		if resp != nil && resp.Body != nil {
			defer resp.Body.Close()
		}
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			// Redirects are reported by withToken; any other 2xx has no body.
			return fmt.Errorf("OpenBao answered HTTP %d without a snapshot", resp.StatusCode)
		}
		meta, err = copyVerified(cw, resp.Body)
		return err
	})
	return SnapshotInfo{Bytes: cw.n, Index: meta.Index, Term: meta.Term}, err
}

// raftConfigurationData is the data of a sys/storage/raft/configuration
// answer.
type raftConfigurationData struct {
	Config *struct {
		Servers []struct {
			NodeID  string `json:"node_id"`
			Address string `json:"address"`
			Leader  bool   `json:"leader"`
			Voter   bool   `json:"voter"`
		} `json:"servers"`
	} `json:"config"`
}

// RaftConfiguration implements Client.
func (c *client) RaftConfiguration(ctx context.Context, addr string) (*openbao.RaftConfiguration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to read the Raft configuration from %s", addr)
	var out *openbao.RaftConfiguration
	err := c.withToken(ctx, action, addr, pathRaftConfig, func(cl *baoapi.Client) error {
		secret, err := cl.Logical().ReadWithContext(ctx, pathRaftConfig)
		if err != nil {
			return err
		}
		if secret == nil || secret.Data == nil { // the api client turns 404 into (nil, nil)
			return fmt.Errorf("OpenBao returned no data (HTTP 404); %s requires Raft integrated storage", pathRaftConfig)
		}
		// Data holds generic JSON; a round trip decodes it into typed fields.
		raw, err := json.Marshal(secret.Data)
		if err != nil {
			return fmt.Errorf("failed to re-encode the answer: %w", err)
		}
		var data raftConfigurationData
		if err := json.Unmarshal(raw, &data); err != nil {
			return fmt.Errorf("failed to decode the answer: %w", err)
		}
		if data.Config == nil {
			return errors.New("the answer has no config")
		}
		out = &openbao.RaftConfiguration{Servers: make([]openbao.RaftServer, 0, len(data.Config.Servers))}
		for _, s := range data.Config.Servers {
			out.Servers = append(out.Servers, openbao.RaftServer{NodeID: s.NodeID, Address: s.Address, Leader: s.Leader, Voter: s.Voter})
		}
		return nil
	})
	return out, err
}

// Promote implements Client.
func (c *client) Promote(ctx context.Context, addr, nodeID string) error {
	return c.writeServerID(ctx, "promote", addr, pathRaftPromote, nodeID)
}

// Demote implements Client.
func (c *client) Demote(ctx context.Context, addr, nodeID string) error {
	return c.writeServerID(ctx, "demote", addr, pathRaftDemote, nodeID)
}

// RemovePeer implements Client.
func (c *client) RemovePeer(ctx context.Context, addr, nodeID string) error {
	return c.writeServerID(ctx, "remove", addr, pathRaftRemovePeer, nodeID)
}

// writeServerID sends {"server_id": nodeID} to path on addr.
func (c *client) writeServerID(ctx context.Context, verb, addr, path, nodeID string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to %s Raft peer %q through %s", verb, nodeID, addr)
	if nodeID == "" {
		return fmt.Errorf("%s: invalid node ID: it is empty", action)
	}
	return c.withToken(ctx, action, addr, path, func(cl *baoapi.Client) error {
		_, err := cl.Logical().WriteWithContext(ctx, path, map[string]any{"server_id": nodeID})
		return err
	})
}

// SnapshotInfo describes a snapshot that was streamed.
type SnapshotInfo struct {
	// Bytes is the size of the archive.
	Bytes int64
	// Index and Term are the last Raft index and term the snapshot contains,
	// from the archive's meta.json.
	Index, Term uint64
}

// archiveMeta is the part of a snapshot archive's meta.json (hashicorp/raft's
// SnapshotMeta) that a receipt records.
type archiveMeta struct {
	Index uint64 `json:"Index"`
	Term  uint64 `json:"Term"`
}

// copyVerified copies a snapshot archive to w and checks on the way that it
// is a gzip tar whose SHA256SUMS.sealed entry is present and not empty, as the
// api client's own snapshot call does; a server that fails midstream leaves
// it out. It returns what meta.json says.
func copyVerified(w io.Writer, body io.Reader) (archiveMeta, error) {
	pr, pw := io.Pipe()
	type result struct {
		meta archiveMeta
		ok   bool
	}
	verified := make(chan result, 1)
	go func() {
		meta, ok := readArchive(pr)
		_, _ = io.Copy(io.Discard, pr)
		verified <- result{meta, ok}
	}()
	_, err := io.Copy(io.MultiWriter(w, pw), body)
	pw.CloseWithError(err)
	res := <-verified
	if err != nil {
		return archiveMeta{}, fmt.Errorf("failed to copy the snapshot stream: %w", err)
	}
	if !res.ok {
		return archiveMeta{}, fmt.Errorf("%w: the archive has no non-empty SHA256SUMS.sealed", ErrIncompleteSnapshot)
	}
	return res.meta, nil
}

// readArchive reads a snapshot archive to its SHA256SUMS.sealed entry and reports
// whether that entry is there and not empty, with meta.json's index and term.
func readArchive(r io.Reader) (archiveMeta, bool) {
	var meta archiveMeta
	gz, err := gzip.NewReader(r)
	if err != nil {
		return meta, false
	}
	t := tar.NewReader(gz)
	for {
		h, err := t.Next()
		if err != nil {
			return meta, false
		}
		switch h.Name {
		case "meta.json":
			// A meta.json that does not decode leaves index and term at zero; the
			// archive itself is judged by its sealed checksums.
			_ = json.NewDecoder(io.LimitReader(t, 1<<20)).Decode(&meta)
		case "SHA256SUMS.sealed":
			b, err := io.ReadAll(t)
			return meta, err == nil && len(b) > 0
		}
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// withoutToken runs call with a token-less client addressed at addr.
func (c *client) withoutToken(ctx context.Context, action, addr string, call func(*baoapi.Client) error) error {
	if err := validateAddress(addr); err != nil {
		return fmt.Errorf("%s: invalid member address: %w", action, err)
	}
	cl, st, err := c.apiClient(addr, "")
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	err = call(cl)
	if rerr := st.redirected(addr); rerr != nil {
		return newOpError(action, rerr, "", nil)
	}
	if err != nil {
		return newOpError(action, err, c.hint(err, ""), kindsFor(err))
	}
	return nil
}

// withToken runs call with a client addressed at addr that carries the
// executor's token, logging in first when no fresh token is cached. When
// OpenBao refuses the token with 403 (it expired or was revoked), it logs in
// again and runs call exactly once more; a 403 means the request was not
// carried out, so repeating a step-down is safe. A second 403 yields
// ErrPermissionDenied.
func (c *client) withToken(ctx context.Context, action, addr, path string, call func(*baoapi.Client) error) error {
	if err := validateAddress(addr); err != nil {
		return fmt.Errorf("%s: invalid member address: %w", action, err)
	}
	token, err := c.clientToken(ctx, addr, "")
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	err = c.callWithToken(action, addr, path, token, call)
	if err == nil || !errors.Is(err, ErrPermissionDenied) {
		return err
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("OpenBao refused the executor's token; logging in again",
		"address", addr, "path", path)
	fresh, lerr := c.clientToken(ctx, addr, token)
	if lerr != nil {
		return fmt.Errorf("%s: %w", action, lerr)
	}
	return c.callWithToken(action, addr, path, fresh, call)
}

func (c *client) callWithToken(action, addr, path, token string, call func(*baoapi.Client) error) error {
	cl, st, err := c.apiClient(addr, token)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	err = call(cl)
	if rerr := st.redirected(addr); rerr != nil {
		return newOpError(action, rerr, "send it to the active node's address from sys/leader", nil, token)
	}
	if err != nil {
		return newOpError(action, err, c.hint(err, path), kindsFor(err), token)
	}
	return nil
}

// hint tells a person what to check after a failed request to path.
func (c *client) hint(cause error, path string) string {
	if h := c.transportHint(cause); h != "" {
		return h
	}
	switch openbao.StatusCode(cause) {
	case http.StatusForbidden:
		return fmt.Sprintf("check that the policy of role %q on auth/%s allows %s", c.cfg.Role, c.authMount, path)
	case http.StatusServiceUnavailable:
		return "check whether the node is sealed or the cluster has no active node"
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		if path == pathRaftPromote || path == pathRaftDemote {
			return fmt.Sprintf("%s exists from OpenBao 2.2 on", path)
		}
	}
	return ""
}

func (c *client) transportHint(cause error) string {
	var urlErr *url.Error
	switch {
	case isTLSVerifyError(cause):
		return "check that the CA file holds the CA that issued the OpenBao serving certificate " +
			"and that the certificate covers this host name (or set the TLS server name)"
	case errors.Is(cause, context.DeadlineExceeded):
		return fmt.Sprintf("no answer before the deadline (per-call timeout %s)", c.timeout)
	case errors.Is(cause, context.Canceled):
		return ""
	case errors.As(cause, &urlErr):
		return "check that the address resolves and OpenBao is listening on it"
	}
	return ""
}

func mapAutopilotState(in *baoapi.AutopilotState) (*openbao.AutopilotState, error) {
	out := &openbao.AutopilotState{
		Healthy:          in.Healthy,
		FailureTolerance: in.FailureTolerance,
		Leader:           in.Leader,
		Voters:           append([]string(nil), in.Voters...),
		NonVoters:        append([]string(nil), in.NonVoters...),
		Servers:          make(map[string]openbao.AutopilotServer, len(in.Servers)),
	}
	for key, s := range in.Servers {
		if s == nil {
			continue
		}
		var lastContact time.Duration
		if s.LastContact != "" {
			d, err := time.ParseDuration(s.LastContact)
			if err != nil {
				return nil, fmt.Errorf("server %s has an unreadable last_contact %q: %w", key, s.LastContact, err)
			}
			lastContact = d
		}
		var stableSince time.Time
		if s.StableSince != "" {
			t, err := time.Parse(time.RFC3339Nano, s.StableSince)
			if err != nil {
				return nil, fmt.Errorf("server %s has an unreadable stable_since %q: %w", key, s.StableSince, err)
			}
			stableSince = t
		}
		out.Servers[key] = openbao.AutopilotServer{
			ID:          s.ID,
			Name:        s.Name,
			Address:     s.Address,
			NodeStatus:  s.NodeStatus,
			Status:      s.Status,
			NodeType:    s.NodeType,
			Version:     s.Version,
			LastIndex:   s.LastIndex,
			LastTerm:    s.LastTerm,
			Healthy:     s.Healthy,
			LastContact: lastContact,
			StableSince: stableSince,
		}
	}
	return out, nil
}
