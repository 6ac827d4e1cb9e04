package upgrade

import "time"

// StepDownCooldown is OpenBao's manualStepDownSleepPeriod: a node that stepped down
// cannot take the HA lock again for 10 s, and a second step-down within that window
// is wasted. Retries wait this long after a Job finished.
const StepDownCooldown = 10 * time.Second

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
