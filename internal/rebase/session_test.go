package rebase_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/rebase"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// repo is a fixture repository: the series of this package's fixture on
// baseVersion, its patched tree, and a rebase session directory whose target
// tree holds targetVersion.
type repo struct {
	line    line.Line
	root    string
	dir     string // the session directory
	patches []string
	base    *tree.Tree
	files   map[string]string // repository files as they were
}

const (
	oldPin       = "version v1.0.0\n"
	newPin       = "version v1.1.0\n"
	oldChangelog = "# Changelog\n\nIntro.\n\n## v1.0.0-carry.3\n\n- old entry\n"
)

func newRepo(t *testing.T) *repo {
	t.Helper()
	root := t.TempDir()
	l := line.Line{Root: root, Name: "v1.0"}
	r := &repo{line: l, root: root, dir: filepath.Join(root, "_output", "v1.0", "rebase")}
	require.NoError(t, os.MkdirAll(l.Dir(), 0o755))
	r.patches = makeSeries(t, l.Dir())
	var names []string
	for _, p := range r.patches {
		names = append(names, filepath.Base(p))
	}
	require.NoError(t, tree.WriteSeries(filepath.Join(l.Dir(), "series"), names))
	writeFiles(t, root, map[string]string{"patches/v1.0/UPSTREAM": oldPin, "patches/v1.0/REVISION": "3\n", "CHANGELOG.md": oldChangelog})

	r.base = initTree(t, l.TreeDir(), baseVersion, baseFiles())
	_, err := rebase.Classify(r.base, r.patches, nil)
	require.NoError(t, err)

	target := initTree(t, rebase.TreeDir(r.dir), targetVersion, targetFiles())
	require.NoError(t, rebase.ShareObjects(target, r.base))
	writeFiles(t, r.dir, map[string]string{"UPSTREAM": newPin})

	r.files = r.snapshot(t)
	return r
}

// snapshot reads every repository file outside _output.
func (r *repo) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(r.root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.root, p)
		if d.IsDir() {
			if rel == "_output" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = string(data)
		return err
	})
	require.NoError(t, err)
	return out
}

func (r *repo) start(t *testing.T) *rebase.Session {
	t.Helper()
	s, err := rebase.StartSession(&rebase.Session{Dir: r.dir, Kind: rebase.KindRebase, FromLine: "v1.0", Line: "v1.0", From: baseVersion, To: targetVersion}, r.patches, func(string, ...any) {})
	require.NoError(t, err)
	return s
}

func outcomeOf(s *rebase.Session) map[string]rebase.Outcome {
	out := map[string]rebase.Outcome{}
	for _, r := range s.Results {
		out[r.Patch] = r.Outcome
	}
	return out
}

