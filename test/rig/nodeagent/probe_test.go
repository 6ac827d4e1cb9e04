package nodeagent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTimingDefaults(t *testing.T) {
	g := NewWithT(t)
	got := timingOf(&corev1.Probe{})
	g.Expect(got).To(Equal(probeTiming{period: 10 * time.Second, timeout: time.Second, successThreshold: 1, failureThreshold: 3}),
		"zero fields get the kubelet defaults")
	got = timingOf(&corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 3, SuccessThreshold: 2, FailureThreshold: 4})
	g.Expect(got).To(Equal(probeTiming{initialDelay: 5 * time.Second, period: 2 * time.Second, timeout: 3 * time.Second, successThreshold: 2, failureThreshold: 4}),
		"set fields are kept")
}

func TestProbeState(t *testing.T) {
	type obs struct {
		ok          bool
		wantResult  bool
		wantChanged bool
	}
	cases := []struct {
		name, reason     string
		success, failure int32
		initial          bool
		steps            []obs
	}{
		{"readiness default", "readiness starts failed, one success makes it ready, three failures unready", 1, 3, false, []obs{
			{true, true, true}, {false, true, false}, {false, true, false}, {false, false, true}, {true, true, true},
		}},
		{"success threshold", "two consecutive successes are needed; a failure resets the count", 2, 1, false, []obs{
			{true, false, false}, {false, false, false}, {true, false, false}, {true, true, true},
		}},
		{"liveness", "liveness starts healthy and fails after failureThreshold in a row", 1, 2, true, []obs{
			{false, true, false}, {true, true, false}, {false, true, false}, {false, false, true},
		}},
		{"failure threshold one", "failureThreshold 1 flips at once", 1, 1, true, []obs{
			{false, false, true}, {false, false, false}, {true, true, true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newProbeState(probeTiming{successThreshold: tc.success, failureThreshold: tc.failure}, tc.initial)
			for i, o := range tc.steps {
				res, changed := s.Observe(o.ok)
				g.Expect(res).To(Equal(o.wantResult), "step %d result: %s", i, tc.reason)
				g.Expect(changed).To(Equal(o.wantChanged), "step %d changed: %s", i, tc.reason)
			}
		})
	}
}

func TestProbeURL(t *testing.T) {
	cases := []struct {
		name, reason string
		action       corev1.HTTPGetAction
		want         string
	}{
		{"query kept", "the health path's query string must survive",
			corev1.HTTPGetAction{Path: "/v1/sys/health?standbyok=true&perfstandbyok=true", Scheme: corev1.URISchemeHTTPS},
			"https://10.250.0.10:8200/v1/sys/health?standbyok=true&perfstandbyok=true"},
		{"default scheme", "an empty scheme is http", corev1.HTTPGetAction{Path: "/healthz"}, "http://10.250.0.10:8200/healthz"},
		{"no slash", "a path without / gets one", corev1.HTTPGetAction{Path: "ready"}, "http://10.250.0.10:8200/ready"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(probeURL(&tc.action, "10.250.0.10", 8200).String()).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestResolvePort(t *testing.T) {
	ports := []corev1.ContainerPort{{Name: "https", ContainerPort: 8200}}
	cases := []struct {
		name, reason string
		port         intstr.IntOrString
		want         int
		wantErr      bool
	}{
		{"number", "a number is used as is", intstr.FromInt32(8201), 8201, false},
		{"name", "a name is looked up in the container ports", intstr.FromString("https"), 8200, false},
		{"numeric string", "a numeric string is a number", intstr.FromString("9000"), 9000, false},
		{"unknown name", "an unknown name is an error", intstr.FromString("grpc"), 0, true},
		{"zero", "port 0 is invalid", intstr.FromInt32(0), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := resolvePort(tc.port, ports)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred(), tc.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tc.reason)
			g.Expect(got).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestRunProbe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.WriteHeader(code)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) })
	plain := httptest.NewServer(mux)
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	hostPort := func(s *httptest.Server) (string, int32) {
		h, p, _ := net.SplitHostPort(s.Listener.Addr().String())
		n, _ := strconv.Atoi(p)
		return h, int32(n)
	}
	h, p := hostPort(plain)
	_, tp := hostPort(tlsSrv)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	_, cp, _ := net.SplitHostPort(closed.Addr().String())
	_ = closed.Close()
	closedPort, _ := strconv.Atoi(cp)

	httpGet := func(scheme corev1.URIScheme, port int32, path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: scheme, Port: intstr.FromInt32(port), Path: path}}
	}
	target := probeTarget{podIP: h, exec: func(_ context.Context, cmd []string) (int, string, error) {
		if cmd[0] == "ok" {
			return 0, "", nil
		}
		return 1, "boom", nil
	}}
	cases := []struct {
		name, reason string
		h            corev1.ProbeHandler
		want         bool
	}{
		{"http 200", "2xx is success", httpGet(corev1.URISchemeHTTP, p, "/status?code=200"), true},
		{"http 399", "3xx below 400 is success", httpGet(corev1.URISchemeHTTP, p, "/status?code=304"), true},
		{"http 429", "a standby OpenBao answering 429 is not ready unless the query says so", httpGet(corev1.URISchemeHTTP, p, "/status?code=429"), false},
		{"http 503", "5xx is failure", httpGet(corev1.URISchemeHTTP, p, "/status?code=503"), false},
		{"https insecure", "HTTPS probes skip certificate checks like the kubelet", httpGet(corev1.URISchemeHTTPS, tp, "/status?code=200"), true},
		{"timeout", "a response slower than the timeout is a failure", httpGet(corev1.URISchemeHTTP, p, "/slow"), false},
		{"tcp open", "a listening port is success", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(p)}}, true},
		{"tcp closed", "a closed port is failure", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(closedPort)}}, false},
		{"exec ok", "exit 0 is success", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"ok"}}}, true},
		{"exec fail", "non-zero exit is failure", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"no"}}}, false},
		{"grpc", "gRPC probes are not supported and fail", corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: p}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ok, msg := runProbe(context.Background(), tc.h, target, 500*time.Millisecond)
			g.Expect(ok).To(Equal(tc.want), "%s (message %q)", tc.reason, msg)
			if !ok {
				g.Expect(msg).NotTo(BeEmpty(), "a failure says why")
			}
		})
	}
}
