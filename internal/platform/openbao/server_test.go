package openbao

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testMount = "baokeeper-jwt"
	testRole  = "baokeeper-controller"

	// Service-account tokens as kubelet would project them (shortened).
	jwtA = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6YmFva2VlcGVyOmNvbnRyb2xsZXIiLCJuIjoiQSJ9.c2lnLUE"
	jwtB = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6YmFva2VlcGVyOmNvbnRyb2xsZXIiLCJuIjoiQiJ9.c2lnLUI"
)

// healthState is what a fake member reports on sys/health.
type healthState struct {
	initialized, sealed, standby bool
}

// fakeBao is an httptest TLS server that answers like OpenBao 2.4.0 for the
// endpoints the Reader uses.
type fakeBao struct {
	srv *httptest.Server

	mu sync.Mutex
	// acceptJWT is the only JWT the login accepts.
	acceptJWT string
	// loginStatus, when set, is the status every login answers with;
	// loginBody is then its body, with %JWT% replaced by the JWT sent.
	loginStatus int
	loginBody   string
	// loginNoAuth makes a successful login answer without an auth block.
	loginNoAuth  bool
	loginDelay   time.Duration
	leaseSeconds int

	issued   int
	valid    map[string]bool
	seenJWTs []string
	roles    []string

	// Per API path (without /v1/).
	requests   map[string]int
	tokensSeen map[string][]string
	forbid     map[string]bool
	notFound   map[string]bool
	delay      map[string]time.Duration
	// failStatus answers with this status after authorization, with
	// failBody (%TOKEN% replaced by the token sent).
	failStatus map[string]int
	failBody   string
	// body overrides the data an authed path answers with.
	body map[string]string

	health           healthState
	healthStatusSent []int
}

func newFakeBao(t *testing.T) *fakeBao {
	t.Helper()
	b := &fakeBao{
		acceptJWT:    jwtA,
		leaseSeconds: 60,
		valid:        map[string]bool{},
		requests:     map[string]int{},
		tokensSeen:   map[string][]string{},
		forbid:       map[string]bool{},
		notFound:     map[string]bool{},
		delay:        map[string]time.Duration{},
		failStatus:   map[string]int{},
		body:         map[string]string{},
		health:       healthState{initialized: true},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/auth/"+testMount+"/login", b.login)
	mux.HandleFunc("PUT /v1/auth/"+testMount+"/login", b.login)
	mux.HandleFunc("GET /v1/sys/health", b.sysHealth)
	mux.HandleFunc("GET /v1/sys/leader", b.sysLeader)
	mux.HandleFunc("GET /v1/sys/metrics", b.sysMetrics)
	mux.HandleFunc("GET /v1/sys/storage/raft/configuration", b.authed(pathRaftConfiguration, raftConfigurationJSON))
	mux.HandleFunc("GET /v1/sys/storage/raft/autopilot/state", b.authed(pathAutopilotState, autopilotStateJSON))
	b.srv = httptest.NewUnstartedServer(mux)
	// Handshakes the tests make fail on purpose are not news.
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	return b
}

// caPEM is the PEM of the test server's self-signed certificate, which is
// its own CA.
func (b *fakeBao) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.srv.Certificate().Raw})
}

func (b *fakeBao) set(f func(b *fakeBao)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b)
}

// revokeAll invalidates every token issued so far, as expiry would.
func (b *fakeBao) revokeAll() {
	b.set(func(b *fakeBao) { b.valid = map[string]bool{} })
}

func (b *fakeBao) logins() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.seenJWTs)
}

func (b *fakeBao) jwts() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seenJWTs...)
}

func (b *fakeBao) requestCount(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests[path]
}

func (b *fakeBao) tokens(path string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.tokensSeen[path]...)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// wrapData wraps data the way OpenBao wraps logical responses.
func wrapData(data string) string {
	return `{"request_id":"8d3f2a6e-1c44-4b7e-9a51-2f0c6b1d7e90","lease_id":"","renewable":false,` +
		`"lease_duration":0,"data":` + data + `,"wrap_info":null,"warnings":null,"auth":null}`
}

func sleepOrDone(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-r.Context().Done():
	case <-time.After(d):
	}
}