func TestRebaseStopsAtTheFirstConflictWithTheTreeReadyToResolve(t *testing.T) {
	r := newRepo(t)
	s := r.start(t)

	require.True(t, s.Stopped, "the replay stops at the conflict")
	require.NotNil(t, s.Conflict)
	assert.Equal(t, "conflict.patch", s.Conflict.Patch)
	assert.Equal(t, []string{"c.txt"}, s.Conflict.Files)
	assert.Equal(t, map[string]rebase.Outcome{
		"clean.patch": rebase.Clean, "offset.patch": rebase.Merged, "three-way.patch": rebase.Merged,
	}, outcomeOf(s))
	tr, err := s.Tree()
	require.NoError(t, err)
	assert.NotEmpty(t, tr.InProgress(), "the tree is left mid-git-am")
	content, err := os.ReadFile(filepath.Join(tr.Dir, "c.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(content), "<<<<<<<", "conflict markers are left to resolve")

	loaded, err := rebase.Load(r.dir)
	require.NoError(t, err)
	assert.True(t, loaded.Stopped, "the state survives the process")
	assert.Len(t, loaded.Results, 3)

	_, err = rebase.Start(r.dir, baseVersion, targetVersion, r.patches, nil)
	assert.ErrorContains(t, err, "a rebase is already in progress")
	assert.Equal(t, r.files, r.snapshot(t), "nothing of the repository changes before the rebase finishes")
}

func TestRebaseContinueRefusesWhileTheAmIsUnresolved(t *testing.T) {
	r := newRepo(t)
	s := r.start(t)
	err := s.Continue(func(string, ...any) {})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "git am --continue")
	assert.Contains(t, err.Error(), "conflict.patch")
}

func TestRebaseContinueAndFinish(t *testing.T) {
	r := newRepo(t)
	s := r.start(t)
	tr, err := s.Tree()
	require.NoError(t, err)

	// The user resolves: upstream's line 10 and the patch's, then goes on.
	writeFiles(t, tr.Dir, map[string]string{"c.txt": numbered(20, "line 10\n", "line 10 patched\n")})
	_, err = tr.Run("add", "c.txt")
	require.NoError(t, err)
	_, err = tr.Run("am", "--continue")
	require.NoError(t, err)

	s, err = rebase.Load(r.dir)
	require.NoError(t, err)
	require.NoError(t, s.Continue(func(string, ...any) {}))
	require.True(t, s.Done())
	assert.Equal(t, map[string]rebase.Outcome{
		"clean.patch": rebase.Clean, "offset.patch": rebase.Merged, "three-way.patch": rebase.Merged,
		"conflict.patch": rebase.Reworked, "after-conflict.patch": rebase.Clean,
		"reverse-applies.patch": rebase.Upstream, "empty-after-merge.patch": rebase.Upstream, "backport.patch": rebase.Clean,
	}, outcomeOf(s))

	require.NoError(t, s.Finish(r.line, func(string, ...any) {}))
	files := r.snapshot(t)

	assert.Equal(t, newPin, files["patches/v1.0/UPSTREAM"], "UPSTREAM pins the target")
	assert.Equal(t, "1\n", files["patches/v1.0/REVISION"], "the series revision restarts")
	assert.Equal(t, "clean.patch\noffset.patch\nthree-way.patch\nconflict.patch\nafter-conflict.patch\nbackport.patch\n", files["patches/v1.0/series"])
	for _, gone := range []string{"reverse-applies.patch", "empty-after-merge.patch"} {
		assert.NoFileExists(t, filepath.Join(r.line.Dir(), gone), "an upstreamed patch leaves the line's folder")
		assert.Contains(t, files["patches/v1.0/DROPPED"], gone+" upstream in v1.1.0", "and is recorded as dropped")
	}
	changelog := files["CHANGELOG.md"]
	assert.Less(t, strings.Index(changelog, "## v1.1.0-carry.1 (line v1.0, unreleased)"), strings.Index(changelog, "## v1.0.0-carry.3"), "the new section comes first")
	for _, line := range []string{
		"- kept `clean.patch`",
		"- refreshed `offset.patch`",
		"- refreshed `three-way.patch` (3-way merge)",
		"- reworked `conflict.patch` (conflict in c.txt resolved by hand)",
		"- kept `backport.patch` (applies cleanly on v1.1.0)",
		"- dropped `reverse-applies.patch`: upstream in v1.1.0 (the patch reverse-applies)",
	} {
		assert.Contains(t, changelog, line)
	}

	// The patched tree is the rebased one, standalone, and the patches are
	// its commits exported.
	pt, err := tree.Open(r.line.TreeDir())
	require.NoError(t, err)
	_, v, err := pt.Base()
	require.NoError(t, err)
	assert.Equal(t, targetVersion, v)
	commits, err := pt.Commits()
	require.NoError(t, err)
	require.Len(t, commits, 6)
	for i, name := range []string{"clean.patch", "offset.patch", "three-way.patch", "conflict.patch", "after-conflict.patch", "backport.patch"} {
		want, err := pt.FormatPatch(commits[i])
		require.NoError(t, err)
		assert.Equal(t, string(want), files["patches/v1.0/"+name], "%s is its commit exported", name)
	}
	assert.NoFileExists(t, filepath.Join(pt.Dir, ".git", "objects", "info", "alternates"))
	_, err = pt.Run("fsck", "--connectivity-only")
	assert.NoError(t, err, "the tree has every object it needs")
	assert.NoDirExists(t, r.dir, "the session is gone")
}

func TestRebaseSkipDropsThePatchByHand(t *testing.T) {
	r := newRepo(t)
	s := r.start(t)
	tr, err := s.Tree()
	require.NoError(t, err)
	_, err = tr.Run("am", "--skip")
	require.NoError(t, err)
	require.NoError(t, s.Continue(func(string, ...any) {}))
	assert.Equal(t, rebase.Skipped, outcomeOf(s)["conflict.patch"])
	assert.NotContains(t, s.Kept(), "conflict.patch")
}

func TestRebaseAbortRestoresEverything(t *testing.T) {
	r := newRepo(t)
	head, err := r.base.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	r.start(t)

	require.NoError(t, rebase.Abort(r.dir, r.line))
	assert.NoDirExists(t, r.dir)
	assert.Equal(t, r.files, r.snapshot(t), "pin, series and patches are as before")
	after, err := r.base.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	assert.Equal(t, head, after, "the patched tree is as before")
	assert.ErrorContains(t, rebase.Abort(r.dir, r.line), "nothing in progress")
}
