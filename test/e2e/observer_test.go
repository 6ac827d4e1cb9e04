//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	baoapi "github.com/openbao/openbao/api/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// The observer is what every spec that changes a cluster runs around the change, to
// check the two promises a change must keep: no acknowledged write is lost, and
// leadership changes exactly as often as the spec expects. Its parts:
//
//   - a writer that writes a new KV entry every 20 ms through the current members in
//     turn, each with a value of its own, and remembers when each write was
//     acknowledged;
//   - a sys/leader poller per current member, all running at once every 100 ms, that
//     records leadership terms;
//   - a pod watch that records every pod UID of each member, when it was marked for
//     deletion and when it was Ready, and keeps the members' addresses current;
//   - a reader of the Raft configuration every 250 ms (the controller's read-only
//     identity), which records membership as Raft reports it.
//
// observe returns once the leader's term was seen, every member answered sys/leader,
// the Raft configuration was read and the writer ran 2 s (its rate then is what the
// window is held to): an election at the very start of the change is counted.
//
// The strict checks (expectNoLoss, observer_checks_test.go), each shown failing on a
// record that breaks it by TestObserverStrictChecks:
//
//   - no acknowledged write lost, read back by value through the leader and sampled
//     through every member;
//   - the longest time without an acknowledged write at most 4 s (one election and
//     the standbys' next look for the new active node, every 2.5 s), unless the
//     spec states a bound and why (allowGap);
//   - at least half the writer's rate before the change, over the window less the
//     gaps its counted elections explain (each election explains one gap; the count
//     itself is checked by expectElections), unless the spec states a share and why
//     (allowFloorShare);
//   - failed sys/leader reads only while that member restarts (from its pod's
//     deletion to its new pod Ready plus 5 s), at most 5 (or 1 % of its reads)
//     outside;
//   - expectClean also checks that Raft's last configuration is exactly the
//     members, each a voter.
//
// A spec uses it like this:
//
//	obs := tc.observe(ctx)                  // writer, pollers, watch and Raft reader running
//	obs.applyChange(ctx, func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4.1" })
//	tc.waitUpgraded(ctx, "2.4.1", timeout) // whatever tells the change is complete
//	obs.endWindow()
//	res := obs.finish(ctx)                  // 2 s more, then everything is read back
//	res.report("title")
//	res.expectClean(tc, 1, "2.4.1")         // or expectNoLoss and expectElections
//
// The change window runs from the moment the spec change is applied (applyChange, or
// beginWindow for a change made another way) to the moment the change is seen complete
// (endWindow). finish refuses to run without both marks.
//
// Membership may change during the window. A spec that scales the cluster calls
// tc.setMembers(memberNames(n)...) as it applies the change: the writer and the
// pollers follow the new set (a poller per member that joined, none for one that
// left), and a member that left is not read back through. It checks with expectNoLoss
// and expectElections, as expectClean expects every member replaced once.

const (
	// writeEvery is the writer's pause between two writes.
	writeEvery = 20 * time.Millisecond
	// ejectFor is how long the writer leaves out a member whose write failed: a
	// member that hangs (frozen, partitioned) would otherwise cost a 1 s attempt on
	// every round, which measures the writer, not the cluster.
	ejectFor = 5 * time.Second
	// pollLeaderEvery is each member poller's pause between two reads of sys/leader.
	pollLeaderEvery = 100 * time.Millisecond
	// windowFloorMin is the fewest acknowledged writes any change window must hold;
	// the liveness floor itself is livenessFloor's (observer_checks_test.go).
	windowFloorMin = 20
	// raftPollEvery is the pause between two reads of the Raft configuration.
	raftPollEvery = 250 * time.Millisecond
	// sampleSize is how many acknowledged writes are read back through each member,
	// besides all of them through the leader.
	sampleSize = 50
)

// ack is one acknowledged write.
type ack struct {
	key, value string
	// at is when the write was acknowledged, on the test's clock.
	at time.Time
}

// writer writes a new KV entry every writeEvery through the members in turn, as a
// client of the client Service would, and remembers every acknowledged write with its
// value. Each write carries a value of its own, its sequence number and a random part,
// so that a read-back that finds an older value, another write's value or nothing is
// caught, not only a missing key.
type writer struct {
	// prefix is the observer's own, so that two observers of one cluster (two specs
	// in a row) never write the same keys.
	prefix string
	failed atomic.Int64

	mu   sync.Mutex
	acks []ack
}

