package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// portRepo is line v1.0 with its series (its patched tree fetched) and
// line v1.1 started on v1.1.0 (whose tree is v110) with an empty series;
// fetchV11 fetches v1.1's patched tree too.
func portRepo(t *testing.T, v110 map[string]string, fetchV11 bool) (r *repo, v10, v11 *tree.Tree) {
	t.Helper()
	proxy := fixture.NewProxy(t)
	proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
	proxy.Add(fixture.Release{Version: "v1.1.0", Files: v110})
	r = newRepo(t, proxy, fixture.HTTP)
	v10 = r.startV10()
	out := r.ok("pin", "v1.1.0")
	require.Contains(t, out, "pin: started line v1.1 in patches/v1.1 on v1.1.0")
	require.Equal(t, "", r.read("patches/v1.1/series"), "a new line starts with an empty series")
	require.Equal(t, "1\n", r.read("patches/v1.1/REVISION"))
	if fetchV11 {
		v11 = r.fetch("v1.1")
	}
	return r, v10, v11
}

// portedChangelog is CHANGELOG.md after ports into line v1.1 while
// v1.1.0-carry.1 is unreleased.
func portedChangelog(lines ...string) string {
	return "# Changelog\n\nWhat changed in each fork release.\n\n" +
		"## v1.1.0-carry.1 (line v1.1, unreleased)\n\n" +
		"Upstream: Kubernetes v1.1.0. Patches ported from line v1.0 with `make port`.\n\n" +
		"### Patches\n" + strings.Join(lines, "\n") + "\n\n" +
		"## v0.9.0-carry.2 (line v0.9)\n\n- an older release\n"
}

// only keeps the snapshot entries under prefix.
func only(files map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func TestPort(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v110     map[string]string
		fetchV11 bool
		// identical: the ported patch file is v1.0's, byte for byte.
		identical bool
		changelog string
		row       string
	}{
		{
			name:      "clean, into a line without its patched tree (assembled from the proxy)",
			v110:      upstreamFiles("NEWS.txt", "v1.1.0\n"),
			identical: true,
			changelog: "- ported `alpha.patch` from v1.0 (clean)",
			row:       "clean",
		},
		{
			name:      "clean, into a line with its patched tree (copied)",
			v110:      upstreamFiles("NEWS.txt", "v1.1.0\n"),
			fetchV11:  true,
			identical: true,
			changelog: "- ported `alpha.patch` from v1.0 (clean)",
			row:       "clean",
		},
		{
			name:      "with a 3-way merge: v1.1.0 changed a line of the patch's context",
			v110:      upstreamFiles("a.txt", fixture.Numbered(20, "line 8\n", "line 8 v1.1\n")),
			changelog: "- ported `alpha.patch` from v1.0 (merged: 3-way merge)",
			row:       "merged",
		},
		{
			name:      "with a 3-way merge, into a line with its patched tree",
			v110:      upstreamFiles("a.txt", fixture.Numbered(20, "line 8\n", "line 8 v1.1\n")),
			fetchV11:  true,
			changelog: "- ported `alpha.patch` from v1.0 (merged: 3-way merge)",
			row:       "merged",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, v10, _ := portRepo(t, tc.v110, tc.fetchV11)
			before := r.snapshot()
			v10Before := stateOf(t, v10.Dir)

			out := r.ok("--line", "v1.1", "port", "-from", "v1.0", "alpha.patch")
			assert.Contains(t, out, "port: alpha.patch from line v1.0 into line v1.1 (v1.1.0)\n")
			assert.Contains(t, out, "port: [1/1] alpha.patch: "+tc.row)
			detail := ""
			if tc.row == "merged" {
				detail = "3-way merge"
			}
			assert.Regexp(t, tableRow("alpha.patch", tc.row, detail), out)
			assert.Contains(t, out, "port: done: line v1.1; review CHANGELOG.md, then `make test LINE=v1.1`\n")
			if tc.fetchV11 {
				assert.Contains(t, out, "port: copying line v1.1's tree at upstream v1.1.0\n")
			} else {
				assert.Contains(t, out, "fetch: [1/1] k8s.io/kubernetes v1.1.0\n")
			}

			v11, err := tree.Open(r.line("v1.1").TreeDir())
			require.NoError(t, err)
			exports := exportsOf(t, v11)
			require.Len(t, exports, 1)
			after := r.snapshot()
			assert.Equal(t, map[string]string{
				"patches/v1.1/UPSTREAM":    before["patches/v1.1/UPSTREAM"],
				"patches/v1.1/REVISION":    "1\n",
				"patches/v1.1/series":      "alpha.patch\n",
				"patches/v1.1/alpha.patch": exports[0],
			}, only(after, "patches/v1.1/"))
			if tc.identical {
				assert.Equal(t, before["patches/v1.0/alpha.patch"], exports[0], "the same change on the same file: the same patch")
			} else {
				assert.NotEqual(t, before["patches/v1.0/alpha.patch"], exports[0])
				assert.Contains(t, exports[0], "-line 5\n+line 5 alpha\n")
			}
			assert.Equal(t, only(before, "patches/v1.0/"), only(after, "patches/v1.0/"), "the source line is untouched")
			assert.Equal(t, v10Before, stateOf(t, v10.Dir), "and so is its tree")
			assert.Equal(t, portedChangelog(tc.changelog), after["CHANGELOG.md"])
			assert.Len(t, after, 1+len(only(after, "patches/v1.0/"))+len(only(after, "patches/v1.1/")), "no staging or journal is left")

			assert.Equal(t, []string{"upstream v1.1.0", "alpha"}, commitsOf(t, v11))
			state := stateOf(t, v11.Dir)
			assert.Equal(t, applied(tc.v110, v10Series[0]), withoutGo(state.Files))
			assert.Empty(t, state.Status)
			assert.NoFileExists(t, filepath.Join(v11.Dir, ".git", "objects", "info", "alternates"))
			assert.NoDirExists(t, r.line("v1.1").PortDir())
			assert.Equal(t, "v1.1.0-carry.1\n", r.ok("--line", "v1.1", "version"))
			r.ok("--line", "v1.1", "apply")
			r.ok("--line", "v1.1", "check-tree")
			assert.Equal(t, state, stateOf(t, v11.Dir), "apply has nothing to do")
			assert.Equal(t, after, r.snapshot())
		})
	}
}

