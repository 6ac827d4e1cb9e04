package operation

import (
	"time"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// StepDownCooldown is OpenBao's manualStepDownSleepPeriod: a node that stepped down
// cannot take the HA lock again for 10 s, and a second step-down within that window
// is wasted. Retries wait this long after a Job finished.
const StepDownCooldown = 10 * time.Second

// NonVoterPromoteAfter is how long a member must have been a healthy, caught-up
// non-voter before baokeeper promotes it, in any operation or at rest: three times
// autopilot's server_stabilization_time (10 s), after which autopilot would have
// promoted a member that joined normally. A member that joined as a permanent
// non-voter (every join after the cluster formed) is never promoted by autopilot.
const NonVoterPromoteAfter = 30 * time.Second

// JobPhase is the observed phase of an executor Job.
type JobPhase string

// Job phases.
const (
	// JobNone means no Job exists for the step.
	JobNone JobPhase = ""
	// JobRunning means the Job has not finished.
	JobRunning JobPhase = "Running"
	// JobSucceeded means the Job completed.
	JobSucceeded JobPhase = "Succeeded"
	// JobFailed means the Job failed.
	JobFailed JobPhase = "Failed"
)

// Job is an observed executor Job of the current step.
type Job struct {
	// Phase is the Job's phase.
	Phase JobPhase
	// FinishedAt is when it completed or failed.
	FinishedAt time.Time
	// Message is the Job's failure message, for the status.
	Message string
}

// DefaultMaxJobAttempts bounds the executor Jobs of one step (step-down, snapshot)
// until a person asks for a retry.
const DefaultMaxJobAttempts int32 = 3

// AttemptsExhausted reports whether a step has started as many Jobs as it may. A
// retry raises step.MaxAttempts instead of resetting step.Attempts, because Job
// names carry the attempt number and a finished Job keeps its name for its TTL.
func AttemptsExhausted(step *baov1.UpgradeStep) bool {
	return step.Attempts >= MaxAttempts(step)
}

// MaxAttempts is the step's attempt limit.
func MaxAttempts(step *baov1.UpgradeStep) int32 {
	if step.MaxAttempts > 0 {
		return step.MaxAttempts
	}
	return DefaultMaxJobAttempts
}

// GrantAttempts lets a step start DefaultMaxJobAttempts more Jobs (a retry).
func GrantAttempts(step *baov1.UpgradeStep) {
	step.MaxAttempts = step.Attempts + DefaultMaxJobAttempts
}
