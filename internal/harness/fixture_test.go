package harness_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/tree"
)

// goEnv keeps the caller's go configuration out of the fixture runs and
// any network out of reach.
var goEnv = []string{"GOFLAGS=", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local"}

// requireGo fails the test when there is no go command: the fixtures run
// real go test.
func requireGo(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("go")
	require.NoError(t, err, "the fixture tests run go test")
}

// write writes files (path → content; "" removes the file) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if content == "" {
			require.NoError(t, os.Remove(path))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
}

// newRepo makes a git repository in a temporary directory whose first
// commit, "upstream v1.0.0", holds files.
func newRepo(t *testing.T, files map[string]string) tree.Git {
	t.Helper()
	repo := tree.Git{Dir: t.TempDir()}
	write(t, repo.Dir, files)
	_, err := repo.Run("init", "-q", "-b", "main")
	require.NoError(t, err)
	commit(t, repo, "upstream v1.0.0", nil)
	return repo
}

// commit writes files and commits everything as one commit, like a patch
// of the series, and returns its hash.
func commit(t *testing.T, repo tree.Git, subject string, files map[string]string) string {
	t.Helper()
	write(t, repo.Dir, files)
	_, err := repo.Run("add", "-A")
	require.NoError(t, err)
	_, err = repo.Run("commit", "-q", "--allow-empty", "-m", subject)
	require.NoError(t, err)
	hash, err := repo.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	return hash
}

const goMod = "module example.com/fork\n\ngo 1.22\n"

// upstreamFork is a small module: units rounds bytes up to GiB, and
// capacity counts a node's free GiB with it.
var upstreamFork = map[string]string{
	"go.mod": goMod,
	"units/units.go": `// Package units converts sizes.
package units

// GiB is a size in bytes rounded up to whole GiB.
func GiB(bytes int64) int64 { return (bytes + 1<<30 - 1) >> 30 }
`,
	"units/units_test.go": `package units

import "testing"

func TestGiBOfWholeGiB(t *testing.T) {
	if got := GiB(2 << 30); got != 2 {
		t.Errorf("GiB(2 GiB) = %d, want 2", got)
	}
}
`,
	"capacity/capacity.go": `// Package capacity counts the free capacity of a node.
package capacity

import "example.com/fork/units"

// Free is the GiB a node of capacity GiB has left once claims (in bytes)
// are placed on it.
func Free(capacity int64, claims ...int64) int64 {
	for _, c := range claims {
		capacity -= units.GiB(c)
	}
	return capacity
}
`,
	"capacity/capacity_test.go": `package capacity

import "testing"

func TestFree(t *testing.T) {
	if got := Free(9, 1<<30, 1<<30); got != 7 {
		t.Errorf("Free(9, 1 GiB, 1 GiB) = %d, want 7", got)
	}
}
`,
}
