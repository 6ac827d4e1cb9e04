package upgrade_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
)

func dur(s string) *baov1.Duration { d := baov1.Duration(s); return &d }

func TestCheckSpec(t *testing.T) {
	cases := []struct {
		name, reason string
		mutate       func(*baov1.OpenBaoCluster)
		want         baov1.Reason
		message      []string
	}{
		{name: "defaults", reason: "unset durations take their defaults", mutate: func(*baov1.OpenBaoCluster) {}},
		{name: "settleTime 0s", reason: "no wait is a valid choice",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Rolling.SettleTime = dur("0s") }},
		{name: "unitless settleTime", reason: "stored before validation: refused for this cluster alone",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Rolling.SettleTime = dur("10") },
			want:   baov1.ReasonInvalidDuration, message: []string{`spec.upgrade.rolling.settleTime "10" is not a duration with a unit: write it like 10s or 5m`}},
		{name: "unitless zero", reason: "Go accepts 0 without a unit; the API server does not, and neither does the operator",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Rolling.StepTimeout = dur("0") },
			want:   baov1.ReasonInvalidDuration, message: []string{`spec.upgrade.rolling.stepTimeout "0" is not a duration`}},
		{name: "zero stepTimeout", reason: "a zero timeout is not silently replaced with the default",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Rolling.StepTimeout = dur("0s") },
			want:   baov1.ReasonInvalidDuration, message: []string{`spec.upgrade.rolling.stepTimeout "0s" must be greater than 0s, for example 10m0s`}},
		{name: "negative renewBefore", reason: "negative durations make no sense anywhere",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.TLS.RenewBefore = dur("-1h") },
			want:   baov1.ReasonInvalidDuration, message: []string{`spec.tls.renewBefore "-1h" must be greater than 0s`}},
		{name: "two bad fields", reason: "every bad field is named at once",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.Rolling.SettleTime = dur("10")
				c.Spec.Upgrade.BlueGreen.ValidationHook = &baov1.ValidationHookSpec{Image: "x:1", Timeout: dur("5 minutes")}
			},
			want: baov1.ReasonInvalidDuration, message: []string{"spec.upgrade.rolling.settleTime", "spec.upgrade.blueGreen.validationHook.timeout"}},
		{name: "blue-green version change", reason: "the blue-green manager carries it out",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy
				c.Spec.Version = "2.4.1"
			}},
		{name: "blue-green without a version change", reason: "nothing to roll out, nothing to refuse",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy }},
		{name: "executor image tagged latest", reason: "executor Jobs hold the executor's OpenBao role: the image must not change between attempts",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Executor.Image = "ghcr.io/baokeeper/baokeeper:latest" },
			want:   baov1.Reason("FloatingImage"), message: []string{`spec.upgrade.executor.image "ghcr.io/baokeeper/baokeeper:latest" is not pinned`}},
		{name: "executor image without a tag", reason: "no tag is latest",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Executor.Image = "registry.example:5000/baokeeper" },
			want:   baov1.Reason("FloatingImage"), message: []string{"spec.upgrade.executor.image", "a missing tag is latest"}},
		{name: "executor image pinned", reason: "a version tag or a digest is pinned",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Executor.Image = "ghcr.io/baokeeper/baokeeper:0.2.0" }},
		{name: "hook image tagged latest", reason: "the hook decides whether green is promoted",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.BlueGreen.ValidationHook = &baov1.ValidationHookSpec{Image: "curlimages/curl"}
			},
			want: baov1.Reason("FloatingImage"), message: []string{"spec.upgrade.blueGreen.validationHook.image"}},
		{name: "custom seal", reason: "a seal block is what the field is for",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Seal = baov1.SealSpec{Type: baov1.CustomSeal, CustomStanza: `seal "transit" { address = "https://t:8200" }`}
			}},
		{name: "a listener in the custom seal", reason: "config.hcl would get a listener without TLS",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Seal = baov1.SealSpec{Type: baov1.CustomSeal, CustomStanza: `seal "transit" { address = "https://t:8200" }
listener "tcp" {
  address     = "0.0.0.0:8300"
  tls_disable = true
}`}
			},
			want: baov1.ReasonInvalidSealStanza, message: []string{`spec.seal.customStanza may hold only seal blocks, and holds "listener"`, "nothing was changed"}},
		{name: "a bootstrap snapshot newer than spec.version", reason: "OpenBao does not read data a newer version wrote; the API server cannot compare versions",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Version = "2.4.0"
				c.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{Key: "ns/bao/x.snap", Version: "2.5.0"}}
			},
			want: baov1.ReasonSnapshotNewerThanVersion, message: []string{"taken on OpenBao 2.5.0, newer than spec.version 2.4.0", "Set spec.version to 2.5.0 or later", "nothing was restored"}},
		{name: "a bootstrap snapshot at spec.version, or a restored one", reason: "same version restores; once restored the check no longer applies",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Version = "2.5.0"
				c.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{Key: "ns/bao/x.snap", Version: "v2.5.0"}}
			}},
		{name: "a drill schedule that does not parse", reason: "the API server checks five fields, not their values",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Snapshots.Verify = &baov1.SnapshotVerifySpec{Schedule: "0 25 * * *"}
			},
			want: baov1.ReasonInvalidSchedule, message: []string{`spec.snapshots.verify.schedule "0 25 * * *" does not parse`, "nothing was changed"}},
		{name: "a schedule that does not parse", reason: "the API server checks five fields, not their values",
			mutate: func(c *baov1.OpenBaoCluster) { c.Spec.Snapshots.Schedule = "99 * * * *" },
			want:   baov1.ReasonInvalidSchedule, message: []string{`spec.snapshots.schedule "99 * * * *" does not parse`, "nothing was changed"}},
		{name: "a time zone that does not exist", reason: "the API server cannot check IANA names",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Snapshots.Schedule, c.Spec.Snapshots.TimeZone = "0 * * * *", "Mars/Olympus"
			},
			want: baov1.ReasonInvalidSchedule, message: []string{`spec.snapshots.timeZone "Mars/Olympus" is not an IANA time zone`}},
		{name: "a window start that does not parse", reason: "the API server checks five fields, not their values",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 2 * * 6", Duration: "4h"}, {Start: "0 25 * * *", Duration: "1h"}}
			},
			want: baov1.ReasonInvalidWindow, message: []string{`spec.upgrade.windows[1].start "0 25 * * *" does not parse`, "nothing was changed"}},
		{name: "a window in a time zone that does not exist", reason: "the API server cannot check IANA names",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 2 * * 6", Duration: "4h", TimeZone: "Europe/Atlantis"}}
			},
			want: baov1.ReasonInvalidWindow, message: []string{`spec.upgrade.windows[0].timeZone "Europe/Atlantis" is not an IANA time zone`}},
		{name: "a window that never opens", reason: "30 February parses but never comes",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 2 30 2 *", Duration: "4h"}}
			},
			want: baov1.ReasonInvalidWindow, message: []string{`spec.upgrade.windows[0].start "0 2 30 2 *" never comes`}},
		{name: "a soak stored before the API server checked it", reason: "an object stored before the CRD validated durations",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "staging", Soak: new(baov1.Duration("24"))}}
			},
			want: baov1.ReasonInvalidDuration, message: []string{"spec.upgrade.after[0].soak"}},
		{name: "a stanza that is ignored under the Static seal", reason: "only a Custom seal renders the stanza",
			mutate: func(c *baov1.OpenBaoCluster) {
				c.Spec.Seal = baov1.SealSpec{Type: baov1.StaticSeal, CustomStanza: `listener "tcp" {}`}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &baov1.OpenBaoCluster{Spec: baov1.OpenBaoClusterSpec{Version: "2.4.0"}}
			c.Status.CurrentVersion = "2.4.0"
			tc.mutate(c)
			got := upgrade.CheckSpec(c)
			if tc.want == "" {
				g.Expect(got).To(BeNil(), tc.reason)
				return
			}
			g.Expect(got).NotTo(BeNil(), tc.reason)
			g.Expect(got.Reason).To(Equal(tc.want), tc.reason)
			for _, m := range tc.message {
				g.Expect(got.Message).To(ContainSubstring(m), tc.reason)
			}
		})
	}
}

