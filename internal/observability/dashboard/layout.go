package dashboard

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
)

// LayoutPath is the picture of the dashboard's layout that the README shows.
const LayoutPath = "docs/images/dashboard-layout.svg"

// Grafana's grid: 24 columns; a column is drawn gridUnitX px wide and a height unit
// gridUnitY px high (Grafana uses 30 px; the picture is a little flatter).
const (
	gridColumns = 24
	gridUnitX   = 40
	gridUnitY   = 24
	gridGap     = 4
	layoutPad   = 8
	headerH     = 56
)

// layoutPanel is what the picture needs of a panel of the generated JSON.
type layoutPanel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
	Panels []layoutPanel `json:"panels"`
}

// panelFill is the fill of each panel type in the picture.
func panelFill(panelType string) string {
	switch panelType {
	case "row":
		return "#2c3e50"
	case "alertlist":
		return "#c0392b"
	case "table":
		return "#16a085"
	case "stat":
		return "#2980b9"
	case "timeseries":
		return "#8e44ad"
	case "bargauge":
		return "#d35400"
	}
	return "#555555"
}

// layoutSVG draws the panels of the dashboard's JSON where Grafana places them
// (gridPos), each with its title and type, rows as bars: a picture of the layout
// that is generated with the JSON, so it never drifts from it.
func layoutSVG(js []byte) ([]byte, error) {
	var d struct {
		Title  string        `json:"title"`
		Panels []layoutPanel `json:"panels"`
	}
	if err := json.Unmarshal(js, &d); err != nil {
		return nil, fmt.Errorf("failed to read the dashboard's panels: %w", err)
	}
	var all []layoutPanel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...) // a collapsed row holds its panels
	}
	bottom := 0
	for _, p := range all {
		bottom = max(bottom, p.GridPos.Y+p.GridPos.H)
	}
	width := gridColumns*gridUnitX + 2*layoutPad
	height := headerH + bottom*gridUnitY + 2*layoutPad
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#111217"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="28" fill="#ffffff" font-size="18" font-weight="bold">%s</text>`+"\n", layoutPad, esc(d.Title))
	fmt.Fprintf(&b, `<text x="%d" y="46" fill="#9fa7b3" font-size="12">Variables: datasource, namespace, cluster. Generated from internal/observability/dashboard (panel positions as in Grafana).</text>`+"\n", layoutPad)
	for _, p := range all {
		x := layoutPad + p.GridPos.X*gridUnitX
		y := headerH + layoutPad + p.GridPos.Y*gridUnitY
		w := p.GridPos.W*gridUnitX - gridGap
		h := p.GridPos.H*gridUnitY - gridGap
		fill := panelFill(p.Type)
		if p.Type == "row" {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", x, y, w, h, fill)
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#ffffff" font-size="13" font-weight="bold">%s</text>`+"\n", x+6, y+h-6, esc(p.Title))
			continue
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="3" fill="#181b1f" stroke="%s" stroke-width="2"/>`+"\n", x, y, w, h, fill)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="4" fill="%s"/>`+"\n", x, y, w, fill)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#d8d9da" font-size="12">%s</text>`+"\n", x+6, y+20, esc(p.Title))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s" font-size="11">%s</text>`+"\n", x+6, y+36, fill, esc(p.Type))
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// esc escapes text for an SVG text node.
func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
