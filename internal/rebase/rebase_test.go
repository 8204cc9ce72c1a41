package rebase_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/rebase"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// The synthetic upstream: the series is made on release v1.0.0; release
// v1.1.0 moved, changed and fixed things around it.
const (
	baseVersion   = "v1.0.0"
	targetVersion = "v1.1.0"
	authorDate    = "2026-03-01T10:00:00Z"
)

var upstreamDate = time.Date(2026, 2, 10, 12, 53, 36, 0, time.UTC)

// numbered is "line 1\n" ... "line n\n" with the replacements applied.
func numbered(n int, replace ...string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return strings.NewReplacer(replace...).Replace(b.String())
}

func baseFiles() map[string]string {
	return map[string]string{
		"g.txt": "hello\n",
		"f.txt": numbered(30),
		"m.txt": numbered(20),
		"c.txt": numbered(20),
		"h.txt": "nested\n",
		"k.txt": numbered(20),
		"b.txt": "b\n",
	}
}

func targetFiles() map[string]string {
	files := baseFiles()
	files["f.txt"] = "new 1\nnew 2\nnew 3\n" + numbered(30)
	files["m.txt"] = numbered(20, "line 8\n", "line 8 upstream\n")
	files["c.txt"] = numbered(20, "line 10\n", "line 10 upstream\n")
	files["h.txt"] = "nested fixed\n"
	files["k.txt"] = numbered(20, "line 3\n", "line 3 fixed\n", "line 6\n", "line 6 upstream\n")
	return files
}

type fixturePatch struct {
	name, subject, status string
	files                 map[string]string
}

// series covers every outcome on targetVersion, in this order.
var series = []fixturePatch{
	{"clean.patch", "g: greet the world", "", map[string]string{"g.txt": "hello world\n"}},
	{"offset.patch", "f: patch line 20", "", map[string]string{"f.txt": numbered(30, "line 20\n", "line 20 patched\n")}},
	{"three-way.patch", "m: patch line 6", "", map[string]string{"m.txt": numbered(20, "line 6\n", "line 6 patched\n")}},
	{"conflict.patch", "c: patch line 10", "", map[string]string{"c.txt": numbered(20, "line 10\n", "line 10 patched\n")}},
	{"after-conflict.patch", "c: patch line 10 again", "", map[string]string{"c.txt": numbered(20, "line 10\n", "line 10 patched twice\n")}},
	{"reverse-applies.patch", "h: fix nested", "", map[string]string{"h.txt": "nested fixed\n"}},
	{"empty-after-merge.patch", "k: fix line 3", "", map[string]string{"k.txt": numbered(20, "line 3\n", "line 3 fixed\n")}},
	{"backport.patch", "b: backport", "Backport [kubernetes#1, v1.0.5/v1.1.0]", map[string]string{"b.txt": "b backported\n"}},
}

