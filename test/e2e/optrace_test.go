//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// opTrace follows an operation through the cluster's status, read every
// opTraceEvery: when each blue-green phase was first seen, and each step
// (status.blueGreen.currentStep, else status.upgrade.currentStep) from the read
// that first showed its intent persisted to the read that showed it gone or
// replaced by the next, which the operator persists only once it has verified the
// step's result. That span is a step's latency from the persisted intent to the
// verified result, within one read interval.
type opTrace struct {
	stop func()
	done chan struct{}

	mu       sync.Mutex
	finished bool
	phases   []tracedPhase
	steps    []tracedStep
	errs     int
}

// opTraceEvery is how often the tracer reads the status.
const opTraceEvery = 100 * time.Millisecond

type tracedPhase struct {
	phase baov1.BlueGreenPhase
	at    time.Time
}

type tracedStep struct {
	action     baov1.StepAction
	pod        string
	attempts   int32
	seen, gone time.Time
}

// traceOperation starts following the cluster's status until stop is called.
func (tc *testCluster) traceOperation(ctx context.Context) *opTrace {
	ctx, cancel := context.WithCancel(ctx)
	t := &opTrace{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for ctx.Err() == nil {
			c := &baov1.OpenBaoCluster{}
			err := k8s.Get(ctx, types.NamespacedName{Namespace: tc.ns, Name: name}, c)
			t.observe(c, err, time.Now())
			select {
			case <-ctx.Done():
			case <-time.After(opTraceEvery):
			}
		}
	}()
	return t
}

// observe records one read of the status.
func (t *opTrace) observe(c *baov1.OpenBaoCluster, err error, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.errs++
		return
	}
	var step *baov1.UpgradeStep
	if bg := c.Status.BlueGreen; bg != nil {
		if len(t.phases) == 0 || t.phases[len(t.phases)-1].phase != bg.Phase {
			t.phases = append(t.phases, tracedPhase{phase: bg.Phase, at: now})
		}
		step = bg.CurrentStep
	}
	if step == nil && c.Status.Upgrade != nil {
		step = c.Status.Upgrade.CurrentStep
	}
	if n := len(t.steps); n > 0 && t.steps[n-1].gone.IsZero() {
		last := &t.steps[n-1]
		if step != nil && step.Action == last.action && step.Pod == last.pod {
			last.attempts = step.Attempts
			return
		}
		last.gone = now
	}
	if step != nil && step.Action != "" {
		t.steps = append(t.steps, tracedStep{action: step.Action, pod: step.Pod, attempts: step.Attempts, seen: now})
	}
}

// finish stops the tracer at end and closes the phase and step still open there;
// only the first call counts.
func (t *opTrace) finish(end time.Time) {
	t.stop()
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return
	}
	t.finished = true
	if n := len(t.steps); n > 0 && t.steps[n-1].gone.IsZero() {
		t.steps[n-1].gone = end
	}
	t.phases = append(t.phases, tracedPhase{at: end})
}

// phaseDurations says how long each blue-green phase lasted, in order, as
// "DeployGreen 21.3s, Sync 0.4s, ...".
func (t *opTrace) phaseDurations() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for i := 0; i+1 < len(t.phases); i++ {
		parts = append(parts, fmt.Sprintf("%s %s", t.phases[i].phase, secs(t.phases[i+1].at.Sub(t.phases[i].at))))
	}
	return strings.Join(parts, ", ")
}

// stepLatencies returns each kind of step's latencies, from the persisted intent to
// the verified result, sorted.
func (t *opTrace) stepLatencies() map[baov1.StepAction][]time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[baov1.StepAction][]time.Duration{}
	for _, s := range t.steps {
		if !s.gone.IsZero() {
			out[s.action] = append(out[s.action], s.gone.Sub(s.seen))
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// steps lists every step as "PromoteMember bao-x-0 4.1s", in order.
func (t *opTrace) stepList() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for _, s := range t.steps {
		d := "open"
		if !s.gone.IsZero() {
			d = secs(s.gone.Sub(s.seen))
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", s.action, s.pod, d))
	}
	return strings.Join(parts, ", ")
}
