//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/baokeeper/baokeeper/internal/observability/rules"
)

// A real Prometheus (Debian's, the one .ci/run installs for promtool) runs next to the
// rig for the whole run, set up as a user's would be: it finds the operator's and the
// members' pods from the Kubernetes API (serveDiscovery), scrapes the operator over HTTPS with a
// service account's token that holds baokeeper-metrics-reader (honor_labels, as
// config/prometheus/servicemonitor.yaml), scrapes the members' own endpoint, and
// evaluates the shipped alerting rules unchanged. The only test-only settings are the
// scrape and evaluation intervals (2 s), which shorten how soon a series or an alert
// is seen, never an alert's `for`.
//
// Specs that run a scenario a dashboard panel or an alert is for record its window
// (recordScenario); the Serial spec at the end of the run asks Prometheus, for each
// window, what the dashboard's queries returned and which alerts were pending or
// firing.

const (
	// promAddr is where Prometheus listens: the loopback of the suite's own network
	// namespace, so that two runs never meet.
	promAddr = "127.0.0.1:19090"
	// promInterval is the scrape and rule evaluation interval.
	promInterval = 2 * time.Second
	// promNS holds the service account Prometheus scrapes the operator with.
	promNS = "e2e-prometheus"
	// scenariosFile (in the rig's directory) collects the recorded windows of every
	// Ginkgo process, one JSON object per line.
	scenariosFile = "scenarios.jsonl"
)

// scenarioKind names what a window shows, for the dashboard and the alerts.
type scenarioKind string

const (
	scenarioRolling        scenarioKind = "rolling upgrade"
	scenarioBlueGreen      scenarioKind = "blue-green upgrade"
	scenarioScaling        scenarioKind = "scaling"
	scenarioFailed         scenarioKind = "failed upgrade"
	scenarioRollback       scenarioKind = "rollback"
	scenarioBreakGlass     scenarioKind = "break-glass"
	scenarioSnapshot       scenarioKind = "snapshot"
	scenarioSnapshotFailed scenarioKind = "failed snapshot"
	scenarioDrillFailed    scenarioKind = "failed restore drill"
)

// healthyScenarios are the kinds through which no alert may fire.
var healthyScenarios = []scenarioKind{scenarioRolling, scenarioBlueGreen, scenarioScaling}

// scenario is one recorded window of one cluster.
type scenario struct {
	Kind      scenarioKind `json:"kind"`
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Spec      string       `json:"spec"`
	Start     time.Time    `json:"start"`
	End       time.Time    `json:"end"`
}

