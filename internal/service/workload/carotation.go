package workload

import (
	"bytes"
	"time"

	corev1 "k8s.io/api/core/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// CABundleSoak is how long a rotated CA is published in ca.crt, beside the CA it
// replaces, before a serving certificate signed by it is issued: members re-read
// ca.crt when the kubelet updates it (about a minute), the operator and the executor
// Jobs read it on each use, and clients of the cluster get a day to pick up the
// bundle. The old CA still has a year to live when it is replaced (CARenewBefore).
const CABundleSoak = 24 * time.Hour

// Keys and annotation of the CA Secret during a rotation.
const (
	// CAPreviousCertKey and CAPreviousKeyKey hold the CA that the current one
	// replaced, while it is still trusted.
	CAPreviousCertKey = "ca-previous.crt"
	CAPreviousKeyKey  = "ca-previous.key"
	// AnnotationCARotatedAt is when the current CA replaced the previous one.
	AnnotationCARotatedAt = "baokeeper.dev/ca-rotated-at"
)

// CAState is the operator-run CA of a cluster: the current CA and, for a while after
// a rotation, the one it replaced.
type CAState struct {
	Current *KeyPair
	// Previous is the CA the current one replaced, nil when there is none or it
	// expired.
	Previous *KeyPair
	// RotatedAt is when Current replaced Previous.
	RotatedAt time.Time
}

// CAStateOf reads a CA Secret; nil reads as no CA.
func CAStateOf(s *corev1.Secret) CAState {
	if s == nil {
		return CAState{}
	}
	st := CAState{Current: &KeyPair{CertPEM: s.Data[CACertKey], KeyPEM: s.Data[CAKeyKey]}}
	if len(s.Data[CAPreviousCertKey]) > 0 && len(s.Data[CAPreviousKeyKey]) > 0 {
		st.Previous = &KeyPair{CertPEM: s.Data[CAPreviousCertKey], KeyPEM: s.Data[CAPreviousKeyKey]}
		if t, err := time.Parse(time.RFC3339, s.Annotations[AnnotationCARotatedAt]); err == nil {
			st.RotatedAt = t
		}
	}
	return st
}

// Rotate replaces the current CA with next. The current one becomes Previous while
// it is readable and not expired: clients and members keep trusting it, and it keeps
// signing serving certificates, until the new one is known everywhere (Signer).
func (s CAState) Rotate(next KeyPair, now time.Time) CAState {
	out := CAState{Current: &next}
	if s.Current != nil {
		if cert, _, err := ParsePair(*s.Current); err == nil && now.Before(cert.NotAfter) {
			out.Previous, out.RotatedAt = s.Current, now
		}
	}
	return out
}

// trusted reports whether Previous is still worth trusting: readable, not expired.
func (s CAState) trusted(now time.Time) bool {
	if s.Previous == nil {
		return false
	}
	cert, _, err := ParsePair(*s.Previous)
	return err == nil && now.Before(cert.NotAfter)
}

// Signer is the CA that signs a new serving certificate: the previous one until the
// new one was published for CABundleSoak, so that a leaf signed by the new CA is
// never served before clients and members trust it; the current one otherwise.
func (s CAState) Signer(now time.Time) KeyPair {
	if s.trusted(now) && now.Before(s.RotatedAt.Add(CABundleSoak)) {
		return *s.Previous
	}
	return *s.Current
}

// SwitchAt is when Signer moves to the current CA, if that is still to come; zero
// otherwise. The serving certificate is reissued then.
func (s CAState) SwitchAt(now time.Time) time.Time {
	if at := s.RotatedAt.Add(CABundleSoak); s.trusted(now) && now.Before(at) {
		return at
	}
	return time.Time{}
}

// Bundle is ca.crt of the serving Secret: the current CA, and the previous one while
// it has not expired.
func (s CAState) Bundle(now time.Time) []byte {
	if !s.trusted(now) {
		return s.Current.CertPEM
	}
	return bytes.Join([][]byte{bytes.TrimRight(s.Current.CertPEM, "\n"), s.Previous.CertPEM}, []byte("\n"))
}

// CASecretFor holds the CA state: the current CA, and the previous one with the time
// of the rotation while it is trusted.
func CASecretFor(c *baov1.OpenBaoCluster, s CAState, now time.Time) *corev1.Secret {
	sec := CASecret(c, *s.Current)
	if s.trusted(now) {
		sec.Data[CAPreviousCertKey], sec.Data[CAPreviousKeyKey] = s.Previous.CertPEM, s.Previous.KeyPEM
		sec.Annotations = map[string]string{AnnotationCARotatedAt: s.RotatedAt.UTC().Format(time.RFC3339)}
	}
	return sec
}
