package tree_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

const version = "v1.34.4"

var (
	upstreamDate = time.Date(2026, 2, 10, 12, 53, 36, 0, time.UTC)
	authorDate   = "2026-03-01T10:00:00Z"
)

// numbered is "line 1\n" ... "line n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// upstreamFiles is the fixture upstream release.
func upstreamFiles() map[string]string {
	return map[string]string{
		"f.txt":      numbered(20),
		"g.txt":      "hello\n",
		"sub/h.txt":  "nested\n",
		".gitignore": "*.log\n",
		"build.log":  "ignored by .gitignore but part of upstream\n",
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// initTree assembles files into a new directory and makes it a tree.
func initTree(t *testing.T, files map[string]string) *tree.Tree {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kubernetes")
	writeFiles(t, dir, files)
	tr, err := tree.Init(dir, version, upstreamDate)
	require.NoError(t, err)
	return tr
}

func message(subject string) string {
	return subject + "\n\n" +
		"Symptom: the fixture misbehaves. Root cause: a line. Fix: change it.\n\n" +
		"Upstream-Status: Inappropriate [fork-only: test fixture]\n" +
		"Bug: seed 000 (fixture)\n" +
		"Test: ./pkg/fixture -run '^TestFixture$'\n" +
		"Regression: none (API addition)\n"
}

// commit commits files (with a fixed author date) as a user would.
func commit(t *testing.T, tr *tree.Tree, subject string, files map[string]string) string {
	t.Helper()
	return commitMessage(t, tr, message(subject), files)
}

// commitMessage commits files with the whole commit message msg.
func commitMessage(t *testing.T, tr *tree.Tree, msg string, files map[string]string) string {
	t.Helper()
	writeFiles(t, tr.Dir, files)
	g := tree.Git{Dir: tr.Dir, Env: []string{"GIT_AUTHOR_DATE=" + authorDate, "GIT_COMMITTER_DATE=" + authorDate}}
	_, err := g.Run("add", "-A")
	require.NoError(t, err)
	_, err = g.RunInput([]byte(msg), "commit", "-q", "-F", "-")
	require.NoError(t, err)
	return head(t, tr)
}

func head(t *testing.T, tr *tree.Tree) string {
	t.Helper()
	h, err := tr.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	return h
}

func commits(t *testing.T, tr *tree.Tree) []string {
	t.Helper()
	c, err := tr.Commits()
	require.NoError(t, err)
	return c
}

func subjects(t *testing.T, tr *tree.Tree) []string {
	t.Helper()
	out, err := tr.Line("log", "--reverse", "--format=%s", "HEAD")
	require.NoError(t, err)
	return strings.Split(out, "\n")
}

var patchSubjects = []string{
	"g: greet the world",
	"f: patch line 6",
	"f: patch line 15 and add new.txt",
}

// patchNames are the patch files of the fixture series, named as Export
// names them.
var patchNames = []string{
	"g-greet-the-world.patch",
	"f-patch-line-6.patch",
	"f-patch-line-15-and-add-new-txt.patch",
}

func patchedF() string {
	return strings.NewReplacer("line 6\n", "line 6 patched\n", "line 15\n", "line 15 patched\n").Replace(numbered(20))
}

// makeSeries writes the fixture series into dir/patches: three patches
// made by committing changes on an upstream tree and exporting them with
// FormatPatch.
func makeSeries(t *testing.T, dir string) *series.Series {
	t.Helper()
	tr := initTree(t, upstreamFiles())
	base := head(t, tr)
	changes := []map[string]string{
		{"g.txt": "hello world\n"},
		{"f.txt": strings.Replace(numbered(20), "line 6\n", "line 6 patched\n", 1)},
		{"f.txt": patchedF(), "sub/new.txt": "new file\n"},
	}
	patches := filepath.Join(dir, "patches")
	require.NoError(t, os.MkdirAll(patches, 0o755))
	for i, ch := range changes {
		c := commit(t, tr, patchSubjects[i], ch)
		data, err := tr.FormatPatch(c)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(patches, patchNames[i]), data, 0o644))
	}
	file := filepath.Join(patches, "series")
	require.NoError(t, os.WriteFile(file, []byte("# The fixture series.\n# In apply order.\n"), 0o644))
	require.NoError(t, tree.WriteSeries(file, patchNames))
	s, err := series.Read(file)
	require.NoError(t, err)
	_, err = tr.Run("reset", "-q", "--hard", base)
	require.NoError(t, err)
	return s
}

type fixture struct {
	tree   *tree.Tree
	series *series.Series
	base   string
	log    []string
}

func (f *fixture) progress(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

var (
	seriesOnce  sync.Once
	seriesFiles map[string]string
)

// cachedSeries writes a copy of the fixture series into dir/patches; the
// patches are made once per test binary, as makeSeries makes them.
func cachedSeries(t *testing.T, dir string) *series.Series {
	t.Helper()
	seriesOnce.Do(func() {
		s := makeSeries(t, t.TempDir())
		seriesFiles = snapshot(t, s.Dir)
	})
	require.NotNil(t, seriesFiles, "making the fixture series failed")
	patches := filepath.Join(dir, "patches")
	writeFiles(t, patches, seriesFiles)
	s, err := series.Read(filepath.Join(patches, "series"))
	require.NoError(t, err)
	return s
}

// newFixture is an upstream tree and the series, not yet applied.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, cachedSeries(t, t.TempDir()))
}

func newFixtureWith(t *testing.T, s *series.Series) *fixture {
	t.Helper()
	tr := initTree(t, upstreamFiles())
	return &fixture{tree: tr, series: s, base: head(t, tr)}
}

