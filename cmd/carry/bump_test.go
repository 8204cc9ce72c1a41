package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// bumpedChangelog is CHANGELOG.md after a bump of line v1.0 from v1.0.0 to
// `to` with the given patch lines.
func bumpedChangelog(to string, lines ...string) string {
	return "# Changelog\n\nWhat changed in each fork release.\n\n" +
		"## " + to + "-carry.1 (line v1.0, unreleased)\n\n" +
		"Upstream: Kubernetes " + to + " (bumped from v1.0.0 with `make bump LINE=v1.0`).\n\n" +
		"### Patches\n" + strings.Join(lines, "\n") + "\n\n" +
		"## v0.9.0-carry.2 (line v0.9)\n\n- an older release\n"
}

// applied is files with the patches of v10Series applied.
func applied(files map[string]string, patches ...fixturePatch) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for _, p := range patches {
		out[p.file] = strings.Replace(out[p.file], p.from, p.to, 1)
	}
	return out
}

// tableRow matches the row of patch in the outcome table a finished
// session prints.
func tableRow(patch, outcome, detail string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(patch) + ` +` + regexp.QuoteMeta(outcome) + ` +` + regexp.QuoteMeta(detail) + `$`)
}

func TestBump(t *testing.T) {
	threeNewLines := "new 1\nnew 2\nnew 3\n" + fixture.Numbered(20)
	for _, tc := range []struct {
		name string
		// releases are served besides v1.0.0 (the pin).
		releases []fixture.Release
		// upstream is v1.0.1's tree.
		upstream map[string]string
		// refreshed are the patches whose file the bump rewrites.
		refreshed []string
		changelog []string
		table     []*regexp.Regexp
	}{
		{
			name: "every patch applies cleanly; a listed v1.0.2 that the proxy cannot serve whole is skipped, saying why",
			releases: []fixture.Release{
				{Version: "v1.0.1", Files: upstreamFiles("NEWS.txt", "v1.0.1\n")},
				{Version: "v1.0.2", NoZip: true},
			},
			upstream: upstreamFiles("NEWS.txt", "v1.0.1\n"),
			changelog: []string{
				"- kept `alpha.patch` (applies cleanly on v1.0.1)",
				"- kept `bravo.patch` (applies cleanly on v1.0.1)",
				"- kept `charlie.patch` (applies cleanly on v1.0.1)",
			},
			table: []*regexp.Regexp{tableRow("alpha.patch", "clean", ""), tableRow("charlie.patch", "clean", "")},
		},
		{
			name: "a patch that applies at an offset is refreshed; the proxy's list lags, so v1.0.1 and v1.0.2 are found by probing",
			releases: []fixture.Release{
				{Version: "v1.0.1", Unlisted: true, Files: upstreamFiles("b.txt", threeNewLines)},
				{Version: "v1.0.2", Unlisted: true, NoZip: true},
			},
			upstream:  upstreamFiles("b.txt", threeNewLines),
			refreshed: []string{"bravo.patch"},
			changelog: []string{
				"- kept `alpha.patch` (applies cleanly on v1.0.1)",
				"- refreshed `bravo.patch` (b.txt: hunk #1 offset 3)",
				"- kept `charlie.patch` (applies cleanly on v1.0.1)",
			},
			table: []*regexp.Regexp{tableRow("bravo.patch", "merged", "b.txt: hunk #1 offset 3")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := fixture.NewProxy(t)
			proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
			for _, rel := range tc.releases {
				proxy.Add(rel)
			}
			r := newRepo(t, proxy, fixture.HTTP)
			r.startV10()
			// A revision above 1 shows that the bump starts the count again.
			fixture.WriteFiles(t, r.root, map[string]string{"patches/v1.0/REVISION": "2\n"})
			before := r.snapshot()

			out := r.ok("--line", "v1.0", "bump")
			assert.Contains(t, out, "bump: line v1.0 is on v1.0.0; asking the module proxy for newer v1.0 releases\n")
			assert.Contains(t, out, "bump: skipped v1.0.2: k8s.io/kubernetes@v1.0.2 is not served by the module proxy: ")
			assert.Contains(t, out, "/k8s.io/kubernetes/@v/v1.0.2.zip: 404 Not Found")
			assert.Contains(t, out, "bump: done: line v1.0; review CHANGELOG.md, then `make test LINE=v1.0`\n")
			for _, row := range tc.table {
				assert.Regexp(t, row, out)
			}

			tr, err := tree.Open(r.line("v1.0").TreeDir())
			require.NoError(t, err)
			exports := exportsOf(t, tr)
			want := map[string]string{
				"CHANGELOG.md":          bumpedChangelog("v1.0.1", tc.changelog...),
				"patches/v1.0/UPSTREAM": proxy.PinText("v1.0.1"),
				"patches/v1.0/REVISION": "1\n",
				"patches/v1.0/series":   before["patches/v1.0/series"],
			}
			for i, p := range v10Series {
				want["patches/v1.0/"+p.name()] = before["patches/v1.0/"+p.name()]
				if slices.Contains(tc.refreshed, p.name()) {
					assert.NotEqual(t, before["patches/v1.0/"+p.name()], exports[i], "%s changes", p.name())
					want["patches/v1.0/"+p.name()] = exports[i]
				} else {
					assert.Equal(t, exports[i], before["patches/v1.0/"+p.name()], "%s is byte-identical", p.name())
				}
			}
			assert.Equal(t, want, r.snapshot())

			t.Run("the patched tree is v1.0.1 with the series, standalone", func(t *testing.T) {
				_, v, err := tr.Base()
				require.NoError(t, err)
				assert.Equal(t, "v1.0.1", v)
				assert.Equal(t, []string{"upstream v1.0.1", "alpha", "bravo", "charlie"}, commitsOf(t, tr))
				state := stateOf(t, tr.Dir)
				assert.Empty(t, state.Status)
				assert.Equal(t, applied(tc.upstream, v10Series...), withoutGo(state.Files))
				assert.NoFileExists(t, filepath.Join(tr.Dir, ".git", "objects", "info", "alternates"))
				_, err = tr.Run("fsck", "--connectivity-only")
				assert.NoError(t, err)
				assert.NoDirExists(t, r.line("v1.0").RebaseDir(), "the session is gone")
			})
			t.Run("the line is at v1.0.1-carry.1, its tree current and in sync", func(t *testing.T) {
				assert.Equal(t, "v1.0.1-carry.1\n", r.ok("--line", "v1.0", "version"))
				assert.Equal(t, "current\n", r.ok("--line", "v1.0", "tree-status"))
				state := stateOf(t, tr.Dir)
				files := r.snapshot()
				r.ok("--line", "v1.0", "apply")
				r.ok("--line", "v1.0", "check-tree")
				assert.Contains(t, r.ok("--line", "v1.0", "export"), "export: v1.0: 3 unchanged")
				assert.Equal(t, state, stateOf(t, tr.Dir))
				assert.Equal(t, files, r.snapshot())
			})
			t.Run("a second bump has nothing to do", func(t *testing.T) {
				files := r.snapshot()
				out := r.ok("--line", "v1.0", "bump")
				assert.Contains(t, out, "bump: skipped v1.0.2: ")
				assert.Contains(t, out, "bump: line v1.0 is on v1.0.1, the newest v1.0 release the proxy serves whole; nothing to do\n")
				assert.Equal(t, files, r.snapshot())
			})
		})
	}
}

