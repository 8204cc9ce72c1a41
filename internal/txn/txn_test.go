package txn_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/txn"
)

// world is a repository-like folder with a command's staged result: a
// folder (line), a file (CHANGELOG.md) and a folder that does not exist yet
// (a new line), each staged next to its destination.
type world struct {
	root    string
	journal string
	moves   []txn.Move
}

var (
	before = map[string]string{
		"patches/v1.0/series":  "a.patch\n",
		"patches/v1.0/a.patch": "old a\n",
		"CHANGELOG.md":         "# Changelog\n",
	}
	staged = map[string]string{
		"patches/.v1.0.stage/series":  "a.patch\nb.patch\n",
		"patches/.v1.0.stage/a.patch": "new a\n",
		"patches/.v1.0.stage/b.patch": "new b\n",
		".CHANGELOG.md.stage":         "# Changelog\n\n## new\n",
		"patches/.v1.1.stage/series":  "c.patch\n",
		"patches/.v1.1.stage/c.patch": "c\n",
	}
	after = map[string]string{
		"patches/v1.0/series":  "a.patch\nb.patch\n",
		"patches/v1.0/a.patch": "new a\n",
		"patches/v1.0/b.patch": "new b\n",
		"CHANGELOG.md":         "# Changelog\n\n## new\n",
		"patches/v1.1/series":  "c.patch\n",
		"patches/v1.1/c.patch": "c\n",
	}
)

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	fixture.WriteFiles(t, root, before)
	fixture.WriteFiles(t, root, staged)
	p := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	return &world{
		root:    root,
		journal: p("patches/.v1.0.journal"),
		moves: []txn.Move{
			{New: p("patches/.v1.0.stage"), Dst: p("patches/v1.0"), Old: p("patches/.v1.0.old")},
			{New: p(".CHANGELOG.md.stage"), Dst: p("CHANGELOG.md"), Old: p(".CHANGELOG.md.old")},
			{New: p("patches/.v1.1.stage"), Dst: p("patches/v1.1"), Old: p("patches/.v1.1.old")},
		},
	}
}

// writeJournal writes the journal as Commit does, without doing any move.
func (w *world) writeJournal(t *testing.T) {
	t.Helper()
	data, err := json.MarshalIndent(struct{ Moves []txn.Move }{w.moves}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(w.journal, append(data, '\n'), 0o644))
}

// steps are the renames and removals a Commit does after writing the
// journal, in order; a kill can fall between any two.
func (w *world) steps() []func() error {
	var out []func() error
	for _, m := range w.moves {
		if _, err := os.Lstat(m.Dst); err == nil {
			out = append(out, func() error { return os.Rename(m.Dst, m.Old) })
		}
		out = append(out, func() error { return os.Rename(m.New, m.Dst) })
	}
	for _, m := range w.moves {
		out = append(out, func() error { return os.RemoveAll(m.Old) })
	}
	return out
}

func TestCommit(t *testing.T) {
	w := newWorld(t)
	require.NoError(t, txn.Commit(w.journal, w.moves))
	assert.Equal(t, after, fixture.Snapshot(t, w.root), "every staged path is in place; no stage, old copy or journal is left")
	assert.False(t, txn.Pending(w.journal))
}

func TestCommitRefusesBeforeWritingTheJournal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moves func(w *world) []txn.Move
		want  func(w *world) string
	}{
		{
			name: "a move without an Old path",
			moves: func(w *world) []txn.Move {
				m := append([]txn.Move(nil), w.moves...)
				m[1].Old = ""
				return m
			},
			want: func(w *world) string {
				return "txn: incomplete move {New:" + w.moves[1].New + " Dst:" + w.moves[1].Dst + " Old:}"
			},
		},
		{
			name: "a staged path that does not exist",
			moves: func(w *world) []txn.Move {
				m := append([]txn.Move(nil), w.moves...)
				m[2].New += ".missing"
				return m
			},
			want: func(w *world) string {
				return "txn: staged " + w.moves[2].New + ".missing: lstat " + w.moves[2].New + ".missing: no such file or directory"
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			snap := fixture.Snapshot(t, w.root)
			err := txn.Commit(w.journal, tc.moves(w))
			require.EqualError(t, err, tc.want(w))
			assert.Equal(t, snap, fixture.Snapshot(t, w.root), "nothing moved, no journal")
		})
	}
}