// recordScenario appends the window [start, end] of the cluster in namespace to the
// run's record. Lines are short and appended with O_APPEND, so the processes' lines
// never interleave.
func recordScenario(kind scenarioKind, namespace string, start, end time.Time) {
	GinkgoHelper()
	b, err := json.Marshal(scenario{Kind: kind, Namespace: namespace, Name: name, Spec: CurrentSpecReport().LeafNodeText, Start: start, End: end})
	Expect(err).NotTo(HaveOccurred())
	f, err := os.OpenFile(filepath.Join(rigDir, scenariosFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	Expect(err).NotTo(HaveOccurred())
}

// recordWindow records the observer's change window as a scenario.
func (r upgradeResult) recordWindow(kind scenarioKind, namespace string) {
	GinkgoHelper()
	recordScenario(kind, namespace, r.obs.start, r.obs.end)
}

func readScenarios() []scenario {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(rigDir, scenariosFile))
	if os.IsNotExist(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	var out []scenario
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s scenario
		Expect(json.Unmarshal([]byte(l), &s)).To(Succeed(), l)
		out = append(out, s)
	}
	return out
}

// promCmd is the Prometheus server of process 1, stopDiscovery stops the service
// discovery it asks.
var (
	promCmd       *exec.Cmd
	stopDiscovery func()
)

// startPrometheus sets up the scraping identity, writes the configuration and the rule
// file into the rig's directory and starts Prometheus; it returns once Prometheus is
// ready. Process 1 calls it once the operator is installed.
func startPrometheus(ctx context.Context) {
	GinkgoHelper()
	dir := filepath.Join(rigDir, "prometheus")
	Expect(os.MkdirAll(filepath.Join(dir, "data"), 0o700)).To(Succeed())
	bin, err := exec.LookPath("prometheus")
	Expect(err).NotTo(HaveOccurred(), "prometheus is missing: apt-get install prometheus (.ci/run does)")

	err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: promNS}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	err = k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: promNS}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	err = k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "baokeeper-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: promNS}},
	})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	// Long enough for the whole run (the suite's timeout is 40 min).
	exp := int64(2 * 60 * 60)
	tok, err := cs.CoreV1().ServiceAccounts(promNS).CreateToken(ctx, "prometheus", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "token"), []byte(tok.Status.Token), 0o600)).To(Succeed())

	pr, err := rules.Load(filepath.Join(root, "config", "prometheus", "baokeeper-rules.yaml"))
	Expect(err).NotTo(HaveOccurred())
	rf, err := pr.RuleFile()
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), rf, 0o600)).To(Succeed())

	discovery, stop := serveDiscovery()
	stopDiscovery = stop
	cfg, err := yaml.Marshal(promConfig(dir, discovery))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "prometheus.yml"), cfg, 0o600)).To(Succeed())

	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	Expect(err).NotTo(HaveOccurred())
	promCmd = exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr,
		"--storage.tsdb.retention.time=2h", "--log.level=warn")
	promCmd.Stdout, promCmd.Stderr = logf, logf
	promCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	Expect(promCmd.Start()).To(Succeed())
	Eventually(func() error {
		resp, err := http.Get("http://" + promAddr + "/-/ready")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("not ready: %s", resp.Status)
		}
		return nil
	}, time.Minute, 250*time.Millisecond).Should(Succeed(), "Prometheus did not get ready; see %s", filepath.Join(dir, "prometheus.log"))
}

// stopPrometheus stops process 1's Prometheus, if it runs.
func stopPrometheus() {
	if stopDiscovery != nil {
		defer stopDiscovery()
	}
	if promCmd == nil || promCmd.Process == nil {
		return
	}
	_ = syscall.Kill(-promCmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = promCmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-promCmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// promConfig is Prometheus' configuration: the operator's metrics port over HTTPS with
// a bearer token, the members' sys/metrics (served without a token: baokeeper
// configures unauthenticated_metrics_access on the listener). Debian's Prometheus is
// built without Kubernetes service discovery, so the targets come from HTTP service
// discovery that serveDiscovery answers from the Kubernetes API, the same pods a
// kubernetes_sd_configs pod role with a keep rule on the name label would give.
func promConfig(dir, discovery string) map[string]any {
	sd := func(app string) []map[string]any {
		return []map[string]any{{"url": discovery + "/targets/" + app, "refresh_interval": promInterval.String()}}
	}
	interval := promInterval.String()
	return map[string]any{
		"global":     map[string]any{"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
		"rule_files": []string{filepath.Join(dir, "rules.yaml")},
		"scrape_configs": []map[string]any{
			{
				// The rules find the operator's series by a job with "baokeeper" in its name.
				"job_name":        "baokeeper",
				"honor_labels":    true,
				"scheme":          "https",
				"tls_config":      map[string]any{"insecure_skip_verify": true},
				"authorization":   map[string]any{"credentials_file": filepath.Join(dir, "token")},
				"http_sd_configs": sd("baokeeper"),
			},
			{
				"job_name":        "openbao",
				"scheme":          "https",
				"metrics_path":    "/v1/sys/metrics",
				"params":          map[string]any{"format": []string{"prometheus"}},
				"tls_config":      map[string]any{"insecure_skip_verify": true},
				"http_sd_configs": sd("openbao"),
			},
		},
	}
}

// targetGroup is one entry of HTTP service discovery's answer.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// serveDiscovery answers Prometheus' HTTP service discovery on the loopback:
// /targets/baokeeper lists the operator's running pods at their port named metrics,
// /targets/openbao every running member pod of every namespace at the API port. It
// returns the URL and a function that stops it.
func serveDiscovery() (string, func()) {
	GinkgoHelper()
	ports := map[string]struct {
		namespace string
		port      string
	}{"baokeeper": {operatorNS, metricsPort}, "openbao": {"", "8200"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /targets/{app}", func(w http.ResponseWriter, r *http.Request) {
		app := r.PathValue("app")
		p, ok := ports[app]
		if !ok {
			http.NotFound(w, r)
			return
		}
		pods, err := cs.CoreV1().Pods(p.namespace).List(r.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + app})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		groups := []targetGroup{}
		for _, pod := range pods.Items {
			if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
				continue
			}
			labels := map[string]string{"pod": pod.Name}
			if app == "openbao" {
				labels["namespace"], labels["cluster"] = pod.Namespace, pod.Labels["baokeeper.dev/cluster"]
			}
			port := p.port
			for _, c := range pod.Spec.Containers {
				for _, cp := range c.Ports {
					if cp.Name == "metrics" && app == "baokeeper" {
						port = strconv.Itoa(int(cp.ContainerPort))
					}
				}
			}
			groups = append(groups, targetGroup{Targets: []string{net.JoinHostPort(pod.Status.PodIP, port)}, Labels: labels})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(groups)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }
}

// dashboardQuery is one query of the shipped dashboard.
type dashboardQuery struct {
	panel, expr string
}

// dashboardQueries reads every query of config/grafana/baokeeper-dashboard.json, the
// file users import.
func dashboardQueries() []dashboardQuery {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(root, "config", "grafana", "baokeeper-dashboard.json"))
	Expect(err).NotTo(HaveOccurred())
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	Expect(json.Unmarshal(b, &d)).To(Succeed())
	var out []dashboardQuery
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			if t.Expr != "" {
				out = append(out, dashboardQuery{panel: p.Title, expr: t.Expr})
			}
		}
	}
	return out
}

