package rig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

const (
	// serviceCIDR is the Service IP range; serviceIP is the kubernetes Service's address.
	serviceCIDR = "10.96.0.0/24"
	serviceIP   = "10.96.0.1"
	apiPort     = 6443
)

// controlPlane is etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
type controlPlane struct {
	procs      []*proc
	kubeconfig string
	server     string
	pki        *pki
}

// startControlPlane writes the PKI under dir and starts the daemons. The API server
// reaches kubelets (the node agent) at their first InternalIP and advertised port, with
// its kubelet client certificate, and verifies their serving certificates (issued for
// kubeletIP) with the rig CA.
func startControlPlane(ctx context.Context, binDir, dir string, apiIP, kubeletIP net.IP) (*controlPlane, error) {
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, err
	}
	p, err := writePKI(filepath.Join(dir, "pki"), apiIP, kubeletIP)
	if err != nil {
		return nil, err
	}
	server := fmt.Sprintf("https://%s", net.JoinHostPort(apiIP.String(), fmt.Sprint(apiPort)))
	kc, err := kubeconfig(p, server)
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{kubeconfig: filepath.Join(dir, "kubeconfig"), server: server, pki: p}
	if err := os.WriteFile(cp.kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	bin := func(name string) string { return filepath.Join(binDir, name) }
	// The control plane's daemons collect garbage less often than Go's default: on 2
	// cores they compete with the members for CPU, and the rig has memory to spare
	// (docs/design/e2e-parallel.md, "Garbage collection").
	gc := []string{"GOGC=400"}
	fail := func(err error) (*controlPlane, error) {
		cp.stop()
		return nil, err
	}

	etcd, err := startProc("etcd", logDir, []string{bin("etcd"),
		"--name=rig", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=rig=http://127.0.0.1:2380", "--unsafe-no-fsync", "--listen-metrics-urls=",
	}, gc)
	if err != nil {
		return fail(err)
	}
	cp.procs = append(cp.procs, etcd)
	if err := waitFor(ctx, etcd, "etcd", 60*time.Second, func() error { return httpOK(nil, false, "http://127.0.0.1:2379/health") }); err != nil {
		return fail(err)
	}

	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return fail(err)
	}
	api, err := startProc("kube-apiserver", logDir, []string{bin("kube-apiserver"),
		"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(dir, AuditLogFile), "--audit-log-format=json",
		"--audit-log-maxsize=0", "--audit-log-mode=blocking",
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=0.0.0.0", "--advertise-address=" + apiIP.String(), fmt.Sprintf("--secure-port=%d", apiPort),
		"--tls-cert-file=" + p.ServingCert, "--tls-private-key-file=" + p.ServingKey, "--client-ca-file=" + p.CACert,
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + p.SAPub,
		"--service-account-signing-key-file=" + p.SAKey, "--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC", "--allow-privileged=true", "--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
		"--kubelet-client-certificate=" + p.KubeletClientCert, "--kubelet-client-key=" + p.KubeletClientKey,
		"--kubelet-certificate-authority=" + p.CACert, "--kubelet-preferred-address-types=InternalIP",
	}, gc)
	if err != nil {
		return fail(err)
	}
	cp.procs = append(cp.procs, api)
	caPool, err := loadPool(p.CACert)
	if err != nil {
		return fail(err)
	}
	if err := waitFor(ctx, api, "kube-apiserver", 90*time.Second, func() error { return httpOK(caPool, false, server+"/readyz") }); err != nil {
		return fail(err)
	}

	common := []string{"--kubeconfig=" + cp.kubeconfig, "--authentication-kubeconfig=" + cp.kubeconfig,
		"--authorization-kubeconfig=" + cp.kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1"}
	kcm, err := startProc("kube-controller-manager", logDir, append([]string{bin("kube-controller-manager"),
		"--controllers=*", "--service-account-private-key-file=" + p.SAKey, "--root-ca-file=" + p.CACert,
		"--use-service-account-credentials=true", "--secure-port=10257", "--cluster-cidr=10.250.0.0/24",
	}, common...), gc)
	if err != nil {
		return fail(err)
	}
	cp.procs = append(cp.procs, kcm)
	sched, err := startProc("kube-scheduler", logDir, append([]string{bin("kube-scheduler"), "--secure-port=10259"}, common...), gc)
	if err != nil {
		return fail(err)
	}
	cp.procs = append(cp.procs, sched)
	for _, hp := range []struct {
		p   *proc
		url string
	}{{kcm, "https://127.0.0.1:10257/healthz"}, {sched, "https://127.0.0.1:10259/healthz"}} {
		if err := waitFor(ctx, hp.p, hp.p.name, 60*time.Second, func() error { return httpOK(nil, true, hp.url) }); err != nil {
			return fail(err)
		}
	}
	return cp, nil
}

// stop stops the daemons in reverse start order (scheduler, controller manager,
// API server, etcd): killing etcd first leaves the API server retrying.
func (cp *controlPlane) stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].stop(15 * time.Second)
	}
	cp.procs = nil
}

// httpOK checks that url answers 200. skipVerify is for the controller manager's and
// scheduler's loopback health ports, which serve self-signed certificates.
func httpOK(pool *x509.CertPool, skipVerify bool, url string) error {
	tr := &http.Transport{}
	if skipVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback health port with a self-signed certificate
	} else if pool != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	c := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

func loadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("no certificate in %s", path)
	}
	return pool, nil
}

// AuditLogFile is the kube-apiserver's audit log in the rig's directory: one JSON
// event per line, at Metadata level, for the requests of the service accounts of the
// operator's namespace (baokeeper-system) only. The e2e suite compares what the
// operator did with what its role grants.
const AuditLogFile = "audit.log"

// auditPolicy logs the operator's requests when they complete, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts:baokeeper-system"]
- level: None
`
