package adminops

import (
	"testing"

	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func TestTendDecision(t *testing.T) {
	tests := []struct {
		name   string
		cur    servingExecutor
		exists bool
		want   tend
	}{
		{"no executor for an operation with a pending request: start one", servingExecutor{}, false, tendCreate},
		{"it runs: keep it", servingExecutor{phase: operation.JobRunning}, true, tendKeep},
		{"it exited when idle: delete it, the next pass starts it again", servingExecutor{phase: operation.JobSucceeded}, true, tendDelete},
		{"it ran out of restarts: delete it", servingExecutor{phase: operation.JobFailed}, true, tendDelete},
		{"a finished one already being deleted: wait for it to go", servingExecutor{phase: operation.JobSucceeded, deleting: true}, true, tendKeep},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tendDecision(tc.cur, tc.exists); got != tc.want {
				t.Errorf("tendDecision = %s, want %s", got, tc.want)
			}
		})
	}
}
