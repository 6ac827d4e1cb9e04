package snapshot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
)

// Labels and settings of snapshot Jobs.
const (
	// StepSnapshot is the executorjob.LabelStep value of snapshot Jobs.
	StepSnapshot = "snapshot"
	// StepPrune is the executorjob.LabelStep value of prune Jobs, and ActionPrune
	// the executor action they run.
	StepPrune   = "prune"
	ActionPrune = "prune"
	// PruneActiveDeadlineSeconds bounds a prune Job: a listing and some deletions.
	PruneActiveDeadlineSeconds int64 = 600
	// ActiveDeadlineSeconds bounds one snapshot Job: streaming and reading back a
	// large Raft snapshot takes a while, a stuck one must not hold the upgrade
	// forever.
	ActiveDeadlineSeconds int64 = 1800
	// MemoryLimit of the snapshot container: one multipart part buffer (PartSize)
	// plus the process.
	MemoryLimit = "256Mi"
	// PartSize of the multipart upload.
	PartSize = 16 << 20
	// EnvAccessKeyID and EnvSecretAccessKey are the keys of the credentials Secret,
	// and the environment variables the Job gets them in.
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
)

// JobName is the deterministic name of the snapshot Job of one attempt of one
// upgrade: <cluster>-snapshot-<upgrade>-<attempt>, where <upgrade> is the upgrade's
// start time in seconds, base 36, so a finished Job of an earlier upgrade (kept for
// its TTL) is never mistaken for this one's. Cut with a hash when longer than 63
// characters.
func JobName(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus, attempt int32) string {
	var id int64
	if up.StartedAt != nil {
		id = up.StartedAt.Unix()
	}
	return executorjob.BoundedName(fmt.Sprintf("%s-%s-%s-%d", c.Name, StepSnapshot, strconv.FormatInt(id, 36), attempt))
}

// ObjectKey is where attempt N of the upgrade's snapshot goes:
// <prefix>/<namespace>/<cluster>/<from>-to-<target>-<startedAt>-<attempt>.snap.
// It depends only on persisted status, so it is the same after a restart.
func ObjectKey(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus, attempt int32) string {
	started := time.Time{}
	if up.StartedAt != nil {
		started = up.StartedAt.UTC()
	}
	name := fmt.Sprintf("%s/%s/%s-to-%s-%s-%d.snap", c.Namespace, c.Name, up.FromVersion, up.TargetVersion,
		started.Format("20060102T150405Z"), attempt)
	if p := strings.Trim(c.Spec.Upgrade.PreUpgradeSnapshot.S3.Prefix, "/"); p != "" {
		return p + "/" + name
	}
	return name
}

// Location is the URL of an object: s3://<bucket>/<key>.
func Location(bucket, key string) string { return "s3://" + bucket + "/" + key }

// Job builds the snapshot Job of attempt N. c.Spec.Upgrade.PreUpgradeSnapshot.S3
// must be set.
func Job(c *baov1.OpenBaoCluster, up *baov1.UpgradeStatus, attempt int32, image string) *batchv1.Job {
	return takeJob(c, c.Spec.Upgrade.PreUpgradeSnapshot.S3, JobName(c, up, attempt), "", ObjectKey(c, up, attempt), image)
}

// takeJob is the Job that streams a snapshot to key in s3 and verifies it.
func takeJob(c *baov1.OpenBaoCluster, s3 *baov1.S3Target, name, opID, key, image string) *batchv1.Job {
	args := append([]string{
		"executor", "snapshot",
		"--members", strings.Join(executorjob.MemberAddresses(c), ","),
		"--ca-file", executorjob.CAFile,
		"--token-file", executorjob.TokenFile,
		"--s3-key", key,
	}, targetArgs(s3)...)
	vols, mounts := targetVolumes(s3)
	return executorjob.ExecutorJob(c, executorjob.ExecutorJobSpec{
		Name: name, Step: StepSnapshot, Operation: opID, Image: image, Args: args,
		Env:                   targetEnv(s3),
		Volumes:               vols,
		VolumeMounts:          mounts,
		ActiveDeadlineSeconds: ActiveDeadlineSeconds,
		MemoryLimit:           MemoryLimit,
	})
}

// Folder is where every snapshot object of the cluster goes in its target:
// <prefix>/<namespace>/<cluster>/. Retention lists and prunes this folder only.
func Folder(c *baov1.OpenBaoCluster, s3 *baov1.S3Target) string {
	name := fmt.Sprintf("%s/%s/", c.Namespace, c.Name)
	if p := strings.Trim(s3.Prefix, "/"); p != "" {
		return p + "/" + name
	}
	return name
}