// applied is a fixture with the series applied.
func applied(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	require.NoError(t, f.tree.Apply(f.series, version, f.progress))
	return f
}

func rereadSeries(t *testing.T, s *series.Series) *series.Series {
	t.Helper()
	got, err := series.Read(s.File)
	require.NoError(t, err)
	return got
}

func TestInitMakesOneUpstreamCommit(t *testing.T) {
	t.Parallel()
	tr := initTree(t, upstreamFiles())
	base, v, err := tr.Base()
	require.NoError(t, err)
	assert.Equal(t, version, v)
	assert.Equal(t, head(t, tr), base)
	assert.Empty(t, commits(t, tr))
	assert.Equal(t, []string{"upstream v1.34.4"}, subjects(t, tr))

	// Files a .gitignore of the tree hides are upstream files too.
	tracked, err := tr.Line("ls-files")
	require.NoError(t, err)
	assert.Equal(t, []string{".gitignore", "build.log", "f.txt", "g.txt", "sub/h.txt"}, strings.Split(tracked, "\n"))

	who, err := tr.Line("log", "-1", "--format=%an <%ae> %aI | %cn <%ce> %cI")
	require.NoError(t, err)
	assert.Equal(t, "kube-carry <kube-carry@invalid> 2026-02-10T12:53:36+00:00 | kube-carry <kube-carry@invalid> 2026-02-10T12:53:36+00:00", who)
}

func TestInitIsReproducible(t *testing.T) {
	t.Parallel()
	a := initTree(t, upstreamFiles())
	b := initTree(t, upstreamFiles())
	assert.Equal(t, head(t, a), head(t, b))
}

func TestOpen(t *testing.T) {
	t.Parallel()
	tr := initTree(t, upstreamFiles())
	got, err := tree.Open(tr.Dir)
	require.NoError(t, err)
	assert.Equal(t, tr.Dir, got.Dir)

	empty := t.TempDir()
	_, err = tree.Open(empty)
	require.EqualError(t, err, empty+": no patched tree here; run `make fetch` first")
}

func TestExportedFixturePatchesAreValidPatches(t *testing.T) {
	t.Parallel()
	// The patches FormatPatch writes must pass the series lint: the same
	// parser reads them in `carry apply`.
	s := makeSeries(t, t.TempDir())
	for i, e := range s.Entries {
		p, err := series.ReadPatch(s.Path(e))
		require.NoError(t, err, e.Name)
		assert.Equal(t, patchSubjects[i], p.Subject)
		assert.Equal(t, "API addition", p.RegressionNone)
	}
	p, err := series.ReadPatch(s.Path(s.Entries[2]))
	require.NoError(t, err)
	assert.Equal(t, []string{"f.txt", "sub/new.txt"}, p.Files)
}

func TestApplyAppliesEveryPatchAsOneCommit(t *testing.T) {
	t.Parallel()
	f := applied(t)
	cs := commits(t, f.tree)
	require.Len(t, cs, 3)
	assert.Equal(t, append([]string{"upstream v1.34.4"}, patchSubjects...), subjects(t, f.tree))
	assert.Equal(t, "hello world\n", readFile(t, filepath.Join(f.tree.Dir, "g.txt")))
	assert.Equal(t, patchedF(), readFile(t, filepath.Join(f.tree.Dir, "f.txt")))
	assert.Equal(t, "new file\n", readFile(t, filepath.Join(f.tree.Dir, "sub/new.txt")))

	dirty, err := f.tree.Dirty()
	require.NoError(t, err)
	assert.Empty(t, dirty)
	assert.Empty(t, f.tree.InProgress())

	// Every commit is by the fixed identity and dated by its patch.
	who, err := f.tree.Line("log", "-1", "--format=%an <%ae> %aI | %cn <%ce> %cI")
	require.NoError(t, err)
	assert.Equal(t, "kube-carry <kube-carry@invalid> 2026-03-01T10:00:00+00:00 | kube-carry <kube-carry@invalid> 2026-03-01T10:00:00+00:00", who)

	// Apply recorded which patch made which commit.
	records, err := f.tree.AppliedRecords()
	require.NoError(t, err)
	require.Len(t, records, 3)
	for i, c := range cs {
		assert.Equal(t, patchNames[i], records[c].Patch)
	}

	assert.Equal(t, []string{
		"apply: [1/3] g-greet-the-world.patch",
		"apply: [2/3] f-patch-line-6.patch",
		"apply: [3/3] f-patch-line-15-and-add-new-txt.patch",
	}, f.log)
}

func TestApplyIsReproducible(t *testing.T) {
	t.Parallel()
	// Two trees from the same inputs, each with its own series made
	// independently, end at the same commit.
	a := newFixtureWith(t, makeSeries(t, t.TempDir()))
	require.NoError(t, a.tree.Apply(a.series, version, a.progress))
	b := newFixtureWith(t, makeSeries(t, t.TempDir()))
	require.NoError(t, b.tree.Apply(b.series, version, b.progress))
	assert.Equal(t, snapshot(t, a.series.Dir), snapshot(t, b.series.Dir))
	assert.Equal(t, commits(t, a.tree), commits(t, b.tree))
	assert.Equal(t, head(t, a.tree), head(t, b.tree))
}