// run writes until ctx ends. clients returns a client for each current member whose
// address is known, asked again before every write so that the writer follows
// membership and address changes. A member that fails costs one attempt (1 s at
// most), and the next member is tried; it is then left out for ejectFor, as a
// client's load balancer would, unless every member is left out.
func (w *writer) run(ctx context.Context, clients func() []*baoapi.Client) {
	ejected := map[*baoapi.Client]time.Time{}
	for seq := 0; ctx.Err() == nil; seq++ {
		key := fmt.Sprintf("secret/data/%s-%06d", w.prefix, seq)
		value := fmt.Sprintf("%06d-%s", seq, randomHex(8))
		cl := clients()
		order := make([]*baoapi.Client, 0, len(cl))
		var later []*baoapi.Client
		for i := range cl {
			// Round robin, so a member that is down costs one short attempt, not every write.
			c := cl[(seq+i)%len(cl)]
			if time.Now().Before(ejected[c]) {
				later = append(later, c)
				continue
			}
			order = append(order, c)
		}
		for _, c := range append(order, later...) {
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := c.Logical().WriteWithContext(wctx, key, map[string]any{"data": map[string]any{"v": value}})
			cancel()
			if err == nil {
				w.mu.Lock()
				w.acks = append(w.acks, ack{key: key, value: value, at: time.Now()})
				w.mu.Unlock()
				break
			}
			if ctx.Err() != nil {
				break
			}
			w.failed.Add(1)
			ejected[c] = time.Now().Add(ejectFor)
		}
		select {
		case <-ctx.Done():
		case <-time.After(writeEvery):
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// leaderTerm is one leadership term. A term is identified by its leader and the
// active_time that leader reports in sys/leader: a member elected again gets a new
// active_time, so a re-election of the same member is a term of its own.
type leaderTerm struct {
	leader string
	// active is the term's active_time as its leader reported it; zero for a term only
	// standbys named (hearsay).
	active time.Time
	// firstSeen is when a poller first saw the term, on the test's clock.
	firstSeen time.Time
	// version is what the leader's sys/health reported right after the term was first
	// seen.
	version string
	// hearsay is true when no poll of the leader itself ever saw it lead: standbys
	// named it, but it was never seen answering as the active member.
	hearsay bool
}

type termKey struct {
	leader string
	active int64
}

// combineTerms merges what the pollers saw into one ordered list of terms: the terms
// leaders reported about themselves, and, for each leader that standbys named but that
// never reported a term itself (a term too short for its own poller), one hearsay
// term. Terms are ordered by when they were first seen.
func combineTerms(self []leaderTerm, namedBy map[string]time.Time) []leaderTerm {
	out := slices.Clone(self)
	for leader, at := range namedBy {
		if !slices.ContainsFunc(self, func(t leaderTerm) bool { return t.leader == leader }) {
			out = append(out, leaderTerm{leader: leader, firstSeen: at, version: "unknown", hearsay: true})
		}
	}
	slices.SortStableFunc(out, func(a, b leaderTerm) int { return a.firstSeen.Compare(b.firstSeen) })
	return out
}

// windowStats counts the acknowledged writes inside [start, end] and returns the
// longest time without an acknowledged write that overlaps the window: from the last
// acknowledgement before the window (or its start) to the first after it (or its end).
func windowStats(acks []ack, start, end time.Time) (in int, longest time.Duration) {
	for _, a := range acks {
		if a.at.After(start) && !a.at.After(end) {
			in++
		}
	}
	if gaps := windowGaps(acks, start, end); len(gaps) > 0 {
		longest = gaps[0]
	}
	return in, longest
}

// upgradeObserver watches a change from outside: see the top of this file.
type upgradeObserver struct {
	tc   *testCluster
	tok  string
	w    *writer
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu sync.Mutex
	// windowStart and windowEnd mark the change window.
	windowStart, windowEnd time.Time
	// terms are the terms leaders reported about themselves, in the order first
	// seen, termAt indexes them, and namedBy is when a standby first named each
	// leader.
	terms   []leaderTerm
	termAt  map[termKey]int
	namedBy map[string]time.Time
	// polls counts the answered sys/leader polls of each member.
	polls map[string]int
	uids  map[string][]types.UID
	// deletedAt and readyAt are when the pod watch first saw each pod UID marked for
	// deletion and Ready, as the test's clock reads them (not the server's
	// second-granular timestamps, and deletionTimestamp is deletion time plus grace).
	deletedAt map[types.UID]time.Time
	readyAt   map[types.UID]time.Time
	watchErr  error
	// failures are the sys/leader reads that failed; observedFrom is when the
	// observation started.
	failures     []pollFailure
	observedFrom time.Time
	// raftViews are the distinct Raft configurations read, in order, and
	// raftErrors the reads that failed (through a member that restarts, or during
	// an election).
	raftViews  []raftView
	raftErrors int
	// replaced is a span whose acknowledged writes a restore replaces by design
	// (allowReplaced): the read-back skips them and the spec checks them itself.
	replaced [2]time.Time
}

// raftView is one Raft configuration as a member reported it: the servers, each
// "name" or "name (non-voter)", sorted.
type raftView struct {
	at      time.Time
	servers []string
}

// raftServers lists the servers of a sys/storage/raft/configuration answer, each
// "name" or "name (non-voter)", sorted.
func raftServers(s *baoapi.Secret) []string {
	cfg, _ := s.Data["config"].(map[string]any)
	srvs, _ := cfg["servers"].([]any)
	var servers []string
	for _, srv := range srvs {
		e, _ := srv.(map[string]any)
		id, _ := e["node_id"].(string)
		if voter, _ := e["voter"].(bool); !voter {
			id += " (non-voter)"
		}
		servers = append(servers, id)
	}
	slices.Sort(servers)
	return servers
}

// pollRaft reads sys/storage/raft/configuration every raftPollEvery, through the
// current members in turn, with the controller's read-only identity, and records
// each configuration that differs from the last: membership as Raft reports it,
// beside the members the spec declares.
func (o *upgradeObserver) pollRaft(ctx context.Context, tok string) {
	for i := 0; ctx.Err() == nil; i++ {
		members := o.tc.memberList()
		m := members[i%len(members)]
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		s, err := o.tc.client(m, tok).Logical().ReadWithContext(rctx, "sys/storage/raft/configuration")
		cancel()
		switch {
		case ctx.Err() != nil:
		case err != nil || s == nil:
			o.mu.Lock()
			o.raftErrors++
			o.mu.Unlock()
		default:
			servers := raftServers(s)
			o.mu.Lock()
			if n := len(o.raftViews); n == 0 || !slices.Equal(o.raftViews[n-1].servers, servers) {
				o.raftViews = append(o.raftViews, raftView{at: time.Now(), servers: servers})
			}
			o.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(raftPollEvery):
		}
	}
}

// observe logs in as the app, then starts the pod watch, the leader pollers and the
// writer, and lets them run for 2 s.
func (tc *testCluster) observe(ctx context.Context) *upgradeObserver {
	GinkgoHelper()
	o := &upgradeObserver{tc: tc, w: &writer{prefix: "w-" + randomHex(3)}, observedFrom: time.Now(),
		termAt: map[termKey]int{}, namedBy: map[string]time.Time{}, polls: map[string]int{},
		uids: map[string][]types.UID{}, deletedAt: map[types.UID]time.Time{}, readyAt: map[types.UID]time.Time{}}
	jwt := token(ctx, tc.ns, appSA)
	Eventually(func(g Gomega) {
		tok, err := tc.login(ctx, jwt, "app")
		g.Expect(err).NotTo(HaveOccurred())
		o.tok = tok
	}, 30*time.Second, pollEvery).Should(Succeed())

	By("tracking the UID of every member's pod with a watch")
	pods, err := cs.CoreV1().Pods(tc.ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, p := range pods.Items {
		o.sawPod(&p)
	}
	wctx, stop := context.WithCancel(ctx)
	o.stop = stop
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, pods.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Pods(tc.ns).Watch(ctx, opts)
		},
	})
	Expect(err).NotTo(HaveOccurred())
	o.wg.Go(func() {
		defer GinkgoRecover()
		defer rw.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				if p, isPod := ev.Object.(*corev1.Pod); isPod {
					o.sawPod(p)
				} else if ev.Type == watch.Error {
					o.mu.Lock()
					o.watchErr = fmt.Errorf("pod watch: %v", ev.Object)
					o.mu.Unlock()
				}
			}
		}
	})

	By("watching leadership: every member's sys/leader polled at once, every 100 ms")
	o.wg.Go(func() {
		defer GinkgoRecover()
		o.followMembers(wctx)
	})

	By("following the Raft configuration, as Raft reports it, every 250 ms")
	var raftTok string
	Eventually(func(g Gomega) {
		tok, err := tc.login(ctx, operatorToken(ctx, tc.ns), workload.ControllerRole)
		g.Expect(err).NotTo(HaveOccurred())
		raftTok = tok
	}, 30*time.Second, pollEvery).Should(Succeed())
	o.wg.Go(func() {
		defer GinkgoRecover()
		o.pollRaft(wctx, raftTok)
	})

	By("writing a KV entry every 20 ms")
	writing := time.Now()
	o.wg.Go(func() {
		defer GinkgoRecover()
		o.w.run(wctx, o.writeClients())
	})
	By("waiting until the leader's term is seen from every member and the writer has run " + baselineSpan.String())
	Eventually(func(g Gomega) {
		o.mu.Lock()
		defer o.mu.Unlock()
		g.Expect(o.terms).NotTo(BeEmpty(), "no member has said it leads yet")
		for _, m := range tc.memberList() {
			g.Expect(o.polls[m]).To(BeNumerically(">", 0), "%s has not answered sys/leader yet", m)
		}
		g.Expect(o.raftViews).NotTo(BeEmpty(), "the Raft configuration has not been read yet")
		g.Expect(time.Since(writing)).To(BeNumerically(">=", baselineSpan))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	return o
}

// writeClients returns the writer's source of clients: one per current member with a
// known address, made again only when the member's address changes. It is called
// from the writer's goroutine only.
func (o *upgradeObserver) writeClients() func() []*baoapi.Client {
	type memberClient struct {
		ip string
		c  *baoapi.Client
	}
	byMember := map[string]memberClient{}
	return func() []*baoapi.Client {
		members := o.tc.memberList()
		out := make([]*baoapi.Client, 0, len(members))
		for _, m := range members {
			ip := o.tc.ip(m)
			if ip == "" {
				continue // a new member whose pod has no address yet
			}
			if mc, ok := byMember[m]; !ok || mc.ip != ip {
				byMember[m] = memberClient{ip: ip, c: o.tc.clientAt(m, ip, o.tok)}
			}
			out = append(out, byMember[m].c)
		}
		return out
	}
}

// followMembers runs one sys/leader poller per current member: it starts a poller for
// a member that joined the set and stops the poller of a member that left it.
func (o *upgradeObserver) followMembers(ctx context.Context) {
	running := map[string]context.CancelFunc{}
	defer func() {
		for _, cancel := range running {
			cancel()
		}
	}()
	for {
		current := o.tc.memberList()
		for _, m := range current {
			if _, ok := running[m]; ok {
				continue
			}
			pctx, cancel := context.WithCancel(ctx)
			running[m] = cancel
			GinkgoWriter.Printf("%s: polling sys/leader of %s\n", time.Now().Format(clock), m)
			o.wg.Go(func() {
				defer GinkgoRecover()
				o.pollLeader(pctx, m)
			})
		}
		for m, cancel := range running {
			if !slices.Contains(current, m) {
				GinkgoWriter.Printf("%s: %s left the members, its sys/leader poller stops\n", time.Now().Format(clock), m)
				cancel()
				delete(running, m)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pollLeaderEvery):
		}
	}
}

// pollLeader reads one member's sys/leader every pollLeaderEvery until ctx ends.
func (o *upgradeObserver) pollLeader(ctx context.Context, m string) {
	var (
		ip string
		c  *baoapi.Client
	)
	for ctx.Err() == nil {
		if cur := o.tc.ip(m); cur != "" && (c == nil || cur != ip) {
			ip, c = cur, o.tc.clientAt(m, cur, "")
		}
		if c != nil {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			l, err := c.Sys().LeaderWithContext(rctx)
			cancel()
			switch {
			case err == nil && l.LeaderAddress != "":
				o.sawLeader(ctx, m, c, l)
			case err != nil && ctx.Err() == nil:
				o.mu.Lock()
				o.failures = append(o.failures, pollFailure{member: m, at: time.Now(), err: err.Error()})
				o.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollLeaderEvery):
		}
	}
}

// sawLeader records one answer of member m's sys/leader; c is a client for m.
func (o *upgradeObserver) sawLeader(ctx context.Context, m string, c *baoapi.Client, l *baoapi.LeaderResponse) {
	now := time.Now()
	leader := leaderName(l.LeaderAddress)
	o.mu.Lock()
	o.polls[m]++
	if !l.IsSelf {
		if _, ok := o.namedBy[leader]; !ok {
			o.namedBy[leader] = now
		}
		o.mu.Unlock()
		return
	}
	k := termKey{leader: leader, active: l.ActiveTime.UnixNano()}
	if _, ok := o.termAt[k]; ok {
		o.mu.Unlock()
		return
	}
	i := len(o.terms)
	o.termAt[k] = i
	o.terms = append(o.terms, leaderTerm{leader: leader, active: l.ActiveTime, firstSeen: now, version: "unknown"})
	o.mu.Unlock()

	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if h, err := c.Sys().HealthWithContext(hctx); err == nil {
		o.mu.Lock()
		o.terms[i].version = h.Version
		o.mu.Unlock()
	}
}

func (o *upgradeObserver) sawPod(p *corev1.Pod) {
	if !o.tc.isMember(p.Name) {
		return
	}
	if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
		o.tc.setIP(p.Name, p.Status.PodIP)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !slices.Contains(o.uids[p.Name], p.UID) {
		o.uids[p.Name] = append(o.uids[p.Name], p.UID)
	}
	now := time.Now()
	if _, seen := o.deletedAt[p.UID]; !seen && p.DeletionTimestamp != nil {
		o.deletedAt[p.UID] = now
	}
	if _, seen := o.readyAt[p.UID]; !seen && p.DeletionTimestamp == nil && isReady(p) {
		o.readyAt[p.UID] = now
	}
}

// applyChange applies a change to the cluster's spec and marks the start of the
// change window the moment the API server accepted it.
func (o *upgradeObserver) applyChange(ctx context.Context, mutate func(*baov1.OpenBaoCluster)) {
	GinkgoHelper()
	o.tc.update(ctx, mutate)
	o.beginWindow()
}

// beginWindow marks the start of the change window now, for a change not applied
// with applyChange. An observer has one window: a spec that applies several changes
// in a row (scaling 3 -> 5 -> 3) keeps the start of the first.
func (o *upgradeObserver) beginWindow() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.windowStart.IsZero() {
		o.windowStart = time.Now()
	}
}

