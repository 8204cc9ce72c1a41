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
	"github.com/kube-carry/kube-carry/internal/txn"
)

func TestPinStartsALine(t *testing.T) {
	proxy := fixture.NewProxy(t)
	proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
	r := newRepo(t, proxy, fixture.HTTP)

	out := r.ok("pin", "v1.0.0")
	assert.Equal(t, "pin: k8s.io/kubernetes v1.0.0\n"+
		"pin: started line v1.0 in patches/v1.0 on v1.0.0 (1 modules), with an empty series: carry patches in with `make port P=... FROM=vA.B TO=v1.0`\n", out)
	assert.Equal(t, map[string]string{
		"CHANGELOG.md":          changelog,
		"patches/v1.0/UPSTREAM": proxy.PinText("v1.0.0"),
		"patches/v1.0/series":   "",
		"patches/v1.0/REVISION": "1\n",
	}, r.snapshot(), "the line's folder, whole, and no staging folder left")

	assert.Equal(t, "v1.0.0\n", r.ok("--line", "v1.0", "upstream"))
	assert.Equal(t, "v1.0.0-carry.1\n", r.ok("--line", "v1.0", "version"))
	assert.Equal(t, "v1.0.0-carry.1\n", r.ok("version"), "the newest line is the default")
	assert.Equal(t, "absent\n", r.ok("--line", "v1.0", "tree-status"))

	t.Run("pinning the line again rewrites only UPSTREAM", func(t *testing.T) {
		fixture.WriteFiles(t, r.root, map[string]string{"patches/v1.0/REVISION": "3\n"})
		proxy.Add(fixture.Release{Version: "v1.0.1", Files: upstreamFiles("NEWS.txt", "v1.0.1\n")})
		out := r.ok("pin", "v1.0.1")
		assert.Contains(t, out, "pin: wrote patches/v1.0/UPSTREAM for v1.0.1 (1 modules)")
		assert.Equal(t, map[string]string{
			"CHANGELOG.md":          changelog,
			"patches/v1.0/UPSTREAM": proxy.PinText("v1.0.1"),
			"patches/v1.0/series":   "",
			"patches/v1.0/REVISION": "3\n",
		}, r.snapshot())
	})
}

func TestPinFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{
			name: "a release the proxy does not serve is named, and no line appears",
			args: []string{"pin", "v1.3.0"},
			want: []string{"carry pin: k8s.io/kubernetes@v1.3.0 is not served by the module proxy: ", "404 Not Found"},
		},
		{
			name: "a version that is not a release",
			args: []string{"pin", "1.0.0"},
			want: []string{"carry pin: \"1.0.0\" is not a Kubernetes release version like v1.34.4\n"},
		},
		{
			name: "no version",
			args: []string{"pin"},
			want: []string{"carry pin: usage: carry pin VERSION (e.g. v1.37.2)\n"},
		},
		{
			name: "LINE names another line than the release's",
			args: []string{"pin", "v1.1.0"},
			env:  []string{"LINE=v1.0"},
			want: []string{"carry pin: VERSION=v1.1.0 is a release of line v1.1, not LINE=v1.0\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := fixture.NewProxy(t)
			proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
			proxy.Add(fixture.Release{Version: "v1.1.0", Files: upstreamFiles()})
			r := newRepo(t, proxy, fixture.HTTP)
			r.ok("pin", "v1.0.0")
			before := r.snapshot()
			out, code := r.runEnv(tc.env, tc.args...)
			assert.Equal(t, 1, code, out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assert.Equal(t, before, r.snapshot(), "nothing changed")
			_, err := os.Stat(r.path("_output"))
			assert.ErrorIs(t, err, os.ErrNotExist)
		})
	}
}

