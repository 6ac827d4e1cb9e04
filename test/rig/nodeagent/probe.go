package nodeagent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeTiming is a probe's timing and thresholds with the kubelet's defaults applied.
type probeTiming struct {
	initialDelay     time.Duration
	period           time.Duration
	timeout          time.Duration
	successThreshold int32
	failureThreshold int32
}

// timingOf applies the kubelet's defaults (period 10 s, timeout 1 s, thresholds 1 and
// 3) to the zero fields of p. The API server normally defaults them already.
func timingOf(p *corev1.Probe) probeTiming {
	t := probeTiming{
		initialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		period:           time.Duration(p.PeriodSeconds) * time.Second,
		timeout:          time.Duration(p.TimeoutSeconds) * time.Second,
		successThreshold: p.SuccessThreshold,
		failureThreshold: p.FailureThreshold,
	}
	if t.period <= 0 {
		t.period = 10 * time.Second
	}
	if t.timeout <= 0 {
		t.timeout = time.Second
	}
	if t.successThreshold <= 0 {
		t.successThreshold = 1
	}
	if t.failureThreshold <= 0 {
		t.failureThreshold = 3
	}
	return t
}

// probeState turns single probe outcomes into a result the way the kubelet does: the
// result flips to success after successThreshold consecutive successes and to failure
// after failureThreshold consecutive failures. Readiness starts as failure, liveness
// as success.
type probeState struct {
	successThreshold, failureThreshold int32
	successes, failures                int32
	result                             bool
}

func newProbeState(t probeTiming, initial bool) *probeState {
	return &probeState{successThreshold: t.successThreshold, failureThreshold: t.failureThreshold, result: initial}
}

// Observe records one probe outcome and returns the result and whether it changed.
func (s *probeState) Observe(ok bool) (result, changed bool) {
	prev := s.result
	if ok {
		s.successes++
		s.failures = 0
		if s.successes >= s.successThreshold {
			s.result = true
		}
	} else {
		s.failures++
		s.successes = 0
		if s.failures >= s.failureThreshold {
			s.result = false
		}
	}
	return s.result, s.result != prev
}

// probeTarget is what a probe runs against.
type probeTarget struct {
	podIP string
	ports []corev1.ContainerPort
	// exec runs a command in the container's mount namespace with a timeout and returns
	// its exit code and output.
	exec func(ctx context.Context, command []string) (int, string, error)
}

// resolvePort turns a probe port (number or container port name) into a number.
func resolvePort(p intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	for _, cp := range ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}

// probeURL builds the URL of an httpGet action like the kubelet: the path keeps its
// query string.
func probeURL(a *corev1.HTTPGetAction, host string, port int) *url.URL {
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	p := a.Path
	if p != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	u, err := url.Parse(p)
	if err != nil {
		u = &url.URL{Path: p}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// httpProbeTransport is the HTTP transport of probes and hooks: no keep-alive and no
// certificate checks, like the kubelet's.
var httpProbeTransport = &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probe certificates either
	DisableKeepAlives: true,
	Proxy:             nil,
}

// runProbe runs one probe attempt and returns whether it succeeded and a message when
// it did not.
func runProbe(ctx context.Context, h corev1.ProbeHandler, t probeTarget, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.HTTPGet != nil:
		port, err := resolvePort(h.HTTPGet.Port, t.ports)
		if err != nil {
			return false, err.Error()
		}
		host := h.HTTPGet.Host
		if host == "" {
			host = t.podIP
		}
		return httpProbe(ctx, h.HTTPGet, probeURL(h.HTTPGet, host, port))
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, t.ports)
		if err != nil {
			return false, err.Error()
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = t.podIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		_ = conn.Close()
		return true, ""
	case h.Exec != nil:
		if t.exec == nil {
			return false, "exec probes are not available for this container"
		}
		code, out, err := t.exec(ctx, h.Exec.Command)
		if err != nil {
			return false, err.Error()
		}
		if code != 0 {
			return false, fmt.Sprintf("command exited with %d: %s", code, strings.TrimSpace(out))
		}
		return true, ""
	case h.GRPC != nil:
		return false, "gRPC probes are not supported by the rig node agent"
	default:
		return false, "probe has no handler"
	}
}

func httpProbe(ctx context.Context, a *corev1.HTTPGetAction, u *url.URL) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/1.37")
	req.Header.Set("Accept", "*/*")
	for _, hd := range a.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Set(hd.Name, hd.Value)
	}
	client := &http.Client{
		Transport: httpProbeTransport,
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}

// probeLoop runs probe p until ctx ends: the first attempt after initialDelaySeconds,
// then one every periodSeconds. onChange gets every change of the result.
func probeLoop(ctx context.Context, p *corev1.Probe, initial bool, t probeTarget, onChange func(result bool, msg string)) {
	tm := timingOf(p)
	st := newProbeState(tm, initial)
	timer := time.NewTimer(tm.initialDelay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		ok, msg := runProbe(ctx, p.ProbeHandler, t, tm.timeout)
		if ctx.Err() != nil {
			return
		}
		if res, changed := st.Observe(ok); changed {
			onChange(res, msg)
		}
		timer.Reset(tm.period)
	}
}
