package openbao

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	baoapi "github.com/openbao/openbao/api/v2"
)

// DefaultTimeout bounds each Client call when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// API paths the Client reads, relative to /v1/.
const (
	pathHealth            = "sys/health"
	pathLeader            = "sys/leader"
	pathRaftConfiguration = "sys/storage/raft/configuration"
	pathAutopilotState    = "sys/storage/raft/autopilot/state"
)

// Client is the controller's read-only view of one OpenBao cluster.
//
// Every method bounds its work by ctx and by Config.Timeout, whichever ends
// first; that bound covers a login and a retry the call may need. Errors
// never contain tokens and can be tested with errors.Is against
// ErrLoginFailed, ErrPermissionDenied, ErrNotFound and
// context.DeadlineExceeded. Implementations are safe for concurrent use.
type Client interface {
	// Health reads sys/health from the one member at addr (for example
	// https://bao-0.bao-internal.ns.svc:8200) without a token. Standby,
	// sealed and uninitialized members are reported in Health, not as
	// errors.
	Health(ctx context.Context, addr string) (*Health, error)
	// Leader reads sys/leader through the cluster Service without a token.
	Leader(ctx context.Context) (*Leader, error)
	// RaftConfiguration reads sys/storage/raft/configuration through the
	// cluster Service with the controller's token.
	RaftConfiguration(ctx context.Context) (*RaftConfiguration, error)
	// AutopilotState reads sys/storage/raft/autopilot/state through the
	// cluster Service with the controller's token.
	AutopilotState(ctx context.Context) (*AutopilotState, error)
}

// Config describes how to reach and authenticate to one OpenBao cluster.
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
	// Timeout bounds each Client call; a sooner ctx deadline wins. Zero means
	// DefaultTimeout; negative values are rejected.
	Timeout time.Duration
}