func TestApplyIsIdempotent(t *testing.T) {
	t.Parallel()
	f := applied(t)
	before := head(t, f.tree)
	f.log = nil
	require.NoError(t, f.tree.Apply(f.series, version, f.progress))
	assert.Equal(t, before, head(t, f.tree))
	assert.Len(t, commits(t, f.tree), 3)
	assert.Equal(t, []string{
		"apply: [1/3] g-greet-the-world.patch (already applied)",
		"apply: [2/3] f-patch-line-6.patch (already applied)",
		"apply: [3/3] f-patch-line-15-and-add-new-txt.patch (already applied)",
	}, f.log)
}

func TestApplyContinuesAPartlyAppliedSeries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	short := *f.series
	short.Entries = f.series.Entries[:1]
	require.NoError(t, f.tree.Apply(&short, version, f.progress))
	require.Len(t, commits(t, f.tree), 1)
	first := head(t, f.tree)

	require.NoError(t, f.tree.Apply(f.series, version, f.progress))
	cs := commits(t, f.tree)
	require.Len(t, cs, 3)
	assert.Equal(t, first, cs[0])
}

func TestApplyRemovesCommitsOfPatchesDroppedFromTheEnd(t *testing.T) {
	t.Parallel()
	f := applied(t)
	cs := commits(t, f.tree)
	short := *f.series
	short.Entries = f.series.Entries[:2]
	require.NoError(t, f.tree.Apply(&short, version, f.progress))
	assert.Equal(t, cs[:2], commits(t, f.tree))
	_, err := os.Stat(filepath.Join(f.tree.Dir, "sub/new.txt"))
	assert.True(t, os.IsNotExist(err))
}

func TestApplyAndPlanRefuseADirtyTree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		prepare  func(t *testing.T, f *fixture)
		file     string
		content  string
		editPath string
	}{
		{
			name:    "a modified file of a fresh tree is named and kept",
			prepare: func(t *testing.T, f *fixture) {},
			file:    "g.txt",
			content: "local edit\n",
		},
		{
			name:    "an untracked file of a fresh tree is named and kept",
			prepare: func(t *testing.T, f *fixture) {},
			file:    "sub/untracked.txt",
			content: "my notes\n",
		},
		{
			name: "a modified file of an applied tree whose series changed is named and kept",
			prepare: func(t *testing.T, f *fixture) {
				require.NoError(t, f.tree.Apply(f.series, version, f.progress))
				// The series changed, so apply would reset the tree.
				editPatch(t, f.series, 1, "+line 6 patched\n", "+line 6 edited\n")
			},
			file:    "f.txt",
			content: "local edit\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tc.prepare(t, f)
			before := head(t, f.tree)
			path := filepath.Join(f.tree.Dir, tc.file)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))

			_, err := f.tree.Plan(f.series, version)
			var se *tree.SyncError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, err.Error(), "uncommitted changes")
			assert.Contains(t, err.Error(), tc.file)

			err = f.tree.Apply(f.series, version, f.progress)
			require.ErrorAs(t, err, &se)
			assert.Contains(t, err.Error(), tc.file)
			assert.Contains(t, err.Error(), "nothing was changed")

			assert.Equal(t, before, head(t, f.tree))
			assert.Equal(t, tc.content, readFile(t, path))
		})
	}
}

func TestApplyRefusesAnOperationInProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.NoError(t, os.Mkdir(filepath.Join(f.tree.Dir, ".git", "rebase-apply"), 0o755))
	err := f.tree.Apply(f.series, version, f.progress)
	var se *tree.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, f.tree.Dir+": a git am (or rebase) is in progress in the patched tree; finish or abort it first (nothing was changed)", err.Error())
	assert.Equal(t, f.base, head(t, f.tree))
}

func TestApplyRefusesATreeOfAnotherRelease(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.tree.Plan(f.series, "v1.34.5")
	var se *tree.SyncError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "the patched tree is upstream v1.34.4 but UPSTREAM pins v1.34.5")
}

func TestApplyRefusesAnUnexportedCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		series func(f *fixture) *series.Series
	}{
		{
			name:   "a commit on top of the applied series",
			series: func(f *fixture) *series.Series { return f.series },
		},
		{
			name: "a commit where the series has another patch",
			series: func(f *fixture) *series.Series {
				other := "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nSubject: another change\n"
				if err := os.WriteFile(filepath.Join(f.series.Dir, "other.patch"), []byte(other), 0o644); err != nil {
					panic(err)
				}
				s := *f.series
				s.Entries = append(append([]series.Entry(nil), f.series.Entries...), series.Entry{Name: "other.patch", Line: 6})
				return &s
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := applied(t)
			mine := commit(t, f.tree, "g: my local work", map[string]string{"g.txt": "mine\n"})

			err := f.tree.Apply(tc.series(f), version, f.progress)
			var se *tree.SyncError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, fmt.Sprintf("%s: commit %.12s %q is not in patches/: run `make export` to keep it, or reset the tree (nothing was changed)", f.tree.Dir, mine, "g: my local work"), err.Error())
			assert.Equal(t, mine, head(t, f.tree))
			assert.Equal(t, "mine\n", readFile(t, filepath.Join(f.tree.Dir, "g.txt")))
		})
	}
}

func TestAnExportedCommitCountsAsApplied(t *testing.T) {
	t.Parallel()
	f := applied(t)
	mine := commit(t, f.tree, "g: my local work", map[string]string{"g.txt": "mine\n"})

	res, err := f.tree.Export(f.series, f.progress)
	require.NoError(t, err)
	assert.Equal(t, []string{"g-my-local-work.patch"}, res.Written)
	assert.Equal(t, patchNames, res.Unchanged)
	assert.Empty(t, res.Removed)

	s := rereadSeries(t, f.series)
	keep, err := f.tree.Plan(s, version)
	require.NoError(t, err)
	assert.Equal(t, 4, keep)

	require.NoError(t, f.tree.Apply(s, version, f.progress))
	assert.Equal(t, mine, head(t, f.tree))
}

