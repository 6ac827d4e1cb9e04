package raftops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// retryPolicy says how long and how often retryWithin retries.
type retryPolicy struct {
	clk clock.Clock
	// deadline is when no further attempt may start.
	deadline time.Time
	// retryFor is the budget deadline was computed from; zero means a single
	// attempt.
	retryFor time.Duration
	// interval is the pause before a retry.
	interval time.Duration
	log      logr.Logger
}

// retryWithin runs attempt until it succeeds, fails with an error that is not
// retryable (see Classify), or the next attempt would start past the
// deadline. goal names what is attempted ("promote bao-3") in the errors. The
// error of the last attempt is kept in the chain, so its class and sentinels
// survive.
func retryWithin[T any](ctx context.Context, p retryPolicy, goal string, attempt func(context.Context) (T, error)) (T, error) {
	var zero T
	for n := 1; ; n++ {
		res, err := attempt(ctx)
		if err == nil {
			return res, nil
		}
		if Classify(err) != ClassRetryable || ctx.Err() != nil {
			return zero, err
		}
		if !p.clk.Now().Add(p.interval).Before(p.deadline) {
			if p.retryFor == 0 {
				return zero, err
			}
			return zero, fmt.Errorf("failed to %s within %s (%d attempts): %w", goal, p.retryFor, n, err)
		}
		p.log.V(1).Info("Retrying after a retryable failure", "goal", goal, "attempt", n, "reason", err.Error())
		if werr := sleep(ctx, p.clk, p.interval); werr != nil {
			return zero, fmt.Errorf("failed to %s: %w", goal, errors.Join(err, werr))
		}
	}
}

// sleep waits for d on clk, or until ctx ends.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := clk.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C():
		return nil
	}
}
