package nodeagent

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestRestartBackoff(t *testing.T) {
	s := time.Second
	cases := []struct {
		name, reason string
		runs         []time.Duration // how long each run lasted before exiting
		want         []time.Duration
	}{
		{"doubling", "1 s doubling up to 30 s", []time.Duration{0, 0, 0, 0, 0, 0, 0},
			[]time.Duration{1 * s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s}},
		{"reset", "a run of 60 s or more starts over", []time.Duration{0, 0, 0, 60 * s, 0},
			[]time.Duration{1 * s, 2 * s, 4 * s, 1 * s, 2 * s}},
		{"short runs", "runs shorter than 60 s keep doubling", []time.Duration{59 * s, 59 * s},
			[]time.Duration{1 * s, 2 * s}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var b restartBackoff
			var got []time.Duration
			for _, r := range tc.runs {
				got = append(got, b.Next(r))
			}
			g.Expect(got).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestShouldRestart(t *testing.T) {
	cases := []struct {
		name, reason string
		policy       string
		code         int32
		want         bool
	}{
		{"always ok", "Always restarts even after success", "Always", 0, true},
		{"always fail", "Always restarts after failure", "Always", 1, true},
		{"onfailure ok", "OnFailure keeps a success", "OnFailure", 0, false},
		{"onfailure fail", "OnFailure restarts a failure", "OnFailure", 2, true},
		{"never", "Never never restarts", "Never", 137, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(shouldRestart(corev1.RestartPolicy(tc.policy), tc.code)).To(Equal(tc.want), tc.reason)
		})
	}
}
