package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/build"
	"github.com/kube-carry/kube-carry/internal/line"
)

// TestMatrixOnRealReleases runs the matrix of the line's series on the
// releases the project pins: every supported line's pin (from patches/,
// not a list kept here). It checks the matrix tool end to end on real
// releases: every patch gets an outcome on every release, and on the
// line's own release every patch is clean.
func TestMatrixOnRealReleases(t *testing.T) {
	l := load(t)
	lines, err := line.List(root)
	require.NoError(t, err)
	supported, err := line.Supported(lines)
	require.NoError(t, err)
	var versions []string
	for _, o := range supported {
		p, err := o.Pin()
		require.NoError(t, err)
		versions = append(versions, p.Version)
	}
	require.Contains(t, versions, l.pin.Version, "line %s is supported", ln.Name)
	cmd := exec.Command("go", append([]string{"run", "./cmd/carry", "--line", ln.Name, "matrix"}, versions...)...)
	cmd.Dir = root
	// The settings of every go command (internal/build): built with
	// others, carry's packages would be compiled again.
	cmd.Env = append(os.Environ(), build.Env()...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	data, err := os.ReadFile(rootPath("_output/matrix.json"))
	require.NoError(t, err)
	var m struct {
		Line     string
		Releases []string
		Errors   map[string]string
		Cells    map[string]map[string]struct{ Outcome, Detail string }
	}
	require.NoError(t, json.Unmarshal(data, &m))
	assert.Equal(t, ln.Name, m.Line)
	assert.Equal(t, versions, m.Releases)
	assert.Empty(t, m.Errors)
	for _, p := range l.patches {
		name := filepath.Base(p.File)
		row, ok := m.Cells[name]
		require.True(t, ok, "%s has a row in the matrix", name)
		for _, v := range versions {
			assert.NotEmpty(t, row[v].Outcome, "%s on %s", name, v)
		}
		assert.Equal(t, "clean", row[l.pin.Version].Outcome, "%s on the line's own release", name)
	}
	md, err := os.ReadFile(rootPath("_output/matrix.md"))
	require.NoError(t, err)
	t.Logf("\n%s", md)
}
