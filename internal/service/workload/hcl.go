package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// hclValue renders a JSON-like value (string, bool, float64, json.Number, int, []any,
// map[string]any, []string) as an HCL expression. Map keys are sorted so the output is
// stable: the ConfigMap must not change between two reconciles of the same input.
func hclValue(b *strings.Builder, v any, indent string) error {
	switch t := v.(type) {
	case nil:
		b.WriteString(`""`)
	case string:
		b.WriteString(hclString(t))
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case int:
		b.WriteString(strconv.Itoa(t))
	case int32:
		b.WriteString(strconv.FormatInt(int64(t), 10))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case json.Number:
		// OpenBao parses HCL v1, which reads integer literals as int64.
		if !strings.ContainsAny(t.String(), ".eE") {
			if _, err := strconv.ParseInt(t.String(), 10, 64); err != nil {
				return fmt.Errorf("the integer %s does not fit in 64 bits; write it as a string", t)
			}
		}
		b.WriteString(t.String())
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("cannot render %v as an HCL number", t)
		}
		f := strconv.FormatFloat(t, 'f', -1, 64)
		if _, err := strconv.ParseInt(f, 10, 64); err != nil && !strings.Contains(f, ".") {
			f = strconv.FormatFloat(t, 'e', -1, 64)
		}
		b.WriteString(f)
	case []string:
		items := make([]any, len(t))
		for i := range t {
			items[i] = t[i]
		}
		return hclValue(b, items, indent)
	case []any:
		b.WriteString("[")
		for i, item := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := hclValue(b, item, indent); err != nil {
				return err
			}
		}
		b.WriteString("]")
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString("{\n")
		for _, k := range keys {
			b.WriteString(indent + "  ")
			b.WriteString(hclString(k))
			b.WriteString(" = ")
			if err := hclValue(b, t[k], indent+"  "); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
	default:
		return fmt.Errorf("cannot render a value of type %T in HCL", v)
	}
	return nil
}

// hclString quotes s as an HCL v1 string (the parser OpenBao uses). HCL v1 treats
// "${" as the start of an interpolation and has no "$${" escape, so the dollar sign is
// written as the escape \u0024, which keeps user data literal.
func hclString(s string) string {
	return strings.ReplaceAll(strconv.Quote(s), "${", `\u0024{`)
}
