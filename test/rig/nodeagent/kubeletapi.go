package nodeagent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	utilexec "k8s.io/utils/exec"
)

// KubeletAPIConfig configures the kubelet API the agent serves for all of its nodes
// (exec and container logs), so that the API server can proxy `kubectl exec` and
// `kubectl logs` to it. There is one HTTPS listener for every node: the API server
// names the pod, and the agent finds the node that runs it.
type KubeletAPIConfig struct {
	// Addr is the listen address: an IPv4 address of 127.0.0.0/8 and a port, e.g.
	// "127.0.0.1:10250" (port 0 picks a free one). Every node advertises the IP as its
	// first InternalIP and the port as status.daemonEndpoints.kubeletEndpoint.Port.
	// Empty: no kubelet API is served.
	Addr string
	// CertFile and KeyFile are the PEM serving certificate (valid for Addr's IP) and key.
	CertFile, KeyFile string
	// ClientCAFile is the PEM CA that every client certificate must be signed by (the
	// rig CA, which signed the API server's kubelet client certificate). Clients
	// without such a certificate fail the TLS handshake.
	ClientCAFile string
}

// enabled reports whether the kubelet API is to be served.
func (c KubeletAPIConfig) enabled() bool { return c.Addr != "" }

func (c KubeletAPIConfig) validate() error {
	if !c.enabled() {
		return nil
	}
	var errs []error
	if _, err := parseKubeletAddr(c.Addr); err != nil {
		errs = append(errs, err)
	}
	if c.CertFile == "" || c.KeyFile == "" || c.ClientCAFile == "" {
		errs = append(errs, errors.New("KubeletAPI.CertFile, KeyFile and ClientCAFile must be set when KubeletAPI.Addr is"))
	}
	return errors.Join(errs...)
}

// parseKubeletAddr checks that addr is an IPv4 loopback address (127.0.0.0/8) and a
// port. The kubelet API runs commands in containers: it must never listen on an
// address that other machines could reach.
func parseKubeletAddr(addr string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("KubeletAPI.Addr %q must be an IP address and a port like 127.0.0.1:10250: %w", addr, err)
	}
	if !ap.Addr().Is4() || !ap.Addr().IsLoopback() {
		return netip.AddrPort{}, fmt.Errorf("KubeletAPI.Addr %q must be on 127.0.0.0/8: the kubelet API is served on loopback only", addr)
	}
	return ap, nil
}

// kubeletEndpoint is where nodes tell the API server to reach their kubelet API; the
// zero value means that none is served.
type kubeletEndpoint struct {
	ip   string
	port int32
}

// kubeletServer is the running kubelet API.
type kubeletServer struct {
	srv      *http.Server
	listener net.Listener
	endpoint kubeletEndpoint
}

// listenKubeletAPI loads the certificates and opens the TLS listener (mutual TLS,
// client certificates of ClientCAFile only). Serving starts with serve, once the nodes
// (and so the providers that handle requests) exist.
func listenKubeletAPI(cfg KubeletAPIConfig) (*kubeletServer, error) {
	ap, err := parseKubeletAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := kubeletTLSConfig(cfg)
	if err != nil {
		return nil, err
	}
	l, err := tls.Listen("tcp", ap.String(), tlsCfg)
	if err != nil {
		return nil, fmt.Errorf("failed to listen on %s for the kubelet API: %w (is another rig or kubelet using the port?)", ap, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return &kubeletServer{
		listener: l,
		endpoint: kubeletEndpoint{ip: ap.Addr().String(), port: int32(port)},
	}, nil
}

// advertised is the endpoint nodes advertise: none for a nil server.
func (s *kubeletServer) advertised() kubeletEndpoint {
	if s == nil {
		return kubeletEndpoint{}
	}
	return s.endpoint
}

// kubeletTLSConfig is the serving side of the kubelet API's mutual TLS.
func kubeletTLSConfig(cfg KubeletAPIConfig) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("failed to load the kubelet API certificate %s and key %s: %w (check Config.KubeletAPI)", cfg.CertFile, cfg.KeyFile, err)
	}
	caPEM, err := os.ReadFile(cfg.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read the kubelet API client CA: %w (check Config.KubeletAPI.ClientCAFile)", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no PEM certificate in the kubelet API client CA %s: check Config.KubeletAPI.ClientCAFile", cfg.ClientCAFile)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		// HTTP/1.1 only: exec upgrades the connection to SPDY or WebSocket.
		NextProtos: []string{"http/1.1"},
	}, nil
}

// serve serves VK's kubelet routes (node/api) for exec and container logs with the
// handlers of h until close. ctx (with VK's logger) is the base of every request's
// context, so exec sessions end when it does.
func (s *kubeletServer) serve(ctx context.Context, h kubeletHandlers) {
	handler := api.PodHandler(api.PodHandlerConfig{
		RunInContainer:        h.RunInContainer,
		GetContainerLogs:      h.GetContainerLogs,
		StreamIdleTimeout:     4 * time.Hour, // a long snapshot restore may be quiet on stdout
		StreamCreationTimeout: 30 * time.Second,
	}, false)
	s.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		if err := s.srv.Serve(s.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			vklog.G(ctx).WithError(err).Error("Kubelet API server stopped")
		}
	}()
}

// close stops accepting connections and closes the open ones. Exec sessions (hijacked
// connections) end with the context given to serve.
func (s *kubeletServer) close() {
	if s.srv != nil {
		_ = s.srv.Close()
		return
	}
	_ = s.listener.Close()
}

// kubeletHandlers are the kubelet API calls the agent answers.
type kubeletHandlers interface {
	RunInContainer(ctx context.Context, namespace, pod, container string, cmd []string, attach api.AttachIO) error
	GetContainerLogs(ctx context.Context, namespace, pod, container string, opts api.ContainerLogOpts) (io.ReadCloser, error)
}

// exitError reports a command's exit code to VK: nil for 0, else an error that
// implements k8s.io/utils/exec.ExitError (VK type-asserts it, so it must not be
// wrapped), which VK sends as a NonZeroExitCode status and kubectl exec exits with.
func exitError(code int) error {
	if code == 0 {
		return nil
	}
	return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
}

// agentKubelet dispatches kubelet API calls to the provider (node) that runs the pod.
type agentKubelet struct{ a *agent }

func (k agentKubelet) provider(namespace, pod string) (*provider, error) {
	for _, p := range k.a.nodeProviders() {
		if p.get(namespace, pod) != nil {
			return p, nil
		}
	}
	return nil, errdefs.NotFoundf("pod %s/%s is not running on any node of this agent", namespace, pod)
}

// RunInContainer implements kubeletHandlers.
func (k agentKubelet) RunInContainer(ctx context.Context, namespace, pod, container string, cmd []string, attach api.AttachIO) error {
	p, err := k.provider(namespace, pod)
	if err != nil {
		return err
	}
	return p.RunInContainer(ctx, namespace, pod, container, cmd, attach)
}

// GetContainerLogs implements kubeletHandlers.
func (k agentKubelet) GetContainerLogs(ctx context.Context, namespace, pod, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	p, err := k.provider(namespace, pod)
	if err != nil {
		return nil, err
	}
	return p.GetContainerLogs(ctx, namespace, pod, container, opts)
}
