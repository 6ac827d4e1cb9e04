package workload

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
)

// SealStanzaProblem says why spec.seal.customStanza cannot go into config.hcl, or
// "" when it can. The stanza is pasted into the server configuration, so anything
// but seal blocks would reconfigure the server from a field meant for the seal: a
// second listener without TLS, another storage, a plugin directory. It must parse
// as HCL and hold only `seal "<type>" { ... }` blocks (two during a seal
// migration, one of them disabled).
func SealStanzaProblem(stanza string) string {
	const field = "spec.seal.customStanza"
	if strings.TrimSpace(stanza) == "" {
		return ""
	}
	f, err := hcl.Parse(stanza)
	if err != nil {
		return fmt.Sprintf("%s does not parse as HCL (%v): give one seal block such as seal \"transit\" { address = \"https://transit.example:8200\" ... }", field, err)
	}
	list, ok := f.Node.(*ast.ObjectList)
	if !ok || len(list.Items) == 0 {
		return fmt.Sprintf("%s holds no seal block: give one such as seal \"transit\" { ... }", field)
	}
	for _, item := range list.Items {
		key := ""
		if len(item.Keys) > 0 {
			key = strings.Trim(item.Keys[0].Token.Text, `"`)
		}
		if key != "seal" {
			return fmt.Sprintf("%s may hold only seal blocks, and holds %q, which would change the server's configuration beside the seal: "+
				"remove it (baokeeper configures listeners, storage and telemetry itself)", field, key)
		}
		if len(item.Keys) != 2 {
			return fmt.Sprintf("%s: a seal block names its type, as in seal \"transit\" { ... }", field)
		}
		if _, ok := item.Val.(*ast.ObjectType); !ok {
			return fmt.Sprintf("%s: seal %s must be a block { ... }", field, item.Keys[1].Token.Text)
		}
	}
	return ""
}