func TestACommitWhoseExportIsThePatchFileCountsAsApplied(t *testing.T) {
	t.Parallel()
	// Without apply's records (e.g. commits made by hand, exported by
	// someone else), a commit matches its patch by its export.
	f := applied(t)
	before := head(t, f.tree)
	require.NoError(t, os.Remove(filepath.Join(f.tree.Dir, ".git", "kube-carry-applied")))
	keep, err := f.tree.Plan(f.series, version)
	require.NoError(t, err)
	assert.Equal(t, 3, keep)
	require.NoError(t, f.tree.Apply(f.series, version, f.progress))
	assert.Equal(t, before, head(t, f.tree))
}

func TestApplyReportsAnOffset(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// Another upstream whose f.txt has two more lines at the top: the
	// hunk of f-patch-line-6.patch would apply 2 lines further down.
	files := upstreamFiles()
	files["f.txt"] = "extra a\nextra b\n" + files["f.txt"]
	tr := initTree(t, files)

	err := tr.Apply(f.series, version, f.progress)
	var ae *tree.ApplyError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "f-patch-line-6.patch", ae.Patch)
	assert.Equal(t, "f-patch-line-6.patch: f.txt: hunk #1 applies only at line 5 (offset 2 lines): the patch no longer matches the pinned upstream; refresh it", err.Error())

	// The tree stays at the patch before, clean, with no am in progress.
	assert.Equal(t, []string{"upstream v1.34.4", "g: greet the world"}, subjects(t, tr))
	assert.Empty(t, tr.InProgress())
	dirty, err := tr.Dirty()
	require.NoError(t, err)
	assert.Empty(t, dirty)
}

func TestApplyReportsAConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	files := upstreamFiles()
	files["f.txt"] = strings.Replace(files["f.txt"], "line 6\n", "line 6 changed upstream\n", 1)
	tr := initTree(t, files)

	err := tr.Apply(f.series, version, f.progress)
	var ae *tree.ApplyError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "f-patch-line-6.patch", ae.Patch)
	assert.Equal(t, "f-patch-line-6.patch: f.txt: hunk #1 (@@ -3,7 +3,7 @@) does not apply", err.Error())

	assert.Equal(t, []string{"upstream v1.34.4", "g: greet the world"}, subjects(t, tr))
	assert.Empty(t, tr.InProgress())
	dirty, err := tr.Dirty()
	require.NoError(t, err)
	assert.Empty(t, dirty)
	assert.Equal(t, files["f.txt"], readFile(t, filepath.Join(tr.Dir, "f.txt")))
}

// editPatch edits patch i of the series on the repository side.
func editPatch(t *testing.T, s *series.Series, i int, old, new string) {
	t.Helper()
	path := s.Path(s.Entries[i])
	data := readFile(t, path)
	require.Contains(t, data, old)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(data, old, new, 1)), 0o644))
}

func TestApplyReappliesFromAChangedPatch(t *testing.T) {
	t.Parallel()
	f := applied(t)
	before := commits(t, f.tree)
	editPatch(t, f.series, 1, "+line 6 patched\n", "+line 6 edited\n")

	f.log = nil
	require.NoError(t, f.tree.Apply(f.series, version, f.progress))
	after := commits(t, f.tree)
	require.Len(t, after, 3)
	assert.Equal(t, before[0], after[0], "the patch before the change is kept")
	assert.NotEqual(t, before[1], after[1])
	assert.NotEqual(t, before[2], after[2])
	assert.Equal(t, strings.Replace(patchedF(), "line 6 patched", "line 6 edited", 1), readFile(t, filepath.Join(f.tree.Dir, "f.txt")))
	assert.Equal(t, []string{
		"apply: the series changed at f-patch-line-6.patch; re-applying from there",
		"apply: [1/3] g-greet-the-world.patch (already applied)",
		"apply: [2/3] f-patch-line-6.patch",
		"apply: [3/3] f-patch-line-15-and-add-new-txt.patch",
	}, f.log)
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		out[e.Name()] = readFile(t, filepath.Join(dir, e.Name()))
	}
	return out
}

func TestExportTwiceGivesIdenticalFiles(t *testing.T) {
	t.Parallel()
	f := applied(t)
	original := snapshot(t, f.series.Dir)

	for round := 1; round <= 2; round++ {
		res, err := f.tree.Export(f.series, f.progress)
		require.NoError(t, err)
		assert.Empty(t, res.Written, "round %d", round)
		assert.Equal(t, patchNames, res.Unchanged, "round %d", round)
		assert.Empty(t, res.Removed, "round %d", round)
		if diff := cmp.Diff(original, snapshot(t, f.series.Dir)); diff != "" {
			t.Fatalf("round %d: export changed patches/ (-before +after):\n%s", round, diff)
		}
	}
	// The series keeps its comment header.
	assert.Equal(t, "# The fixture series.\n# In apply order.\n"+strings.Join(patchNames, "\n")+"\n", original["series"])
}

