// Package executorjob builds the Jobs that run "baokeeper executor <action>"
// and reads their outcome back. It is the controller side of the executor
// contract: the action names, labels, mount paths and timeouts that the Job
// carries, and that cmd/baokeeper's executor reads. What the executor does
// inside the Job is in package raftops.
//
// The builders are pure. StepDownJobFor, PromoteJob, DemoteJob and
// RemovePeerJob return the executor Job of one step, operation, member and
// attempt under a deterministic name (JobName:
// <cluster>-<step>-<opID>-<ordinal>-<attempt>) with the label
// LabelOperation=opID, so that a Job left by another operation is never read
// as this one's outcome (JobOfOperation). The older StepDownJob and
// StepDownJobName carry no operation and are deprecated. JobPhaseOf reads a
// Job's terminal conditions back as an operation.JobPhase; StuckPod and
// TerminationMessage read its pod.
package executorjob
