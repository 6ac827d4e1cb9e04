package openbaocluster

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCachingClientFactoryInstrumentsEachClustersClientOnce(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"initialized":true,"sealed":false,"standby":false,"version":"2.4.0"}`))
	}))
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	var instrumented []string
	sent := map[string]int{}
	f := &CachingClientFactory{Tokens: func(context.Context, string) (string, error) { return "unused", nil }, Instrument: func(ns, name string) func(http.RoundTripper) http.RoundTripper {
		instrumented = append(instrumented, ns+"/"+name)
		return func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				sent[ns+"/"+name]++
				return rt.RoundTrip(r)
			})
		}
	}}
	a := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	b := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}

	first, err := f.ForCluster(a, caPEM)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := f.ForCluster(a, caPEM)
	g.Expect(err).NotTo(HaveOccurred())
	other, err := f.ForCluster(b, caPEM)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(first), "one client per cluster and CA, reused")
	g.Expect(instrumented).To(Equal([]string{"ns/a", "ns/b"}), "each cluster's client is instrumented once, with its own labels")

	_, err = first.Health(t.Context(), srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.Health(t.Context(), srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.Health(t.Context(), srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sent).To(Equal(map[string]int{"ns/a": 1, "ns/b": 2}), "every request goes through its cluster's wrapper")
}

func TestReaderAddress(t *testing.T) {
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao2", Namespace: "ns"}}
	if got, want := ReaderAddress(c), "https://bao2.ns.svc:8200"; got != want {
		t.Errorf("a cluster without bootstrap is read through its client Service: got %s, want %s", got, want)
	}
	c.Spec.Bootstrap = &baov1.BootstrapSpec{}
	if got, want := ReaderAddress(c), "https://bao2-0.bao2-internal.ns.svc:8200"; got != want {
		t.Errorf("a cluster that restores has no client Service yet and is read through member 0: got %s, want %s", got, want)
	}
	c.Status.Restore = &baov1.RestoreStatus{Step: baov1.RestoreStepDone}
	if got, want := ReaderAddress(c), "https://bao2.ns.svc:8200"; got != want {
		t.Errorf("once restored, through its client Service: got %s, want %s", got, want)
	}
}