func message(subject, status string) string {
	if status == "" {
		status = "Inappropriate [fork-only: test fixture]"
	}
	return subject + "\n\n" +
		"Symptom: the fixture misbehaves. Root cause: a line. Fix: change it.\n\n" +
		"Upstream-Status: " + status + "\n" +
		"Bug: seed 000 (fixture)\n" +
		"Test: ./pkg/fixture -run '^TestFixture$'\n" +
		"Regression: none (API addition)\n"
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func initTree(t *testing.T, dir, version string, files map[string]string) *tree.Tree {
	t.Helper()
	writeFiles(t, dir, files)
	tr, err := tree.Init(dir, version, upstreamDate)
	require.NoError(t, err)
	return tr
}

// makeSeries commits the fixture patches one after the other on a tree of
// baseVersion and exports them into dir; it returns their paths.
func makeSeries(t *testing.T, dir string) []string {
	t.Helper()
	tr := initTree(t, filepath.Join(t.TempDir(), "work"), baseVersion, baseFiles())
	g := tree.Git{Dir: tr.Dir, Env: []string{"GIT_AUTHOR_DATE=" + authorDate, "GIT_COMMITTER_DATE=" + authorDate}}
	var paths []string
	for _, p := range series {
		writeFiles(t, tr.Dir, p.files)
		_, err := g.Run("add", "-A")
		require.NoError(t, err)
		_, err = g.RunInput([]byte(message(p.subject, p.status)), "commit", "-q", "-F", "-")
		require.NoError(t, err)
		data, err := tr.FormatPatch("HEAD")
		require.NoError(t, err)
		path := filepath.Join(dir, p.name)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		paths = append(paths, path)
	}
	return paths
}

type fixture struct {
	patches      []string
	base, target *tree.Tree
	log          []string
}

func (f *fixture) progress(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

// newFixture makes the series and the two releases' trees, each its own
// repository as the matrix assembles them.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{patches: makeSeries(t, root)}
	f.base = initTree(t, filepath.Join(root, baseVersion, "kubernetes"), baseVersion, baseFiles())
	f.target = initTree(t, filepath.Join(root, targetVersion, "kubernetes"), targetVersion, targetFiles())
	return f
}

// outcomes is what the test compares: patch, outcome, files and After.
type outcome struct {
	Patch   string
	Outcome rebase.Outcome
	Files   []string
	After   []string
}

func outcomes(rs []rebase.Result) []outcome {
	var out []outcome
	for _, r := range rs {
		out = append(out, outcome{r.Patch, r.Outcome, r.Files, r.After})
	}
	return out
}

func TestClassifyOnTheSeriesOwnReleaseIsAllClean(t *testing.T) {
	f := newFixture(t)
	rs, err := rebase.Classify(f.base, f.patches, f.progress)
	require.NoError(t, err)
	for _, r := range rs {
		assert.Equal(t, rebase.Clean, r.Outcome, "%s: %s", r.Patch, r.Detail)
	}
	c, err := f.base.Commits()
	require.NoError(t, err)
	assert.Len(t, c, len(series), "every patch is a commit")
}

func TestClassifyOnANewerRelease(t *testing.T) {
	f := newFixture(t)
	_, err := rebase.Classify(f.base, f.patches, nil)
	require.NoError(t, err)
	require.NoError(t, rebase.ShareObjects(f.target, f.base))

	rs, err := rebase.Classify(f.target, f.patches, f.progress)
	require.NoError(t, err)

	want := []outcome{
		{"clean.patch", rebase.Clean, nil, nil},
		{"offset.patch", rebase.Merged, nil, nil},
		{"three-way.patch", rebase.Merged, nil, nil},
		{"conflict.patch", rebase.Conflict, []string{"c.txt"}, nil},
		{"after-conflict.patch", rebase.Conflict, []string{"c.txt"}, []string{"conflict.patch"}},
		{"reverse-applies.patch", rebase.Upstream, nil, nil},
		{"empty-after-merge.patch", rebase.Upstream, nil, nil},
		// Its Backport trailer names a release the target contains, but the
		// tree lacks the change: metadata alone never drops a patch.
		{"backport.patch", rebase.Clean, nil, nil},
	}
	if diff := cmp.Diff(want, outcomes(rs)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}

	details := map[string]string{}
	for _, r := range rs {
		details[r.Patch] = r.Detail
	}
	for patch, want := range map[string]string{
		"offset.patch":            "f.txt: hunk #1 offset 3",
		"three-way.patch":         "3-way merge",
		"conflict.patch":          "3-way merge left conflicts",
		"reverse-applies.patch":   "the patch reverse-applies",
		"empty-after-merge.patch": "empty after the 3-way merge",
		"backport.patch":          "its Backport v1.1.0 ≤ v1.1.0 says the release has it, but the tree does not show it: kept",
	} {
		assert.Equal(t, want, details[patch], patch)
	}

	t.Run("the tree holds the patches that applied, one commit each, and nothing else", func(t *testing.T) {
		out, err := f.target.Line("log", "--reverse", "--format=%s", "HEAD")
		require.NoError(t, err)
		assert.Equal(t, []string{"upstream v1.1.0", "g: greet the world", "f: patch line 20", "m: patch line 6", "b: backport"}, strings.Split(out, "\n"))
		dirty, err := f.target.Dirty()
		require.NoError(t, err)
		assert.Empty(t, dirty)
		assert.Empty(t, f.target.InProgress())
		data, err := os.ReadFile(filepath.Join(f.target.Dir, "m.txt"))
		require.NoError(t, err)
		assert.Equal(t, numbered(20, "line 6\n", "line 6 patched\n", "line 8\n", "line 8 upstream\n"), string(data))
	})
	t.Run("there is a progress line per patch", func(t *testing.T) {
		require.Len(t, f.log, len(series))
		assert.Equal(t, "v1.1.0: [5/8] after-conflict.patch: conflict (3-way merge left conflicts); after the conflict of conflict.patch", f.log[4])
	})
}

func TestClassifyWithoutTheSeriesBlobsCannotMerge(t *testing.T) {
	f := newFixture(t)
	rs, err := rebase.Classify(f.target, f.patches[2:3], nil)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, rebase.Conflict, rs[0].Outcome)
	assert.Equal(t, []string{"m.txt"}, rs[0].Files)
	assert.Contains(t, rs[0].Detail, "no 3-way merge possible")
	assert.Empty(t, f.target.InProgress(), "the failed git am is aborted")
}

func TestClassifyRefusesADirtyTree(t *testing.T) {
	f := newFixture(t)
	writeFiles(t, f.target.Dir, map[string]string{"g.txt": "local\n"})
	_, err := rebase.Classify(f.target, f.patches, nil)
	require.ErrorContains(t, err, "uncommitted changes")
}

func TestClassifyNamesAMalformedPatch(t *testing.T) {
	f := newFixture(t)
	bad := filepath.Join(t.TempDir(), "bad.patch")
	require.NoError(t, os.WriteFile(bad, []byte("not a patch\n"), 0o644))
	_, err := rebase.Classify(f.target, []string{bad}, nil)
	require.ErrorContains(t, err, "bad.patch")
}

