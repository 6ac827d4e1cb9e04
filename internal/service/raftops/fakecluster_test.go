package raftops

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

const (
	testNamespace = "ns"
	testHeadless  = "bao-internal"

	// Service-account tokens as kubelet would project them (shortened).
	jwtA = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6bnM6YmFvLWV4ZWN1dG9yIiwibiI6IkEifQ.c2lnLUE"
	jwtB = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImEifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6bnM6YmFvLWV4ZWN1dG9yIiwibiI6IkIifQ.c2lnLUI"

	notActiveText = "local node not active but active cluster node not found"
)

// stepDownCall is one request to sys/step-down that carried a valid token.
type stepDownCall struct {
	node   string
	at     time.Time
	status int
}

// fakeCluster is three (or more) httptest TLS servers that answer like the
// members of one OpenBao 2.4 Raft cluster for the endpoints the executor uses.
// They share one state: which node is active, the issued tokens, and a record
// of step-down calls.
type fakeCluster struct {
	t       *testing.T
	names   []string // node IDs = pod names
	addrs   []string // https://bao-N.bao-internal.ns.svc:8200
	servers []*httptest.Server
	// route maps a member's host:port to its server's listener address.
	route  map[string]string
	caFile string
	// serverIP is the loopback address of node i's listener, for tests that
	// address a member by IP.
	serverIP []string

	mu sync.Mutex
	// active is the index of the active node; -1 while none is.
	active int
	// electionDelay is how long after a step-down another node becomes active.
	electionDelay time.Duration
	// noElection is how many of the next step-downs elect nobody; the node
	// that stepped down becomes active again after reelectSelf (never if 0).
	noElection  int
	reelectSelf time.Duration
	// next picks the node that becomes active after node i stepped down.
	next func(i int) int
	// cooldown is the window in which a step-down to a node that already
	// stepped down is recorded as a violation.
	cooldown     time.Duration
	lastStepDown map[string]time.Time
	violations   []string
	// staleLeader makes node i name node j as the active node.
	staleLeader map[int]int

	acceptJWT    string
	leaseSeconds int
	issued       int
	valid        map[string]bool
	seenJWTs     []string
	roles        []string
	// loginStatus, when set, is the status every login answers with;
	// loginBody is its error text, with %JWT% replaced by the JWT sent.
	loginStatus int
	loginBody   string

	calls []stepDownCall
	// script answers the next step-down calls (after the token check) with
	// these statuses and scriptBody (%TOKEN% replaced by the token sent).
	script     []int
	scriptBody string
	// forbid answers 403 to step-down calls, whatever the token.
	forbid bool
	// autopilotStatus, when set, is the status autopilot state answers with,
	// with scriptBody as its error text.
	autopilotStatus int

	snapshot []byte
	requests map[string]int

	// peers is the Raft configuration in join order; every member starts as
	// a voter.
	peers []raftPeer
	// nonVoters is autopilot's list of permanent non-voters.
	nonVoters map[string]bool
	// due is when autopilot applies the voter flag a peer should have (not
	// on nonVoters: voter) if it differs; a peer without an entry waits.
	due map[string]time.Time
	// promoteDelay and demoteDelay are how long autopilot takes to apply a
	// promote or a demote.
	promoteDelay, demoteDelay time.Duration
	// autopilotStalled keeps autopilot from applying anything.
	autopilotStalled bool
	// membershipCalls records every promote, demote and remove-peer request
	// that carried a valid token.
	membershipCalls []membershipCall
	// forbidMembership answers 403 to promote, demote and remove-peer.
	forbidMembership bool
	// membershipScript answers the next membership requests (after the token
	// check) with these statuses and scriptBody.
	membershipScript []int
	// onConfigRead runs, under mu, before the n-th configuration read
	// (counting from 1) is answered.
	onConfigRead func(f *fakeCluster, n int)
}

// raftPeer is one server of the fake Raft configuration.
type raftPeer struct {
	id    string
	voter bool
}

// membershipCall is one promote, demote or remove-peer request.
type membershipCall struct {
	op     string // promote, demote, remove-peer
	node   string // the node that received the request
	id     string // the server_id sent
	status int
	// voter is whether the server_id was a voter when the request arrived.
	voter bool
}