// endWindow marks the end of the change window now: call it the moment the change is
// seen complete.
func (o *upgradeObserver) endWindow() { o.endWindowAt(time.Now()) }

// endWindowAt marks the end of the change window at t.
func (o *upgradeObserver) endWindowAt(t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.windowEnd = t
}

// leaderLog lists the leader of every term seen so far, in order.
func (o *upgradeObserver) leaderLog() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, t := range combineTerms(o.terms, o.namedBy) {
		out = append(out, t.leader)
	}
	return out
}

func (o *upgradeObserver) firstUID(member string) types.UID {
	GinkgoHelper()
	o.mu.Lock()
	defer o.mu.Unlock()
	Expect(o.uids[member]).NotTo(BeEmpty(), member)
	return o.uids[member][0]
}

// upgradeResult is what an observer saw.
type upgradeResult struct {
	// window is the change window's length; inWindow the writes acknowledged inside
	// it, floor the fewest it had to hold (livenessFloor) at rate, the writes per
	// second before it, and longest the longest time without an acknowledged write
	// that overlaps it, allowed up to gapBound.
	window   time.Duration
	inWindow int
	floor    int
	rate     float64
	longest  time.Duration
	gapSpan  [2]time.Time
	gapBound time.Duration
	// pollFailures counts the failed sys/leader reads; obs is the record the strict
	// checks judge (strictProblems).
	pollFailures int
	obs          observation
	// raftViews are the Raft configurations seen, in order (membership as Raft
	// reports it), raftErrors the reads of it that failed.
	raftViews  []raftView
	raftErrors int
	// acked is every acknowledged write of the observation (2 s before the window to
	// 2 s after it), failed the write attempts that failed.
	acked  int
	failed int64
	// readVia is the member every acknowledged write was read back through (the
	// leader); lost counts those whose value was missing or not the one written, and
	// unreadable those that could not be read at all. problems names the first few.
	readVia    string
	lost       int
	unreadable int
	problems   []string
	// replaced counts the acknowledged writes of the observer's replaced span,
	// which the read-back skipped.
	replaced int
	// sampled is how many writes were read back through each member and compared;
	// sampleBad counts those missing, wrong or unreadable through a member that is
	// still in the cluster.
	sampled   map[string]int
	sampleBad int
	// terms are the leadership terms seen, in order; elections is len(terms) - 1;
	// leaders and versions are each term's leader and the version it reported.
	terms     []leaderTerm
	elections int
	leaders   []string
	versions  []string
	polls     map[string]int
	uids      map[string][]types.UID
	// deletedAt and readyAt are the pod timeline (see upgradeObserver).
	deletedAt map[types.UID]time.Time
	readyAt   map[types.UID]time.Time
	watchErr  error
	// leadership is what the members logged about leadership while observed
	// (leadershipLog): the evidence a failed election count prints.
	leadership []raftLogLine
}