func TestExportNamesANewCommitFromItsSubject(t *testing.T) {
	t.Parallel()
	f := applied(t)
	mine := commit(t, f.tree, "scheduler: Count In-Flight volumes (seed 000)!", map[string]string{"sub/h.txt": "nested and patched\n"})

	res, err := f.tree.Export(f.series, f.progress)
	require.NoError(t, err)
	name := "scheduler-count-in-flight-volumes-seed-000.patch"
	assert.Equal(t, []string{name}, res.Written)

	s := rereadSeries(t, f.series)
	got := make([]string, 0, len(s.Entries))
	for _, e := range s.Entries {
		got = append(got, e.Name)
	}
	assert.Equal(t, append(append([]string(nil), patchNames...), name), got)

	data, err := f.tree.FormatPatch(mine)
	require.NoError(t, err)
	assert.Equal(t, string(data), readFile(t, filepath.Join(s.Dir, name)))
	p, err := series.ReadPatch(filepath.Join(s.Dir, name))
	require.NoError(t, err)
	assert.Equal(t, "scheduler: Count In-Flight volumes (seed 000)!", p.Subject)
	assert.Equal(t, []string{"sub/h.txt"}, p.Files)
}

func TestExportKeepsTheNameOfAnAmendedCommit(t *testing.T) {
	t.Parallel()
	f := applied(t)
	// Amend the last commit: a new commit apply did not make, same subject.
	writeFiles(t, f.tree.Dir, map[string]string{"sub/new.txt": "new file, amended\n"})
	_, err := f.tree.Run("add", "-A")
	require.NoError(t, err)
	_, err = f.tree.Run("commit", "-q", "--amend", "--no-edit")
	require.NoError(t, err)

	res, err := f.tree.Export(f.series, f.progress)
	require.NoError(t, err)
	assert.Equal(t, []string{patchNames[2]}, res.Written)
	assert.Equal(t, patchNames[:2], res.Unchanged)
	assert.Contains(t, readFile(t, f.series.Path(f.series.Entries[2])), "+new file, amended\n")
}

// A patch renamed in patches/ (its file and its series line) keeps the new
// name: the tree's record of the commit still names the old file, which is
// no longer in the series (found in the rebase to v1.37.1, where export
// wrote the old name back and removed the renamed file).
func TestExportKeepsARenamedPatch(t *testing.T) {
	t.Parallel()
	f := applied(t)
	names := append([]string(nil), patchNames...)
	names[1] = "renamed.patch"
	require.NoError(t, os.Rename(f.series.Path(f.series.Entries[1]), filepath.Join(f.series.Dir, names[1])))
	require.NoError(t, tree.WriteSeries(f.series.File, names))
	renamed := rereadSeries(t, f.series)
	original := snapshot(t, f.series.Dir)

	res, err := f.tree.Export(renamed, f.progress)
	require.NoError(t, err)
	assert.Empty(t, res.Written)
	assert.Empty(t, res.Removed)
	assert.Equal(t, names, res.Unchanged)
	if diff := cmp.Diff(original, snapshot(t, f.series.Dir)); diff != "" {
		t.Fatalf("export changed patches/ (-before +after):\n%s", diff)
	}
	// The tree now records the new name: apply finds the series applied.
	keep, err := f.tree.Plan(rereadSeries(t, f.series), version)
	require.NoError(t, err)
	assert.Equal(t, len(names), keep)
}

func TestExportRemovesThePatchOfADroppedCommit(t *testing.T) {
	t.Parallel()
	f := applied(t)
	_, err := f.tree.Run("reset", "-q", "--hard", "HEAD~1")
	require.NoError(t, err)

	res, err := f.tree.Export(f.series, f.progress)
	require.NoError(t, err)
	assert.Equal(t, []string{patchNames[2]}, res.Removed)
	_, err = os.Stat(f.series.Path(f.series.Entries[2]))
	assert.True(t, os.IsNotExist(err))
	s := rereadSeries(t, f.series)
	assert.Len(t, s.Entries, 2)
}

func TestExportRefusesUncommittedChanges(t *testing.T) {
	t.Parallel()
	f := applied(t)
	writeFiles(t, f.tree.Dir, map[string]string{"g.txt": "uncommitted\n"})
	original := snapshot(t, f.series.Dir)
	_, err := f.tree.Export(f.series, f.progress)
	var se *tree.SyncError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "g.txt")
	assert.Equal(t, original, snapshot(t, f.series.Dir))
}

func TestLocalWork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, f *fixture)
		want    string // empty: no local work
	}{
		{
			name:    "a clean applied tree has no local work",
			prepare: func(t *testing.T, f *fixture) {},
		},
		{
			name: "a clean tree without apply records has no local work when its commits are exported",
			prepare: func(t *testing.T, f *fixture) {
				require.NoError(t, os.Remove(filepath.Join(f.tree.Dir, ".git", "kube-carry-applied")))
			},
		},
		{
			name: "a modified file is local work",
			prepare: func(t *testing.T, f *fixture) {
				writeFiles(t, f.tree.Dir, map[string]string{"g.txt": "edited\n"})
			},
			want: "has uncommitted changes:\n   M g.txt",
		},
		{
			name: "an untracked file is local work",
			prepare: func(t *testing.T, f *fixture) {
				writeFiles(t, f.tree.Dir, map[string]string{"notes.txt": "x\n"})
			},
			want: "has uncommitted changes:\n  ?? notes.txt",
		},
		{
			name: "an unexported commit is local work",
			prepare: func(t *testing.T, f *fixture) {
				commit(t, f.tree, "g: my local work", map[string]string{"g.txt": "mine\n"})
			},
			want: `"g: my local work" is in no patch file; run ` + "`make export`",
		},
		{
			name: "an exported commit is no local work",
			prepare: func(t *testing.T, f *fixture) {
				commit(t, f.tree, "g: my local work", map[string]string{"g.txt": "mine\n"})
				_, err := f.tree.Export(f.series, f.progress)
				require.NoError(t, err)
			},
		},
		{
			name: "an am in progress is local work",
			prepare: func(t *testing.T, f *fixture) {
				require.NoError(t, os.Mkdir(filepath.Join(f.tree.Dir, ".git", "rebase-apply"), 0o755))
			},
			want: ": a git am (or rebase) is in progress",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := applied(t)
			tc.prepare(t, f)
			err := f.tree.LocalWork(f.series.Dir)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			var se *tree.SyncError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), f.tree.Dir), err.Error())
		})
	}
}