// TestResumeAfterAKillAtEveryStep kills the commit after each of its steps
// (the journal written, then k renames and removals done by hand): Resume
// always ends in the after state, and a second Resume changes nothing.
func TestResumeAfterAKillAtEveryStep(t *testing.T) {
	n := len(newWorld(t).steps())
	require.Equal(t, 8, n, "2 renames for each existing destination, 1 for the new one, 3 removals")
	for k := 0; k <= n; k++ {
		t.Run(fmt.Sprintf("killed after %d of %d steps", k, n), func(t *testing.T) {
			w := newWorld(t)
			w.writeJournal(t)
			for _, step := range w.steps()[:k] {
				require.NoError(t, step())
			}
			require.True(t, txn.Pending(w.journal))
			require.NoError(t, txn.Resume(w.journal))
			assert.Equal(t, after, fixture.Snapshot(t, w.root))
			assert.False(t, txn.Pending(w.journal))
			require.NoError(t, txn.Resume(w.journal), "a second resume is a no-op")
			assert.Equal(t, after, fixture.Snapshot(t, w.root))
		})
	}
}

func TestResumeReplacesAStaleOldCopy(t *testing.T) {
	w := newWorld(t)
	fixture.WriteFiles(t, w.root, map[string]string{"patches/.v1.0.old/leftover": "from an earlier run\n"})
	w.writeJournal(t)
	require.NoError(t, txn.Resume(w.journal))
	assert.Equal(t, after, fixture.Snapshot(t, w.root))
}

func TestResumeWithoutAJournalIsANoOp(t *testing.T) {
	w := newWorld(t)
	snap := fixture.Snapshot(t, w.root)
	require.NoError(t, txn.Resume(w.journal))
	assert.Equal(t, snap, fixture.Snapshot(t, w.root), "staged paths without a journal are the state before: left for the command to remove")
	assert.False(t, txn.Pending(w.journal))
}

func TestResumeOfACorruptJournalFailsNamingIt(t *testing.T) {
	w := newWorld(t)
	require.NoError(t, os.WriteFile(w.journal, []byte("{\"Moves\": [\n"), 0o644))
	snap := fixture.Snapshot(t, w.root)
	err := txn.Resume(w.journal)
	require.Error(t, err)
	assert.Contains(t, err.Error(), w.journal+": ")
	assert.Contains(t, err.Error(), "the journal of an interrupted command; its staged files are named in it")
	assert.Equal(t, snap, fixture.Snapshot(t, w.root))
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	for _, content := range []string{"first\n", "second, longer\n", ""} {
		require.NoError(t, txn.WriteFile(file, []byte(content)))
		assert.Equal(t, map[string]string{"f.txt": content}, fixture.Snapshot(t, dir), "no temporary file is left")
		info, err := os.Stat(file)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())
	}
	err := txn.WriteFile(filepath.Join(dir, "missing", "f.txt"), []byte("x"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestCopyDir(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"series":               "a.patch\n",
		"a.patch":              "a\n",
		"mutants/m.patch":      "m\n",
		"deep/er/still/x.txt":  "x\n",
		".hidden":              "kept\n",
		"mutants/empty.patch":  "",
		"deep/er/sibling.txt":  "s\n",
		"deep/top-of-deep.txt": "t\n",
	}
	fixture.WriteFiles(t, src, files)
	require.NoError(t, os.Mkdir(filepath.Join(src, "empty"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(src, "a.patch"), 0o600))

	dst := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, txn.CopyDir(src, dst))
	assert.Equal(t, fixture.Snapshot(t, src), fixture.Snapshot(t, dst), "every file and folder, empty ones too")
	info, err := os.Stat(filepath.Join(dst, "a.patch"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm(), "copies are plain 0644 files")

	fixture.WriteFiles(t, dst, map[string]string{"a.patch": "changed\n"})
	assert.Equal(t, "a\n", fixture.ReadFile(t, filepath.Join(src, "a.patch")), "the copy is independent of the source")
}

func TestCopyDirRefusesASymlink(t *testing.T) {
	src := t.TempDir()
	fixture.WriteFiles(t, src, map[string]string{"a.patch": "a\n"})
	require.NoError(t, os.Symlink("a.patch", filepath.Join(src, "link.patch")))
	err := txn.CopyDir(src, filepath.Join(t.TempDir(), "copy"))
	require.EqualError(t, err, filepath.Join(src, "link.patch")+": not a regular file")
}
