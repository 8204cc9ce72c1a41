package rebase

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kube-carry/kube-carry/internal/series"
)

func seriesOf(names ...string) *series.Series {
	s := &series.Series{}
	for i, n := range names {
		s.Entries = append(s.Entries, series.Entry{Name: n, Line: i + 1})
	}
	return s
}

func TestPortOrder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		src, dst    []string
		ported      []string
		want        []string
		description string
	}{
		{
			name:   "into an empty line",
			src:    []string{"a.patch", "b.patch", "c.patch"},
			ported: []string{"b.patch"},
			want:   []string{"b.patch"},
		},
		{
			name:   "after the nearest patch before it in the source that the target has",
			src:    []string{"a.patch", "b.patch", "c.patch"},
			dst:    []string{"a.patch", "c.patch"},
			ported: []string{"b.patch"},
			want:   []string{"a.patch", "b.patch", "c.patch"},
		},
		{
			name:   "first when the target has none of the patches before it",
			src:    []string{"a.patch", "b.patch", "c.patch"},
			dst:    []string{"c.patch", "x.patch"},
			ported: []string{"b.patch"},
			want:   []string{"b.patch", "c.patch", "x.patch"},
		},
		{
			name:   "the target's own patches stay where they are",
			src:    []string{"a.patch", "b.patch", "c.patch"},
			dst:    []string{"a.patch", "x.patch", "y.patch"},
			ported: []string{"c.patch"},
			want:   []string{"a.patch", "c.patch", "x.patch", "y.patch"},
		},
		{
			name:   "a patch the target has already is replaced in place",
			src:    []string{"a.patch", "b.patch", "c.patch"},
			dst:    []string{"c.patch", "b.patch"},
			ported: []string{"b.patch"},
			want:   []string{"c.patch", "b.patch"},
		},
		{
			name:   "several patches land in the source's order, whatever the order they are named in",
			src:    []string{"a.patch", "b.patch", "c.patch", "d.patch"},
			dst:    []string{"c.patch"},
			ported: []string{"d.patch", "b.patch", "a.patch"},
			want:   []string{"a.patch", "b.patch", "c.patch", "d.patch"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := portOrder(seriesOf(tc.src...), seriesOf(tc.dst...), tc.ported)
			assert.Equal(t, tc.want, got)
		})
	}
}