func TestGitEnvIgnoresTheUsersGitConfig(t *testing.T) {
	home := t.TempDir()
	const userConfig = `[user]
	name = Someone
	email = someone@example.com
[commit]
	gpgsign = true
[gpg]
	program = /bin/false
[format]
	signature = from Someone
	numbered = true
	headers = "X-Someone: 1"
[am]
	threeWay = false
	keepcr = true
[init]
	defaultBranch = trunk
`
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(userConfig), 0o644))
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))

	// The configuration is in effect for git without GitEnv, so this test
	// would notice if GitEnv stopped shielding the tree from it.
	g := tree.Git{Dir: home, Env: []string{"GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig")}}
	name, err := g.Line("config", "user.name")
	require.NoError(t, err)
	require.Equal(t, "Someone", name)

	// Everything, the patches included, is made under that config.
	f := newFixtureWith(t, makeSeries(t, t.TempDir()))
	require.NoError(t, f.tree.Apply(f.series, version, f.progress))
	who, err := f.tree.Line("log", "--format=%an <%ae>|%cn <%ce>|%G?")
	require.NoError(t, err)
	for _, l := range strings.Split(who, "\n") {
		assert.Equal(t, "kube-carry <kube-carry@invalid>|kube-carry <kube-carry@invalid>|N", l)
	}
	branch, err := f.tree.Line("rev-parse", "--abbrev-ref", "HEAD")
	require.NoError(t, err)
	assert.Equal(t, "main", branch)

	data, err := f.tree.FormatPatch("HEAD")
	require.NoError(t, err)
	assert.NotContains(t, string(data), "Someone")
	assert.NotContains(t, string(data), "[PATCH 1/1]")

	// And the result is the one of a tree built without that config.
	t.Setenv("HOME", t.TempDir())
	other := newFixtureWith(t, makeSeries(t, t.TempDir()))
	require.NoError(t, other.tree.Apply(other.series, version, other.progress))
	assert.Equal(t, head(t, other.tree), head(t, f.tree))
	assert.Equal(t, snapshot(t, other.series.Dir), snapshot(t, f.series.Dir))
}

func TestGitEnv(t *testing.T) {
	t.Parallel()
	env := tree.GitEnv()
	for _, want := range []string{
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=kube-carry",
		"GIT_AUTHOR_EMAIL=kube-carry@invalid",
		"GIT_COMMITTER_NAME=kube-carry",
		"GIT_COMMITTER_EMAIL=kube-carry@invalid",
	} {
		assert.Contains(t, env, want)
	}
}

func TestGitErrorNamesTheCommandAndWhatGitSaid(t *testing.T) {
	t.Parallel()
	tr := initTree(t, upstreamFiles())
	_, err := tr.Run("rev-parse", "--verify", "no-such-ref")
	var ge *tree.GitError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, []string{"rev-parse", "--verify", "no-such-ref"}, ge.Args)
	assert.Equal(t, "git rev-parse --verify no-such-ref: exit status 128: fatal: Needed a single revision", err.Error())
}

func TestBaseRefusesATreeNotMadeByInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := tree.Git{Dir: dir}
	_, err := g.Run("init", "-q")
	require.NoError(t, err)
	writeFiles(t, dir, map[string]string{"a.txt": "a\n"})
	_, err = g.Run("add", "-A")
	require.NoError(t, err)
	_, err = g.Run("commit", "-q", "-m", "initial import")
	require.NoError(t, err)

	tr, err := tree.Open(dir)
	require.NoError(t, err)
	_, _, err = tr.Base()
	require.EqualError(t, err, dir+`: the first commit is "initial import", not "upstream vX.Y.Z"`)
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, subject, want string
	}{
		{"a subject becomes lower-case words joined by dashes", "scheduler: count in-flight local-dynamic volumes", "scheduler-count-in-flight-local-dynamic-volumes"},
		{"punctuation at either end is dropped", "  [fix] kubelet: fail fast!  ", "fix-kubelet-fail-fast"},
		{"a subject of symbols only becomes patch", "!!! ???", "patch"},
		{
			"a long subject is cut at a word boundary within 60 characters",
			"volumebinding: account for in-flight local-dynamic volumes per pool across all nodes",
			"volumebinding-account-for-in-flight-local-dynamic-volumes",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tree.Slug(tc.subject)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), 60)
		})
	}
}

func TestWriteSeries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		existing *string
		names    []string
		want     string
	}{
		{
			name:  "a new series has no header",
			names: []string{"a.patch", "b.patch"},
			want:  "a.patch\nb.patch\n",
		},
		{
			name:     "the comment block at the top is kept and the entries replaced",
			existing: ptr("# header 1\n# header 2\nold.patch\n# a comment among entries\nolder.patch\n"),
			names:    []string{"a.patch"},
			want:     "# header 1\n# header 2\na.patch\n",
		},
		{
			name:     "an empty list leaves only the header",
			existing: ptr("# header\nold.patch\n"),
			want:     "# header\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "series")
			if tc.existing != nil {
				require.NoError(t, os.WriteFile(file, []byte(*tc.existing), 0o644))
			}
			require.NoError(t, tree.WriteSeries(file, tc.names))
			assert.Equal(t, tc.want, readFile(t, file))
		})
	}
}

