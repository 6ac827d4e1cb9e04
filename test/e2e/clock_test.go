//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/baokeeper/baokeeper/test/rig/nodeagent"
)

// memberClockSkew is how far a spec sets a member's clock off: minutes, far beyond
// the fraction of a second time sync keeps a node within, and beyond the 5 minutes
// by which baokeeper backdates the certificates it issues.
const memberClockSkew = 10 * time.Minute

// skewClock sets member's wall clock off by d (nodeagent.SkewClock: its pod, and the
// pods that replace it, read the time d ahead), checks that OpenBao itself reads it
// (sys/health's server_time_utc), and sets it right again when the spec ends.
func skewClock(ctx context.Context, tc *testCluster, member string, d time.Duration) {
	GinkgoHelper()
	By(fmt.Sprintf("setting %s's clock %s off", member, d))
	Expect(nodeagent.SkewClock(tc.ns, member, d)).To(Succeed())
	DeferCleanup(func() {
		Expect(nodeagent.SkewClock(tc.ns, member, 0)).To(Succeed())
	})
	Eventually(func(g Gomega) {
		h, err := tc.client(member, "").Sys().HealthWithContext(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		off := time.Unix(h.ServerTimeUTC, 0).Sub(time.Now())
		g.Expect(off).To(BeNumerically("~", d, 3*time.Second), "%s's server_time_utc is %s off", member, off)
	}, 30*time.Second, pollEvery).Should(Succeed(), "OpenBao on %s reads the skewed clock", member)
}
