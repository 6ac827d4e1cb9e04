package workload

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl"
)

func TestScratchHCL1(t *testing.T) {
	for _, s := range []string{`${x}`, `a${b`, `%{x}`, `${"}`, `\${`, "${\n}", `$${x}`} {
		q := strings.ReplaceAll(strconv.Quote(s), "${", `\u0024{`)
		src := "v = " + q + "\n"
		var out map[string]any
		err := hcl.Decode(&out, src)
		fmt.Printf("%q -> src %q -> %#v ok=%v err=%v\n", s, src, out["v"], out["v"] == s, err)
	}
}