// TestPortLandsWhereItsNeighboursAre ports v1.0's patches one run at a
// time, out of order: each lands where the source line has it, and the
// changelog collects them in the line's unreleased section, until that is
// released and the next port starts the next revision.
func TestPortLandsWhereItsNeighboursAre(t *testing.T) {
	r, _, _ := portRepo(t, upstreamFiles("NEWS.txt", "v1.1.0\n"), false)

	r.ok("--line", "v1.1", "port", "-from", "v1.0", "charlie.patch")
	assert.Equal(t, "charlie.patch\n", r.read("patches/v1.1/series"))

	r.ok("--line", "v1.1", "port", "-from", "v1.0", "alpha")
	assert.Equal(t, "alpha.patch\ncharlie.patch\n", r.read("patches/v1.1/series"), "first: the source line has nothing before it")
	assert.Equal(t, "1\n", r.read("patches/v1.1/REVISION"), "the port joins the unreleased v1.1.0-carry.1")
	assert.Equal(t, portedChangelog(
		"- ported `charlie.patch` from v1.0 (clean)",
		"- ported `alpha.patch` from v1.0 (clean)",
	), r.read("CHANGELOG.md"))

	// v1.1.0-carry.1 is released.
	released := strings.Replace(r.read("CHANGELOG.md"), "## v1.1.0-carry.1 (line v1.1, unreleased)", "## v1.1.0-carry.1 (line v1.1)", 1)
	fixture.WriteFiles(t, r.root, map[string]string{"CHANGELOG.md": released})

	out := r.ok("--line", "v1.1", "port", "-from", "v1.0", "bravo.patch")
	assert.Regexp(t, tableRow("alpha.patch", "clean", ""), out)
	assert.Regexp(t, tableRow("bravo.patch", "clean", ""), out)
	assert.Equal(t, "alpha.patch\nbravo.patch\ncharlie.patch\n", r.read("patches/v1.1/series"), "between alpha and charlie, as in v1.0")
	assert.Equal(t, "2\n", r.read("patches/v1.1/REVISION"), "after a release, a port starts the next revision")
	assert.Equal(t, "v1.1.0-carry.2\n", r.ok("--line", "v1.1", "version"))
	assert.Equal(t, strings.Replace(released, "## v1.1.0-carry.1 (line v1.1)",
		"## v1.1.0-carry.2 (line v1.1, unreleased)\n\n"+
			"Upstream: Kubernetes v1.1.0. Patches ported from line v1.0 with `make port`.\n\n"+
			"### Patches\n- ported `bravo.patch` from v1.0 (clean)\n\n"+
			"## v1.1.0-carry.1 (line v1.1)", 1), r.read("CHANGELOG.md"), "only the ported patch is listed, in a new section")
	for _, p := range v10Series {
		assert.Equal(t, r.read("patches/v1.0/"+p.name()), r.read("patches/v1.1/"+p.name()))
	}
	v11, err := tree.Open(r.line("v1.1").TreeDir())
	require.NoError(t, err)
	assert.Equal(t, []string{"upstream v1.1.0", "alpha", "bravo", "charlie"}, commitsOf(t, v11))
}