func ptr(s string) *string { return &s }

func TestApplyWithARelativeSeriesPath(t *testing.T) {
	// The scripts run carry at the repository root with patches/series:
	// git runs in the tree, so the patch paths it gets must not be relative.
	repo := t.TempDir()
	cachedSeries(t, repo)
	t.Chdir(repo)
	s, err := series.Read("patches/series")
	require.NoError(t, err)
	f := newFixtureWith(t, s)
	require.NoError(t, f.tree.Apply(s, version, f.progress))
	assert.Len(t, commits(t, f.tree), 3)

	// And errors still name the hunk, which apply reads from the patch.
	files := upstreamFiles()
	files["f.txt"] = strings.Replace(files["f.txt"], "line 6\n", "line 6 changed upstream\n", 1)
	other := initTree(t, files)
	err = other.Apply(s, version, f.progress)
	require.EqualError(t, err, "f-patch-line-6.patch: f.txt: hunk #1 (@@ -3,7 +3,7 @@) does not apply")
}

func TestExportOfATreeWithoutApplyRecords(t *testing.T) {
	t.Parallel()
	// A tree whose commits are the series exported (made by hand or by
	// another clone) is not behind the series: export keeps every patch.
	f := applied(t)
	require.NoError(t, os.Remove(filepath.Join(f.tree.Dir, ".git", "kube-carry-applied")))
	original := snapshot(t, f.series.Dir)

	res, err := f.tree.Export(f.series, f.progress)
	require.NoError(t, err)
	assert.Empty(t, res.Written)
	assert.Equal(t, patchNames, res.Unchanged)
	assert.Empty(t, res.Removed)
	assert.Equal(t, original, snapshot(t, f.series.Dir))
}

func TestExportRefusesToDropAPatchTheTreeNeverApplied(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	short := *f.series
	short.Entries = f.series.Entries[:2]
	require.NoError(t, f.tree.Apply(&short, version, f.progress))
	original := snapshot(t, f.series.Dir)

	_, err := f.tree.Export(f.series, f.progress)
	var se *tree.SyncError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, f.series.File+":5: f-patch-line-15-and-add-new-txt.patch was never applied to the patched tree, so exporting would remove it; run `make apply` first (nothing was changed)", err.Error())
	assert.Equal(t, original, snapshot(t, f.series.Dir))
}

func TestCheckAgainstIndex(t *testing.T) {
	t.Parallel()
	conflicting := upstreamFiles()
	conflicting["f.txt"] = strings.Replace(conflicting["f.txt"], "line 6\n", "line 6 changed upstream\n", 1)
	offset := upstreamFiles()
	offset["f.txt"] = "extra a\nextra b\n" + offset["f.txt"]
	for _, tc := range []struct {
		name     string
		upstream map[string]string
		want     string // error of the second patch; empty: all apply
	}{
		{name: "the series replays on the index of its upstream", upstream: upstreamFiles()},
		{
			name:     "an offset is an ApplyError",
			upstream: offset,
			want:     "f-patch-line-6.patch: f.txt: hunk #1 applies only at line 5 (offset 2 lines): the patch no longer matches the pinned upstream; refresh it",
		},
		{
			name:     "a conflict is an ApplyError naming the hunk",
			upstream: conflicting,
			want:     "f-patch-line-6.patch: f.txt: hunk #1 (@@ -3,7 +3,7 @@) does not apply",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := cachedSeries(t, t.TempDir())
			tr := initTree(t, tc.upstream)
			base := head(t, tr)
			index := filepath.Join(t.TempDir(), "index")
			g := tree.Git{Dir: tr.Dir, Env: []string{"GIT_INDEX_FILE=" + index}}
			_, err := g.Run("read-tree", base)
			require.NoError(t, err)

			var errs []error
			for _, e := range s.Entries {
				errs = append(errs, tr.CheckAgainstIndex(index, s.Path(e)))
			}
			if tc.want == "" {
				for _, err := range errs {
					require.NoError(t, err)
				}
				got, err := g.Line("write-tree")
				require.NoError(t, err)
				// The index holds upstream plus the series: the tree of
				// the applied fixture.
				want := applied(t)
				wantTree, err := want.tree.Line("rev-parse", "HEAD^{tree}")
				require.NoError(t, err)
				assert.Equal(t, wantTree, got)
			} else {
				require.NoError(t, errs[0])
				var ae *tree.ApplyError
				require.ErrorAs(t, errs[1], &ae)
				assert.Equal(t, tc.want, errs[1].Error())
			}
			// The tree itself is untouched.
			assert.Equal(t, base, head(t, tr))
			dirty, err := tr.Dirty()
			require.NoError(t, err)
			assert.Empty(t, dirty)
		})
	}
}

