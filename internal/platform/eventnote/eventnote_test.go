package eventnote

import (
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
)

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"short", "Restore drill passed"},
		{"exactly the limit", strings.Repeat("a", MaxBytes)},
		{"long", strings.Repeat("a", 3000)},
		{"long with multi-byte runes at the cut", strings.Repeat("é", 1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Fit(tc.in)
			if len(got) > MaxBytes {
				t.Fatalf("%d bytes, more than %d", len(got), MaxBytes)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("cut inside a rune: %q", got[len(got)-10:])
			}
			if len(tc.in) <= MaxBytes && got != tc.in {
				t.Fatalf("a note that fits is changed: %q", got)
			}
			if len(tc.in) > MaxBytes && !strings.HasSuffix(got, ellipsis) {
				t.Fatalf("a cut note does not say so: ...%q", got[len(got)-10:])
			}
		})
	}
}

func TestRecorderFitsEveryNote(t *testing.T) {
	fake := events.NewFakeRecorder(1)
	Recorder{fake}.Eventf(&corev1.Pod{}, nil, corev1.EventTypeWarning, "RehearsalFailed", "Request", "%s", strings.Repeat("x", 5000))
	got := <-fake.Events
	if len(got) > MaxBytes+len("Warning RehearsalFailed ") {
		t.Fatalf("the note was not cut: %d bytes", len(got))
	}
}