// finish lets the writer run 2 s more, stops everything and reads every acknowledged
// write back: all of them through the leader, compared with what was written, and a
// sample through each current member (a standby forwards the read to the leader).
func (o *upgradeObserver) finish(ctx context.Context) upgradeResult {
	GinkgoHelper()
	o.mu.Lock()
	start, end := o.windowStart, o.windowEnd
	o.mu.Unlock()
	Expect(start.IsZero()).To(BeFalse(), "the spec never marked the start of its change window (applyChange or beginWindow)")
	Expect(end.IsZero()).To(BeFalse(), "the spec never marked the end of its change window (endWindow)")
	Expect(end.After(start)).To(BeTrue(), "the change window ends before it starts")
	time.Sleep(2 * time.Second)
	o.stop()
	o.wg.Wait()
	o.w.mu.Lock()
	acks := slices.Clone(o.w.acks)
	o.w.mu.Unlock()

	r := upgradeResult{window: end.Sub(start), acked: len(acks), failed: o.w.failed.Load(), sampled: map[string]int{}, gapBound: defaultGapBound}
	r.inWindow, r.longest = windowStats(acks, start, end)
	r.gapSpan[0], r.gapSpan[1] = longestGapSpan(acks, start, end)
	o.readBack(ctx, acks, &r)

	o.mu.Lock()
	defer o.mu.Unlock()
	r.terms = combineTerms(o.terms, o.namedBy)
	r.elections = len(r.terms) - 1
	for _, t := range r.terms {
		r.leaders, r.versions = append(r.leaders, t.leader), append(r.versions, t.version)
	}
	r.polls, r.uids = maps.Clone(o.polls), o.uids
	r.deletedAt, r.readyAt, r.watchErr = maps.Clone(o.deletedAt), maps.Clone(o.readyAt), o.watchErr
	r.floor, r.rate, _ = livenessFloor(acks, start, end, r.elections, floorShare)
	r.pollFailures = len(o.failures)
	r.raftViews, r.raftErrors = slices.Clone(o.raftViews), o.raftErrors
	down := map[string][][2]time.Time{}
	for m, uids := range o.uids {
		down[m] = downIntervals(uids, o.deletedAt, o.readyAt, o.observedFrom)
	}
	r.obs = observation{acks: acks, start: start, end: end, elections: r.elections, gapBound: r.gapBound, floorShare: floorShare,
		failures: slices.Clone(o.failures), polls: maps.Clone(o.polls), down: down}
	if len(r.terms) > 0 {
		r.obs.firstTermSeen = r.terms[0].firstSeen
	}
	r.leadership = leadershipLog(o.tc.ns, o.observedFrom, time.Now())
	return r
}