// queryScenario is the scenario a dashboard query is for: where it must return
// series. Queries not named here describe any cluster at any time, and are checked
// in every window.
func queryScenario(expr string) (scenarioKind, bool) {
	for _, m := range []struct {
		metric string
		kind   scenarioKind
	}{
		{"baokeeper_upgrade_rollbacks_total", scenarioRollback},
		{"baokeeper_upgrade_failures_total", scenarioFailed},
		{"baokeeper_upgrade_failed", scenarioFailed},
		{"baokeeper_snapshot_duration_seconds", scenarioSnapshot},
		{"baokeeper_snapshot_last_taken_timestamp_seconds", scenarioSnapshot},
		{"baokeeper_upgrade_", scenarioRolling},
		{"baokeeper_leader_transfers_total", scenarioRolling},
	} {
		if strings.Contains(expr, m.metric) {
			return m.kind, true
		}
	}
	return "", false
}

// grafanaVars fills the dashboard's variables for one window, as Grafana would with
// the cluster picked and the window as the time range.
func grafanaVars(expr string, s scenario, rng time.Duration) string {
	return strings.NewReplacer(
		"$namespace", regexp.QuoteMeta(s.Namespace),
		"$cluster", regexp.QuoteMeta(s.Name),
		"$__range", fmt.Sprintf("%ds", int(rng.Seconds())),
		"$__rate_interval", fmt.Sprintf("%ds", int(4*promInterval.Seconds())),
	).Replace(expr)
}

// promSeen asks Prometheus for expr over [from, to] at the scrape interval and returns
// how many series it returned.
func promSeen(ctx context.Context, api promv1.API, expr string, from, to time.Time) int {
	GinkgoHelper()
	v, warnings, _, err := api.QueryRange(ctx, expr, promv1.Range{Start: from, End: to, Step: promInterval})
	Expect(err).NotTo(HaveOccurred(), "query %s", expr)
	Expect(warnings).To(BeEmpty(), "query %s", expr)
	m, ok := v.(model.Matrix)
	Expect(ok).To(BeTrue(), "query %s returned a %s, not a matrix", expr, v.Type())
	return len(m)
}

// alertStates returns, for each alert of the cluster s names, the states it was seen
// in over [from, to]: "pending", "firing".
func alertStates(ctx context.Context, api promv1.API, s scenario, from, to time.Time) map[string]map[string]bool {
	GinkgoHelper()
	v, _, _, err := api.QueryRange(ctx, fmt.Sprintf(`ALERTS{namespace=%q, name=%q}`, s.Namespace, s.Name), promv1.Range{Start: from, End: to, Step: promInterval})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]map[string]bool{}
	for _, ss := range v.(model.Matrix) {
		a, st := string(ss.Metric["alertname"]), string(ss.Metric["alertstate"])
		if out[a] == nil {
			out[a] = map[string]bool{}
		}
		out[a][st] = true
	}
	return out
}

