package nodeagent

import "time"

// Restart back-off of a container: the first restart waits backoffInitial, each next
// one twice as long up to backoffMax; a container that ran at least backoffReset
// starts over at backoffInitial. (The kubelet uses 10 s to 5 min; the rig is faster.)
const (
	backoffInitial = time.Second
	backoffMax     = 30 * time.Second
	backoffReset   = 60 * time.Second
)

// restartBackoff is one container's back-off state.
type restartBackoff struct{ last time.Duration }

// Next returns the delay before restarting a container that exited after running for
// ranFor, and remembers it.
func (b *restartBackoff) Next(ranFor time.Duration) time.Duration {
	switch {
	case ranFor >= backoffReset || b.last == 0:
		b.last = backoffInitial
	default:
		b.last = min(2*b.last, backoffMax)
	}
	return b.last
}