// withoutGo drops the go.mod and go.work every served release has.
func withoutGo(files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		if k != "go.mod" && k != "go.work" {
			out[k] = v
		}
	}
	return out
}

// conflictRepo is line v1.0 with its series, and a v1.0.1 upstream that
// changes the line alpha.patch changes.
func conflictRepo(t *testing.T) (*repo, *tree.Tree) {
	t.Helper()
	proxy := fixture.NewProxy(t)
	proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
	proxy.Add(fixture.Release{Version: "v1.0.1", Files: upstreamFiles("a.txt", fixture.Numbered(20, "line 5\n", "line 5 upstream\n"))})
	r := newRepo(t, proxy, fixture.HTTP)
	return r, r.startV10()
}

// conflictHint is what a bump that stops at alpha.patch's conflict says.
const conflictHint = `carry bump: alpha.patch does not apply on v1.0.1 (line v1.0): conflicts in
  a.txt
The tree is left mid-git-am in _output/v1.0/rebase/kubernetes. Next:
  cd _output/v1.0/rebase/kubernetes
  # resolve the conflicts, then
  git add <files> && git am --continue     # or: git am --skip to drop the patch
  cd - && make bump-continue LINE=v1.0         # or: make bump-abort LINE=v1.0
Nothing in patches/ has changed yet.
`