func TestExportKeepsTheNameOfARenamedPatchAfterAnAmendWithANonASCIISubject(t *testing.T) {
	t.Parallel()
	f := applied(t)
	subject := "kubelet: fail fast — duplicate volumes of the same CSI driver and handle"
	commit(t, f.tree, subject, map[string]string{"sub/h.txt": "guarded\n"})
	_, err := f.tree.Export(f.series, f.progress)
	require.NoError(t, err)

	// The patch gets a name of the maintainers' choosing.
	slug := filepath.Join(f.series.Dir, "kubelet-fail-fast-duplicate-volumes-of-the-same-csi-driver.patch")
	require.FileExists(t, slug)
	require.NoError(t, os.Rename(slug, filepath.Join(f.series.Dir, "dup-volumes.patch")))
	require.NoError(t, tree.WriteSeries(f.series.File, append(append([]string(nil), patchNames...), "dup-volumes.patch")))
	before := head(t, f.tree)
	require.NoError(t, f.tree.Apply(rereadSeries(t, f.series), version, f.progress))
	require.Equal(t, before, head(t, f.tree), "the renamed patch is the same commit")

	// Amending the commit keeps its subject, so export keeps the name.
	writeFiles(t, f.tree.Dir, map[string]string{"sub/h.txt": "guarded, amended\n"})
	_, err = f.tree.Run("commit", "-q", "-a", "--amend", "--no-edit")
	require.NoError(t, err)
	res, err := f.tree.Export(rereadSeries(t, f.series), f.progress)
	require.NoError(t, err)
	assert.Equal(t, []string{"dup-volumes.patch"}, res.Written)
	assert.Empty(t, res.Removed)
	p, err := series.ReadPatch(filepath.Join(f.series.Dir, "dup-volumes.patch"))
	require.NoError(t, err)
	assert.Equal(t, subject, p.Subject)
}

// A patch keeps its name when its message does not validate: a long
// subject is folded in the patch file, and export read only its first line
// when the patch lacked a trailer, so the commit got a new name and the
// patch was removed (found adding a patch whose Upstream-Status was still
// to be written).
func TestExportKeepsTheNameOfAPatchWithAFoldedSubjectAndNoTrailers(t *testing.T) {
	t.Parallel()
	f := applied(t)
	subject := "scheduler: the local-dynamic check lists the nodes of all CSIStorageCapacity objects in one pass"
	commitMessage(t, f.tree, subject+"\n\nSymptom, root cause and fix; the trailers are still to come.\n", map[string]string{"sub/h.txt": "first\n"})
	_, err := f.tree.Export(f.series, f.progress)
	require.NoError(t, err)
	slug := filepath.Join(f.series.Dir, tree.Slug(subject)+".patch")
	require.Contains(t, readFile(t, slug), "Subject: scheduler: the local-dynamic check lists the nodes of all\n ", "the fixture needs a folded subject")
	_, err = series.ReadPatch(slug)
	require.Error(t, err, "the fixture needs a patch that does not validate")

	require.NoError(t, os.Rename(slug, filepath.Join(f.series.Dir, "first-pass.patch")))
	require.NoError(t, tree.WriteSeries(f.series.File, append(append([]string(nil), patchNames...), "first-pass.patch")))
	require.NoError(t, f.tree.Apply(rereadSeries(t, f.series), version, f.progress))

	writeFiles(t, f.tree.Dir, map[string]string{"sub/h.txt": "first, amended\n"})
	_, err = f.tree.Run("commit", "-q", "-a", "--amend", "--no-edit")
	require.NoError(t, err)
	res, err := f.tree.Export(rereadSeries(t, f.series), f.progress)
	require.NoError(t, err)
	assert.Equal(t, []string{"first-pass.patch"}, res.Written)
	assert.Empty(t, res.Removed)
	assert.Contains(t, readFile(t, filepath.Join(f.series.Dir, "first-pass.patch")), "+first, amended\n")
}

// A series patch whose subject cannot be read is named in an error, and
// nothing is changed: export could not match it to its commit.
func TestExportRefusesASeriesPatchWithoutASubject(t *testing.T) {
	t.Parallel()
	f := applied(t)
	path := f.series.Path(f.series.Entries[1])
	data := readFile(t, path)
	broken := strings.Replace(data, "Subject: ", "Subjekt: ", 1)
	require.NotEqual(t, data, broken)
	require.NoError(t, os.WriteFile(path, []byte(broken), 0o644))
	before := snapshot(t, f.series.Dir)

	_, err := f.tree.Export(f.series, f.progress)
	require.Error(t, err)
	assert.Contains(t, err.Error(), patchNames[1]+": its subject cannot be read")
	assert.Contains(t, err.Error(), "no Subject: header")
	assert.Empty(t, cmp.Diff(before, snapshot(t, f.series.Dir)), "export changed patches/")
}

func TestGitIgnoresRepositoryVariablesOfTheCaller(t *testing.T) {
	// Git exports GIT_DIR and GIT_WORK_TREE to hooks: `make` run from a
	// hook of the kube-carry repository must still work on the tree.
	outer := initTree(t, map[string]string{"outer.txt": "the caller's repository\n"})
	outerHead := head(t, outer)
	t.Setenv("GIT_DIR", filepath.Join(outer.Dir, ".git"))
	t.Setenv("GIT_WORK_TREE", outer.Dir)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(outer.Dir, ".git", "index"))

	f := newFixtureWith(t, makeSeries(t, t.TempDir()))
	require.NoError(t, f.tree.Apply(f.series, version, f.progress))
	assert.Len(t, commits(t, f.tree), 3)
	assert.Equal(t, patchedF(), readFile(t, filepath.Join(f.tree.Dir, "f.txt")))

	assert.Equal(t, outerHead, head(t, outer))
	assert.Equal(t, "the caller's repository\n", readFile(t, filepath.Join(outer.Dir, "outer.txt")))
	_, err := os.Stat(filepath.Join(outer.Dir, "f.txt"))
	assert.True(t, os.IsNotExist(err), "the caller's work tree got the tree's files")
}
