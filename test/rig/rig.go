package rig

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"

	"github.com/baokeeper/baokeeper/test/rig/nodeagent"
)

// Fixed addresses inside the rig's network namespace.
const (
	// APIServerIP is the API server's address on the namespace's loopback device.
	APIServerIP = "10.250.0.1"
	// PodIPPrefix is the prefix of pod addresses; the agent adds each to lo.
	PodIPPrefix = "10.250.0."
	// ReadyFile is written into the rig directory once everything is up.
	ReadyFile = "ready"
	// KubeconfigFile is the admin kubeconfig in the rig directory.
	KubeconfigFile = "kubeconfig"
	// KubeletIP and KubeletPort are where the node agent serves the kubelet API (exec,
	// logs) inside the namespace; the nodes advertise them and the API server dials them.
	KubeletIP   = "127.0.0.1"
	KubeletPort = 10250
)

// ControlPlane is a running control plane.
type ControlPlane struct{ cp *controlPlane }

// Kubeconfig is the path of the admin kubeconfig.
func (c *ControlPlane) Kubeconfig() string { return c.cp.kubeconfig }

// APIServerPort is the API server's port.
func (c *ControlPlane) APIServerPort() int { return apiPort }

// NodeAgentConfig is the node agent's configuration for this control plane, as `rig up`
// runs it: pods on PodIPPrefix, the nodes' NodeIP and the API server at APIServerIP,
// and the kubelet API on KubeletIP:KubeletPort with the rig's kubelet certificate,
// accepting client certificates of the rig CA only (the API server's).
func (c *ControlPlane) NodeAgentConfig(nodes []string, stateDir string, imageMap map[string]string, log logr.Logger) nodeagent.Config {
	return nodeagent.Config{
		Kubeconfig:    c.cp.kubeconfig,
		Nodes:         nodes,
		StateDir:      stateDir,
		PodIPPrefix:   PodIPPrefix,
		NodeIP:        APIServerIP,
		ImageMap:      imageMap,
		APIServerHost: APIServerIP,
		APIServerPort: fmt.Sprint(apiPort),
		KubeletAPI: nodeagent.KubeletAPIConfig{
			Addr:     net.JoinHostPort(KubeletIP, fmt.Sprint(KubeletPort)),
			CertFile: c.cp.pki.KubeletCert, KeyFile: c.cp.pki.KubeletKey, ClientCAFile: c.cp.pki.CACert,
		},
		Log: log,
	}
}

// Stop stops the daemons in reverse start order.
func (c *ControlPlane) Stop() { c.cp.stop() }

// StartControlPlane writes the PKI and kubeconfig under dir and starts etcd, the API
// server, the controller manager and the scheduler from binDir, each waited for. It
// must run inside the rig's network namespace.
func StartControlPlane(ctx context.Context, binDir, dir string) (*ControlPlane, error) {
	if err := RequireInsideNetns(); err != nil {
		return nil, err
	}
	cp, err := startControlPlane(ctx, binDir, dir, net.ParseIP(APIServerIP), net.ParseIP(KubeletIP))
	if err != nil {
		return nil, err
	}
	return &ControlPlane{cp: cp}, nil
}

// LoadImageMap reads "image=path" lines (blank lines and # comments ignored); relative
// paths are taken from base.
func LoadImageMap(path, base string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the image map %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		img, bin, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want image=path, got %q", path, n, line)
		}
		bin = strings.TrimSpace(bin)
		if !filepath.IsAbs(bin) {
			bin = filepath.Join(base, bin)
		}
		m[strings.TrimSpace(img)] = bin
	}
	return m, sc.Err()
}

// RequireInsideNetns refuses to go on unless APIServerIP is an address of this network
// namespace. Outside the rig's namespace 10.250.0.1 would be routed off the machine,
// and the rig must never send traffic there.
func RequireInsideNetns() error {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("failed to list local addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.String() == APIServerIP {
			return nil
		}
	}
	return fmt.Errorf("%s is not a local address here: run the rig inside its network namespace (rig netns-run -- ...)", APIServerIP)
}