func newFakeCluster(t *testing.T, members int) *fakeCluster {
	t.Helper()
	caCert, caKey := newTestCA(t)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	writeFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw})))
	serverCert := newServerCert(t, caCert, caKey, "*."+testHeadless+"."+testNamespace+".svc")

	f := &fakeCluster{
		t:             t,
		route:         map[string]string{},
		caFile:        caFile,
		active:        0,
		electionDelay: 50 * time.Millisecond,
		cooldown:      10 * time.Second,
		lastStepDown:  map[string]time.Time{},
		staleLeader:   map[int]int{},
		acceptJWT:     jwtA,
		leaseSeconds:  900,
		valid:         map[string]bool{},
		snapshot:      snapshotArchive(t, true),
		requests:      map[string]int{},
		nonVoters:     map[string]bool{},
		due:           map[string]time.Time{},
		promoteDelay:  40 * time.Millisecond,
		demoteDelay:   80 * time.Millisecond,
	}
	f.next = func(i int) int { return (i + 1) % len(f.names) }
	for i := range members {
		name := fmt.Sprintf("bao-%d", i)
		host := fmt.Sprintf("%s.%s.%s.svc:%d", name, testHeadless, testNamespace, workload.APIPort)
		f.names = append(f.names, name)
		f.addrs = append(f.addrs, "https://"+host)
		f.peers = append(f.peers, raftPeer{id: name, voter: true})

		mux := http.NewServeMux()
		f.routes(mux, i)
		srv := httptest.NewUnstartedServer(mux)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
		// Handshakes the tests make fail on purpose are not news.
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		t.Cleanup(srv.Close)
		f.servers = append(f.servers, srv)
		f.route[host] = srv.Listener.Addr().String()
		f.serverIP = append(f.serverIP, srv.Listener.Addr().String())
	}
	return f
}

// dialer routes member host names to the fake servers.
func (f *fakeCluster) dialer() openbao.Dialer { return routeDialer{route: f.route} }

type routeDialer struct{ route map[string]string }

func (d routeDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if to, ok := d.route[addr]; ok {
		addr = to
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// stop closes node i's server: connections to it are refused from now on.
func (f *fakeCluster) stop(i int) {
	f.servers[i].Close()
}

func (f *fakeCluster) set(fn func(f *fakeCluster)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeCluster) stepDownCalls() []stepDownCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stepDownCall(nil), f.calls...)
}

func (f *fakeCluster) acceptedStepDowns() int {
	n := 0
	for _, c := range f.stepDownCalls() {
		if c.status == http.StatusNoContent {
			n++
		}
	}
	return n
}

func (f *fakeCluster) cooldownViolations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

func (f *fakeCluster) jwts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seenJWTs...)
}

func (f *fakeCluster) logins() int { return len(f.jwts()) }

// tokens returns every client token issued so far.
func (f *fakeCluster) tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, f.issued)
	for i := 1; i <= f.issued; i++ {
		out = append(out, issuedToken(i))
	}
	return out
}

func (f *fakeCluster) requestCount(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[path]
}

// revokeAll invalidates every token issued so far, as expiry would.
func (f *fakeCluster) revokeAll() {
	f.set(func(f *fakeCluster) { f.valid = map[string]bool{} })
}

func (f *fakeCluster) activeName() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active < 0 {
		return ""
	}
	return f.names[f.active]
}

func issuedToken(i int) string { return fmt.Sprintf("s.executor-token-%04d-secret", i) }

