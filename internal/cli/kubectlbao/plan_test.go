package kubectlbao

import (
	"bytes"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func stepMembers(p *Plan) []string {
	out := make([]string, 0, len(p.Steps))
	for _, s := range p.Steps {
		out = append(out, s.Member)
	}
	return out
}

func precheck(p *Plan, name string) baov1.Precheck {
	for _, pc := range p.Prechecks {
		if pc.Name == name {
			return pc
		}
	}
	return baov1.Precheck{}
}

func TestBuildPlanOrder(t *testing.T) {
	// rolling.Plan over status: followers from the highest ordinal down, the leader
	// last, for 3, 5 and 7 members wherever the leader is.
	cases := []struct {
		reason  string
		members []string
		leader  string
		want    []string
	}{
		{reason: "3 members, leader 0", members: []string{"bao-0", "bao-1", "bao-2"}, leader: "bao-0", want: []string{"bao-2", "bao-1", "bao-0"}},
		{reason: "3 members, leader 1", members: []string{"bao-0", "bao-1", "bao-2"}, leader: "bao-1", want: []string{"bao-2", "bao-0", "bao-1"}},
		{reason: "3 members, leader 2", members: []string{"bao-0", "bao-1", "bao-2"}, leader: "bao-2", want: []string{"bao-1", "bao-0", "bao-2"}},
		{reason: "5 members, leader 3", members: []string{"bao-0", "bao-1", "bao-2", "bao-3", "bao-4"}, leader: "bao-3",
			want: []string{"bao-4", "bao-2", "bao-1", "bao-0", "bao-3"}},
		{reason: "7 members, leader 6", members: []string{"bao-0", "bao-1", "bao-2", "bao-3", "bao-4", "bao-5", "bao-6"}, leader: "bao-6",
			want: []string{"bao-5", "bao-4", "bao-3", "bao-2", "bao-1", "bao-0", "bao-6"}},
		{reason: "status lists members by name, the order follows ordinals", members: []string{"bao-2", "bao-0", "bao-1"}, leader: "bao-0",
			want: []string{"bao-2", "bao-1", "bao-0"}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			n := int32(len(tc.members))
			c := newCluster(withReplicas(n), withMembers("2.4.0", tc.leader, tc.members...),
				withVoters(fmtVoters(len(tc.members))))
			p, err := BuildPlan(c, PlanRequest{To: "2.4.1"}, testNow())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(stepMembers(p)).To(Equal(tc.want))
			last := p.Steps[len(p.Steps)-1]
			g.Expect(last.Role).To(Equal("Leader"))
			g.Expect(last.Action).To(ContainSubstring("graceful shutdown hands leadership"), "the default hand-off, Shutdown")
			c.Spec.Upgrade.Rolling.LeaderHandoff = baov1.LeaderHandoffStepDown
			p, err = BuildPlan(c, PlanRequest{To: "2.4.1"}, testNow())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Steps[len(p.Steps)-1].Action).To(ContainSubstring("steps down once"), "leaderHandoff StepDown")
		})
	}
}

func fmtVoters(n int) string { return string(rune('0'+n)) + "/" + string(rune('0'+n)) }

func TestBuildPlanRefuses(t *testing.T) {
	cases := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		req    PlanRequest
		want   string
	}{
		{reason: "a downgrade", c: newCluster(), req: PlanRequest{To: "2.3.9"},
			want: "refused (DowngradeRefused): --to (spec.version) 2.3.9 is older than the running version 2.4.0"},
		{reason: "a version that is not semver", c: newCluster(), req: PlanRequest{To: "2.5"},
			want: "refused (InvalidVersion): --to (spec.version) \"2.5\" is not a semantic version; set it to MAJOR.MINOR.PATCH, for example 2.5.0"},
		{reason: "latest", c: newCluster(), req: PlanRequest{To: "latest"}, want: "InvalidVersion"},
		{reason: "spec.image pinned to the old tag", c: newCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Image = "registry.example/openbao:2.4.0" }),
			req: PlanRequest{To: "2.4.1"}, want: "ImageVersionMismatch"},
		{reason: "the version that runs already", c: newCluster(), req: PlanRequest{To: "2.4.0"}, want: "runs 2.4.0 already"},
		{reason: "a cluster not observed yet", c: newCluster(func(c *baov1.OpenBaoCluster) { c.Status.CurrentVersion = "" }),
			req: PlanRequest{To: "2.4.1"}, want: "no status.currentVersion yet"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			_, err := BuildPlan(tc.c, tc.req, testNow())
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.Is(err, ErrRefused)).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
}