// allowDown adds a span in which member may not answer sys/leader, for a spec that
// takes it down in a way the pod watch does not see (its process killed, its
// container restarted in the same pod); to zero means until the end. why says what.
func (r upgradeResult) allowDown(member string, from, to time.Time, why string) upgradeResult {
	GinkgoWriter.Printf("this spec expects %s not to answer from %s: %s\n", member, from.Format(clock), why)
	down := maps.Clone(r.obs.down)
	down[member] = append(slices.Clone(down[member]), [2]time.Time{from, to})
	r.obs.down = down
	return r
}

// allowFloorShare lowers the share of the writer's rate before the change that the
// window must hold, for a spec whose change itself slows every write; why says how.
func (r upgradeResult) allowFloorShare(share float64, why string) upgradeResult {
	GinkgoWriter.Printf("this spec holds its window to %.0f%% of the rate before it: %s\n", share*100, why)
	r.obs.floorShare = share
	r.floor, r.rate, _ = livenessFloor(r.obs.acks, r.obs.start, r.obs.end, r.elections, share)
	return r
}

// allowGap raises the longest write gap this result may hold, for a spec whose
// fault explains a longer one; why says what does.
func (r upgradeResult) allowGap(d time.Duration, why string) upgradeResult {
	GinkgoWriter.Printf("this spec allows write gaps up to %s: %s\n", d, why)
	r.gapBound, r.obs.gapBound = d, d
	return r
}