func (f *fakeCluster) routes(mux *http.ServeMux, i int) {
	login := "/v1/auth/" + workload.AuthMount + "/login"
	mux.HandleFunc("PUT "+login, f.login)
	mux.HandleFunc("POST "+login, f.login)
	mux.HandleFunc("GET /v1/sys/leader", func(w http.ResponseWriter, r *http.Request) { f.sysLeader(w, i) })
	mux.HandleFunc("GET /v1/sys/health", func(w http.ResponseWriter, r *http.Request) { f.sysHealth(w, i) })
	mux.HandleFunc("PUT /v1/sys/step-down", func(w http.ResponseWriter, r *http.Request) { f.stepDown(w, r, i) })
	mux.HandleFunc("POST /v1/sys/step-down", func(w http.ResponseWriter, r *http.Request) { f.stepDown(w, r, i) })
	mux.HandleFunc("GET /v1/sys/storage/raft/autopilot/state", func(w http.ResponseWriter, r *http.Request) { f.autopilot(w, r, i) })
	mux.HandleFunc("GET /v1/sys/storage/raft/snapshot", func(w http.ResponseWriter, r *http.Request) { f.snapshotHandler(w, r, i) })
	mux.HandleFunc("GET /v1/sys/storage/raft/configuration", func(w http.ResponseWriter, r *http.Request) { f.raftConfiguration(w, r) })
	for _, op := range []string{"promote", "demote", "remove-peer"} {
		handler := func(w http.ResponseWriter, r *http.Request) { f.membership(w, r, i, op) }
		mux.HandleFunc("PUT /v1/sys/storage/raft/"+op, handler)
		mux.HandleFunc("POST /v1/sys/storage/raft/"+op, handler)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErrors(w http.ResponseWriter, status int, msgs ...string) {
	writeJSON(w, status, map[string]any{"errors": msgs})
}

func (f *fakeCluster) login(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Role string `json:"role"`
		JWT  string `json:"jwt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeErrors(w, http.StatusBadRequest, "cannot decode the body")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests["login"]++
	f.seenJWTs = append(f.seenJWTs, body.JWT)
	f.roles = append(f.roles, body.Role)
	if f.loginStatus != 0 {
		writeErrors(w, f.loginStatus, strings.ReplaceAll(f.loginBody, "%JWT%", body.JWT))
		return
	}
	if body.Role != workload.ExecutorRole || body.JWT != f.acceptJWT {
		writeErrors(w, http.StatusBadRequest, "error validating token: invalid role or signature")
		return
	}
	f.issued++
	token := issuedToken(f.issued)
	f.valid[token] = true
	writeJSON(w, http.StatusOK, map[string]any{"auth": map[string]any{
		"client_token":   token,
		"lease_duration": f.leaseSeconds,
		"renewable":      false,
		"policies":       []string{workload.ExecutorPolicy},
	}})
}

// authorized checks the token of r; the caller holds f.mu.
func (f *fakeCluster) authorized(w http.ResponseWriter, r *http.Request) bool {
	if !f.valid[r.Header.Get("X-Vault-Token")] {
		writeErrors(w, http.StatusForbidden, "permission denied")
		return false
	}
	return true
}

func (f *fakeCluster) leaderOf(i int) int {
	if j, ok := f.staleLeader[i]; ok {
		return j
	}
	return f.active
}

func (f *fakeCluster) sysLeader(w http.ResponseWriter, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests["leader"]++
	leader := f.leaderOf(i)
	body := map[string]any{
		"ha_enabled":             true,
		"is_self":                f.active == i,
		"active_time":            "0001-01-01T00:00:00Z",
		"leader_address":         "",
		"leader_cluster_address": "",
		"raft_committed_index":   120,
		"raft_applied_index":     120,
	}
	if leader >= 0 {
		body["leader_address"] = f.addrs[leader]
		body["leader_cluster_address"] = strings.Replace(f.addrs[leader], ":8200", ":8201", 1)
	}
	writeJSON(w, http.StatusOK, body)
}

func (f *fakeCluster) sysHealth(w http.ResponseWriter, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests["health"]++
	// The api client asks for 200 in every state (standbyok and friends).
	writeJSON(w, http.StatusOK, map[string]any{
		"initialized":  true,
		"sealed":       false,
		"standby":      f.active != i,
		"version":      "2.4.0",
		"cluster_name": "ns-bao",
		"cluster_id":   "7e0c5f7a-1111-2222-3333-444455556666",
	})
}

func (f *fakeCluster) stepDown(w http.ResponseWriter, r *http.Request, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests["step-down"]++
	if !f.authorized(w, r) {
		return
	}
	name := f.names[i]
	now := time.Now()
	if last, ok := f.lastStepDown[name]; ok && now.Sub(last) < f.cooldown {
		f.violations = append(f.violations, fmt.Sprintf("%s stepped down again %s after its previous step-down", name, now.Sub(last)))
	}
	answer := func(status int) { f.calls = append(f.calls, stepDownCall{node: name, at: now, status: status}) }
	if f.forbid {
		answer(http.StatusForbidden)
		writeErrors(w, http.StatusForbidden, "permission denied")
		return
	}
	if len(f.script) > 0 {
		status := f.script[0]
		f.script = f.script[1:]
		answer(status)
		writeErrors(w, status, strings.ReplaceAll(f.scriptBody, "%TOKEN%", r.Header.Get("X-Vault-Token")))
		return
	}
	if f.active != i {
		answer(http.StatusInternalServerError)
		writeErrors(w, http.StatusInternalServerError, notActiveText)
		return
	}
	answer(http.StatusNoContent)
	f.lastStepDown[name] = now
	f.active = -1
	if f.noElection > 0 {
		f.noElection--
		if f.reelectSelf > 0 {
			time.AfterFunc(f.reelectSelf, func() { f.becomeActive(i) })
		}
	} else {
		next := f.next(i)
		time.AfterFunc(f.electionDelay, func() { f.becomeActive(next) })
	}
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeCluster) becomeActive(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == -1 {
		f.active = i
	}
}

func (f *fakeCluster) autopilot(w http.ResponseWriter, r *http.Request, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests["autopilot"]++
	if !f.authorized(w, r) {
		return
	}
	if f.autopilotStatus != 0 {
		writeErrors(w, f.autopilotStatus, strings.ReplaceAll(f.scriptBody, "%TOKEN%", r.Header.Get("X-Vault-Token")))
		return
	}
	leader := ""
	if f.active >= 0 {
		leader = f.names[f.active]
	}
	servers := map[string]any{}
	for j, name := range f.names {
		status := "voter"
		if j == f.active {
			status = "leader"
		}
		servers[name] = map[string]any{
			"id": name, "name": name, "address": fmt.Sprintf("%s.%s.%s.svc:8201", name, testHeadless, testNamespace),
			"node_status": "alive", "last_contact": "1.5s", "last_term": 4, "last_index": 120 + j,
			"healthy": true, "stable_since": "2030-03-14T09:26:53Z", "status": status,
			"version": "2.4.0", "node_type": "voter",
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
		"healthy": true, "failure_tolerance": (len(f.names) - 1) / 2, "leader": leader,
		"voters": f.names, "servers": servers,
	}})
}

func (f *fakeCluster) snapshotHandler(w http.ResponseWriter, r *http.Request, i int) {
	f.mu.Lock()
	f.requests["snapshot"]++
	if !f.authorized(w, r) {
		f.mu.Unlock()
		return
	}
	if f.active != i {
		// What a 2.4 standby does: a redirect to the active node, no body.
		target := ""
		if f.active >= 0 {
			target = f.addrs[f.active] + "/v1/sys/storage/raft/snapshot"
		}
		f.mu.Unlock()
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	data := f.snapshot
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/gzip")
	w.WriteHeader(http.StatusOK)
	// Stream in chunks, as a large snapshot would arrive.
	for len(data) > 0 {
		n := min(len(data), 512)
		_, _ = w.Write(data[:n])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		data = data[n:]
	}
}

// addNonVoter adds a peer that joined as a permanent non-voter (retry_join
// with retry_join_as_non_voter), as green members and new scale-up members do.
func (f *fakeCluster) addNonVoter(id string) {
	f.peers = append(f.peers, raftPeer{id: id})
	f.nonVoters[id] = true
}

// settle applies, as autopilot would in its reconcile rounds, every voter
// flag that is due. A peer on the non-voter list should not vote, any other
// should. A demotion of the leader waits until it no longer leads: OpenBao
// 2.4 keeps a demoted leader a voter until it steps down. The caller holds mu.
func (f *fakeCluster) settle(now time.Time) {
	if f.autopilotStalled {
		return
	}
	for i := range f.peers {
		p := &f.peers[i]
		want := !f.nonVoters[p.id]
		at, ok := f.due[p.id]
		if p.voter == want || !ok || now.Before(at) {
			continue
		}
		if !want && f.active >= 0 && f.names[f.active] == p.id {
			continue
		}
		p.voter = want
		delete(f.due, p.id)
	}
}

// peerList returns the Raft configuration after settling it.
func (f *fakeCluster) peerList() []raftPeer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settle(time.Now())
	return append([]raftPeer(nil), f.peers...)
}

func (f *fakeCluster) membershipRequests() []membershipCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]membershipCall(nil), f.membershipCalls...)
}

func (f *fakeCluster) raftConfiguration(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests["configuration"]++
	if !f.authorized(w, r) {
		return
	}
	if f.onConfigRead != nil {
		f.onConfigRead(f, f.requests["configuration"])
	}
	f.settle(time.Now())
	leader := ""
	if f.active >= 0 {
		leader = f.names[f.active]
	}
	// Any member answers with the same configuration: a standby forwards the
	// read to the active node.
	servers := make([]map[string]any, 0, len(f.peers))
	for _, p := range f.peers {
		servers = append(servers, map[string]any{
			"node_id": p.id, "address": fmt.Sprintf("%s.%s.%s.svc:8201", p.id, testHeadless, testNamespace),
			"leader": p.id == leader, "protocol_version": "3", "voter": p.voter,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"config": map[string]any{"index": 0, "servers": servers}}})
}

// membership answers promote, demote and remove-peer as OpenBao 2.4 with
// autopilot does: promote and demote only change the non-voter list, and
// autopilot applies the voter flag later.
func (f *fakeCluster) membership(w http.ResponseWriter, r *http.Request, i int, op string) {
	var body struct {
		ServerID string `json:"server_id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[op]++
	if !f.authorized(w, r) {
		return
	}
	now := time.Now()
	f.settle(now)
	call := membershipCall{op: op, node: f.names[i], id: body.ServerID}
	if p := slices.IndexFunc(f.peers, func(p raftPeer) bool { return p.id == body.ServerID }); p >= 0 {
		call.voter = f.peers[p].voter
	}
	answer := func(status int, msgs ...string) {
		call.status = status
		f.membershipCalls = append(f.membershipCalls, call)
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		writeErrors(w, status, msgs...)
	}
	switch {
	case f.forbidMembership:
		answer(http.StatusForbidden, "permission denied")
	case len(f.membershipScript) > 0:
		status := f.membershipScript[0]
		f.membershipScript = f.membershipScript[1:]
		answer(status, strings.ReplaceAll(f.scriptBody, "%TOKEN%", r.Header.Get("X-Vault-Token")))
	case f.active != i:
		answer(http.StatusInternalServerError, notActiveText)
	case body.ServerID == "":
		answer(http.StatusBadRequest, "no server id provided")
	case op == "promote" && !f.nonVoters[body.ServerID]:
		answer(http.StatusInternalServerError, "server is not a non-voter")
	case op == "promote":
		delete(f.nonVoters, body.ServerID)
		f.due[body.ServerID] = now.Add(f.promoteDelay)
		answer(http.StatusNoContent)
	case op == "demote" && f.nonVoters[body.ServerID]:
		answer(http.StatusInternalServerError, "server is already a non-voter")
	case op == "demote":
		f.nonVoters[body.ServerID] = true
		f.due[body.ServerID] = now.Add(f.demoteDelay)
		answer(http.StatusNoContent)
	default: // remove-peer takes effect at once, and unknown IDs are no error
		f.peers = slices.DeleteFunc(f.peers, func(p raftPeer) bool { return p.id == body.ServerID })
		delete(f.nonVoters, body.ServerID)
		delete(f.due, body.ServerID)
		answer(http.StatusNoContent)
	}
}

// snapshotArchive builds a gzip tar like an OpenBao snapshot; complete says
// whether it ends with a non-empty SHA256SUMS.sealed.
func snapshotArchive(t *testing.T, complete bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	files := []struct{ name, body string }{
		{"meta.json", `{"ID":"4-120-1795939425","Index":120,"Term":4}`},
		{"state.bin", strings.Repeat("raft state ", 400)},
		{"SHA256SUMS", "0123abcd  meta.json\n4567ef01  state.bin\n"},
	}
	if complete {
		files = append(files, struct{ name, body string }{"SHA256SUMS.sealed", "sealed-sums"})
	}
	for _, fl := range files {
		if err := tw.WriteHeader(&tar.Header{Name: fl.name, Mode: 0o600, Size: int64(len(fl.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(fl.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func newTestCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "raftops test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// newServerCert issues a serving certificate for dnsNames only (no IP SANs, as
// baokeeper's own certificates), signed by the CA.
func newServerCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, dnsNames ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tokenFile writes a service-account token file holding jwt.
func tokenFile(t *testing.T, jwt string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	writeFile(t, path, jwt+"\n")
	return path
}

// newTestClient returns the platform's member client for the fake cluster,
// configured as the executor configures it, that logs in with the token in
// path.
func (f *fakeCluster) newTestClient(t *testing.T, path string, mutate ...func(*openbao.MemberConfig)) openbao.MemberClient {
	t.Helper()
	cfg := openbao.MemberConfig{
		CAFile:    f.caFile,
		AuthMount: workload.AuthMount,
		Role:      workload.ExecutorRole,
		TokenFile: path,
		Timeout:   3 * time.Second,
		Dialer:    f.dialer(),
	}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := openbao.NewMemberClient(cfg)
	if err != nil {
		t.Fatalf("NewMemberClient: %v", err)
	}
	return c
}

// ipAddr returns node i's address by its listener's IP and port.
func (f *fakeCluster) ipAddr(i int) string { return "https://" + f.serverIP[i] }
