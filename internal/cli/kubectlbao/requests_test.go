package kubectlbao

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/snapshot"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/upgrade/bluegreen"
)

func TestDecide(t *testing.T) {
	failed := func(c *baov1.OpenBaoCluster) {
		withRollingUpgrade()(c)
		withUpgradeFailure(baov1.FailureStepTimeout)(c)
	}
	cases := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		in     DecideInput
		write  bool
		noop   bool
		want   string // in Why when nothing is written, in Next otherwise
		warn   string
	}{
		// promote: only while the upgrade holds for it.
		{reason: "promote at the hold is written", c: newCluster(withBlueGreen(baov1.BlueGreenAwaitPromotion, baov1.PromotionWaiting)),
			in: DecideInput{Control: ControlPromote}, write: true, want: "green bao-1a2b3c4d gets the votes"},
		{reason: "promote before the hold is refused: a value set now releases nothing", c: newCluster(withBlueGreen(baov1.BlueGreenSync, baov1.PromotionPending)),
			in: DecideInput{Control: ControlPromote}, want: "no promotion is awaited: the blue-green upgrade is in phase Sync and does not wait for promotion yet"},
		{reason: "promote with autoPromote says none will be awaited", c: newCluster(withBlueGreen(baov1.BlueGreenSync, baov1.PromotionPending),
			func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.BlueGreen.AutoPromote = true }),
			in: DecideInput{Control: ControlPromote}, want: "autoPromote is true, so none will be"},
		{reason: "promote after the release is refused", c: newCluster(withBlueGreen(baov1.BlueGreenPromoteGreen, baov1.PromotionRequested)),
			in: DecideInput{Control: ControlPromote}, want: "is already released for promotion (Requested)"},
		{reason: "promote of a rolling upgrade is refused", c: newCluster(withRollingUpgrade()),
			in: DecideInput{Control: ControlPromote}, want: "a rolling upgrade needs no promotion"},
		{reason: "promote without an upgrade is refused", c: newCluster(),
			in: DecideInput{Control: ControlPromote}, want: "none runs"},
		{reason: "promote during break-glass is written with a warning", c: newCluster(withBlueGreen(baov1.BlueGreenAwaitPromotion, baov1.PromotionWaiting), withBreakGlass("n1")),
			in: DecideInput{Control: ControlPromote}, write: true, want: "PromoteGreen", warn: "nothing moves until break-glass is acknowledged"},

		// rollback: only before the point of no return.
		{reason: "rollback before green leads is written", c: newCluster(withBlueGreen(baov1.BlueGreenSync, baov1.PromotionPending)),
			in: DecideInput{Control: ControlRollback}, write: true, want: "status.currentVersion stays 2.4.0"},
		{reason: "rollback of a failed blue-green upgrade clears the failure", c: newCluster(withBlueGreen(baov1.BlueGreenPromoteGreen, baov1.PromotionRequested),
			func(c *baov1.OpenBaoCluster) {
				c.Status.Upgrade.Failure = &baov1.UpgradeFailure{Reason: baov1.FailurePromoteFailed}
			}),
			in: DecideInput{Control: ControlRollback}, write: true, want: "The failure (PromoteFailed) is cleared"},
		{reason: "rollback past the point of no return is refused with the snapshot", c: newCluster(withBlueGreen(baov1.BlueGreenCutover, baov1.PromotionRequested),
			func(c *baov1.OpenBaoCluster) { c.Status.LastSnapshot = receipt() }),
			in: DecideInput{Control: ControlRollback}, want: "the point of no return"},
		{reason: "rollback while a green member leads is refused", c: newCluster(withBlueGreen(baov1.BlueGreenTransferLeadership, baov1.PromotionRequested), withLeader("bao-1a2b3c4d-1")),
			in: DecideInput{Control: ControlRollback}, want: "has led"},
		{reason: "rollback during the step-down is refused", c: newCluster(withBlueGreen(baov1.BlueGreenTransferLeadership, baov1.PromotionRequested),
			func(c *baov1.OpenBaoCluster) {
				c.Status.BlueGreen.CurrentStep = &baov1.UpgradeStep{Action: bluegreen.StepStepDown, Pod: "bao-0"}
			}), in: DecideInput{Control: ControlRollback}, want: "the step-down of blue leader bao-0 is in flight"},
		{reason: "rollback of a rolling upgrade is refused", c: newCluster(withRollingUpgrade()),
			in: DecideInput{Control: ControlRollback}, want: "it applies to blue-green upgrades only"},

		// retry: only after a failure or a rollback.
		{reason: "retry after a failure is written", c: newCluster(failed),
			in: DecideInput{Control: ControlRetry}, write: true, want: "clears status.upgrade.failure (StepTimeout on bao-1"},
		{reason: "retry of a failed validation runs the hook again", c: newCluster(withRollingUpgrade(), withUpgradeFailure(baov1.FailureValidationFailed)),
			in: DecideInput{Control: ControlRetry}, write: true, want: "The validation hook runs once more"},
		{reason: "retry after a rollback lets the target start again", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Status.LastRollback = &baov1.RollbackRecord{FromVersion: "2.4.0", TargetVersion: "2.4.1"}
		}), in: DecideInput{Control: ControlRetry}, write: true, want: "The upgrade to 2.4.1 may start again"},
		{reason: "retry after a failed scaling is written", c: newCluster(func(c *baov1.OpenBaoCluster) {
			c.Status.Scaling = &baov1.ScalingStatus{TargetReplicas: 5, Failure: &baov1.UpgradeFailure{Reason: baov1.FailureScalingJobFailed, Pod: "bao-3"}}
		}), in: DecideInput{Control: ControlRetry}, write: true, want: "clears status.scaling.failure (ScalingJobFailed on bao-3"},
		{reason: "retry of an upgrade that did not fail is refused", c: newCluster(withRollingUpgrade()),
			in: DecideInput{Control: ControlRetry}, want: "nothing has failed"},
		{reason: "retry with nothing running is refused", c: newCluster(),
			in: DecideInput{Control: ControlRetry}, want: "no upgrade or scaling runs, so there is nothing to retry"},

		// pause and resume change spec.upgrade.paused only when it differs.
		{reason: "pause of a rolling upgrade names the member in progress", c: newCluster(withRollingUpgrade()),
			in: DecideInput{Control: ControlPause}, write: true, want: "The member in progress (bao-1) finishes"},
		{reason: "pause without an upgrade holds the next one", c: newCluster(),
			in: DecideInput{Control: ControlPause}, write: true, want: "holds before its snapshot"},
		{reason: "pause of a blue-green upgrade holds before the next step", c: newCluster(withBlueGreen(baov1.BlueGreenPromoteGreen, baov1.PromotionRequested)),
			in: DecideInput{Control: ControlPause}, write: true, want: "holds before its next executor step"},
		{reason: "pause does not hold a rollback, and says so", c: newCluster(withBlueGreen(baov1.BlueGreenRollbackDemoteGreen, baov1.PromotionPending)),
			in: DecideInput{Control: ControlPause}, write: true, want: "recorded for the next upgrade", warn: "does not hold a rollback"},
		{reason: "pause while paused writes nothing", c: newCluster(withPaused(true)),
			in: DecideInput{Control: ControlPause}, noop: true, want: "true already"},
		{reason: "resume of a paused upgrade is written", c: newCluster(withRollingUpgrade(), withPaused(true)),
			in: DecideInput{Control: ControlResume}, write: true, want: "goes on from where the upgrade held"},
		{reason: "resume while not paused writes nothing", c: newCluster(),
			in: DecideInput{Control: ControlResume}, noop: true, want: "nothing is paused"},
		// --annotation: the baokeeper.dev/pause annotation, beside the spec.
		{reason: "pause --annotation is written", c: newCluster(withRollingUpgrade()),
			in: DecideInput{Control: ControlPause, Annotation: true}, write: true, want: "finishes; the upgrade holds before the next one"},
		{reason: "pause --annotation while the annotation pauses writes nothing", c: newCluster(withPauseAnnotation()),
			in: DecideInput{Control: ControlPause, Annotation: true}, noop: true, want: "the baokeeper.dev/pause annotation is set already"},
		{reason: "resume of spec.upgrade.paused while the annotation also pauses says it still holds", c: newCluster(withRollingUpgrade(), withPaused(true), withPauseAnnotation()),
			in: DecideInput{Control: ControlResume}, write: true, want: "Nothing goes on yet",
			warn: "the baokeeper.dev/pause annotation still pauses the cluster: resume it too (kubectl bao resume bao --annotation -n vault)"},
		{reason: "resume while only the annotation pauses names it", c: newCluster(withPauseAnnotation()),
			in: DecideInput{Control: ControlResume}, noop: true, want: "the baokeeper.dev/pause annotation still pauses it: kubectl bao resume bao --annotation -n vault"},
		{reason: "resume --annotation is written", c: newCluster(withRollingUpgrade(), withPauseAnnotation()),
			in: DecideInput{Control: ControlResume, Annotation: true}, write: true, want: "goes on from where the upgrade held"},

		// break-glass ack: only the current nonce of an active break-glass.
		{reason: "the current nonce is written and names the field manager", c: newCluster(withBreakGlass("n1")),
			in: DecideInput{Control: ControlBreakGlassAck, Nonce: "n1", FieldManager: "kubectl-bao/alice"}, write: true, want: "acknowledgedBy (kubectl-bao/alice"},
		{reason: "a wrong nonce is refused", c: newCluster(withBreakGlass("n1")),
			in: DecideInput{Control: ControlBreakGlassAck, Nonce: "n0"}, want: `"n0" is not the current nonce (status.breakGlass.nonce)`},
		{reason: "a nonce without break-glass is refused", c: newCluster(),
			in: DecideInput{Control: ControlBreakGlassAck, Nonce: "n1"}, want: "break-glass is not active"},
		{reason: "the old nonce of an acknowledged break-glass is refused", c: newCluster(withBreakGlass("n1"), func(c *baov1.OpenBaoCluster) { c.Status.BreakGlass.Active = false }),
			in: DecideInput{Control: ControlBreakGlassAck, Nonce: "n1"}, want: "break-glass is not active"},

		// recover-quorum: break-glass MajorityLost, its nonce and its survivor only.
		{reason: "recover-quorum from the survivor with the nonce is written, with what it loses", c: newCluster(withMajorityLost("n1")),
			in: DecideInput{Control: ControlRecoverQuorum, From: "bao-0", Nonce: "n1", FieldManager: "kubectl-bao/alice"}, write: true,
			want: "a Job on bao-0's node writes peers.json", warn: "what a recovery from bao-0 loses: nothing acknowledged is lost"},
		{reason: "recover-quorum from another survivor is refused with the best one", c: newCluster(withMajorityLost("n1")),
			in: DecideInput{Control: ControlRecoverQuorum, From: "bao-2", Nonce: "n1"}, want: "bao-2 is not the most up-to-date survivor: bao-0 holds committed index 90 (bao-2: 80)"},
		{reason: "recover-quorum with a stale nonce is refused and names the current one", c: newCluster(withMajorityLost("n1")),
			in: DecideInput{Control: ControlRecoverQuorum, From: "bao-0", Nonce: "n0"}, want: "survivor bao-0, nonce n1"},
		{reason: "recover-quorum while a majority answers is refused", c: newCluster(),
			in: DecideInput{Control: ControlRecoverQuorum, From: "bao-0", Nonce: "n1"}, want: "no majority of voters is known lost"},
		{reason: "recover-quorum during an upgrade's break-glass is refused", c: newCluster(withRollingUpgrade(), withBreakGlass("n1")),
			in: DecideInput{Control: ControlRecoverQuorum, From: "bao-0", Nonce: "n1"}, want: "is in progress, and it watches its own quorum"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			tc.in.Now = testNow()
			v := Decide(tc.c, tc.in)
			g.Expect(v.Write).To(Equal(tc.write), "write: %+v", v)
			g.Expect(v.Noop).To(Equal(tc.noop), "noop: %+v", v)
			if tc.write {
				g.Expect(v.Next).To(ContainSubstring(tc.want))
				g.Expect(v.Why).To(BeEmpty())
			} else {
				g.Expect(v.Why).To(ContainSubstring(tc.want))
			}
			if tc.warn != "" {
				g.Expect(v.Warnings).To(ContainElement(ContainSubstring(tc.warn)))
			} else {
				g.Expect(v.Warnings).To(BeEmpty())
			}
			g.Expect(v.Why).NotTo(HavePrefix("Ignoring"), "the operator's event prefix is dropped")
		})
	}
}

