// Package eventnote keeps event notes within what the API server accepts: an
// events.k8s.io/v1 Event's note is at most 1 kB, and a longer one is refused, so
// the event is lost (found on the rig: a failed rehearsal, whose note carries the
// copy's own status message, was never recorded).
package eventnote

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// MaxBytes is the longest note the API server accepts.
const MaxBytes = 1024

// ellipsis ends a note that was cut.
const ellipsis = " [...]"

// Fit returns note cut to MaxBytes on a rune boundary, ending in an ellipsis when it
// was cut; status keeps the whole message.
func Fit(note string) string {
	if len(note) <= MaxBytes {
		return note
	}
	cut := MaxBytes - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + ellipsis
}

// Recorder is an EventRecorder whose notes fit.
type Recorder struct {
	events.EventRecorder
}

// Eventf implements events.EventRecorder.
func (r Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", Fit(fmt.Sprintf(note, args...)))
}
