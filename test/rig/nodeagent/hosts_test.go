package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func svc(ns, name, clusterIP string, opts ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: clusterIP}}
	for _, o := range opts {
		o(s)
	}
	return s
}

type epOpt func(*discoveryv1.Endpoint)

func ep(addr string, ready bool, opts ...epOpt) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
	for _, o := range opts {
		o(&e)
	}
	return e
}

func withHostname(h string) epOpt { return func(e *discoveryv1.Endpoint) { e.Hostname = ptr.To(h) } }

func slice(ns, name, service string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
	}
}

// hostsLines parses a hosts file into "ip name" pairs.
func hostsPairs(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		for _, n := range f[1:] {
			out = append(out, f[0]+" "+n)
		}
	}
	return out
}

func TestRenderHosts(t *testing.T) {
	base := hostsInput{Namespace: "prod", PodIP: "10.250.0.12", Hostname: "bao-1", APIServerHost: "10.250.0.1"}
	headless := svc("prod", "bao-internal", corev1.ClusterIPNone)
	cases := []struct {
		name, reason string
		in           func(hostsInput) hostsInput
		want         []string
		notWant      []string
	}{
		{
			name: "fixed entries", reason: "localhost, own hostname and the API server are always there",
			in: func(in hostsInput) hostsInput { return in },
			want: []string{"127.0.0.1 localhost", "10.250.0.12 bao-1", "10.250.0.1 kubernetes", "10.250.0.1 kubernetes.default",
				"10.250.0.1 kubernetes.default.svc", "10.250.0.1 kubernetes.default.svc.cluster.local"},
		},
		{
			name: "subdomain", reason: "spec.hostname/subdomain give the pod its FQDN",
			in:   func(in hostsInput) hostsInput { in.Subdomain = "bao-internal"; return in },
			want: []string{"10.250.0.12 bao-1.bao-internal.prod.svc.cluster.local", "10.250.0.12 bao-1.bao-internal.prod.svc", "10.250.0.12 bao-1"},
		},
		{
			name: "headless with hostnames", reason: "StatefulSet endpoints resolve by hostname and the service name lists every ready address",
			in: func(in hostsInput) hostsInput {
				in.Services = []*corev1.Service{headless}
				in.Slices = []*discoveryv1.EndpointSlice{slice("prod", "bao-internal-x", "bao-internal",
					ep("10.250.0.11", true, withHostname("bao-0")), ep("10.250.0.12", true, withHostname("bao-1")))}
				return in
			},
			want: []string{
				"10.250.0.11 bao-0.bao-internal.prod.svc.cluster.local", "10.250.0.11 bao-0.bao-internal.prod.svc",
				"10.250.0.11 bao-0.bao-internal.prod", "10.250.0.11 bao-0.bao-internal",
				"10.250.0.12 bao-1.bao-internal.prod.svc", "10.250.0.11 bao-internal.prod.svc", "10.250.0.12 bao-internal.prod.svc",
				"10.250.0.11 bao-internal.prod.svc.cluster.local", "10.250.0.11 bao-internal",
			},
		},
		{
			name: "not ready skipped", reason: "an unready endpoint is not published",
			in: func(in hostsInput) hostsInput {
				in.Services = []*corev1.Service{headless}
				in.Slices = []*discoveryv1.EndpointSlice{slice("prod", "s", "bao-internal", ep("10.250.0.13", false, withHostname("bao-2")))}
				return in
			},
			notWant: []string{"10.250.0.13 bao-2.bao-internal.prod.svc", "10.250.0.13 bao-internal.prod.svc"},
		},
		{
			name: "publishNotReadyAddresses", reason: "publishNotReadyAddresses publishes unready endpoints",
			in: func(in hostsInput) hostsInput {
				in.Services = []*corev1.Service{svc("prod", "bao-internal", corev1.ClusterIPNone, func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true })}
				in.Slices = []*discoveryv1.EndpointSlice{slice("prod", "s", "bao-internal", ep("10.250.0.13", false, withHostname("bao-2")))}
				return in
			},
			want: []string{"10.250.0.13 bao-2.bao-internal.prod.svc", "10.250.0.13 bao-internal.prod.svc"},
		},
		{
			name: "cluster IP", reason: "a ClusterIP Service maps its names to the first ready endpoint only",
			in: func(in hostsInput) hostsInput {
				in.Services = []*corev1.Service{svc("prod", "bao", "10.0.0.20")}
				in.Slices = []*discoveryv1.EndpointSlice{slice("prod", "bao-a", "bao",
					ep("10.250.0.14", false), ep("10.250.0.11", true, withHostname("bao-0")), ep("10.250.0.12", true))}
				return in
			},
			want: []string{"10.250.0.11 bao", "10.250.0.11 bao.prod", "10.250.0.11 bao.prod.svc", "10.250.0.11 bao.prod.svc.cluster.local"},
			notWant: []string{"10.250.0.12 bao.prod.svc", "10.250.0.14 bao.prod.svc", "10.0.0.20 bao.prod.svc",
				"10.250.0.11 bao-0.bao.prod.svc"},
		},
		{
			name: "other namespace", reason: "short names resolve only in the pod's own namespace",
			in: func(in hostsInput) hostsInput {
				in.Services = []*corev1.Service{svc("other", "web", corev1.ClusterIPNone)}
				in.Slices = []*discoveryv1.EndpointSlice{slice("other", "w", "web", ep("10.250.0.30", true, withHostname("web-0")))}
				return in
			},
			want:    []string{"10.250.0.30 web.other.svc", "10.250.0.30 web.other", "10.250.0.30 web-0.web.other.svc"},
			notWant: []string{"10.250.0.30 web", "10.250.0.30 web-0.web"},
		},
		{
			name: "slice without service", reason: "a slice whose Service is not known is ignored",
			in: func(in hostsInput) hostsInput {
				in.Slices = []*discoveryv1.EndpointSlice{slice("prod", "x", "gone", ep("10.250.0.40", true))}
				return in
			},
			notWant: []string{"10.250.0.40 gone.prod.svc"},
		},
		{
			name: "external name", reason: "ExternalName Services cannot be expressed in a hosts file",
			in: func(in hostsInput) hostsInput {
				in.Services = []*corev1.Service{svc("prod", "ext", "", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName })}
				in.Slices = []*discoveryv1.EndpointSlice{slice("prod", "e", "ext", ep("10.250.0.41", true))}
				return in
			},
			notWant: []string{"10.250.0.41 ext.prod.svc"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out := renderHosts(tc.in(base))
			pairs := hostsPairs(out)
			for _, w := range tc.want {
				g.Expect(pairs).To(ContainElement(w), tc.reason)
			}
			for _, w := range tc.notWant {
				g.Expect(pairs).NotTo(ContainElement(w), tc.reason)
			}
			g.Expect(renderHosts(tc.in(base))).To(Equal(out), "output is deterministic")
		})
	}
}