// allowReplaced marks the writes acknowledged from from to to as replaced by a
// restore, by design: the read-back skips them (the spec checks them itself,
// missing or present as the restore implies); every other acknowledged write must
// still read back by value. why says what replaces them.
func (o *upgradeObserver) allowReplaced(from, to time.Time, why string) {
	GinkgoWriter.Printf("this spec expects the writes acknowledged from %s to %s to be replaced: %s\n", from.Format(clock), to.Format(clock), why)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.replaced = [2]time.Time{from, to}
}

// readBack reads every acknowledged write through the leader and a sample through
// each current member, and fills the read-back part of r.
func (o *upgradeObserver) readBack(ctx context.Context, acks []ack, r *upgradeResult) {
	GinkgoHelper()
	By(fmt.Sprintf("reading all %d acknowledged writes back through the leader, and %d through each member", len(acks), min(len(acks), sampleSize)))
	r.readVia = o.currentLeader(ctx)
	leader := o.tc.client(r.readVia, o.tok)
	note := func(s string) {
		if len(r.problems) < 10 {
			r.problems = append(r.problems, s)
		}
	}
	o.mu.Lock()
	replaced := o.replaced
	o.mu.Unlock()
	if !replaced[0].IsZero() {
		kept := acks[:0:0]
		for _, a := range acks {
			if a.at.Before(replaced[0]) || a.at.After(replaced[1]) {
				kept = append(kept, a)
			}
		}
		r.replaced = len(acks) - len(kept)
		acks = kept
	}
	for _, a := range acks {
		var got string
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			if got, err = readValue(ctx, leader, a.key); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
			if m := o.currentLeader(ctx); m != r.readVia {
				r.readVia, leader = m, o.tc.client(m, o.tok)
			}
		}
		switch {
		case err != nil:
			r.unreadable++
			note(fmt.Sprintf("%s (acknowledged at %s) unreadable through %s: %v", a.key, a.at.Format(clock), r.readVia, err))
		case got != a.value:
			r.lost++
			note(fmt.Sprintf("%s (acknowledged at %s): wrote %q, read %q through %s", a.key, a.at.Format(clock), a.value, got, r.readVia))
		}
	}

	sample := sampleOf(acks, sampleSize)
	for _, m := range o.tc.memberList() {
		c := o.tc.client(m, o.tok)
	reads:
		for _, a := range sample {
			var got string
			var err error
			for attempt := 0; attempt < 3; attempt++ {
				if got, err = readValue(ctx, c, a.key); err == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			switch {
			case err != nil && !o.tc.isMember(m):
				break reads // removed meanwhile: not a failure of the read-back
			case err != nil:
				r.sampleBad++
				note(fmt.Sprintf("%s unreadable through %s: %v", a.key, m, err))
			case got != a.value:
				r.sampleBad++
				note(fmt.Sprintf("%s: wrote %q, read %q through %s", a.key, a.value, got, m))
			}
			r.sampled[m]++
		}
	}
}

