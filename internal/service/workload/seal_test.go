package workload

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestSealStanzaProblem(t *testing.T) {
	for _, tc := range []struct {
		name, stanza, want string
	}{
		{"empty: the Static seal", "", ""},
		{"one transit seal", `seal "transit" {
  address    = "https://transit.example:8200"
  key_name   = "autounseal"
  mount_path = "transit/"
}`, ""},
		{"two seals during a migration", `seal "transit" { address = "https://a:8200" }
seal "pkcs11" {
  disabled = "true"
}`, ""},
		{"a listener without TLS beside the seal", `seal "transit" { address = "https://a:8200" }
listener "tcp" {
  address     = "0.0.0.0:8300"
  tls_disable = true
}`, `holds "listener"`},
		{"a storage stanza", `storage "file" { path = "/tmp" }`, `holds "storage"`},
		{"a top-level attribute", `plugin_directory = "/tmp/plugins"`, `holds "plugin_directory"`},
		{"a seal without a type", `seal { address = "x" }`, `names its type`},
		{"a seal that is not a block", `seal "transit" = "x"`, "does not parse"},
		{"a seal attribute", `seal = "transit"`, "names its type"},
		{"not HCL", `seal "transit" {`, "does not parse as HCL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := SealStanzaProblem(tc.stanza)
			if tc.want == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(ContainSubstring(tc.want))
			g.Expect(got).To(ContainSubstring("spec.seal.customStanza"))
		})
	}
}
