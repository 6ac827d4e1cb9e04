package upgrade

import (
	"fmt"
	"slices"
	"strings"
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// CertificateReloadGrace is how long the members have to serve a new certificate
// after the operator first saw it in the Secret (status.tls.observedAt): the kubelet
// updates the mounted files within about a minute, the member's start script signals
// OpenBao within 2 s, and the workload loop reads what each member serves every 30 s.
// A member that still serves another certificate then did not reload it; the upgrade
// manager restarts the members through the rollout, one election, before the old
// certificate can expire.
const CertificateReloadGrace = 3 * time.Minute

// EventCertificateNotReloaded is the event of that restart.
const EventCertificateNotReloaded baov1.Reason = "CertificateNotReloaded"

// CertificateCheck is what the members serve against the Secret's certificate.
type CertificateCheck struct {
	// Stale are the Ready members that report serving another certificate.
	Stale []string
	// Restart is true when the grace ran out: every member restarts with the
	// restart token Token (status.restart), through the rollout.
	Restart bool
	Token   string
	// Wait is how long until the grace runs out while members are stale and no
	// restart is due yet; 0 otherwise.
	Wait time.Duration
	// Message says what happens, for the event.
	Message string
}

// CheckServedCertificates compares what each Ready member serves
// (status.members[].servedCertificateSHA256) with the Secret's certificate
// (status.tls). The grace is CertificateReloadGrace, or half the time the stale
// certificates had left when the new one was seen, whichever is shorter: a short
// certificate lifetime must not expire while the operator waits. A restart already
// requested for this certificate (the same token) is not requested again.
func CheckServedCertificates(st *baov1.OpenBaoClusterStatus, now time.Time) CertificateCheck {
	tls := st.TLS
	if tls == nil || tls.CertificateSHA256 == "" || tls.ObservedAt == nil {
		return CertificateCheck{}
	}
	var out CertificateCheck
	seen := tls.ObservedAt.Time
	deadline := seen.Add(CertificateReloadGrace)
	for _, m := range st.Members {
		if !m.Ready || m.ServedCertificateSHA256 == "" || m.ServedCertificateSHA256 == tls.CertificateSHA256 {
			continue
		}
		out.Stale = append(out.Stale, m.Name)
		if na := m.ServedCertificateNotAfter; na != nil && na.After(seen) {
			if half := seen.Add(na.Sub(seen) / 2); half.Before(deadline) {
				deadline = half
			}
		}
	}
	if len(out.Stale) == 0 {
		return CertificateCheck{}
	}
	slices.Sort(out.Stale)
	out.Token = "certificate-" + tls.CertificateSHA256[:min(12, len(tls.CertificateSHA256))]
	if r := st.Restart; r != nil && r.Token == out.Token {
		return CertificateCheck{Stale: out.Stale, Token: out.Token}
	}
	if now.Before(deadline) {
		out.Wait = deadline.Sub(now)
		return out
	}
	out.Restart = true
	out.Message = fmt.Sprintf("%s still serve another certificate %s after the Secret's (sha256 %s) was seen: they did not reload it on SIGHUP; "+
		"restarting every member on it, one at a time, the leader last", strings.Join(out.Stale, ", "), now.Sub(seen).Round(time.Second), short(tls.CertificateSHA256))
	return out
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12] + "…"
	}
	return sum
}
