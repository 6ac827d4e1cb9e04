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
		b.WriteString(t.String())
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("cannot render %v as an HCL number", t)
		}
		b.WriteString(strconv.FormatFloat(t, 'f', -1, 64))
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

// hclString quotes s as an HCL string. HCL interpolates "${" and "%{" sequences, so
// they are escaped to keep user data literal.
func hclString(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q, "${", "$${")
	q = strings.ReplaceAll(q, "%{", "%%{")
	return q
}