func TestBumpConflictThenContinue(t *testing.T) {
	r, tr := conflictRepo(t)
	before := r.snapshot()
	treeBefore := stateOf(t, tr.Dir)

	out := r.fail("--line", "v1.0", "bump")
	assert.Contains(t, out, "bump: [1/3] alpha.patch: CONFLICT (3-way merge left conflicts) in a.txt\n")
	assert.True(t, strings.HasSuffix(out, conflictHint), "the hint ends the output:\n%s", out)
	assert.Equal(t, before, r.snapshot(), "patches/ and CHANGELOG.md are byte-identical")
	assert.Equal(t, treeBefore, stateOf(t, tr.Dir), "the patched tree is unchanged")
	session := r.path("_output/v1.0/rebase/kubernetes")
	assert.FileExists(t, filepath.Join(session, ".git", "rebase-apply", "patch"), "the session's tree is mid-git-am")

	t.Run("continuing before resolving refuses, changing nothing", func(t *testing.T) {
		out := r.fail("--line", "v1.0", "bump-continue")
		assert.Contains(t, out, "carry bump-continue: _output/v1.0/rebase/kubernetes: the git am (or rebase) of alpha.patch is still in progress: resolve the conflicts, `git add` them and `git am --continue` (or `git am --skip` to drop the patch), then `make bump-continue`\n")
		assert.Equal(t, before, r.snapshot())
	})
	t.Run("another bump refuses while this one is in progress", func(t *testing.T) {
		out := r.fail("--line", "v1.0", "bump")
		assert.Contains(t, out, "carry bump: a bump of line v1.0 is already in progress in _output/v1.0/rebase: `make bump-continue LINE=v1.0` or `make bump-abort LINE=v1.0`\n")
		assert.Equal(t, before, r.snapshot())
		assert.FileExists(t, filepath.Join(session, ".git", "rebase-apply", "patch"), "the session is untouched")
	})

	resolved := fixture.Numbered(20, "line 5\n", "line 5 upstream alpha\n")
	resolve(t, session, "a.txt", resolved)
	out = r.ok("--line", "v1.0", "bump-continue")
	assert.Contains(t, out, "bump: alpha.patch: reworked (conflict in a.txt resolved by hand)\n")
	assert.Regexp(t, tableRow("alpha.patch", "reworked", "conflict in a.txt resolved by hand"), out)
	assert.Regexp(t, tableRow("bravo.patch", "clean", ""), out)
	assert.Contains(t, out, "bump: done: line v1.0")

	tr, err := tree.Open(r.line("v1.0").TreeDir())
	require.NoError(t, err)
	exports := exportsOf(t, tr)
	assert.Equal(t, map[string]string{
		"CHANGELOG.md": bumpedChangelog("v1.0.1",
			"- reworked `alpha.patch` (conflict in a.txt resolved by hand)",
			"- kept `bravo.patch` (applies cleanly on v1.0.1)",
			"- kept `charlie.patch` (applies cleanly on v1.0.1)"),
		"patches/v1.0/UPSTREAM":      r.proxy.PinText("v1.0.1"),
		"patches/v1.0/REVISION":      "1\n",
		"patches/v1.0/series":        before["patches/v1.0/series"],
		"patches/v1.0/alpha.patch":   exports[0],
		"patches/v1.0/bravo.patch":   before["patches/v1.0/bravo.patch"],
		"patches/v1.0/charlie.patch": before["patches/v1.0/charlie.patch"],
	}, r.snapshot())
	assert.Contains(t, exports[0], "-line 5 upstream\n+line 5 upstream alpha\n", "the reworked patch is the resolution")
	assert.Equal(t, resolved, fixture.ReadFile(t, filepath.Join(tr.Dir, "a.txt")))
	assert.NoDirExists(t, r.line("v1.0").RebaseDir())
	assert.Contains(t, r.fail("--line", "v1.0", "bump-continue"), "carry bump-continue: no rebase or bump of line v1.0 in progress (_output/v1.0/rebase)\n")
}

func TestBumpAbortRestoresEverything(t *testing.T) {
	r, tr := conflictRepo(t)
	before := r.snapshot()
	treeBefore := stateOf(t, tr.Dir)
	r.fail("--line", "v1.0", "bump")
	require.DirExists(t, r.line("v1.0").RebaseDir())

	out := r.ok("--line", "v1.0", "bump-abort")
	assert.Equal(t, "rebase: aborted; line v1.0 (patches/v1.0) and its patched tree are as they were\n", out)
	assert.Equal(t, before, r.snapshot(), "patches/ and CHANGELOG.md are byte-identical")
	assert.Equal(t, treeBefore, stateOf(t, tr.Dir), "the patched tree is unchanged")
	assert.NoDirExists(t, r.line("v1.0").RebaseDir(), "the session is gone")
	entries, err := os.ReadDir(r.line("v1.0").OutDir())
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"src"}, names, "nothing else is left in _output/v1.0")

	assert.Equal(t, "carry bump-abort: no rebase or bump of line v1.0 in progress: nothing in progress in _output/v1.0/rebase\n", r.fail("--line", "v1.0", "bump-abort"))
	r.ok("--line", "v1.0", "check-tree")
}