// TestPinHonoursTheLineFlag: `carry --line vA.B pin VERSION` of another
// line's release fails like LINE=vA.B does, instead of pinning (and maybe
// starting) the other line.
func TestPinHonoursTheLineFlag(t *testing.T) {
	proxy := fixture.NewProxy(t)
	proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
	proxy.Add(fixture.Release{Version: "v1.1.0", Files: upstreamFiles()})
	r := newRepo(t, proxy, fixture.HTTP)
	r.ok("pin", "v1.0.0")
	before := r.snapshot()
	out := r.fail("--line", "v1.0", "pin", "v1.1.0")
	assert.Contains(t, out, "VERSION=v1.1.0 is a release of line v1.1, not LINE=v1.0")
	assert.Equal(t, before, r.snapshot())
}

func TestExportThenApplyIsANoOp(t *testing.T) {
	proxy := fixture.NewProxy(t)
	proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
	r := newRepo(t, proxy, fixture.HTTP)
	tr := r.startV10()

	assert.Equal(t, "current\n", r.ok("--line", "v1.0", "tree-status"))
	assert.Equal(t, []string{"upstream v1.0.0", "alpha", "bravo", "charlie"}, commitsOf(t, tr))
	exports := exportsOf(t, tr)
	files := r.snapshot()
	assert.Equal(t, "alpha.patch\nbravo.patch\ncharlie.patch\n", files["patches/v1.0/series"])
	for i, p := range v10Series {
		assert.Equal(t, exports[i], files["patches/v1.0/"+p.name()], "%s is its commit exported", p.name())
		assert.Contains(t, exports[i], "From: Fixture Dev <dev@example.invalid>\n")
		assert.Contains(t, exports[i], "-"+p.from+"+"+p.to)
	}
	assert.Equal(t, "1\n", files["patches/v1.0/REVISION"])
	assert.Len(t, files, 7, "UPSTREAM, series, REVISION, three patches and CHANGELOG.md; no staging or journal left: %v", keys(files))

	treeBefore := stateOf(t, tr.Dir)
	out := r.ok("--line", "v1.0", "apply")
	assert.Equal(t, "apply: [1/3] alpha.patch (already applied)\n"+
		"apply: [2/3] bravo.patch (already applied)\n"+
		"apply: [3/3] charlie.patch (already applied)\n"+
		"apply: v1.0: _output/v1.0/src/kubernetes is upstream v1.0.0 + 3 patches (HEAD "+treeBefore.Head[:12]+")\n", out)
	assert.Equal(t, treeBefore, stateOf(t, tr.Dir), "apply changed nothing in the tree")
	assert.Equal(t, files, r.snapshot(), "nor in the repository")

	out = r.ok("--line", "v1.0", "export")
	assert.Contains(t, out, "export: v1.0: 3 unchanged\n")
	assert.Equal(t, files, r.snapshot(), "a second export changes nothing")
	r.ok("--line", "v1.0", "check-tree")
	r.ok("--line", "v1.0", "removable")

	t.Run("an amended commit is exported under its name, and apply then keeps it", func(t *testing.T) {
		fixture.WriteFiles(t, tr.Dir, map[string]string{"c.txt": fixture.Numbered(20, "line 15\n", "line 15 charlie, amended\n")})
		_, err := tree.Git{Dir: tr.Dir, Env: devEnv}.Run("commit", "-q", "-a", "--amend", "--no-edit")
		require.NoError(t, err)
		assert.Contains(t, r.fail("--line", "v1.0", "removable"), "is in no patch file")
		out := r.ok("--line", "v1.0", "export")
		assert.Contains(t, out, "export: v1.0: 1 written, 2 unchanged, 0 removed")
		after := r.snapshot()
		assert.Equal(t, files["patches/v1.0/series"], after["patches/v1.0/series"])
		assert.Equal(t, files["patches/v1.0/alpha.patch"], after["patches/v1.0/alpha.patch"])
		assert.Contains(t, after["patches/v1.0/charlie.patch"], "+line 15 charlie, amended\n")
		state := stateOf(t, tr.Dir)
		out = r.ok("--line", "v1.0", "apply")
		assert.Contains(t, out, "apply: [3/3] charlie.patch (already applied)")
		assert.Equal(t, state.Head, stateOf(t, tr.Dir).Head)
		assert.Equal(t, after, r.snapshot())
	})
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestResumeFinishesAnInterruptedExport: an export killed after its
// journal was written and the old line folder moved aside is finished by
// the next carry command, whatever it is.
func TestResumeFinishesAnInterruptedExport(t *testing.T) {
	proxy := fixture.NewProxy(t)
	proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
	r := newRepo(t, proxy, fixture.HTTP)
	r.ok("pin", "v1.0.0")

	// The export's staged copy of the line's folder, changed; its journal;
	// and the first rename (the old folder moved aside) done.
	require.NoError(t, txn.CopyDir(r.path("patches/v1.0"), r.path("patches/.v1.0.export")))
	fixture.WriteFiles(t, r.root, map[string]string{
		"patches/.v1.0.export/series":  "x.patch\n",
		"patches/.v1.0.export/x.patch": "not validated by version\n",
		"patches/.v1.0.journal":        `{"Moves": [{"New": "patches/.v1.0.export", "Dst": "patches/v1.0", "Old": "patches/.v1.0.export-old"}]}` + "\n",
	})
	require.NoError(t, os.Rename(r.path("patches/v1.0"), r.path("patches/.v1.0.export-old")))
	want := map[string]string{
		"CHANGELOG.md":          changelog,
		"patches/v1.0/UPSTREAM": proxy.PinText("v1.0.0"),
		"patches/v1.0/series":   "x.patch\n",
		"patches/v1.0/x.patch":  "not validated by version\n",
		"patches/v1.0/REVISION": "1\n",
	}
	out := r.ok("--line", "v1.0", "version")
	assert.Equal(t, "carry: finishing a command that was interrupted while putting its result in place (patches/.v1.0.journal)\nv1.0.0-carry.1\n", out)
	assert.Equal(t, want, r.snapshot())
	assert.Equal(t, "v1.0: nothing to finish\n", r.ok("--line", "v1.0", "resume"))
	assert.NoDirExists(t, filepath.Join(r.root, "patches", ".v1.0.export-old"))
}

// TestExportWarnsOfAMutantThatNoLongerApplies: the harness applies a
// line's mutants to the fully patched tree, so an amended patch that moves
// a guarded line breaks its mutant. The export that made the change says
// so, by name, and still succeeds.
func TestExportWarnsOfAMutantThatNoLongerApplies(t *testing.T) {
	proxy := fixture.NewProxy(t)
	proxy.Add(fixture.Release{Version: "v1.0.0", Files: upstreamFiles()})
	r := newRepo(t, proxy, fixture.HTTP)
	tr := r.startV10()

	c := fixture.ReadFile(t, filepath.Join(tr.Dir, "c.txt"))
	fixture.WriteFiles(t, tr.Dir, map[string]string{"c.txt": strings.Replace(c, "line 15 charlie\n", "line 15 mutant\n", 1)})
	diff, err := tr.Run("diff")
	require.NoError(t, err)
	_, err = tr.Run("checkout", "--", "c.txt")
	require.NoError(t, err)
	fixture.WriteFiles(t, r.root, map[string]string{"patches/v1.0/mutants/charlie-mutant.patch": "Mutant: charlie undone.\n\n" + diff})

	out := r.ok("--line", "v1.0", "export")
	assert.NotContains(t, out, "warning", "the mutant applies to the tree")

	fixture.WriteFiles(t, tr.Dir, map[string]string{"c.txt": strings.Replace(c, "line 15 charlie\n", "line 15 charlie, amended\n", 1)})
	_, err = tree.Git{Dir: tr.Dir, Env: devEnv}.Run("commit", "-q", "-a", "--amend", "--no-edit")
	require.NoError(t, err)
	out = r.ok("--line", "v1.0", "export")
	assert.Contains(t, out, "export: v1.0: 1 written, 2 unchanged, 0 removed\n")
	assert.Contains(t, out, "line v1.0: warning: patches/v1.0/mutants/charlie-mutant.patch no longer applies to the patched tree")
	assert.Contains(t, out, "c.txt")

	out = r.ok("--line", "v1.0", "export")
	assert.Contains(t, out, "export: v1.0: 3 unchanged\n")
	assert.Contains(t, out, "charlie-mutant.patch no longer applies", "an export that changes nothing says so too")
}
