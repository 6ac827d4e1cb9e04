package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/executorjob"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

// The reachability check of the snapshot target runs as an executor Job in the
// cluster's namespace, never from the operator: the namespace's network policy and
// DNS apply to it as they do to the snapshot Job that follows, and the operator
// neither reads the credentials nor connects wherever a cluster's author points.
const (
	// StepCheckTarget is the executorjob.LabelStep value of check Jobs.
	StepCheckTarget = "s3check"
	// ActionCheckTarget is the executor action they run.
	ActionCheckTarget = "check-target"
	// CheckTTLSeconds is how long a finished check Job stays. Its outcome is the
	// precheck's while it exists; once it is gone, a check still needed runs again,
	// so a target that failed is checked again about this often (a fixed Secret or a
	// created bucket is seen without a retry annotation).
	CheckTTLSeconds int32 = 30
	// CheckTimeout is the executor's --timeout of a check.
	CheckTimeout = "20s"
	// CheckActiveDeadlineSeconds bounds a check Job: CheckTimeout, pod start-up.
	CheckActiveDeadlineSeconds int64 = 90
)

// CheckJobName is the name of the Job that checks the target as the spec sets it
// now: <cluster>-s3check-<hash of spec.upgrade.preUpgradeSnapshot.s3>. A changed
// target gets a Job of its own; the outcome of an older one is never taken for it.
func CheckJobName(c *baov1.OpenBaoCluster) string {
	b, _ := json.Marshal(c.Spec.Upgrade.PreUpgradeSnapshot.S3)
	sum := sha256.Sum256(b)
	return executorjob.BoundedName(fmt.Sprintf("%s-%s-%s", c.Name, StepCheckTarget, hex.EncodeToString(sum[:4])))
}

// CheckJob builds the Job that checks that the bucket exists and that the
// credentials may see it. c.Spec.Upgrade.PreUpgradeSnapshot.S3 must be set.
func CheckJob(c *baov1.OpenBaoCluster, image string) *batchv1.Job {
	s3 := c.Spec.Upgrade.PreUpgradeSnapshot.S3
	vols, mounts := targetVolumes(s3)
	ttl := CheckTTLSeconds
	return executorjob.ExecutorJob(c, executorjob.ExecutorJobSpec{
		Name: CheckJobName(c), Step: StepCheckTarget, Image: image,
		Args:                    append([]string{"executor", ActionCheckTarget, "--timeout", CheckTimeout}, targetArgs(s3)...),
		Env:                     targetEnv(s3),
		Volumes:                 vols,
		VolumeMounts:            mounts,
		ActiveDeadlineSeconds:   CheckActiveDeadlineSeconds,
		TTLSecondsAfterFinished: &ttl,
	})
}

// TargetCheck is the SnapshotTarget precheck's result and message as the check Job
// says them (the caller names the precheck), and the Job to create when none exists
// for the target as it is now.
type TargetCheck struct {
	Precheck baov1.Precheck
	Create   *batchv1.Job
}

// checkingAgain ends the message of a failed check while the next one runs.
const checkingAgain = "; checking again"

// CheckTarget reads the check Job of the target (from jobs, the cluster's executor
// Jobs) into the SnapshotTarget precheck. prev is that precheck as status last
// recorded it: after a failure, the failure stays in status while the next check
// runs, instead of flapping to Pending every CheckTTLSeconds. Pure.
func CheckTarget(c *baov1.OpenBaoCluster, jobs map[string]operation.ObservedJob, prev *baov1.Precheck, image string) TargetCheck {
	spec := c.Spec.Upgrade.PreUpgradeSnapshot
	loc := spec.Location()
	name := CheckJobName(c)
	pc := func(r baov1.PrecheckResult, msg string) baov1.Precheck {
		return baov1.Precheck{Result: r, Message: msg}
	}
	failedBefore := prev != nil && prev.Result == baov1.PrecheckFailed && strings.Contains(prev.Message, " is not usable: ")
	checking := func() baov1.Precheck {
		if failedBefore {
			msg, _, _ := strings.Cut(prev.Message, checkingAgain)
			return pc(baov1.PrecheckFailed, fmt.Sprintf("%s%s from namespace %s (Job %s)", msg, checkingAgain, c.Namespace, name))
		}
		return pc(baov1.PrecheckPending, fmt.Sprintf("checking from namespace %s that %s is reachable (Job %s)", c.Namespace, loc, name))
	}
	j, ok := jobs[name]
	switch {
	case !ok:
		return TargetCheck{Precheck: checking(), Create: CheckJob(c, image)}
	case j.Stuck != "":
		// The executor deletes a stuck Job after the pass; the next one starts over.
		return TargetCheck{Precheck: pc(baov1.PrecheckFailed, fmt.Sprintf("the snapshot target %s is not usable: the check Job %s cannot start: %s; "+
			"check spec.upgrade.executor.image and the Secrets spec.upgrade.preUpgradeSnapshot.s3 names", loc, name, j.Stuck))}
	case j.Phase == operation.JobSucceeded:
		return TargetCheck{Precheck: pc(baov1.PrecheckPassed, fmt.Sprintf("snapshots go to %s, which is reachable from namespace %s", loc, c.Namespace))}
	case j.Phase == operation.JobFailed:
		why := j.Termination
		if why == "" {
			why = j.Message
		}
		return TargetCheck{Precheck: pc(baov1.PrecheckFailed, fmt.Sprintf("the snapshot target %s is not usable: %s (checked from namespace %s by Job %s)",
			loc, why, c.Namespace, name))}
	}
	return TargetCheck{Precheck: checking()}
}