// TestDecideAgreesWithTheOperator checks the promote verdict against the operator's
// own rule over every phase and promotion state: the plugin writes exactly when
// bluegreen.AcceptsPromote would release the hold.
func TestDecideAgreesWithTheOperator(t *testing.T) {
	phases := append(bluegreen.Phases(), bluegreen.RollbackPhases()...)
	states := []baov1.PromotionState{baov1.PromotionPending, baov1.PromotionWaiting, baov1.PromotionRequested, baov1.PromotionAutomatic}
	for _, ph := range phases {
		for _, st := range states {
			c := newCluster(withBlueGreen(ph, st))
			v := Decide(c, DecideInput{Control: ControlPromote, Now: testNow()})
			if v.Write != bluegreen.AcceptsPromote(c.Status.BlueGreen) {
				t.Errorf("phase %s, promotion %s: the plugin writes=%t, the operator accepts=%t", ph, st, v.Write, !v.Write)
			}
		}
	}
}

type fixedReader struct{ b []byte }

func (r *fixedReader) Read(p []byte) (int, error) { return copy(p, r.b), nil }

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestNewToken(t *testing.T) {
	g := NewWithT(t)
	tok, err := NewToken(testNow(), &fixedReader{b: []byte{0x3f, 0xa9, 0xc2, 0xd1}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tok).To(Equal("1796119200-3fa9c2d1"))
	g.Expect(upgrade.ValidateRequestValue(tok)).To(Succeed(), "the operator accepts the value")

	a, err := NewToken(testNow(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := NewToken(testNow(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).NotTo(Equal(b), "crypto/rand by default: two tokens of the same second differ")

	_, err = NewToken(testNow(), failingReader{})
	g.Expect(err).To(MatchError(ContainSubstring("failed to draw a random token: no entropy")))
}

func TestValue(t *testing.T) {
	cases := []struct {
		reason  string
		c       *baov1.OpenBaoCluster
		ctl     Control
		src     []byte
		want    string
		wantErr string
	}{
		{reason: "break-glass ack writes the nonce", c: newCluster(withBreakGlass("n1")), ctl: ControlBreakGlassAck, want: "n1"},
		{reason: "recover-quorum writes the nonce (after the survivor, Verdict.ValuePrefix)", c: newCluster(withMajorityLost("n1")), ctl: ControlRecoverQuorum, want: "n1"},
		{reason: "pause writes no annotation", c: newCluster(), ctl: ControlPause, want: ""},
		{reason: "promote draws a token", c: newCluster(), ctl: ControlPromote, src: []byte{1, 2, 3, 4}, want: "1796119200-01020304"},
		{reason: "a token equal to the annotation's current value is drawn again, and fails when it cannot differ",
			c: newCluster(func(c *baov1.OpenBaoCluster) {
				c.Annotations = map[string]string{baov1.AnnotationRetry: "1796119200-01020304"}
			}),
			ctl: ControlRetry, src: []byte{1, 2, 3, 4}, wantErr: "differs from baokeeper.dev/retry's current value"},
		{reason: "a token equal to the last handled value is drawn again",
			c:   newCluster(func(c *baov1.OpenBaoCluster) { c.Status.Requests.Rollback = "1796119200-01020304" }),
			ctl: ControlRollback, src: []byte{1, 2, 3, 4}, wantErr: "differs"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Value(tc.c, tc.ctl, "n1", testNow(), &fixedReader{b: tc.src})
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestSet(t *testing.T) {
	cases := []struct {
		reason string
		ctl    Control
		check  func(g Gomega, c *baov1.OpenBaoCluster)
	}{
		{reason: "promote sets its annotation", ctl: ControlPromote, check: func(g Gomega, c *baov1.OpenBaoCluster) {
			g.Expect(c.Annotations).To(HaveKeyWithValue(baov1.AnnotationPromote, "v"))
		}},
		{reason: "break-glass ack sets its annotation", ctl: ControlBreakGlassAck, check: func(g Gomega, c *baov1.OpenBaoCluster) {
			g.Expect(c.Annotations).To(HaveKeyWithValue(baov1.AnnotationBreakGlassAck, "v"))
		}},
		{reason: "pause sets spec.upgrade.paused and no annotation", ctl: ControlPause, check: func(g Gomega, c *baov1.OpenBaoCluster) {
			g.Expect(c.Spec.Upgrade.Paused).To(BeTrue())
			g.Expect(c.Annotations).To(BeEmpty())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			c := newCluster()
			Set(c, tc.ctl, "v")
			tc.check(NewWithT(t), c)
		})
	}
	g := NewWithT(t)
	c := newCluster(withPaused(true))
	Set(c, ControlResume, "")
	g.Expect(c.Spec.Upgrade.Paused).To(BeFalse())
	g.Expect(ControlPause.Field()).To(Equal("spec.upgrade.paused"))
	g.Expect(ControlRetry.Field()).To(Equal("metadata.annotations[baokeeper.dev/retry]"))
}

func TestRenderResult(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	var b bytes.Buffer
	g.Expect(RenderResult(&b, &RequestResult{Cluster: "vault/bao", Control: ControlRetry, Field: ControlRetry.Field(), Value: "1-ab",
		FieldManager: "kubectl-bao/alice", Written: true, Next: "the operator retries", Warnings: []string{"mind it"}, Follow: Follow(c)})).To(Succeed())
	out := b.String()
	g.Expect(out).To(HavePrefix("Set metadata.annotations[baokeeper.dev/retry]=1-ab on openbaocluster vault/bao (field manager kubectl-bao/alice).\n"))
	g.Expect(out).To(ContainSubstring("Warning: mind it\nNext: the operator retries\nFollow it:\n  kubectl bao status bao -n vault\n"))

	b.Reset()
	g.Expect(RenderResult(&b, &RequestResult{Cluster: "vault/bao", Control: ControlPause, Next: "spec.upgrade.paused is true already", Follow: Follow(c)})).To(Succeed())
	g.Expect(strings.SplitN(b.String(), "\n", 2)[0]).To(Equal("Nothing to write on openbaocluster vault/bao: spec.upgrade.paused is true already."))
}

// kubectl bao restart writes exactly when the operator accepts the request, with the
// operator's own rule (upgrade.DecideRestart) over the same table of states.
func TestDecideRestartAgreesWithTheOperator(t *testing.T) {
	cases := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		write  bool
		want   string
	}{
		{reason: "at rest: written", c: newCluster(), write: true, want: "the rollout then restarts every member"},
		{reason: "during an upgrade: written and queued", c: newCluster(withRollingUpgrade(), func(c *baov1.OpenBaoCluster) {
			c.Status.OperationLock = &baov1.OperationLock{Operation: "RollingUpgrade", Message: "rolling upgrade from 2.4.0 to 2.4.1"}
		}), write: true, want: "It is queued: RollingUpgrade runs now"},
		{reason: "during break-glass: refused, nothing written", c: newCluster(withBreakGlass("n1")), want: "break-glass is active"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			v := Decide(tc.c, DecideInput{Control: ControlRestart, Now: testNow()})
			g.Expect(v.Write).To(Equal(tc.write), tc.reason)
			g.Expect(v.Write).To(Equal(upgrade.DecideRestart(tc.c, "t").Accept), "the plugin writes exactly when the operator accepts")
			g.Expect(v.Next + v.Why).To(ContainSubstring(tc.want))
		})
	}
}

// kubectl bao snapshot writes exactly when the operator accepts the request, with
// the operator's own rule (snapshot.DecideRequest), and --wait reads the outcome
// from status.
func TestDecideSnapshot(t *testing.T) {
	bucket := func(c *baov1.OpenBaoCluster) {
		c.Spec.Snapshots.S3 = &baov1.S3Target{Endpoint: "https://s3.internal", Bucket: "snaps", Prefix: "p"}
	}
	cases := []struct {
		reason string
		c      *baov1.OpenBaoCluster
		write  bool
		want   string
	}{
		{reason: "at rest with a bucket: written", c: newCluster(bucket), write: true, want: "into s3://snaps/p/"},
		{reason: "during an upgrade: written and queued", c: newCluster(bucket, withRollingUpgrade(), func(c *baov1.OpenBaoCluster) {
			c.Status.OperationLock = &baov1.OperationLock{Operation: "RollingUpgrade", Message: "rolling upgrade from 2.4.0 to 2.4.1"}
		}), write: true, want: "It is queued: RollingUpgrade runs now"},
		{reason: "no bucket: refused, nothing written", c: newCluster(func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.PreUpgradeSnapshot.S3 = nil }),
			want: "the cluster has no snapshot bucket; set spec.snapshots.s3"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			v := Decide(tc.c, DecideInput{Control: ControlSnapshot, Now: testNow()})
			g.Expect(v.Write).To(Equal(tc.write), tc.reason)
			g.Expect(v.Write).To(Equal(snapshot.DecideRequest(tc.c, "t").Accept), "the plugin writes exactly when the operator accepts")
			g.Expect(v.Next + v.Why).To(ContainSubstring(tc.want))
		})
	}
}

func TestSnapshotOutcome(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	r, err := SnapshotOutcome(c, "t1")
	g.Expect(r).To(BeNil())
	g.Expect(err).NotTo(HaveOccurred(), "not handled yet: pending")
	c.Status.Requests.Snapshot = "t1"
	c.Status.Snapshots = &baov1.SnapshotsStatus{Requested: "t1"}
	r, err = SnapshotOutcome(c, "t1")
	g.Expect(r).To(BeNil())
	g.Expect(err).NotTo(HaveOccurred(), "queued: pending")
	c.Status.Snapshots = &baov1.SnapshotsStatus{Taken: []baov1.SnapshotReceipt{{Location: "s3://b/other", Request: "t0"}, {Location: "s3://b/k", Request: "t1"}}}
	r, err = SnapshotOutcome(c, "t1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Location).To(Equal("s3://b/k"))
	c.Status.Snapshots = &baov1.SnapshotsStatus{LastFailure: &baov1.SnapshotFailure{Request: "t1", Message: "AccessDenied"}}
	_, err = SnapshotOutcome(c, "t1")
	g.Expect(err).To(MatchError(ContainSubstring("AccessDenied")))
	c.Status.Snapshots = &baov1.SnapshotsStatus{}
	_, err = SnapshotOutcome(c, "t1")
	g.Expect(err).To(MatchError(ContainSubstring("without taking a snapshot for it")), "handled and gone: refused")
}

// TestRecoverQuorumValue: the written value is MEMBER:NONCE, the form the operator
// parses (quorum.ParseRecoverRequest), and nothing else.
func TestRecoverQuorumValue(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(withMajorityLost("n1"))
	v := Decide(c, DecideInput{Control: ControlRecoverQuorum, From: "bao-0", Nonce: "n1", Now: testNow()})
	g.Expect(v.Write).To(BeTrue(), v.Why)
	value, err := Value(c, ControlRecoverQuorum, "n1", testNow(), failingReader{})
	g.Expect(err).NotTo(HaveOccurred(), "no random token is drawn")
	g.Expect(v.ValuePrefix + value).To(Equal("bao-0:n1"))
}
