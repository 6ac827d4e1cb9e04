package upgrade

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestCheckServedCertificates(t *testing.T) {
	seen := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(seen.Add(d)); return &t }
	member := func(name, sha string, ready bool, notAfter time.Duration) baov1.MemberStatus {
		return baov1.MemberStatus{Name: name, Ready: ready, ServedCertificateSHA256: sha, ServedCertificateNotAfter: at(notAfter)}
	}
	status := func(ms ...baov1.MemberStatus) *baov1.OpenBaoClusterStatus {
		return &baov1.OpenBaoClusterStatus{TLS: &baov1.TLSStatus{CertificateSHA256: "new0123456789abcdef", ObservedAt: at(0)}, Members: ms}
	}
	cases := []struct {
		name, reason string
		st           *baov1.OpenBaoClusterStatus
		now          time.Duration
		wantStale    []string
		wantRestart  bool
		wantWait     time.Duration
	}{
		{name: "all reloaded", reason: "every member serves the Secret's certificate: nothing to do",
			st: status(member("bao-0", "new0123456789abcdef", true, 90*24*time.Hour), member("bao-1", "new0123456789abcdef", true, 90*24*time.Hour)), now: time.Hour},
		{name: "within the grace", reason: "the kubelet and the start script need a moment: wait until the grace runs out",
			st:  status(member("bao-0", "new0123456789abcdef", true, 0), member("bao-1", "old", true, 30*24*time.Hour)),
			now: time.Minute, wantStale: []string{"bao-1"}, wantWait: CertificateReloadGrace - time.Minute},
		{name: "grace ran out", reason: "a member that did not reload is restarted through the rollout",
			st:  status(member("bao-1", "old", true, 30*24*time.Hour), member("bao-0", "old", true, 30*24*time.Hour)),
			now: CertificateReloadGrace, wantStale: []string{"bao-0", "bao-1"}, wantRestart: true},
		{name: "short lifetime", reason: "a certificate with 2 minutes left when its successor was seen may not wait the whole grace: half of what it had left",
			st:  status(member("bao-0", "old", true, 2*time.Minute)),
			now: time.Minute, wantStale: []string{"bao-0"}, wantRestart: true},
		{name: "not Ready or not read", reason: "a member that is not Ready, or whose certificate was not read, says nothing",
			st: status(member("bao-0", "old", false, time.Hour), member("bao-1", "", true, time.Hour)), now: time.Hour},
		{name: "already requested", reason: "the restart for this certificate was requested: not again, whatever the members serve",
			st: func() *baov1.OpenBaoClusterStatus {
				s := status(member("bao-0", "old", true, time.Hour))
				s.Restart = &baov1.RestartRecord{Token: "certificate-new012345678"}
				return s
			}(), now: time.Hour, wantStale: []string{"bao-0"}},
		{name: "no certificate yet", reason: "before the first certificate, nothing is compared", st: &baov1.OpenBaoClusterStatus{}, now: time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := CheckServedCertificates(tc.st, seen.Add(tc.now))
			g.Expect(got.Stale).To(Equal(tc.wantStale), tc.reason)
			g.Expect(got.Restart).To(Equal(tc.wantRestart), tc.reason)
			g.Expect(got.Wait).To(Equal(tc.wantWait), tc.reason)
			if tc.wantRestart {
				g.Expect(got.Token).To(Equal("certificate-new012345678"))
				g.Expect(got.Message).To(ContainSubstring(tc.wantStale[0]))
			}
		})
	}
}
