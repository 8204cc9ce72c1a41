package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/rebase"
)

// TestMatrixOnRealReleases runs the forward-compatibility matrix of the
// current series on the real releases (slow when cold: it assembles each
// release from the module proxy). On the pinned release every patch is
// clean; a backport is upstream on every release that contains it.
func TestMatrixOnRealReleases(t *testing.T) {
	l := load(t)
	versions := []string{"v1.34.4", "v1.35.4", "v1.36.4", "v1.37.1"}
	cmd := exec.Command("go", append([]string{"run", "./cmd/carry", "matrix"}, versions...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	md, err := os.ReadFile(rootPath("_output/matrix.md"))
	require.NoError(t, err)
	cells := map[string]map[string]string{}
	var header []string
	for _, line := range strings.Split(string(md), "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|--") || strings.HasPrefix(line, "| --") {
			continue
		}
		f := strings.Split(strings.Trim(line, "|"), "|")
		for i := range f {
			f[i] = strings.Trim(strings.TrimSpace(f[i]), "`*")
		}
		if header == nil {
			header = f
			continue
		}
		cells[f[0]] = map[string]string{}
		for i, v := range f[1:] {
			if i+1 < len(header) {
				cells[f[0]][header[i+1]] = v
			}
		}
	}
	for _, p := range l.patches {
		name := filepath.Base(p.File)
		row, ok := cells[name]
		require.True(t, ok, "%s has a row in the matrix:\n%s", name, md)
		assert.Equal(t, "clean", row[l.pin.Version], "%s on the pinned release", name)
		if p.Status.Kind == "Backport" {
			for _, v := range versions {
				if ok, _ := rebase.Contained(p.Status.Releases, v); ok {
					assert.Equal(t, "upstream", row[v], "%s is a backport contained in %s", name, v)
				}
			}
		}
	}
	t.Logf("\n%s", md)
}