func TestDurationGetters(t *testing.T) {
	g := NewWithT(t)
	c := &baov1.OpenBaoCluster{}
	g.Expect(c.GetStepTimeout()).To(Equal(10 * time.Minute))
	g.Expect(c.GetSettleTime()).To(BeZero(), "no settle time by default")
	c.Spec.Upgrade.Rolling.SettleTime = dur("30s")
	g.Expect(c.GetSettleTime()).To(Equal(30 * time.Second))
	c.Spec.Upgrade.Rolling.SettleTime = dur("0s")
	g.Expect(c.GetSettleTime()).To(BeZero(), "0s is kept")
	c.Spec.Upgrade.Rolling.StepTimeout = baov1.DurationOf(90 * time.Second)
	g.Expect(c.GetStepTimeout()).To(Equal(90 * time.Second))
}

func TestImageChanged(t *testing.T) {
	mk := func(images ...string) *operation.Cluster {
		c := &operation.Cluster{}
		for i, img := range images {
			c.Members = append(c.Members, operation.Member{Name: "bao-" + string(rune('0'+i)), PodExists: img != "", Image: img})
		}
		return c
	}
	const a, b = "ghcr.io/openbao/openbao:2.4.0", "mirror.local/openbao/openbao:2.4.0"
	cases := []struct {
		name, reason string
		c            *operation.Cluster
		want         bool
	}{
		{"same image", "nothing to roll out", mk(a, a, a), false},
		{"a mirror at the same version", "bug: spec.image changed at the same version was ignored forever; it is rolled out", mk(a, a, a), true},
		{"half rolled out", "a member still on the old image", mk(b, a, b), true},
		{"a pod missing", "a member whose pod is gone has no known image: wait", mk(a, "", a), false},
	}
	for i, tc := range cases {
		target := a
		if i > 0 {
			target = b
		}
		NewWithT(t).Expect(upgrade.ImageChanged(tc.c, target)).To(Equal(tc.want), tc.reason)
	}
}
