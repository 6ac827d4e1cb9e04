package workload

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// SealSecret builds the static-seal key Secret. It carries no owner reference on
// purpose: the Raft volumes outlive the cluster object (the StatefulSet retains its
// claims), and the key is the only way to read them. Deleting an OpenBaoCluster and
// creating it again with the same name finds the same key and the same data.
func SealSecret(c *baov1.OpenBaoCluster, rnd io.Reader) (*corev1.Secret, error) {
	key := make([]byte, 32)
	if _, err := io.ReadFull(rnd, key); err != nil {
		return nil, fmt.Errorf("failed to generate the static-seal key: %w", err)
	}
	return SealSecretWithKey(c, []byte(hex.EncodeToString(key))), nil
}

// SourceSealSecret is the Secret that holds the seal key of a cluster's bootstrap
// snapshot: spec.bootstrap.fromSnapshot.sealKeySecretRef, or <sourceCluster>-seal.
func SourceSealSecret(c *baov1.OpenBaoCluster) string {
	if b := c.Spec.Bootstrap; b != nil && b.FromSnapshot.SealKeySecretRef != nil && b.FromSnapshot.SealKeySecretRef.Name != "" {
		return b.FromSnapshot.SealKeySecretRef.Name
	}
	return c.BootstrapSourceCluster() + "-seal"
}

// SealSecretWithKey builds the static-seal key Secret holding key (hex, as the
// seal stanza reads it).
func SealSecretWithKey(c *baov1.OpenBaoCluster, key []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      NamesFor(c).SealSecret(),
			Namespace: c.Namespace,
			Labels:    CommonLabels(c),
			Annotations: map[string]string{
				"baokeeper.dev/note": "Static-seal key of the OpenBao cluster. Losing it makes the Raft data unreadable. Back it up; never edit it.",
			},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptrTo(true),
		Data:      map[string][]byte{SealKeyKey: key},
	}
}

// CASecret holds the operator-run CA (certificate and key).
func CASecret(c *baov1.OpenBaoCluster, ca KeyPair) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: NamesFor(c).CASecret(), Namespace: c.Namespace, Labels: CommonLabels(c)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{CACertKey: ca.CertPEM, CAKeyKey: ca.KeyPEM},
	}
}

// TLSSecret holds the serving certificate, its key and the CA certificate.
func TLSSecret(c *baov1.OpenBaoCluster, serving KeyPair, caCertPEM []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: NamesFor(c).TLSSecret(), Namespace: c.Namespace, Labels: CommonLabels(c)},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{TLSCertKey: serving.CertPEM, TLSKeyKey: serving.KeyPEM, CACertKey: caCertPEM},
	}
}

func randInt(rnd io.Reader, limit *big.Int) (*big.Int, error) { return rand.Int(rnd, limit) }

func ptrTo[T any](v T) *T { return &v }