func statesString(m map[string]map[string]bool) string {
	var parts []string
	for a, st := range m {
		var s []string
		for k := range st {
			s = append(s, k)
		}
		sort.Strings(s)
		parts = append(parts, a+" ("+strings.Join(s, ", ")+")")
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// alertScenarios are the alerts a scenario of the run shows, with the state each
// must reach: "firing" where the scenario lasts longer than the alert's `for`,
// "pending" (its expression held) where it does not.
var alertScenarios = map[string]struct {
	kind  scenarioKind
	state string
}{
	"BaokeeperBreakGlassActive": {scenarioBreakGlass, "firing"},
	"BaokeeperSnapshotFailed":   {scenarioSnapshotFailed, "firing"},
	// No for: it fires at the first evaluation after the failed drill.
	"BaokeeperRestoreDrillFailed": {scenarioDrillFailed, "firing"},
	// for: 1m; the spec fixes the cause about 40 s after the failure.
	"BaokeeperUpgradeFailed": {scenarioFailed, "pending"},
}

// alertsNotInRun are the alerts no scenario of the run shows, and why; promtool's unit
// tests (config/prometheus/baokeeper-rules.test.yaml) fire each on synthetic series.
var alertsNotInRun = map[string]string{
	"BaokeeperUpgradeStuck":        "a step that runs 5 min past its timeout without failing is a bug the operator has no way to produce on purpose",
	"BaokeeperFailureToleranceLow": "for: 15m, longer than any spec",
	"BaokeeperNoLeader":            "for: 2m: the specs that take the leader away (a frozen majority) end in break-glass within a minute",
	"BaokeeperQuorumLost":          "no spec loses a majority at rest yet (issue 39: the recovery that would end such a spec is not built)",
	"BaokeeperVersionSkew":         "for: 15m with no upgrade running, longer than any spec",
	"BaokeeperSnapshotStale":       "needs a snapshot older than a day",
	"BaokeeperRestoreDrillStale":   "needs a drill that passed over 8 days ago",
	"BaokeeperCertificateExpiring": "for: 10m and a certificate within a week of expiry; the renewal spec renews long before that",
	"BaokeeperReconcileErrors":     "for: 15m of reconcile errors, longer than any spec",
	"BaokeeperOperatorDown":        "for: 5m without the operator; the specs that kill it see it back within seconds",
}

// failureAlerts mean that something failed: through a healthy upgrade they may not
// even be pending.
var failureAlerts = []string{"BaokeeperBreakGlassActive", "BaokeeperSnapshotFailed", "BaokeeperUpgradeFailed", "BaokeeperRestoreDrillFailed"}

// Serial: it reads what Prometheus kept of the whole run, on process 1, after every
// other spec.
var _ = Describe("The dashboard and the alerts against a real Prometheus", Serial, SpecPriority(-1000), func() {
	It("returned series for every dashboard query in the scenario it is for, fired every alert in its scenario, and none through a healthy upgrade", func(ctx SpecContext) {
		Expect(promCmd).NotTo(BeNil(), "Prometheus runs on process 1, which runs Serial specs")
		pc, err := promapi.NewClient(promapi.Config{Address: "http://" + promAddr})
		Expect(err).NotTo(HaveOccurred())
		api := promv1.NewAPI(pc)

		By("checking that Prometheus scraped the operator and every member it found")
		targets, err := api.Targets(ctx)
		Expect(err).NotTo(HaveOccurred())
		jobs := map[string]int{}
		for _, t := range targets.Active {
			if t.Health == promv1.HealthGood {
				jobs[string(t.Labels["job"])]++
			}
		}
		Expect(jobs["baokeeper"]).To(BeNumerically(">=", 1), "the operator is scraped over HTTPS with the token: %v", targets.Active)
		Expect(promSeen(ctx, api, `up{job="openbao"} == 1`, time.Now().Add(-30*time.Minute), time.Now())).To(BeNumerically(">", 0),
			"the members' own metrics were scraped")

		scenarios := readScenarios()
		kinds := map[scenarioKind][]scenario{}
		for _, s := range scenarios {
			kinds[s.Kind] = append(kinds[s.Kind], s)
		}
		suiteCfg, _ := GinkgoConfiguration()
		full := len(suiteCfg.FocusStrings) == 0 && len(suiteCfg.SkipStrings) == 0 && len(suiteCfg.FocusFiles) == 0
		for _, k := range []scenarioKind{scenarioRolling, scenarioBlueGreen, scenarioScaling, scenarioFailed, scenarioRollback, scenarioBreakGlass, scenarioSnapshot, scenarioSnapshotFailed, scenarioDrillFailed} {
			if full {
				Expect(kinds[k]).NotTo(BeEmpty(), "no spec recorded a %s window in a full run", k)
			} else if len(kinds[k]) == 0 {
				GinkgoWriter.Printf("no %s window in this focused run: its checks are left out\n", k)
			}
		}

		By("asking for every dashboard query in the windows it is for")
		// The histograms and counters are observed when a step or an upgrade ends and
		// seen at the next scrape: each window is read until two intervals after it.
		margin := 3 * promInterval
		var problems []string
		for _, q := range dashboardQueries() {
			want, specific := queryScenario(q.expr)
			for _, s := range scenarios {
				if specific && s.Kind != want {
					continue
				}
				to := s.End.Add(margin)
				expr := grafanaVars(q.expr, s, to.Sub(s.Start))
				var n int
				if strings.Contains(q.expr, "$__range") {
					n = promSeen(ctx, api, expr, to, to)
				} else {
					n = promSeen(ctx, api, expr, s.Start, to)
				}
				if n == 0 {
					problems = append(problems, fmt.Sprintf("panel %q returned no series in the %s window of %s/%s (%q): %s", q.panel, s.Kind, s.Namespace, s.Name, s.Spec, expr))
				}
			}
		}

		By("asking which alerts were pending or firing in each window")
		table := []string{"| window | spec | alerts (states seen) |", "|---|---|---|"}
		for _, s := range scenarios {
			states := alertStates(ctx, api, s, s.Start, s.End.Add(margin))
			table = append(table, fmt.Sprintf("| %s %s/%s | %s | %s |", s.Kind, s.Namespace, s.Name, s.Spec, statesString(states)))
			for _, h := range healthyScenarios {
				if s.Kind != h {
					continue
				}
				for a, st := range states {
					if st["firing"] {
						problems = append(problems, fmt.Sprintf("%s fired through a healthy %s of %s/%s (%q)", a, s.Kind, s.Namespace, s.Name, s.Spec))
					} else if slices.Contains(failureAlerts, a) {
						problems = append(problems, fmt.Sprintf("%s was pending through a healthy %s of %s/%s (%q)", a, s.Kind, s.Namespace, s.Name, s.Spec))
					}
				}
			}
		}
		for a, want := range alertScenarios {
			for _, s := range kinds[want.kind] {
				st := alertStates(ctx, api, s, s.Start, s.End.Add(margin))[a]
				if !st[want.state] && !(want.state == "pending" && st["firing"]) {
					problems = append(problems, fmt.Sprintf("%s was never %s in the %s window of %s/%s (%q)", a, want.state, s.Kind, s.Namespace, s.Name, s.Spec))
				}
			}
		}
		AddReportEntry("alerts per window", strings.Join(table, "\n"))
		GinkgoWriter.Println(strings.Join(table, "\n"))

		By("checking that every shipped alert is either shown by a scenario or said why not")
		pr, err := rules.Load(filepath.Join(root, "config", "prometheus", "baokeeper-rules.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, r := range pr.Alerts() {
			_, shown := alertScenarios[r.Alert]
			if !shown && alertsNotInRun[r.Alert] == "" {
				problems = append(problems, fmt.Sprintf("alert %s is neither shown by a scenario of the run (alertScenarios) nor said why not (alertsNotInRun)", r.Alert))
			}
		}
		Expect(problems).To(BeEmpty())
	})
})
