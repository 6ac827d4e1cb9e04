package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		wantErr  string
	}{
		{name: "empty: every namespace", in: ""},
		{name: "blanks only: every namespace", in: "  "},
		{name: "one", in: "team-a", want: []string{"team-a"}},
		{name: "several, spaces trimmed", in: "team-a, team-b ,vault", want: []string{"team-a", "team-b", "vault"}},
		{name: "an empty element is refused", in: "team-a,,team-b", wantErr: `"" is not a namespace name`},
		{name: "an invalid name is refused with an example", in: "Team_A", wantErr: "for example team-a,team-b"},
		{name: "a name twice is refused", in: "a,b,a", wantErr: "names a twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseNamespaces("--watch-namespaces", tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
