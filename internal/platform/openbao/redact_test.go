package openbao

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	baoapi "github.com/openbao/openbao/api/v2"
)

// TestRedactBeforeShortening puts a secret across the length limit of server text: the
// first half of it must not survive the cut.
func TestRedactBeforeShortening(t *testing.T) {
	secret := "s.SECRETTOKENVALUE0123456789abcdef"
	padding := strings.Repeat("x", MaxServerText-len(secret)/2)
	cases := []struct {
		name   string
		reason string
		cause  error
	}{
		{name: "plain error", reason: "a transport error echoing the token", cause: errors.New(padding + secret + " tail")},
		{name: "server errors", reason: "an OpenBao error list echoing the token",
			cause: &baoapi.ResponseError{StatusCode: 400, Errors: []string{padding + secret + " tail"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := newOpError("failed to log in", tc.cause, "", nil, secret)
			g.Expect(err.Error()).NotTo(ContainSubstring(secret[:len(secret)/2]), tc.reason)
		})
	}
}