// client implements Client on top of the OpenBao api client.
type client struct {
	cfg       Config
	authMount string // cfg.AuthMount without surrounding slashes
	timeout   time.Duration
	// base is addressed at cfg.Address and never carries a token. It is
	// never modified after New; each request uses a clone of it, which
	// shares its http.Client and therefore its TLS configuration.
	base *baoapi.Client
	now  func() time.Time

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

// New validates cfg and returns a Client for the cluster it describes. It
// does not contact OpenBao; the first authenticated call logs in.
func New(cfg Config) (Client, error) {
	return newClient(cfg, time.Now)
}

func newClient(cfg Config, now func() time.Time) (*client, error) {
	if err := validateAddress(cfg.Address); err != nil {
		return nil, fmt.Errorf("invalid OpenBao Address %q: %w", cfg.Address, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CACertPEM) {
		return nil, errors.New("invalid OpenBao CACertPEM: it holds no PEM-encoded certificate; " +
			"check the cluster CA secret")
	}
	mount := strings.Trim(cfg.AuthMount, "/")
	if mount == "" {
		return nil, errors.New("invalid OpenBao AuthMount: it is empty; set the path of the JWT auth method under auth/")
	}
	if cfg.Role == "" {
		return nil, errors.New("invalid OpenBao Role: it is empty; set the JWT auth role to log in with")
	}
	if cfg.TokenPath == "" {
		return nil, errors.New("invalid OpenBao TokenPath: it is empty; set the path of the projected service-account token")
	}
	timeout := cfg.Timeout
	switch {
	case timeout < 0:
		return nil, fmt.Errorf("invalid OpenBao Timeout %s: it must not be negative", timeout)
	case timeout == 0:
		timeout = DefaultTimeout
	}
	cfg.CACertPEM = append([]byte(nil), cfg.CACertPEM...)

	transport := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSClientConfig: &tls.Config{
			RootCAs:    pool,
			MinVersion: tls.VersionTLS12,
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	httpClient := &http.Client{
		Transport: transport,
		// The api client follows a single redirect itself and refuses
		// protocol downgrades; net/http must not follow on its own.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	base, err := baoapi.NewClient(&baoapi.Config{
		Address:    cfg.Address,
		HttpClient: httpClient,
		// Timeouts come from the per-call context (see Client), which also
		// covers a login and a retry; no separate per-request timeout.
		Timeout: 0,
		// No hidden retries: the reconciler requeues, and retries would eat
		// the caller's deadline.
		MaxRetries: 0,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create OpenBao api client for %s: %w; check the BAO_* environment variables", cfg.Address, err)
	}
	// NewClient picks up BAO_TOKEN and BAO_NAMESPACE; the controller uses
	// neither.
	base.ClearToken()
	base.ClearNamespace()

	return &client{
		cfg:       cfg,
		authMount: mount,
		timeout:   timeout,
		base:      base,
		now:       now,
		loginSlot: make(chan struct{}, 1),
	}, nil
}

func validateAddress(addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return err
	}
	if u.Scheme != "https" {
		return errors.New("the scheme must be https")
	}
	if u.Host == "" {
		return errors.New("the host is missing")
	}
	return nil
}

// apiClient returns a clone of the base client addressed at addr (the
// Service when empty) carrying token (none when empty).
func (c *client) apiClient(addr, token string) (*baoapi.Client, error) {
	cl, err := c.base.Clone()
	if err != nil {
		return nil, fmt.Errorf("failed to clone OpenBao api client: %w", err)
	}
	if addr != "" {
		if err := cl.SetAddress(addr); err != nil {
			return nil, err
		}
	}
	cl.ClearNamespace()
	if token == "" {
		cl.ClearToken()
	} else {
		cl.SetToken(token)
	}
	return cl, nil
}

// Health implements Client.
//
// It uses the api client's typed sys/health call, which overrides the
// standby, sealed and uninitialized status codes (429, 503, 501) with a 2xx
// code, so every state arrives as a parsed body rather than as an error.
func (c *client) Health(ctx context.Context, addr string) (*Health, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to read health from %s", addr)
	if err := validateAddress(addr); err != nil {
		return nil, fmt.Errorf("%s: invalid member address: %w", action, err)
	}
	cl, err := c.apiClient(addr, "")
	if err != nil {
		return nil, wrapOpError(action, err)
	}
	resp, err := cl.Sys().HealthWithContext(ctx)
	if err != nil {
		return nil, newOpError(action, err, c.readHint(err, pathHealth), c.kindsFor(err))
	}
	return &Health{
		Initialized: resp.Initialized,
		Sealed:      resp.Sealed,
		Standby:     resp.Standby,
		Version:     resp.Version,
		ClusterID:   resp.ClusterID,
		ClusterName: resp.ClusterName,
	}, nil
}

// Leader implements Client.
func (c *client) Leader(ctx context.Context) (*Leader, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to read the leader from %s", c.cfg.Address)
	cl, err := c.apiClient("", "")
	if err != nil {
		return nil, wrapOpError(action, err)
	}
	resp, err := cl.Sys().LeaderWithContext(ctx)
	if err != nil {
		return nil, newOpError(action, err, c.readHint(err, pathLeader), c.kindsFor(err))
	}
	return &Leader{
		IsSelf:               resp.IsSelf,
		LeaderAddress:        resp.LeaderAddress,
		LeaderClusterAddress: resp.LeaderClusterAddress,
		RaftCommittedIndex:   resp.RaftCommittedIndex,
		RaftAppliedIndex:     resp.RaftAppliedIndex,
	}, nil
}

// raftConfigurationData is the data of a sys/storage/raft/configuration
// answer.
type raftConfigurationData struct {
	Config struct {
		Servers []struct {
			NodeID          string `json:"node_id"`
			Address         string `json:"address"`
			Leader          bool   `json:"leader"`
			ProtocolVersion string `json:"protocol_version"`
			Voter           bool   `json:"voter"`
		} `json:"servers"`
	} `json:"config"`
}

// RaftConfiguration implements Client.
func (c *client) RaftConfiguration(ctx context.Context) (*RaftConfiguration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	var out *RaftConfiguration
	err := c.withToken(ctx, "read the raft configuration", pathRaftConfiguration, func(cl *baoapi.Client) error {
		secret, err := cl.Logical().ReadWithContext(ctx, pathRaftConfiguration)
		if err != nil {
			return err
		}
		if secret == nil || secret.Data == nil {
			return ErrNotFound
		}
		if _, ok := secret.Data["config"]; !ok {
			return errors.New("the answer has no config")
		}
		// Data holds generic JSON; a round trip decodes it into typed
		// fields.
		raw, err := json.Marshal(secret.Data)
		if err != nil {
			return fmt.Errorf("failed to re-encode the answer: %w", err)
		}
		var data raftConfigurationData
		if err := json.Unmarshal(raw, &data); err != nil {
			return fmt.Errorf("failed to decode the answer: %w", err)
		}
		out = &RaftConfiguration{Servers: make([]RaftServer, 0, len(data.Config.Servers))}
		for _, s := range data.Config.Servers {
			out.Servers = append(out.Servers, RaftServer{
				NodeID:  s.NodeID,
				Address: s.Address,
				Leader:  s.Leader,
				Voter:   s.Voter,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AutopilotState implements Client.
func (c *client) AutopilotState(ctx context.Context) (*AutopilotState, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	var out *AutopilotState
	err := c.withToken(ctx, "read autopilot state", pathAutopilotState, func(cl *baoapi.Client) error {
		state, err := cl.Sys().RaftAutopilotStateWithContext(ctx)
		if err != nil {
			return err
		}
		if state == nil { // the api client turns 404 into (nil, nil)
			return ErrNotFound
		}
		out, err = mapAutopilotState(state)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func mapAutopilotState(in *baoapi.AutopilotState) (*AutopilotState, error) {
	out := &AutopilotState{
		Healthy:          in.Healthy,
		FailureTolerance: in.FailureTolerance,
		Leader:           in.Leader,
		Voters:           append([]string(nil), in.Voters...),
		NonVoters:        append([]string(nil), in.NonVoters...),
		Servers:          make(map[string]AutopilotServer, len(in.Servers)),
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
		out.Servers[key] = AutopilotServer{
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

// kindsFor returns the sentinels that apply to a failed read.
func (c *client) kindsFor(err error) []error {
	switch StatusCode(err) {
	case http.StatusForbidden:
		return []error{ErrPermissionDenied}
	case http.StatusNotFound:
		return []error{ErrNotFound}
	}
	return nil
}