// portConflictRepo has a v1.1.0 that changes the line alpha.patch changes;
// withTree fetches v1.1's patched tree.
func portConflictRepo(t *testing.T, withTree bool) (r *repo, v10, v11 *tree.Tree) {
	t.Helper()
	return portRepo(t, upstreamFiles("a.txt", fixture.Numbered(20, "line 5\n", "line 5 v1.1\n")), withTree)
}

const portConflictHint = `carry port: alpha.patch does not apply on v1.1.0 (line v1.1): conflicts in
  a.txt
The tree is left mid-git-am in _output/v1.1/port/kubernetes. Next:
  cd _output/v1.1/port/kubernetes
  # resolve the conflicts, then
  git add <files> && git am --continue     # or: git am --skip to drop the patch
  cd - && make port-continue LINE=v1.1         # or: make port-abort LINE=v1.1
Nothing in patches/ has changed yet.
`

// targetTrees are the two ways a port starts: the target line has no
// patched tree (the port assembles its release from the proxy), or it has
// one (the port copies it).
var targetTrees = []struct {
	name     string
	withTree bool
}{
	{"into a line without its patched tree", false},
	{"into a line with its patched tree", true},
}

// v11State is the state of v1.1's patched tree, or nil when there is none.
func v11State(t *testing.T, r *repo) *treeState {
	t.Helper()
	if _, err := os.Stat(r.line("v1.1").TreeDir()); os.IsNotExist(err) {
		return nil
	}
	s := stateOf(t, r.line("v1.1").TreeDir())
	return &s
}

