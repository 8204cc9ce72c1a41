package tests

import (
	"testing"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/series"
)

// TestLines lints every release line's folder without building anything:
// its pin is a release of its minor, its revision and end-of-life note
// read, and its series, patches, dropped list and mutants agree (the same
// file checks as the line under test's lint). An end-of-life line is
// checked too: it must stay buildable.
func TestLines(t *testing.T) {
	lines, err := line.List(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		t.Run(l.Name, func(t *testing.T) {
			v, _, err := l.Version()
			if err != nil {
				t.Fatal(err)
			}
			eol, err := l.EOL()
			if err != nil {
				t.Fatal(err)
			}
			s, err := series.Read(l.SeriesFile())
			if err != nil {
				t.Fatal(err)
			}
			var patches []*series.Patch
			for _, e := range s.Entries {
				p, err := series.ReadPatch(s.Path(e))
				if err != nil {
					t.Fatal(err)
				}
				patches = append(patches, p)
			}
			lintFiles(t, l, s, patches)
			state := "supported"
			if eol != "" {
				state = "end of life: " + eol
			}
			t.Logf("line %s: %s, %d patches, %s", l.Name, v, len(patches), state)
		})
	}
}