func (b *fakeBao) login(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Role string `json:"role"`
		JWT  string `json:"jwt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, `{"errors":["failed to parse JSON input"]}`)
		return
	}
	b.mu.Lock()
	b.seenJWTs = append(b.seenJWTs, req.JWT)
	b.roles = append(b.roles, req.Role)
	delay, status, body := b.loginDelay, b.loginStatus, b.loginBody
	b.mu.Unlock()

	sleepOrDone(r, delay)
	switch {
	case status != 0:
		writeJSON(w, status, strings.ReplaceAll(body, "%JWT%", req.JWT))
		return
	case req.Role != testRole:
		writeJSON(w, http.StatusBadRequest, fmt.Sprintf(`{"errors":["role %q could not be found"]}`, req.Role))
		return
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if req.JWT != b.acceptJWT {
		writeJSON(w, http.StatusBadRequest, `{"errors":["error validating token: invalid signature"]}`)
		return
	}
	if b.loginNoAuth {
		writeJSON(w, http.StatusOK, wrapData("null"))
		return
	}
	b.issued++
	token := "t-" + strconv.Itoa(b.issued)
	b.valid[token] = true
	writeJSON(w, http.StatusOK, fmt.Sprintf(`{"request_id":"5f0b6f55-3d7a-4f1e-8a43-0b9e8c2d1a77","lease_id":"",`+
		`"renewable":false,"lease_duration":0,"data":null,"wrap_info":null,"warnings":null,`+
		`"auth":{"client_token":%q,"accessor":"a-%d","policies":["default","baokeeper-controller"],`+
		`"token_policies":["default","baokeeper-controller"],"metadata":{"role":"baokeeper-controller"},`+
		`"lease_duration":%d,"renewable":false,"entity_id":"3c2f9f0e-7f54-4a0d-b1a6-0e9c5a7d2b11",`+
		`"token_type":"service","orphan":true,"num_uses":0}}`, token, b.issued, b.leaseSeconds))
}

// sysHealth mirrors OpenBao's status code selection: standbyok,
// activecode, standbycode, sealedcode and uninitcode query parameters.
func (b *fakeBao) sysHealth(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.requests[pathHealth]++
	b.tokensSeen[pathHealth] = append(b.tokensSeen[pathHealth], r.Header.Get("X-Vault-Token"))
	st := b.health
	delay := b.delay[pathHealth]
	b.mu.Unlock()
	sleepOrDone(r, delay)

	q := r.URL.Query()
	codeParam := func(name string, def int) int {
		if v := q.Get(name); v != "" {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
		return def
	}
	var code int
	switch {
	case !st.initialized:
		code = codeParam("uninitcode", http.StatusNotImplemented)
	case st.sealed:
		code = codeParam("sealedcode", http.StatusServiceUnavailable)
	case st.standby && q.Get("standbyok") != "true":
		code = codeParam("standbycode", http.StatusTooManyRequests)
	default:
		code = codeParam("activecode", http.StatusOK)
	}
	b.mu.Lock()
	b.healthStatusSent = append(b.healthStatusSent, code)
	b.mu.Unlock()

	body := map[string]any{
		"initialized":                  st.initialized,
		"sealed":                       st.sealed,
		"standby":                      st.standby || st.sealed,
		"performance_standby":          false,
		"replication_performance_mode": "disabled",
		"replication_dr_mode":          "disabled",
		"server_time_utc":              1764404473,
		"version":                      "2.4.0",
	}
	if st.initialized && !st.sealed {
		body["cluster_name"] = "vault-cluster-5a2f1c9e"
		body["cluster_id"] = "0d1b8a2e-6c3f-4e59-9b7a-1f2d3c4b5a69"
	}
	raw, _ := json.Marshal(body)
	writeJSON(w, code, string(raw))
}

// sysMetrics answers sys/metrics?format=prometheus with a follower's page; other
// formats are refused, as a client must ask for this one.
func (b *fakeBao) sysMetrics(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.requests[pathMetrics]++
	b.tokensSeen[pathMetrics] = append(b.tokensSeen[pathMetrics], r.Header.Get("X-Vault-Token"))
	status := b.failStatus[pathMetrics]
	b.mu.Unlock()
	if status != 0 {
		writeJSON(w, status, `{"errors":["Vault is sealed"]}`)
		return
	}
	if r.URL.Query().Get("format") != "prometheus" {
		writeJSON(w, http.StatusBadRequest, `{"errors":["only the prometheus format is served here"]}`)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte("# TYPE vault_raft_rpc_appendEntries summary\n" +
		"vault_raft_rpc_appendEntries{quantile=\"0.5\"} 0.03\n" +
		"vault_raft_rpc_appendEntries_sum 2.5\nvault_raft_rpc_appendEntries_count 42\n"))
}

func (b *fakeBao) sysLeader(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.requests[pathLeader]++
	b.tokensSeen[pathLeader] = append(b.tokensSeen[pathLeader], r.Header.Get("X-Vault-Token"))
	delay, status := b.delay[pathLeader], b.failStatus[pathLeader]
	b.mu.Unlock()
	sleepOrDone(r, delay)
	if status != 0 {
		writeJSON(w, status, `{"errors":["Vault is sealed"]}`)
		return
	}
	writeJSON(w, http.StatusOK, `{"ha_enabled":true,"is_self":false,"active_time":"0001-01-01T00:00:00Z",`+
		`"leader_address":"https://bao-0.bao-internal.ns.svc:8200",`+
		`"leader_cluster_address":"https://bao-0.bao-internal.ns.svc:8201",`+
		`"performance_standby":false,"performance_standby_last_remote_wal":0,`+
		`"raft_committed_index":1234,"raft_applied_index":1230}`)
}

// authed serves a token-protected endpoint at path with data.
func (b *fakeBao) authed(path, data string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get("X-Vault-Token")
		b.mu.Lock()
		b.requests[path]++
		b.tokensSeen[path] = append(b.tokensSeen[path], token)
		allowed := b.valid[token] && !b.forbid[path]
		delay, status, body, notFound := b.delay[path], b.failStatus[path], b.failBody, b.notFound[path]
		answer, ok := b.body[path]
		if !ok {
			answer = data
		}
		b.mu.Unlock()

		sleepOrDone(r, delay)
		switch {
		case !allowed:
			writeJSON(w, http.StatusForbidden, `{"errors":["permission denied"]}`)
		case notFound:
			writeJSON(w, http.StatusNotFound, `{"errors":[]}`)
		case status != 0:
			writeJSON(w, status, strings.ReplaceAll(body, "%TOKEN%", token))
		default:
			writeJSON(w, http.StatusOK, wrapData(answer))
		}
	}
}

const raftConfigurationJSON = `{"config":{"index":0,"servers":[` +
	`{"node_id":"bao-0","address":"bao-0.bao-internal.ns.svc:8201","leader":true,"protocol_version":"3","voter":true},` +
	`{"node_id":"bao-1","address":"bao-1.bao-internal.ns.svc:8201","leader":false,"protocol_version":"3","voter":true},` +
	`{"node_id":"bao-2","address":"bao-2.bao-internal.ns.svc:8201","leader":false,"protocol_version":"3","voter":false}]}}`

const autopilotStateJSON = `{"healthy":true,"failure_tolerance":1,"leader":"n1","voters":["n1","n2","n3"],` +
	`"non_voters":["n4"],"optimistic_failure_tolerance":1,"servers":{` +
	`"n1":{"id":"n1","name":"n1","address":"127.0.1.1:8201","node_status":"alive","last_contact":"0s",` +
	`"last_term":9,"last_index":821,"healthy":true,"stable_since":"2026-11-29T08:20:01.5Z",` +
	`"status":"leader","version":"2.4.0","node_type":"voter"},` +
	`"n2":{"id":"n2","name":"n2","address":"127.0.1.2:8201","node_status":"alive","last_contact":"1.9s",` +
	`"last_term":9,"last_index":820,"healthy":true,"stable_since":"2026-11-29T08:21:13Z",` +
	`"status":"voter","version":"2.4.0","node_type":"voter"},` +
	`"n3":{"id":"n3","name":"n3","address":"127.0.1.3:8201","node_status":"alive","last_contact":"2.5s",` +
	`"last_term":9,"last_index":812,"healthy":false,"stable_since":"2026-11-29T08:21:13Z",` +
	`"status":"voter","version":"2.4.0","node_type":"voter"},` +
	`"n4":{"id":"n4","name":"n4","address":"127.0.1.4:8201","node_status":"alive","last_contact":"800ms",` +
	`"last_term":9,"last_index":819,"healthy":true,"stable_since":"2026-11-29T08:22:40Z",` +
	`"status":"non-voter","version":"2.4.0","node_type":"voter"}}}`

// fakeClock is a settable clock for token expiry tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func writeJWT(t *testing.T, path, jwt string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(jwt+"\n"), 0o600); err != nil {
		t.Fatalf("writing token file: %v", err)
	}
}

// newTokenAndClock writes jwtA to a fresh token file and returns its path
// and a settable clock for a test client.
func newTokenAndClock(t *testing.T) (string, *fakeClock) {
	t.Helper()
	tokenPath := filepath.Join(t.TempDir(), "token")
	writeJWT(t, tokenPath, jwtA)
	return tokenPath, &fakeClock{now: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)}
}

// newTestClient returns a client for b that logs in with jwtA from a fresh
// token file, the path of that file, and the clock the client uses.
func newTestClient(t *testing.T, b *fakeBao, mutate func(*Config)) (*reader, string, *fakeClock) {
	t.Helper()
	tokenPath, clock := newTokenAndClock(t)
	cfg := Config{
		Address:   b.srv.URL,
		CACertPEM: b.caPEM(),
		AuthMount: testMount,
		Role:      testRole,
		TokenPath: tokenPath,
		Timeout:   5 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := newReader(cfg, clock.Now)
	if err != nil {
		t.Fatalf("newReader: %v", err)
	}
	return c, tokenPath, clock
}

// unrelatedCAPEM is a self-signed CA that did not sign the test server's
// certificate.
func unrelatedCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(42),
		Subject:               pkix.Name{CommonName: "unrelated-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// errorTexts returns the message of err and of every error in its chain.
func errorTexts(err error) []string {
	if err == nil {
		return nil
	}
	texts := []string{err.Error()}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		texts = append(texts, errorTexts(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			texts = append(texts, errorTexts(e)...)
		}
	}
	return texts
}