// clock is how the report prints instants.
const clock = "15:04:05.000"

// readValue reads a writer's KV entry and returns its value, "" when there is none.
func readValue(ctx context.Context, c *baoapi.Client, key string) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := c.Logical().ReadWithContext(rctx, key)
	if err != nil || s == nil {
		return "", err
	}
	data, _ := s.Data["data"].(map[string]any)
	v, _ := data["v"].(string)
	return v, nil
}

// sampleOf picks up to n acknowledged writes spread evenly over acks, the first and
// the last included.
func sampleOf(acks []ack, n int) []ack {
	if len(acks) <= n {
		return acks
	}
	out := make([]ack, 0, n)
	for i := range n {
		out = append(out, acks[i*(len(acks)-1)/(n-1)])
	}
	return out
}

// currentLeader is the member that says it is active, asked of every current member.
func (o *upgradeObserver) currentLeader(ctx context.Context) string {
	GinkgoHelper()
	var leader string
	Eventually(func(g Gomega) {
		for _, m := range o.tc.memberList() {
			l, err := o.tc.client(m, "").Sys().LeaderWithContext(ctx)
			if err == nil && l.IsSelf {
				leader = m
				return
			}
		}
		g.Expect(leader).NotTo(BeEmpty(), "no member says it is active")
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	return leader
}

// termsString describes the terms for a report or a failure message.
func (r upgradeResult) termsString() string {
	var parts []string
	for _, t := range r.terms {
		if t.hearsay {
			parts = append(parts, fmt.Sprintf("%s (only named by standbys, first at %s)", t.leader, t.firstSeen.Format(clock)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s on %s active since %s", t.leader, t.version, t.active.Local().Format(clock)))
	}
	return strings.Join(parts, "; ")
}

func (r upgradeResult) report(title string, extra ...string) {
	replaced := map[string]int{}
	for m, u := range r.uids {
		replaced[m] = len(u) - 1
	}
	var sampled []string
	for _, m := range slices.Sorted(maps.Keys(r.sampled)) {
		sampled = append(sampled, fmt.Sprintf("%s %d", m, r.sampled[m]))
	}
	s := fmt.Sprintf("window %s, acked in window %d (floor %d at %.0f%% of %.1f/s before it, outside election gaps; %d in all), longest gap in window %s (%s to %s, bound %s), failed attempts %d, "+
		"lost %d and unreadable %d of %d read back through %s, sample through each member (%s) bad %d, "+
		"elections %d (terms: %s), leaders %v on %v, sys/leader answers per member %v, failed sys/leader reads %d, replacements %v, "+
		"Raft membership %s (failed reads %d)",
		r.window.Round(100*time.Millisecond), r.inWindow, r.floor, r.obs.floorShare*100, r.rate, r.acked, r.longest.Round(time.Millisecond), r.gapSpan[0].Format(clock), r.gapSpan[1].Format(clock), r.gapBound, r.failed,
		r.lost, r.unreadable, r.acked, r.readVia, strings.Join(sampled, ", "), r.sampleBad,
		r.elections, r.termsString(), r.leaders, r.versions, r.polls, r.pollFailures, replaced, r.membershipString(), r.raftErrors)
	if len(extra) > 0 {
		s += ", " + strings.Join(extra, ", ")
	}
	AddReportEntry(title, s)
	GinkgoWriter.Println(title + ": " + s)
}

// expectNoLoss checks that no acknowledged write was lost and that the writer was not
// starved during the change window.
func (r upgradeResult) expectNoLoss() {
	GinkgoHelper()
	Expect(r.watchErr).NotTo(HaveOccurred())
	Expect(r.unreadable).To(BeZero(), "every acknowledged write must be read back: %v", r.problems)
	Expect(r.lost).To(BeZero(), "no acknowledged write may be lost: %v", r.problems)
	Expect(r.sampleBad).To(BeZero(), "every member must serve the acknowledged writes: %v", r.problems)
	Expect(strictProblems(r.obs)).To(BeEmpty(), "the change window broke the observer's strict checks")
}

// expectElections checks that exactly n elections happened (terms after the first)
// and, when version is set, that each new leader reported version.
func (r upgradeResult) expectElections(n int, version string) {
	GinkgoHelper()
	Expect(r.elections).To(Equal(n), "exactly %d election(s), terms seen: %s; pods: %s; what the members logged about leadership: %s", n, r.termsString(), r.podTimeline(), r.leadershipString())
	if version == "" {
		return
	}
	for _, t := range r.terms[1:] {
		Expect(t.hearsay).To(BeFalse(), "new leader %s was never seen answering as the active member", t.leader)
		Expect(t.version).To(Equal(version), "new leader %s runs the target version", t.leader)
	}
}

// podTimeline lists, in time order, when each member's pod was seen deleted and
// seen Ready: with the leadership log, what a failed election count is judged by.
func (r upgradeResult) podTimeline() string {
	type event struct {
		at   time.Time
		what string
	}
	var events []event
	for m, uids := range r.uids {
		for i, u := range uids {
			if t, ok := r.readyAt[u]; ok {
				events = append(events, event{t, fmt.Sprintf("%s#%d Ready", m, i+1)})
			}
			if t, ok := r.deletedAt[u]; ok {
				events = append(events, event{t, fmt.Sprintf("%s#%d deleted", m, i+1)})
			}
		}
	}
	if len(events) == 0 {
		return "nothing seen"
	}
	slices.SortFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
	parts := make([]string, len(events))
	for i, e := range events {
		parts[i] = e.at.Format(clock) + " " + e.what
	}
	return strings.Join(parts, ", ")
}

// leadershipString lists the members' leadership log lines, the last 40 at most.
func (r upgradeResult) leadershipString() string {
	lines := r.leadership
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	if len(lines) == 0 {
		return "nothing"
	}
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = l.String()
	}
	return strings.Join(parts, " | ")
}

// membershipString lists the Raft configurations seen, in order.
func (r upgradeResult) membershipString() string {
	var parts []string
	for _, v := range r.raftViews {
		parts = append(parts, fmt.Sprintf("%s at %s", v.servers, v.at.Format(clock)))
	}
	return strings.Join(parts, " -> ")
}

// expectRaftMembership checks membership as Raft reported it: the last
// configuration seen lists exactly members, each a voter.
func (r upgradeResult) expectRaftMembership(members []string) {
	GinkgoHelper()
	Expect(r.raftViews).NotTo(BeEmpty(), "the Raft configuration was never read")
	Expect(r.raftViews[len(r.raftViews)-1].servers).To(ConsistOf(members),
		"at the end, Raft's configuration is exactly the members, each a voter: %s", r.membershipString())
}

// expectClean checks the promises of a rolling upgrade: no acknowledged write lost and
// the writer never starved (expectNoLoss), exactly elections elections, each onto a
// member that already runs version, and every member's pod replaced exactly once.
func (r upgradeResult) expectClean(tc *testCluster, elections int, version string) {
	GinkgoHelper()
	r.expectNoLoss()
	r.expectElections(elections, version)
	r.expectRaftMembership(tc.memberList())
	for _, m := range tc.memberList() {
		Expect(r.uids[m]).To(HaveLen(2), "%s is replaced exactly once: pod UIDs %v", m, r.uids[m])
	}
}
