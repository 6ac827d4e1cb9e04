package rig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the file paths of the rig's certificates and keys.
type pki struct {
	CACert, CAKey           string
	ServingCert, ServingKey string
	AdminCert, AdminKey     string
	SAPub, SAKey            string
	// KubeletCert and KubeletKey are the node agent's kubelet API serving certificate;
	// KubeletClientCert and KubeletClientKey are the API server's client certificate
	// for it (the agent accepts client certificates of the rig CA only).
	KubeletCert, KubeletKey             string
	KubeletClientCert, KubeletClientKey string
}

// writePKI creates a CA, the API server's serving certificate, an admin client
// certificate (system:masters), the node agent's kubelet API serving certificate (for
// kubeletIP), the API server's kubelet client certificate and the service-account
// signing key pair under dir.
func writePKI(dir string, apiIP, kubeletIP net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		SAPub: filepath.Join(dir, "sa.pub"), SAKey: filepath.Join(dir, "sa.key"),
		KubeletCert: filepath.Join(dir, "kubelet.crt"), KubeletKey: filepath.Join(dir, "kubelet.key"),
		KubeletClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"), KubeletClientKey: filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "baokeeper-rig-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("failed to create the rig CA: %w", err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	if err := writeCertKey(p.CACert, p.CAKey, caDER, caKey); err != nil {
		return nil, err
	}

	issue := func(certPath, keyPath string, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(30*24*time.Hour)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("failed to issue %s: %w", certPath, err)
		}
		return writeCertKey(certPath, keyPath, der, key)
	}
	if err := issue(p.ServingCert, p.ServingKey, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), apiIP, net.ParseIP(serviceIP)},
	}); err != nil {
		return nil, err
	}
	if err := issue(p.AdminCert, p.AdminKey, &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "rig-admin", Organization: []string{"system:masters"}},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	if err := issue(p.KubeletCert, p.KubeletKey, &x509.Certificate{
		SerialNumber: big.NewInt(4), Subject: pkix.Name{CommonName: "rig-nodeagent-kubelet"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{kubeletIP},
	}); err != nil {
		return nil, err
	}
	if err := issue(p.KubeletClientCert, p.KubeletClientKey, &x509.Certificate{
		SerialNumber: big.NewInt(5), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.SAKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.SAPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func writeCertKey(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// kubeconfig renders a kubeconfig for server with the admin client certificate.
func kubeconfig(p *pki, server string) ([]byte, error) {
	read := func(path string) (string, error) {
		b, err := os.ReadFile(path)
		return string(b), err
	}
	ca, err := read(p.CACert)
	if err != nil {
		return nil, err
	}
	cert, err := read(p.AdminCert)
	if err != nil {
		return nil, err
	}
	key, err := read(p.AdminKey)
	if err != nil {
		return nil, err
	}
	b64 := func(s string) string { return base64Std(s) }
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: rig
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: rig-admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: rig
  context:
    cluster: rig
    user: rig-admin
current-context: rig
`, server, b64(ca), b64(cert), b64(key))), nil
}