func TestPortConflictThenContinue(t *testing.T) {
	for _, tt := range targetTrees {
		t.Run(tt.name, func(t *testing.T) {
			r, v10, _ := portConflictRepo(t, tt.withTree)
			before := r.snapshot()
			v10Before, v11Before := stateOf(t, v10.Dir), v11State(t, r)

			out := r.fail("--line", "v1.1", "port", "-from", "v1.0", "alpha.patch")
			assert.Contains(t, out, "port: [1/1] alpha.patch: CONFLICT (3-way merge left conflicts) in a.txt\n")
			assert.True(t, strings.HasSuffix(out, portConflictHint), "the hint ends the output:\n%s", out)
			assert.Equal(t, before, r.snapshot(), "patches/ and CHANGELOG.md are byte-identical")
			assert.Equal(t, v10Before, stateOf(t, v10.Dir))
			assert.Equal(t, v11Before, v11State(t, r))

			assert.Equal(t, "carry port: a port of line v1.1 is already in progress in _output/v1.1/port: `make port-continue LINE=v1.1` or `make port-abort LINE=v1.1`\n",
				r.fail("--line", "v1.1", "port", "-from", "v1.0", "bravo.patch"))
			assert.Contains(t, r.fail("--line", "v1.1", "port-continue"), "the git am (or rebase) of alpha.patch is still in progress")
			assert.Equal(t, before, r.snapshot())

			resolved := fixture.Numbered(20, "line 5\n", "line 5 v1.1 alpha\n")
			resolve(t, r.path("_output/v1.1/port/kubernetes"), "a.txt", resolved)
			out = r.ok("--line", "v1.1", "port-continue")
			assert.Regexp(t, tableRow("alpha.patch", "reworked", "conflict in a.txt resolved by hand"), out)
			assert.Contains(t, out, "port: done: line v1.1")

			v11, err := tree.Open(r.line("v1.1").TreeDir())
			require.NoError(t, err)
			exports := exportsOf(t, v11)
			require.Len(t, exports, 1)
			after := r.snapshot()
			assert.Equal(t, map[string]string{
				"patches/v1.1/UPSTREAM":    before["patches/v1.1/UPSTREAM"],
				"patches/v1.1/REVISION":    "1\n",
				"patches/v1.1/series":      "alpha.patch\n",
				"patches/v1.1/alpha.patch": exports[0],
			}, only(after, "patches/v1.1/"))
			assert.Contains(t, exports[0], "-line 5 v1.1\n+line 5 v1.1 alpha\n", "the ported patch is the resolution")
			assert.Equal(t, portedChangelog("- ported `alpha.patch` from v1.0, reworked (conflict in a.txt resolved by hand)"), after["CHANGELOG.md"])
			assert.Equal(t, only(before, "patches/v1.0/"), only(after, "patches/v1.0/"))
			assert.Equal(t, v10Before, stateOf(t, v10.Dir))
			assert.Equal(t, []string{"upstream v1.1.0", "alpha"}, commitsOf(t, v11))
			assert.Equal(t, resolved, fixture.ReadFile(t, filepath.Join(v11.Dir, "a.txt")))
			assert.NoDirExists(t, r.line("v1.1").PortDir())
		})
	}
}

func TestPortAbortRestoresEverything(t *testing.T) {
	for _, tt := range targetTrees {
		t.Run(tt.name, func(t *testing.T) {
			r, v10, _ := portConflictRepo(t, tt.withTree)
			before := r.snapshot()
			v10Before, v11Before := stateOf(t, v10.Dir), v11State(t, r)
			r.fail("--line", "v1.1", "port", "-from", "v1.0", "alpha.patch")
			require.DirExists(t, r.line("v1.1").PortDir())

			out := r.ok("--line", "v1.1", "port-abort")
			assert.Equal(t, "port: aborted; line v1.1 (patches/v1.1) and its patched tree are as they were\n", out)
			assert.Equal(t, before, r.snapshot(), "patches/ and CHANGELOG.md are byte-identical")
			assert.Equal(t, v10Before, stateOf(t, v10.Dir))
			assert.Equal(t, v11Before, v11State(t, r), "the target's patched tree is as it was (or still absent)")
			assert.NoDirExists(t, r.line("v1.1").PortDir())
			assert.Equal(t, "carry port-abort: no port into line v1.1 in progress: nothing in progress in _output/v1.1/port\n", r.fail("--line", "v1.1", "port-abort"))
			assert.Equal(t, "carry port-continue: no port of line v1.1 in progress (_output/v1.1/port)\n", r.fail("--line", "v1.1", "port-continue"))
		})
	}
}

