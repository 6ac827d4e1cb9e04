package kubectlbao

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// describer writes kubectl-describe-like text: "Key:  value" lines, indented
// sections and tables. Lines are collected and written by flush, which aligns the
// values of every "Key:" line of one indent level across the whole output, so the
// rendering code reads as a list of lines.
type describer struct {
	out   io.Writer
	items []item
}

// item is one line, or one table.
type item struct {
	level      int
	key, value string // a "key: value" line; key alone is a heading; value alone is text
	header     []string
	rows       [][]string
}

func newDescriber(out io.Writer) *describer { return &describer{out: out} }

// kv writes "key: value" at the indent level.
func (d *describer) kv(level int, key, format string, args ...any) {
	d.items = append(d.items, item{level: level, key: key, value: oneLine(fmt.Sprintf(format, args...))})
}

// head writes a section heading "key:" (a line without a value).
func (d *describer) head(level int, key string) {
	d.items = append(d.items, item{level: level, key: key})
}

// line writes free text at the indent level.
func (d *describer) line(level int, format string, args ...any) {
	d.items = append(d.items, item{level: level, value: oneLine(fmt.Sprintf(format, args...))})
}

// table writes header and rows, aligned among themselves.
func (d *describer) table(level int, header []string, rows [][]string) {
	d.items = append(d.items, item{level: level, header: header, rows: rows})
}

// flush writes every line and returns the first error.
func (d *describer) flush() error {
	width := map[int]int{}
	for _, it := range d.items {
		if it.key != "" && it.value != "" {
			width[it.level] = max(width[it.level], len(it.key)+1)
		}
	}
	var b strings.Builder
	for _, it := range d.items {
		pad := indent(it.level)
		switch {
		case it.header != nil:
			tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
			for _, r := range append([][]string{it.header}, it.rows...) {
				cells := make([]string, len(r))
				for i, c := range r {
					cells[i] = oneLine(c)
				}
				fmt.Fprintf(tw, "%s%s\n", pad, strings.Join(cells, "\t"))
			}
			_ = tw.Flush() // writes to a strings.Builder, which cannot fail
		case it.key == "":
			fmt.Fprintf(&b, "%s%s\n", pad, it.value)
		case it.value == "":
			fmt.Fprintf(&b, "%s%s:\n", pad, it.key)
		default:
			fmt.Fprintf(&b, "%s%-*s  %s\n", pad, width[it.level], it.key+":", it.value)
		}
	}
	d.items = nil
	if _, err := io.WriteString(d.out, b.String()); err != nil {
		return fmt.Errorf("failed to write the output: %w", err)
	}
	return nil
}

func indent(level int) string { return strings.Repeat("  ", level) }

// oneLine keeps a value on its line: status messages are sentences, but a value
// with a newline or a tab would break the alignment.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\t", " ").Replace(s)
}

// when renders a time as RFC 3339 in UTC with its age, for example
// "2026-12-01T10:00:00Z (5m ago)"; "-" when unset.
func when(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s (%s)", t.UTC().Format(time.RFC3339), ago(t.Time, now))
}

// ago renders the time since t like kubectl's AGE column ("5m ago", "in 3s").
func ago(t, now time.Time) string {
	if d := now.Sub(t); d >= 0 {
		return duration.HumanDuration(d) + " ago"
	}
	return "in " + duration.HumanDuration(t.Sub(now))
}

// age renders the time since t for a table column, "-" when unset.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if d := now.Sub(t.Time); d >= 0 {
		return duration.HumanDuration(d)
	}
	return "0s"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// bytesIEC renders a size such as "1.5 MiB (1572864 bytes)".
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", float64(n)/float64(div), "KMGTPE"[exp], n)
}