func TestBumpWithNothingNewer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		releases []fixture.Release
		skipped  string
	}{
		{name: "the proxy serves only the pinned release"},
		{
			name:     "the only newer release is listed but cannot be downloaded",
			releases: []fixture.Release{{Version: "v1.0.1", NoZip: true}},
			skipped:  "bump: skipped v1.0.1: k8s.io/kubernetes@v1.0.1 is not served by the module proxy: ",
		},
		{
			name:     "a release of the next minor is not a bump",
			releases: []fixture.Release{{Version: "v1.1.0", Files: upstreamFiles()}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := fixture.NewProxy(t)
			proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
			for _, rel := range tc.releases {
				proxy.Add(rel)
			}
			r := newRepo(t, proxy, fixture.HTTP)
			tr := r.startV10()
			before, treeBefore := r.snapshot(), stateOf(t, tr.Dir)

			out := r.ok("--line", "v1.0", "bump")
			assert.True(t, strings.HasSuffix(out, "bump: line v1.0 is on v1.0.0, the newest v1.0 release the proxy serves whole; nothing to do\n"), out)
			if tc.skipped != "" {
				assert.Contains(t, out, tc.skipped)
			} else {
				assert.NotContains(t, out, "skipped")
			}
			assert.Equal(t, before, r.snapshot())
			assert.Equal(t, treeBefore, stateOf(t, tr.Dir))
			assert.NoDirExists(t, r.line("v1.0").RebaseDir())
		})
	}
}

func TestBumpRefusesUnexportedWork(t *testing.T) {
	r, tr := conflictRepo(t)
	commit(t, tr, fixturePatch{"delta", "c.txt", "line 3\n", "line 3 delta\n"})
	before, treeBefore := r.snapshot(), stateOf(t, tr.Dir)
	out := r.fail("--line", "v1.0", "bump")
	assert.Regexp(t, `carry bump: _output/v1.0/src/kubernetes: commit [0-9a-f]{12} "delta" is in no patch file; run `+"`make export`"+`\n`+
		`export or discard that work first \(make export LINE=v1.0\)\n$`, out)
	assert.Equal(t, before, r.snapshot())
	assert.Equal(t, treeBefore, stateOf(t, tr.Dir))
	assert.NoDirExists(t, r.line("v1.0").RebaseDir())
}

// TestBumpOverAFileProxy is the clean bump with GOPROXY=file://...
func TestBumpOverAFileProxy(t *testing.T) {
	proxy := fixture.NewProxy(t)
	proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
	proxy.Add(fixture.Release{Version: "v1.0.1", Files: upstreamFiles("NEWS.txt", "v1.0.1\n")})
	r := newRepo(t, proxy, fixture.File)
	r.startV10()
	out := r.ok("--line", "v1.0", "bump")
	assert.Contains(t, out, "bump: done: line v1.0")
	assert.Equal(t, proxy.PinText("v1.0.1"), r.read("patches/v1.0/UPSTREAM"))
}

// skipConflict drops the patch the session's tree is stopped at (git am
// --skip).
func skipConflict(t *testing.T, dir string) {
	t.Helper()
	_, err := tree.Git{Dir: dir, Env: devEnv}.Run("am", "--skip")
	require.NoError(t, err)
}

func TestBumpConflictSkipDropsThePatch(t *testing.T) {
	r, _ := conflictRepo(t)
	before := r.snapshot()
	r.fail("--line", "v1.0", "bump")
	skipConflict(t, r.path("_output/v1.0/rebase/kubernetes"))

	out := r.ok("--line", "v1.0", "bump-continue")
	assert.Regexp(t, tableRow("alpha.patch", "skipped", "dropped by hand during the bump (git am --skip)"), out)
	assert.Contains(t, out, "bump: dropped alpha.patch: dropped by hand in the bump to v1.0.1\n")
	tr, err := tree.Open(r.line("v1.0").TreeDir())
	require.NoError(t, err)
	assert.Equal(t, []string{"upstream v1.0.1", "bravo", "charlie"}, commitsOf(t, tr))
	assert.Equal(t, map[string]string{
		"CHANGELOG.md": bumpedChangelog("v1.0.1",
			"- dropped `alpha.patch` by hand during the bump",
			"- kept `bravo.patch` (applies cleanly on v1.0.1)",
			"- kept `charlie.patch` (applies cleanly on v1.0.1)"),
		"patches/v1.0/UPSTREAM":      r.proxy.PinText("v1.0.1"),
		"patches/v1.0/REVISION":      "1\n",
		"patches/v1.0/series":        "bravo.patch\ncharlie.patch\n",
		"patches/v1.0/DROPPED":       "alpha.patch dropped by hand in the bump to v1.0.1\n",
		"patches/v1.0/bravo.patch":   before["patches/v1.0/bravo.patch"],
		"patches/v1.0/charlie.patch": before["patches/v1.0/charlie.patch"],
	}, r.snapshot(), "the dropped patch leaves the folder and the series, and is recorded in DROPPED")
}
