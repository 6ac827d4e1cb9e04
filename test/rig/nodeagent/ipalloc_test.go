package nodeagent

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

func TestIPAllocator(t *testing.T) {
	type step struct {
		op        string // "alloc" or "free"
		key, pref string
		want      string
	}
	cases := []struct {
		name, reason string
		steps        []step
	}{
		{"lowest first", "addresses start at .10 and go up", []step{
			{op: "alloc", key: "a", want: "10.250.0.10"},
			{op: "alloc", key: "b", want: "10.250.0.11"},
			{op: "alloc", key: "c", want: "10.250.0.12"},
		}},
		{"same key", "a key keeps its address", []step{
			{op: "alloc", key: "a", want: "10.250.0.10"},
			{op: "alloc", key: "a", want: "10.250.0.10"},
		}},
		{"reuse after free", "a freed address is the lowest free one again", []step{
			{op: "alloc", key: "a", want: "10.250.0.10"},
			{op: "alloc", key: "b", want: "10.250.0.11"},
			{op: "free", key: "a", want: "10.250.0.10"},
			{op: "alloc", key: "c", want: "10.250.0.10"},
			{op: "alloc", key: "d", want: "10.250.0.12"},
		}},
		{"preferred", "a free preferred address (agent restart) is honoured", []step{
			{op: "alloc", key: "a", pref: "10.250.0.42", want: "10.250.0.42"},
			{op: "alloc", key: "b", pref: "10.250.0.42", want: "10.250.0.10"},
		}},
		{"bad preferred", "a preferred address outside the range is ignored", []step{
			{op: "alloc", key: "a", pref: "10.250.0.5", want: "10.250.0.10"},
			{op: "alloc", key: "b", pref: "10.1.0.42", want: "10.250.0.11"},
		}},
		{"free unknown", "freeing an unknown key returns nothing", []step{
			{op: "free", key: "x", want: ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			a := newIPAllocator("10.250.0.")
			for i, s := range tc.steps {
				var got string
				if s.op == "alloc" {
					var err error
					got, err = a.Allocate(s.key, s.pref)
					g.Expect(err).NotTo(HaveOccurred())
				} else {
					got = a.Release(s.key)
				}
				g.Expect(got).To(Equal(s.want), "step %d: %s", i, tc.reason)
			}
		})
	}
}

func TestIPAllocatorExhausted(t *testing.T) {
	g := NewWithT(t)
	a := newIPAllocator("10.250.0.")
	for i := firstPodHost; i <= lastPodHost; i++ {
		_, err := a.Allocate(fmt.Sprint(i), "")
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err := a.Allocate("one-too-many", "")
	g.Expect(errors.Is(err, errNoFreeIP)).To(BeTrue(), "the pool holds 241 addresses")
	a.Release("100")
	ip, err := a.Allocate("one-too-many", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ip).To(Equal("10.250.0.100"), "a freed address is handed out again")
}
