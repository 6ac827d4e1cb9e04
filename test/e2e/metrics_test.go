//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// metricsPort is the operator's metrics endpoint (HTTPS, config/manager).
const metricsPort = "8443"

// scrape GETs /metrics of every running operator pod with a bearer token ("" for
// none) and returns the status code and body of the first pod that answers.
func scrape(ctx context.Context, bearer string) (int, string) {
	GinkgoHelper()
	pods, err := cs.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{LabelSelector: operatorPodsLabel})
	Expect(err).NotTo(HaveOccurred())
	// The endpoint's certificate is self-signed (no --metrics-cert-dir): what this
	// checks is who may read, not the certificate.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	var last error
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(p.Status.PodIP, metricsPort)+"/metrics", nil)
		Expect(err).NotTo(HaveOccurred())
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	Fail(fmt.Sprintf("no operator pod answered on :%s: %v", metricsPort, last))
	return 0, ""
}

// apiToken is a token of a service account for the Kubernetes API's own audience
// (what the metrics endpoint's TokenReview accepts).
func apiToken(ctx context.Context, namespace, sa string) string {
	GinkgoHelper()
	exp := int64(600)
	res, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return res.Status.Token
}

// expectMetricsServedSecurely proves the metrics endpoint's access rules on the rig:
// no token is refused, a token without the baokeeper-metrics-reader grant is
// forbidden, a token with it reads the metrics, among them the cluster's state.
func expectMetricsServedSecurely(ctx context.Context, namespace, cluster string) {
	GinkgoHelper()
	for _, sa := range []string{"scraper", "nobody"} {
		err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}})
		if !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-scraper-" + namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "baokeeper-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: namespace}},
	}
	Expect(k8s.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { _ = k8s.Delete(ctx, binding) })

	code, body := scrape(ctx, "")
	Expect(code).To(Equal(http.StatusUnauthorized), "a scrape without a token is refused: %s", body)
	code, body = scrape(ctx, "not-a-token")
	// controller-runtime's filter answers 500 "Authentication failed" when the
	// TokenReview cannot parse the token at all, 401 when it reviews it as unknown.
	Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusInternalServerError), "a token the API server does not know is refused: %s", body)
	Expect(body).NotTo(ContainSubstring("baokeeper_"), "and no metric is served with the refusal")
	code, body = scrape(ctx, apiToken(ctx, namespace, "nobody"))
	Expect(code).To(Equal(http.StatusForbidden), "a service account without baokeeper-metrics-reader is forbidden: %s", body)
	Eventually(func(g Gomega) {
		code, body := scrape(ctx, apiToken(ctx, namespace, "scraper"))
		g.Expect(code).To(Equal(http.StatusOK), body)
		series := fmt.Sprintf(`baokeeper_cluster_phase{name=%q,namespace=%q,phase="Running"} 1`, cluster, namespace)
		g.Expect(strings.Split(body, "\n")).To(ContainElement(series))
		g.Expect(body).To(ContainSubstring(fmt.Sprintf(`baokeeper_cluster_ready_members{name=%q,namespace=%q} 3`, cluster, namespace)))
		g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
	}, time.Minute, pollEvery).Should(Succeed())
}
