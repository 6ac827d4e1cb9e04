package upgrade

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestCheckVersionPair(t *testing.T) {
	cases := []struct {
		from, to string
		refused  bool
	}{
		{"2.4.0", "2.4.1", false},
		{"2.4.0", "2.5.0", false},
		{"2.5.5", "2.6.0", true},
		{"2.5.5", "2.6.1", true},
		{"2.4.0", "2.7.0", true},
		{"v2.5.0", "v2.6.0", true},
		{"2.6.0", "2.6.1", false},
		{"2.6.1", "2.7.0", false},
		{"2.6.0-beta1", "2.6.0", false},
		{"garbage", "2.6.0", false},
	}
	for _, tc := range cases {
		t.Run(tc.from+"->"+tc.to, func(t *testing.T) {
			g := NewWithT(t)
			msg := CheckVersionPair(tc.from, tc.to)
			if !tc.refused {
				g.Expect(msg).To(BeEmpty())
				return
			}
			g.Expect(msg).To(ContainSubstring("cannot run in one cluster"))
			g.Expect(msg).To(ContainSubstring("openbao/openbao#3899"))
			g.Expect(msg).To(ContainSubstring("restore-from-snapshot.md"))
		})
	}
}
