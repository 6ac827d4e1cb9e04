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
		{"2.5.5", "2.6.2", true},
		{"2.5.5", "2.6.2-rc1", true},
		{"v2.5.0", "v2.6.0", true},
		// The fix (openbao/openbao#3900, #3922) is on the new side: from the
		// first 2.6 release that carries it on, the pair runs side by side.
		{"2.5.5", "2.6.3", false},
		{"2.4.0", "2.6.3-rc1", false},
		{"2.5.0", "2.6.10", false},
		{"2.4.0", "2.7.0", false},
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
			g.Expect(msg).To(ContainSubstring("kubectl bao restore CLUSTER --into NEW"))
			g.Expect(msg).To(ContainSubstring("set spec.version to 2.6.3 or later instead"), "the refusal names the first release with the fix")
		})
	}
}