func TestPortFailuresChangeNothing(t *testing.T) {
	r, v10, _ := portRepo(t, upstreamFiles(), false)
	before := r.snapshot()
	v10Before := stateOf(t, v10.Dir)
	noPatch := "carry port: line v1.0 has no patch zulu.patch in patches/v1.0/series; its patches are:\n  alpha.patch\n  bravo.patch\n  charlie.patch\n"
	unknown := "; the lines are: v1.0, v1.1\n"
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		want  string
		setup func(t *testing.T)
	}{
		{
			name: "a patch the source line does not have is named, with the source line's patches",
			args: []string{"--line", "v1.1", "port", "-from", "v1.0", "zulu.patch"},
			want: noPatch,
		},
		{
			name: "named without .patch, or by its path",
			args: []string{"--line", "v1.1", "port", "-from", "v1.0", "patches/v1.0/zulu"},
			want: noPatch,
		},
		{
			name: "one unknown patch among known ones ports none",
			args: []string{"--line", "v1.1", "port", "-from", "v1.0", "alpha.patch", "zulu.patch"},
			want: noPatch,
		},
		{
			name: "an unknown target line (--line) names the lines there are",
			args: []string{"--line", "v9.9", "port", "-from", "v1.0", "alpha.patch"},
			want: "carry port: LINE=v9.9: no such release line" + unknown,
		},
		{
			name: "an unknown target line (LINE) names the lines there are",
			env:  []string{"LINE=v9.9"},
			args: []string{"port", "-from", "v1.0", "alpha.patch"},
			want: "carry port: LINE=v9.9: no such release line" + unknown,
		},
		{
			name: "an unknown source line names the lines there are",
			args: []string{"--line", "v1.1", "port", "-from", "v9.9", "alpha.patch"},
			want: "carry port: FROM: LINE=v9.9: no such release line" + unknown,
		},
		{
			name: "FROM and TO the same line",
			args: []string{"--line", "v1.0", "port", "-from", "v1.0", "alpha.patch"},
			want: "carry port: FROM=v1.0 and TO=v1.0 are the same line\n",
		},
		{
			name: "without --line, the target is the newest line",
			args: []string{"port", "-from", "v1.1", "alpha.patch"},
			want: "carry port: FROM=v1.1 and TO=v1.1 are the same line\n",
		},
		{
			name: "no patch named",
			args: []string{"--line", "v1.1", "port", "-from", "v1.0"},
			want: "carry port: usage: carry port -from vA.B [-since COMMIT] PATCH... (make port P=<patch> FROM=vA.B TO=vC.D [SINCE=<commit>])\n",
		},
		{
			name: "the source line's patched tree is needed for the 3-way merge",
			args: []string{"--line", "v1.1", "port", "-from", "v1.0", "alpha.patch"},
			setup: func(t *testing.T) {
				aside := r.path("_output/v1.0/src/kubernetes.aside")
				require.NoError(t, os.Rename(v10.Dir, aside))
				t.Cleanup(func() { require.NoError(t, os.Rename(aside, v10.Dir)) })
			},
			want: "carry port: the 3-way merge needs line v1.0's patched tree: run `make apply LINE=v1.0` first (_output/v1.0/src/kubernetes: no patched tree here; run `make fetch` first)\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			out, code := r.runEnv(tc.env, tc.args...)
			assert.Equal(t, 1, code)
			assert.Equal(t, tc.want, out)
			assert.Equal(t, before, r.snapshot())
			assert.NoDirExists(t, r.path("_output/v1.1"))
		})
	}
	assert.Equal(t, v10Before, stateOf(t, v10.Dir))
}

func TestPortConflictSkipPortsNothing(t *testing.T) {
	r, _, _ := portConflictRepo(t, false)
	before := r.snapshot()
	r.fail("--line", "v1.1", "port", "-from", "v1.0", "alpha.patch")
	skipConflict(t, r.path("_output/v1.1/port/kubernetes"))

	out := r.ok("--line", "v1.1", "port-continue")
	assert.Regexp(t, tableRow("alpha.patch", "skipped", "dropped by hand during the port (git am --skip)"), out)
	assert.Contains(t, out, "port: alpha.patch not ported: dropped by hand in the port to v1.1.0\n")
	after := r.snapshot()
	assert.Equal(t, map[string]string{
		"patches/v1.1/UPSTREAM": before["patches/v1.1/UPSTREAM"],
		"patches/v1.1/REVISION": "1\n",
		"patches/v1.1/series":   "",
	}, only(after, "patches/v1.1/"), "a ported patch the line does not take never was in it: no DROPPED entry")
	assert.Equal(t, portedChangelog("- not ported `alpha.patch` from v1.0: dropped by hand during the port"), after["CHANGELOG.md"])
	assert.Equal(t, only(before, "patches/v1.0/"), only(after, "patches/v1.0/"))
	v11, err := tree.Open(r.line("v1.1").TreeDir())
	require.NoError(t, err)
	assert.Equal(t, []string{"upstream v1.1.0"}, commitsOf(t, v11))
}
