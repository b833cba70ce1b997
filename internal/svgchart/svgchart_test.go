package svgchart

import (
	"encoding/xml"
	"strings"
	"testing"
)

// Lines renders well-formed SVG with a polyline per line and escaped
// text; CDF and Steps make step curves.
func TestLines(t *testing.T) {
	svg := Lines("a < b & c", "x", "y", []Line{{Name: "one", Points: CDF([]float64{3, 1, 2})}, {Name: "two", Points: Steps([][2]float64{{1, 0.5}, {2, 1}})}})
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v\n%s", err, svg)
			}
			break
		}
	}
	if strings.Count(svg, "<polyline") != 2 || !strings.Contains(svg, "a &lt; b &amp; c") {
		t.Fatalf("chart:\n%s", svg)
	}
	if got := CDF([]float64{2, 1}); len(got) != 4 || got[0] != [2]float64{1, 0} || got[3] != [2]float64{2, 100} {
		t.Errorf("CDF: %v", got)
	}
	if got := Steps([][2]float64{{1, 0.5}, {2, 1}}); len(got) != 4 || got[0] != [2]float64{1, 0} || got[2] != [2]float64{2, 0.5} {
		t.Errorf("Steps: %v", got)
	}
}
