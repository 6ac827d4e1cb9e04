package upgrade

import (
	"testing"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestDecideRetarget(t *testing.T) {
	const old, target = "openbao/openbao:2.4.0", "openbao/openbao:2.4.1"
	members := func(images ...string) *operation.Cluster {
		c := &operation.Cluster{}
		for i, img := range images {
			c.Members = append(c.Members, operation.Member{Name: []string{"bao-0", "bao-1", "bao-2"}[i], Ordinal: i, PodExists: true, Image: img})
		}
		return c
	}
	up := func(mutate func(*baov1.UpgradeStatus)) *baov1.UpgradeStatus {
		u := &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", TargetImage: target}
		if mutate != nil {
			mutate(u)
		}
		return u
	}
	cases := []struct {
		reason  string
		up      *baov1.UpgradeStatus
		cluster *operation.Cluster
		desired string
		// desiredImage is spec.image resolved; "" leaves it out.
		desiredImage string
		cancel       bool
		finish       bool
		recreate     []string
	}{
		{reason: "the same target: nothing to decide", up: up(nil), cluster: members(old, old, old), desired: "v2.4.1"},
		{reason: "no upgrade: nothing to decide", cluster: members(old, old, old), desired: "2.4.1"},
		{reason: "planned, blocked by a precheck: cancel", up: up(nil), cluster: members(old, old, old), desired: "2.4.0", cancel: true},
		{reason: "snapshot in progress: cancel (the snapshot stays in the store)", up: up(func(u *baov1.UpgradeStatus) {
			u.CurrentStep = &baov1.UpgradeStep{Action: StepTakeSnapshot, Attempts: 1}
		}), cluster: members(old, old, old), desired: "2.5.0", cancel: true},
		{reason: "first member's intent persisted, its pod not deleted: cancel", up: up(func(u *baov1.UpgradeStatus) {
			u.CurrentStep = &baov1.UpgradeStep{Action: StepReplaceMember, Pod: "bao-2"}
		}), cluster: members(old, old, old), desired: "2.4.0", cancel: true},
		{reason: "first member's pod terminating: finish", up: up(func(u *baov1.UpgradeStatus) {
			u.CurrentStep = &baov1.UpgradeStep{Action: StepReplaceMember, Pod: "bao-2"}
		}), cluster: func() *operation.Cluster { c := members(old, old, old); c.Members[2].PodTerminating = true; return c }(), desired: "2.4.0", finish: true},
		{reason: "first member's pod gone: finish", up: up(func(u *baov1.UpgradeStatus) {
			u.CurrentStep = &baov1.UpgradeStep{Action: StepReplaceMember, Pod: "bao-2"}
		}), cluster: func() *operation.Cluster { c := members(old, old, old); c.Members[2].PodExists = false; return c }(), desired: "2.4.0", finish: true},
		{reason: "first member back on the target image: finish", up: up(func(u *baov1.UpgradeStatus) {
			u.CurrentStep = &baov1.UpgradeStep{Action: StepReplaceMember, Pod: "bao-2"}
		}), cluster: members(old, old, target), desired: "2.4.0", finish: true},
		{reason: "a member upgraded: finish", up: up(func(u *baov1.UpgradeStatus) { u.CompletedPods = []string{"bao-2"} }),
			cluster: members(old, old, target), desired: "2.5.0", finish: true},
		{reason: "a member on the target image without a step (a crash restarted it on the new template): finish", up: up(nil),
			cluster: members(old, target, old), desired: "2.4.0", finish: true},
		{reason: "the first member on a target image that was never pulled: cancel, and re-create it on the old image (the wrong target can be undone)",
			up: up(func(u *baov1.UpgradeStatus) {
				u.CurrentStep = &baov1.UpgradeStep{Action: StepReplaceMember, Pod: "bao-2"}
				u.Failure = &baov1.UpgradeFailure{Reason: baov1.FailureStepTimeout}
			}),
			cluster: func() *operation.Cluster { c := members(old, old, target); c.Members[2].NeverStarted = true; return c }(),
			desired: "2.4.0", cancel: true, recreate: []string{"bao-2"}},
		{reason: "a member that ran the target and then crashed: finish (its data may have been migrated)", up: up(func(u *baov1.UpgradeStatus) {
			u.CurrentStep = &baov1.UpgradeStep{Action: StepReplaceMember, Pod: "bao-2"}
		}), cluster: members(old, old, target), desired: "2.4.0", finish: true},
		{reason: "a fixed image at the same version, before any member ran the broken one: cancel", up: up(func(u *baov1.UpgradeStatus) {
			u.CurrentStep = &baov1.UpgradeStep{Action: StepReplaceMember, Pod: "bao-2"}
		}), cluster: func() *operation.Cluster { c := members(old, old, target); c.Members[2].NeverStarted = true; return c }(),
			desired: "2.4.1", desiredImage: "mirror.example/openbao:2.4.1", cancel: true, recreate: []string{"bao-2"}},
		{reason: "the same image at the same version: nothing to decide", up: up(nil), cluster: members(old, old, old), desired: "2.4.1", desiredImage: target},
		{reason: "an unknown step: finish (not provably untouched)", up: up(func(u *baov1.UpgradeStatus) {
			u.CurrentStep = &baov1.UpgradeStep{Action: "SomethingNew", Pod: "bao-2"}
		}), cluster: members(old, old, old), desired: "2.4.0", finish: true},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			r := DecideRetarget(tc.up, tc.cluster, tc.desired, tc.desiredImage)
			g.Expect(r.Cancel).To(Equal(tc.cancel), tc.reason)
			g.Expect(r.Recreate).To(Equal(tc.recreate), tc.reason)
			if tc.cancel {
				g.Expect(r.FromImage).To(Equal(old))
				g.Expect(r.Message).To(ContainSubstring("cancelled"))
			}
			g.Expect(r.Message != "").To(Equal(tc.cancel || tc.finish), tc.reason)
			if tc.finish {
				g.Expect(r.Message).To(ContainSubstring("the upgrade finishes to 2.4.1 first"))
			}
		})
	}
}
