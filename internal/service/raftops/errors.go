package raftops

import (
	"errors"
	"fmt"

	"github.com/baokeeper/baokeeper/internal/platform/openbao"
)

// ErrAlreadyMoved reports that the member asked to give up leadership is not
// the active node (any more). The goal of a step-down already holds, so it is
// benign: nothing was, or needs to be, stepped down.
var ErrAlreadyMoved = errors.New("raftops: the member is not the active node; leadership already moved")

// ErrNoLeader reports that no member named an active node, for example during
// an election. Retry.
var ErrNoLeader = errors.New("raftops: no active node found")

// ErrLeaderUnchanged reports that after a step-down no other member became the
// active node within the poll timeout. Retry after OpenBao's step-down cooldown.
var ErrLeaderUnchanged = errors.New("raftops: leadership did not move to another member")

// ErrNotJoined reports that the member to promote is not in the Raft
// configuration: it has not joined. Joining is the member's own doing (its
// retry_join), so waiting inside one executor Job does not help. Fatal.
var ErrNotJoined = errors.New("raftops: the member is not in the Raft configuration")

// ErrRemovingLeader reports that the member to remove is the active node.
// Demoting or removing a leader is not a leadership transfer: OpenBao either
// ignores it or steps down after committing the change, and an uncontrolled
// election follows. The leader must step down first. Fatal.
var ErrRemovingLeader = errors.New("raftops: the member is the active node and must step down before it is removed")

// ErrDemotingLeader reports that the member to demote is the active node. As
// for ErrRemovingLeader, demoting a leader starts an uncontrolled election:
// the leader must step down first. Fatal.
var ErrDemotingLeader = errors.New("raftops: the member is the active node and must step down before it is demoted")

// ErrNotApplied reports that a requested promotion, demotion or removal did
// not show in the Raft configuration within the wait. Autopilot applies
// promotions and demotions asynchronously, in later reconcile rounds; retry.
var ErrNotApplied = errors.New("raftops: the membership change was not applied in time")

// Class says what a caller should do about an error.
type Class int

const (
	// ClassNone is the class of a nil error.
	ClassNone Class = iota
	// ClassBenign means the goal already holds, or the request has nothing
	// to do (a promote of a node that is not a permanent non-voter, a demote
	// of one that is): nothing is left to request, though a caller that
	// verifies reads the state back.
	ClassBenign
	// ClassRetryable means a transient condition: an election in progress, a
	// node that is not (or no longer) active, a 5xx or 429 answer, a refused or
	// reset connection, a timeout, a membership change autopilot has not
	// applied yet. The same request may succeed later.
	ClassRetryable
	// ClassFatal means retrying will not help: permission denied (403), a bad
	// request (400) or another 4xx, a failed TLS verification, an unreadable
	// token file, invalid input, a member to promote that has not joined, a
	// member to remove that leads, or an error nobody anticipated.
	ClassFatal
)

// String returns the class name.
func (c Class) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassBenign:
		return "benign"
	case ClassRetryable:
		return "retryable"
	case ClassFatal:
		return "fatal"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Classify sorts an error into benign, retryable or fatal. It builds on
// openbao.TransienceOf for what the OpenBao client reports (HTTP statuses,
// transport and TLS failures, openbao.ErrNotActive and
// openbao.ErrIncompleteSnapshot are transient or permanent there) and adds
// the answers that ask for a read-back (openbao.ErrNotNonVoter,
// openbao.ErrAlreadyNonVoter: benign), the errors the client reports that no
// retry mends (openbao.ErrPermissionDenied, openbao.ErrBadRequest) and the
// procedures' own errors in this package.
//
// Why fatal wins over retryable: an error that carries both (say a 403 joined
// with a timeout from another member) will not heal by waiting, and a caller
// that retries it only burns its deadline. Why unknown errors are fatal: the
// executor runs a disruptive operation, and an error nobody anticipated
// should stop it and reach a person rather than be retried blindly; the
// operator still retries the whole Job a bounded number of times.
func Classify(err error) Class {
	switch {
	case err == nil:
		return ClassNone
	case errors.Is(err, ErrAlreadyMoved), errors.Is(err, openbao.ErrNotNonVoter), errors.Is(err, openbao.ErrAlreadyNonVoter):
		return ClassBenign
	case isFatal(err):
		return ClassFatal
	case isRetryable(err):
		return ClassRetryable
	}
	return ClassFatal
}

func isFatal(err error) bool {
	for _, target := range []error{
		openbao.ErrPermissionDenied, openbao.ErrBadRequest, ErrNotJoined, ErrRemovingLeader, ErrDemotingLeader,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return openbao.TransienceOf(err) == openbao.Permanent
}

func isRetryable(err error) bool {
	for _, target := range []error{ErrNoLeader, ErrLeaderUnchanged, ErrNotApplied} {
		if errors.Is(err, target) {
			return true
		}
	}
	return openbao.TransienceOf(err) == openbao.Transient
}