// RunJobName is the name of the Job of a scheduled or requested snapshot run's
// step: <cluster>-snapshot-<run id>-<attempt> (the take) or
// <cluster>-prune-<run id> (the pruning).
func RunJobName(c *baov1.OpenBaoCluster, run *baov1.SnapshotRun) string {
	if run.Step == baov1.SnapshotRunPrune {
		return executorjob.BoundedName(fmt.Sprintf("%s-%s-%s", c.Name, StepPrune, run.ID))
	}
	return executorjob.BoundedName(fmt.Sprintf("%s-%s-%s-%d", c.Name, StepSnapshot, run.ID, run.Attempts))
}

// RunObjectKey is where attempt N of a run writes:
// <folder><trigger>-<version>-<startedAt>-<attempt>.snap, for example
// scheduled-2.4.0-20261206T120000Z-1.snap. It depends only on persisted status.
func RunObjectKey(c *baov1.OpenBaoCluster, s3 *baov1.S3Target, run *baov1.SnapshotRun, version string) string {
	started := time.Time{}
	if run.StartedAt != nil {
		started = run.StartedAt.UTC()
	}
	if version == "" {
		version = "unknown"
	}
	return fmt.Sprintf("%s%s-%s-%s-%d.snap", Folder(c, s3), strings.ToLower(string(run.Trigger)), version,
		started.Format("20060102T150405Z"), run.Attempts)
}

// RunJob builds the Job of the run's current step and attempt.
func RunJob(c *baov1.OpenBaoCluster, s3 *baov1.S3Target, run *baov1.SnapshotRun, version string, protected []string, r Retention, image string) *batchv1.Job {
	if run.Step != baov1.SnapshotRunPrune {
		return takeJob(c, s3, RunJobName(c, run), run.ID, RunObjectKey(c, s3, run, version), image)
	}
	args := append([]string{"executor", ActionPrune, "--s3-folder", Folder(c, s3)}, targetArgs(s3)...)
	if r.Count > 0 {
		args = append(args, "--keep-count", strconv.Itoa(r.Count))
	}
	if r.MaxAge > 0 {
		args = append(args, "--max-age", r.MaxAge.String())
	}
	for _, k := range protected {
		args = append(args, "--protect", k)
	}
	vols, mounts := targetVolumes(s3)
	return executorjob.ExecutorJob(c, executorjob.ExecutorJobSpec{
		Name: RunJobName(c, run), Step: StepPrune, Operation: run.ID, Image: image, Args: args,
		Env:                   targetEnv(s3),
		Volumes:               vols,
		VolumeMounts:          mounts,
		ActiveDeadlineSeconds: PruneActiveDeadlineSeconds,
	})
}

// S3CAMountPath holds the CA bundle of spec.upgrade.preUpgradeSnapshot.s3.caBundle
// in the Jobs that reach the target.
const S3CAMountPath = "/var/run/secrets/baokeeper-s3-ca"

// S3CAFile is the CA bundle's file in those Jobs.
const S3CAFile = S3CAMountPath + "/ca.crt"

// targetArgs are the executor flags that say where the target is.
func targetArgs(s3 *baov1.S3Target) []string {
	args := []string{"--s3-endpoint", s3.Endpoint, "--s3-bucket", s3.Bucket}
	if s3.Region != "" {
		args = append(args, "--s3-region", s3.Region)
	}
	if s3.ForcePathStyle {
		args = append(args, "--s3-path-style")
	}
	if s3.CABundle != nil {
		args = append(args, "--s3-ca-file", S3CAFile)
	}
	return args
}

// targetEnv passes the credentials from their Secret: the operator never reads them.
func targetEnv(s3 *baov1.S3Target) []corev1.EnvVar {
	secret := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: s3.CredentialsSecretRef, Key: key}}
	}
	return []corev1.EnvVar{
		{Name: EnvAccessKeyID, ValueFrom: secret(EnvAccessKeyID)},
		{Name: EnvSecretAccessKey, ValueFrom: secret(EnvSecretAccessKey)},
	}
}

// targetVolumes mount the CA bundle, when there is one.
func targetVolumes(s3 *baov1.S3Target) ([]corev1.Volume, []corev1.VolumeMount) {
	if s3.CABundle == nil {
		return nil, nil
	}
	key := s3.CABundle.Key
	if key == "" {
		key = "ca.crt"
	}
	return []corev1.Volume{{Name: "s3-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s3.CABundle.Name,
			Items:      []corev1.KeyToPath{{Key: key, Path: "ca.crt"}},
		}}}},
		[]corev1.VolumeMount{{Name: "s3-ca", MountPath: S3CAMountPath, ReadOnly: true}}
}