func TestRenderHostsNoDuplicates(t *testing.T) {
	g := NewWithT(t)
	in := hostsInput{Namespace: "prod", PodIP: "10.250.0.12", Hostname: "bao-1", APIServerHost: "10.250.0.1",
		Services: []*corev1.Service{svc("prod", "h", corev1.ClusterIPNone)},
		Slices: []*discoveryv1.EndpointSlice{
			slice("prod", "a", "h", ep("10.250.0.11", true, withHostname("bao-0"))),
			slice("prod", "b", "h", ep("10.250.0.11", true, withHostname("bao-0"))),
		}}
	pairs := hostsPairs(renderHosts(in))
	seen := map[string]bool{}
	for _, p := range pairs {
		g.Expect(seen[p]).To(BeFalse(), "pair %q appears once even when two slices list the address", p)
		seen[p] = true
	}
}

func TestWriteInPlaceKeepsInode(t *testing.T) {
	g := NewWithT(t)
	p := filepath.Join(t.TempDir(), "hosts")
	g.Expect(writeInPlace(p, []byte("a long first version\nline two\n"))).To(Succeed())
	var before syscall.Stat_t
	g.Expect(syscall.Stat(p, &before)).To(Succeed())
	g.Expect(writeInPlace(p, []byte("short\n"))).To(Succeed())
	var after syscall.Stat_t
	g.Expect(syscall.Stat(p, &after)).To(Succeed())
	g.Expect(after.Ino).To(Equal(before.Ino), "a bind-mounted file must keep its inode")
	b, err := os.ReadFile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("short\n"), "the old, longer tail is cut off")
}