func TestContained(t *testing.T) {
	for _, tc := range []struct {
		name     string
		releases []string
		target   string
		want     bool
	}{
		{"a release of an older minor does not contain a backport to that minor's later patch", []string{"v1.35.6", "v1.36.3"}, "v1.34.4", false},
		{"a patch release before the backport's does not contain it", []string{"v1.35.6", "v1.36.3"}, "v1.35.4", false},
		{"the backport's own release contains it", []string{"v1.35.6", "v1.36.3"}, "v1.35.6", true},
		{"a later patch release of the same minor contains it", []string{"v1.35.6", "v1.36.3"}, "v1.36.4", true},
		{"a newer minor than every listed release contains it", []string{"v1.35.6", "v1.36.3"}, "v1.37.1", true},
		{"a newer major contains it", []string{"v1.36.3"}, "v2.0.0", true},
		{"an invalid target contains nothing", []string{"v1.36.3"}, "1.37.1", false},
		{"no releases contain nothing", nil, "v1.37.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := rebase.Contained(tc.releases, tc.target)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want, why != "", "a reason is given exactly when contained: %q", why)
		})
	}
}

func TestWriteTableAndMarkdown(t *testing.T) {
	patches := []string{"a-long-patch-name.patch", "b.patch"}
	cols := []rebase.Column{
		{Version: "v1.0.0", Results: []rebase.Result{
			{Patch: "a-long-patch-name.patch", Outcome: rebase.Clean},
			{Patch: "b.patch", Outcome: rebase.Clean},
		}},
		{Version: "v1.1.0", Results: []rebase.Result{
			{Patch: "a-long-patch-name.patch", Outcome: rebase.Conflict, Detail: "3-way merge left conflicts", Files: []string{"x.go"}},
			{Patch: "b.patch", Outcome: rebase.Merged, Detail: "3-way merge", After: []string{"a-long-patch-name.patch"}},
		}},
		{Version: "v1.2.0", Err: errors.New("k8s.io/api@v0.2.0 is not served by the module proxy")},
	}
	var table bytes.Buffer
	require.NoError(t, rebase.WriteTable(&table, patches, cols))
	wantTable := `patch                    v1.0.0  v1.1.0    v1.2.0
a-long-patch-name.patch  clean   conflict  error
b.patch                  clean   merged*   error
  v1.1.0 a-long-patch-name.patch: conflict (3-way merge left conflicts; files: x.go)
  v1.1.0 b.patch: merged (3-way merge; * on a tree without the conflicting a-long-patch-name.patch)
  v1.2.0: error: k8s.io/api@v0.2.0 is not served by the module proxy
`
	if diff := cmp.Diff(wantTable, table.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}

	var md bytes.Buffer
	require.NoError(t, rebase.WriteMarkdown(&md, "the fixture series", patches, cols))
	assert.Contains(t, md.String(), "| patch | v1.0.0 | v1.1.0 | v1.2.0 |\n|---|---|---|---|\n| `a-long-patch-name.patch` | clean | conflict | error |\n| `b.patch` | clean | merged* | error |\n")
	assert.Contains(t, md.String(), "- v1.2.0: error: k8s.io/api@v0.2.0 is not served by the module proxy\n")
}

// noProxy is a module proxy that serves nothing.
type noProxy struct{ asked []string }

func (p *noProxy) Download(path, version string) (*modfetch.Downloaded, error) {
	p.asked = append(p.asked, path+"@"+version)
	return nil, &modfetch.NotServedError{Path: path, Version: version, Detail: "404 Not Found"}
}

func TestVersionTreeReusesACachedTreeResetToItsUpstreamCommit(t *testing.T) {
	f := newFixture(t)
	_, err := rebase.Classify(f.target, f.patches, nil)
	require.NoError(t, err)
	writeFiles(t, f.target.Dir, map[string]string{"left-over.txt": "x\n"})
	root, _, err := f.target.Base()
	require.NoError(t, err)

	proxy := &noProxy{}
	tr, err := rebase.VersionTree(f.target.Dir, targetVersion, proxy, func(string, ...any) {})
	require.NoError(t, err)
	assert.Empty(t, proxy.asked, "a cached tree needs no download")
	head, err := tr.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	assert.Equal(t, root, head)
	dirty, err := tr.Dirty()
	require.NoError(t, err)
	assert.Empty(t, dirty)
}

func TestVersionTreeNamesTheReleaseAndModuleTheProxyDoesNotServe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"when nothing is cached", func(t *testing.T, dir string) {}},
		{"when the cached tree is another release", func(t *testing.T, dir string) {
			initTree(t, dir, baseVersion, baseFiles())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "v1.99.0", "kubernetes")
			tc.setup(t, dir)
			_, err := rebase.VersionTree(dir, "v1.99.0", &noProxy{}, func(string, ...any) {})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "upstream v1.99.0")
			assert.Contains(t, err.Error(), "k8s.io/kubernetes@v1.99.0 is not served by the module proxy")
			assert.NoDirExists(t, dir, "nothing is left that a later run would take for a tree")
		})
	}
}
