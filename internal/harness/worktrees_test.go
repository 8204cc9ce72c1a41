package harness_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/harness"
)

// TestWorktreesReuseAGivenBackWorktree: a worktree given back serves the
// next Get at another commit, in the same folder, with nothing of its
// earlier use left; two held at once are two folders; Close removes them
// all, also one still held.
func TestWorktreesReuseAGivenBackWorktree(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "upstream\n"})
	first := commit(t, repo, "patch 1", map[string]string{"a.txt": "patch 1\n", "b.txt": "added by patch 1\n"})
	second := commit(t, repo, "patch 2", map[string]string{"a.txt": "patch 2\n"})
	upstream, err := repo.Line("rev-list", "--max-parents=0", "HEAD")
	require.NoError(t, err)
	w := &harness.Worktrees{Repo: repo, Dir: filepath.Join(t.TempDir(), "work")}

	dir1, release1, err := w.Get(first)
	require.NoError(t, err)
	assertFile(t, dir1, "a.txt", "patch 1\n")
	// What a check leaves: a changed file (a mutant, a test file of a
	// later commit), an untracked file and an ignored one.
	write(t, dir1, map[string]string{"a.txt": "mutant\n", "new_test.go": "package x\n", ".gitignore": "*.out\n", "cover.out": "x\n"})

	dir2, release2, err := w.Get(second)
	require.NoError(t, err)
	assert.NotEqual(t, dir1, dir2, "a worktree still held is not lent again")
	assertFile(t, dir2, "a.txt", "patch 2\n")

	release1()
	release1() // a second release changes nothing
	dir3, release3, err := w.Get(upstream)
	require.NoError(t, err)
	assert.Equal(t, dir1, dir3, "the worktree given back is reused")
	assertFile(t, dir3, "a.txt", "upstream\n")
	for _, gone := range []string{"b.txt", "new_test.go", ".gitignore", "cover.out"} {
		assert.NoFileExists(t, filepath.Join(dir3, gone), "left from the earlier use or from the other commit")
	}
	release3()
	release2()
	dir4, _, err := w.Get(first)
	require.NoError(t, err)
	dir5, _, err := w.Get(first)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{dir1, dir2}, []string{dir4, dir5}, "no third folder while two are free")

	require.NoError(t, w.Close())
	for _, dir := range []string{dir1, dir2, w.Dir} {
		assert.NoDirExists(t, dir)
	}
	out, err := repo.Line("worktree", "list", "--porcelain")
	require.NoError(t, err)
	assert.NotContains(t, out, w.Dir, "git still lists a worktree")
}

// TestWorktreesGetOfAnUnknownCommitIsAnError: nothing is lent, and the
// error reaches the caller.
func TestWorktreesGetOfAnUnknownCommitIsAnError(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "upstream\n"})
	w := &harness.Worktrees{Repo: repo, Dir: filepath.Join(t.TempDir(), "work")}
	t.Cleanup(func() { _ = w.Close() })
	_, _, err := w.Get("0123456789012345678901234567890123456789")
	require.Error(t, err)
	head, err := repo.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	dir, release, err := w.Get(head)
	require.NoError(t, err)
	assertFile(t, dir, "a.txt", "upstream\n")
	release()
	_, _, err = w.Get("0123456789012345678901234567890123456789")
	require.Error(t, err, "moving a worktree to an unknown commit")
}

func assertFile(t *testing.T, dir, name, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	assert.Equal(t, want, string(got), "%s in %s", name, dir)
}
