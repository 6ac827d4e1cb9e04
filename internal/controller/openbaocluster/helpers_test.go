package openbaocluster_test

import (
	"context"
	"fmt"
	"sync/atomic"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

var nsCounter atomic.Int32

// newNamespace creates a namespace of its own for one spec.
func newNamespace(ctx context.Context) string {
	name := fmt.Sprintf("t-%d", nsCounter.Add(1))
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

type clusterOpt func(*baov1.OpenBaoCluster)

func withReplicas(n int32) clusterOpt {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Replicas = &n }
}

func withVersion(v string) clusterOpt {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Version = v }
}

func withImage(img string) clusterOpt {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Image = img }
}

func withStrategy(s baov1.UpgradeStrategyType) clusterOpt {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Strategy = s }
}

func newCluster(ns, name string, opts ...clusterOpt) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       baov1.OpenBaoClusterSpec{Version: "2.4.0"},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}