func TestBuildPlanPrechecksAndSnapshot(t *testing.T) {
	cases := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		req    PlanRequest
		check  func(g Gomega, p *Plan)
	}{
		{reason: "a healthy cluster passes every precheck status can show; the snapshot target is left to the operator",
			c: newCluster(), req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
				for _, pc := range p.Prechecks {
					if pc.Name == "SnapshotTarget" {
						g.Expect(pc.Result).To(Equal(baov1.PrecheckPending))
						g.Expect(pc.Message).To(ContainSubstring("Secret bao-s3"))
						continue
					}
					g.Expect(pc.Result).To(Equal(baov1.PrecheckPassed), pc.Name+": "+pc.Message)
				}
				g.Expect(p.Snapshot.Location).To(Equal("s3://snaps/prod (https://s3.example)"))
				g.Expect(p.UndoPath).To(ContainSubstring("set spec.version back to 2.4.0"))
				g.Expect(p.Apply).To(Equal(`kubectl patch openbaocluster bao -n vault --type merge -p '{"spec":{"version":"2.4.1"}}'`))
			}},
		{reason: "an unhealthy voter fails AutopilotHealthy and MembersReady", c: newCluster(withVoters("2/3"), func(c *baov1.OpenBaoCluster) {
			c.Status.Members[2].Healthy, c.Status.Members[2].Ready = false, false
		}), req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
			g.Expect(precheck(p, "AutopilotHealthy").Result).To(Equal(baov1.PrecheckFailed))
			g.Expect(precheck(p, "MembersReady").Message).To(ContainSubstring("bao-2"))
		}},
		{reason: "a 1-member cluster is held by Redundancy", c: newCluster(withReplicas(1), withMembers("2.4.0", "bao-0", "bao-0"), withVoters("1/1")),
			req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
				g.Expect(precheck(p, "Redundancy").Result).To(Equal(baov1.PrecheckFailed))
			}},
		{reason: "across the 2.6.0 boundary VersionCompatibility fails", c: newCluster(), req: PlanRequest{To: "2.6.0"}, check: func(g Gomega, p *Plan) {
			g.Expect(precheck(p, "VersionCompatibility").Result).To(Equal(baov1.PrecheckFailed))
			g.Expect(precheck(p, "VersionCompatibility").Message).To(ContainSubstring("set spec.upgrade.strategy to Offline"))
			g.Expect(p.Warnings).To(ContainElement(ContainSubstring("skips 1 minor version (2.5)")))
		}},
		{reason: "across the 2.6.0 boundary with strategy Offline: passes, every member stops together, and the undo names the stop",
			c: newCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Strategy = baov1.OfflineStrategy }), req: PlanRequest{To: "2.6.0"}, check: func(g Gomega, p *Plan) {
				g.Expect(precheck(p, "VersionCompatibility").Result).To(Equal(baov1.PrecheckPassed))
				g.Expect(precheck(p, "VersionCompatibility").Message).To(ContainSubstring("never run side by side"))
				g.Expect(p.Steps).To(HaveLen(3))
				g.Expect(p.Steps[0].Action).To(ContainSubstring("stops with every other member, then starts on ghcr.io/openbao/openbao:2.6.0"))
				g.Expect(p.UndoPath).To(ContainSubstring("status.upgrade.offline.stoppedAt"))
			}},
		{reason: "to the first 2.6 release with the forwarding fix VersionCompatibility passes", c: newCluster(), req: PlanRequest{To: "2.6.3"}, check: func(g Gomega, p *Plan) {
			g.Expect(precheck(p, "VersionCompatibility").Result).To(Equal(baov1.PrecheckPassed))
		}},
		{reason: "no target under Always fails SnapshotTarget", c: newCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.PreUpgradeSnapshot.S3 = nil }),
			req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
				g.Expect(precheck(p, "SnapshotTarget").Result).To(Equal(baov1.PrecheckFailed))
				g.Expect(p.Snapshot.Note).To(ContainSubstring("no target is set"))
			}},
		{reason: "Never takes no snapshot", c: newCluster(withSnapshotPolicy(baov1.SnapshotNever)), req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
			g.Expect(precheck(p, "SnapshotTarget").Result).To(Equal(baov1.PrecheckPassed))
			g.Expect(p.Snapshot.Location).To(BeEmpty())
			g.Expect(p.Snapshot.Note).To(ContainSubstring("no snapshot is taken"))
		}},
		{reason: "another operation's lock fails OperationLock", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Status.OperationLock = &baov1.OperationLock{Operation: "Scaling", Message: "adding bao-3"}
		}), req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
			g.Expect(precheck(p, "OperationLock").Message).To(ContainSubstring("operation Scaling holds the cluster (adding bao-3)"))
		}},
		{reason: "an image change at the same version is a plan of its own", c: newCluster(), req: PlanRequest{To: "2.4.0", Image: "mirror.example/openbao:2.4.0"},
			check: func(g Gomega, p *Plan) {
				g.Expect(p.ImageOnly).To(BeTrue())
				g.Expect(p.UndoPath).To(ContainSubstring("set spec.image back to the image the members ran before (ghcr.io/openbao/openbao:2.4.0)"))
				g.Expect(p.Apply).To(ContainSubstring(`"image":"mirror.example/openbao:2.4.0"`))
			}},
		{reason: "break-glass, pause and a running upgrade are noted", c: newCluster(withRollingUpgrade(), withPaused(true), withBreakGlass("n1")),
			req: PlanRequest{To: "2.4.2"}, check: func(g Gomega, p *Plan) {
				g.Expect(p.Notes).To(ContainElement(ContainSubstring("break-glass is active")))
				g.Expect(p.Notes).To(ContainElement(ContainSubstring("spec.upgrade.paused is true")))
				g.Expect(p.Notes).To(ContainElement(ContainSubstring("has replaced a member: it finishes first")))
			}},
		{reason: "outside every maintenance window: when the next opens, and the order after other clusters", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "@yearly", Duration: "1h"}}
			c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "bao", Namespace: "staging", Soak: baov1.DurationOf(time.Hour)}}
		}), req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
			g.Expect(p.Notes).To(ContainElement(ContainSubstring("outside every maintenance window: the upgrade would be planned and wait until the next opens at ")))
			g.Expect(p.Notes).To(ContainElement(ContainSubstring("ordered after staging/bao (spec.upgrade.after)")))
		}},
		{reason: "inside a window: until when", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "* * * * *", Duration: "2m"}}
		}), req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
			g.Expect(p.Notes).To(ContainElement(ContainSubstring("inside a maintenance window until ")))
			g.Expect(p.Notes).To(ContainElement(ContainSubstring("spec.upgrade.windowEnd (Pause) says what it does")))
		}},
		{reason: "a rolled-back target needs a retry", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Status.LastRollback = &baov1.RollbackRecord{FromVersion: "2.4.0", TargetVersion: "2.4.1", Reason: "requested"}
		}), req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
			g.Expect(p.Notes).To(ContainElement(ContainSubstring("kubectl bao retry bao -n vault")))
		}},
		{reason: "blue-green: green's members and the phases, rollback until green leads", c: newCluster(withStrategy(baov1.BlueGreenStrategy)),
			req: PlanRequest{To: "2.4.1"}, check: func(g Gomega, p *Plan) {
				g.Expect(stepMembers(p)).To(Equal([]string{"bao-<id>-0", "bao-<id>-1", "bao-<id>-2"}))
				g.Expect(p.Phases[0]).To(Equal("DeployGreen"))
				g.Expect(p.Phases).To(ContainElement("AwaitPromotion"))
				g.Expect(p.UndoPath).To(ContainSubstring("kubectl bao rollback bao -n vault"))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			p, err := BuildPlan(tc.c, tc.req, testNow())
			g.Expect(err).NotTo(HaveOccurred())
			tc.check(g, p)
		})
	}
}

func TestRenderPlanGolden(t *testing.T) {
	cases := []struct {
		reason, file string
		c            *baov1.OpenBaoCluster
	}{
		{reason: "rolling, leader 1", file: "plan-rolling.golden", c: newCluster(withLeader("bao-1"))},
		{reason: "blue-green", file: "plan-bluegreen.golden", c: newCluster(withStrategy(baov1.BlueGreenStrategy))},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			p, err := BuildPlan(tc.c, PlanRequest{To: "2.4.1"}, testNow())
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := RenderPlan(&b, p); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, b.String())
		})
	}
}
