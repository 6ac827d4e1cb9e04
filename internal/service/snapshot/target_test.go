package snapshot

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func targetCluster() *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "team-a", UID: "u1"}}
	c.Spec.Version = "2.4.0"
	c.Spec.Upgrade.PreUpgradeSnapshot = baov1.PreUpgradeSnapshotSpec{Policy: baov1.SnapshotAlways, S3: &baov1.S3Target{
		Endpoint: "https://s3.internal:9000", Bucket: "snaps", Prefix: "bao", ForcePathStyle: true,
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"},
	}}
	return c
}

func TestCheckTarget(t *testing.T) {
	c := targetCluster()
	name := CheckJobName(c)
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	failedPrev := &baov1.Precheck{Name: "SnapshotTarget", Result: baov1.PrecheckFailed,
		Message: "the snapshot target s3://snaps/bao (https://s3.internal:9000) is not usable: bucket snaps does not exist at https://s3.internal:9000 (checked from namespace team-a by Job " + name + ")"}
	tests := []struct {
		reason     string
		jobs       map[string]operation.ObservedJob
		prev       *baov1.Precheck
		wantResult baov1.PrecheckResult
		wantMsg    []string
		wantCreate bool
	}{
		{reason: "no Job yet: Pending, and the Job is created",
			wantResult: baov1.PrecheckPending, wantCreate: true,
			wantMsg: []string{"checking from namespace team-a that s3://snaps/bao (https://s3.internal:9000) is reachable (Job " + name + ")"}},
		{reason: "the Job runs: Pending, nothing created",
			jobs:       map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: operation.JobRunning}}},
			wantResult: baov1.PrecheckPending, wantMsg: []string{"checking from namespace team-a"}},
		{reason: "the Job succeeded: Passed, saying from where",
			jobs:       map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: operation.JobSucceeded, FinishedAt: now}}},
			wantResult: baov1.PrecheckPassed, wantMsg: []string{"snapshots go to s3://snaps/bao (https://s3.internal:9000), which is reachable from namespace team-a"}},
		{reason: "the Job failed: Failed with the executor's own words",
			jobs: map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: operation.JobFailed, FinishedAt: now, Message: "BackoffLimitExceeded"},
				Termination: "bucket snaps does not exist at https://s3.internal:9000: create it, or fix spec.upgrade.preUpgradeSnapshot.s3.bucket"}},
			wantResult: baov1.PrecheckFailed,
			wantMsg:    []string{"is not usable: bucket snaps does not exist", "(checked from namespace team-a by Job " + name + ")"}},
		{reason: "a failed Job without a termination message: the Job's own reason",
			jobs:       map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: operation.JobFailed, FinishedAt: now, Message: "DeadlineExceeded: Job was active longer than specified deadline"}}},
			wantResult: baov1.PrecheckFailed, wantMsg: []string{"is not usable: DeadlineExceeded"}},
		{reason: "a Job whose pod cannot start: Failed, naming what to check",
			jobs:       map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: operation.JobRunning}, Stuck: `secret "s3-creds" not found`}},
			wantResult: baov1.PrecheckFailed, wantMsg: []string{`cannot start: secret "s3-creds" not found`, "check spec.upgrade.executor.image and the Secrets"}},
		{reason: "after a failure the Job expired: the failure stays in status while the next check runs, no flapping to Pending",
			prev: failedPrev, wantResult: baov1.PrecheckFailed, wantCreate: true,
			wantMsg: []string{"is not usable: bucket snaps does not exist", "; checking again from namespace team-a (Job " + name + ")"}},
		{reason: "checking again twice does not stack the suffix",
			prev: &baov1.Precheck{Result: baov1.PrecheckFailed, Message: failedPrev.Message + "; checking again from namespace team-a (Job " + name + ")"},
			jobs: map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: operation.JobRunning}}}, wantResult: baov1.PrecheckFailed,
			wantMsg: []string{"is not usable: bucket snaps does not exist"}},
		{reason: "a Job of another target (another hash) is not this one's: a Job of its own is created",
			jobs:       map[string]operation.ObservedJob{"bao-s3check-00000000": {Job: operation.Job{Phase: operation.JobSucceeded}}},
			wantResult: baov1.PrecheckPending, wantCreate: true},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			got := CheckTarget(c, tc.jobs, tc.prev, "ghcr.io/baokeeper/baokeeper:0.2.0")
			g.Expect(got.Precheck.Result).To(Equal(tc.wantResult))
			for _, m := range tc.wantMsg {
				g.Expect(got.Precheck.Message).To(ContainSubstring(m))
			}
			g.Expect(got.Precheck.Message).NotTo(MatchRegexp("checking again.*checking again"))
			g.Expect(got.Create != nil).To(Equal(tc.wantCreate))
		})
	}
}

func TestCheckJob(t *testing.T) {
	g := NewWithT(t)
	c := targetCluster()
	name := CheckJobName(c)
	g.Expect(name).To(MatchRegexp(`^bao-s3check-[0-9a-f]{8}$`))

	changed := targetCluster()
	changed.Spec.Upgrade.PreUpgradeSnapshot.S3.Bucket = "other"
	g.Expect(CheckJobName(changed)).NotTo(Equal(name), "a changed target is checked by a Job of its own")

	job := CheckJob(c, "ghcr.io/baokeeper/baokeeper:0.2.0")
	g.Expect(job.Namespace).To(Equal("team-a"), "the check runs in the cluster's namespace, under its network policy")
	g.Expect(job.Labels).To(HaveKeyWithValue(executorjob.LabelStep, StepCheckTarget))
	g.Expect(*job.Spec.TTLSecondsAfterFinished).To(Equal(CheckTTLSeconds), "an expired outcome makes the check run again")
	pod := job.Spec.Template.Spec
	g.Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
	ctr := pod.Containers[0]
	g.Expect(ctr.Args).To(Equal([]string{"executor", "check-target", "--timeout", CheckTimeout,
		"--s3-endpoint", "https://s3.internal:9000", "--s3-bucket", "snaps", "--s3-path-style"}))
	g.Expect(ctr.Env).To(ConsistOf(
		HaveField("ValueFrom.SecretKeyRef.Name", "s3-creds"), HaveField("ValueFrom.SecretKeyRef.Name", "s3-creds")),
		"the credentials reach the Job from their Secret; the operator never reads them")

	// A CA bundle is mounted and passed, to the check and to the snapshot Job.
	c.Spec.Upgrade.PreUpgradeSnapshot.S3.CABundle = &baov1.SecretKeyRef{Name: "s3-ca", Key: "bundle.pem"}
	for _, j := range []*batchv1.Job{CheckJob(c, "img"), Job(c, &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1"}, 1, "img")} {
		ctr := j.Spec.Template.Spec.Containers[0]
		g.Expect(ctr.Args).To(ContainElements("--s3-ca-file", S3CAFile))
		g.Expect(ctr.VolumeMounts).To(ContainElement(HaveField("MountPath", S3CAMountPath)))
		g.Expect(j.Spec.Template.Spec.Volumes).To(ContainElement(And(
			HaveField("Secret.SecretName", "s3-ca"),
			HaveField("Secret.Items", ConsistOf(HaveField("Key", "bundle.pem"))))))
	}
}
