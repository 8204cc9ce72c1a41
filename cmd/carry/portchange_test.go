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

// edit is a change of one line of a file.
type edit struct{ file, from, to string }

// version is a patch's commit: its subject, a paragraph after the subject
// (before, "" for none), a paragraph before the trailers (after, "" for
// none), a replacement of the fixture message's symptom (symptom, "" to keep
// it), a trailer added to the fixture's (trailer, "" for none) and its
// edits.
type version struct {
	subject, before, after, symptom, trailer string
	edits                                    []edit
}

func (v version) message() string {
	m := fixture.Message(v.subject)
	if v.symptom != "" {
		m = strings.Replace(m, "Symptom: the fixture misbehaves.", v.symptom, 1)
	}
	if v.after != "" {
		m = strings.Replace(m, "\n\nUpstream-Status:", "\n\n"+v.after+"\n\nUpstream-Status:", 1)
	}
	if v.before != "" {
		m = strings.Replace(m, "\n\n", "\n\n"+v.before+"\n\n", 1)
	}
	return m + v.trailer
}

// recommit makes the tree's commits, after its upstream commit, versions,
// as the developer (an edit of a patch in the tree, then make export).
func recommit(t *testing.T, tr *tree.Tree, versions ...version) {
	t.Helper()
	base, _, err := tr.Base()
	require.NoError(t, err)
	g := tree.Git{Dir: tr.Dir, Env: devEnv}
	_, err = g.Run("reset", "-q", "--hard", base)
	require.NoError(t, err)
	for _, v := range versions {
		for _, e := range v.edits {
			content := fixture.ReadFile(t, filepath.Join(tr.Dir, e.file))
			require.Contains(t, content, e.from)
			fixture.WriteFiles(t, tr.Dir, map[string]string{e.file: strings.Replace(content, e.from, e.to, 1)})
		}
		_, err = g.Run("add", "-A")
		require.NoError(t, err)
		_, err = g.RunInput([]byte(v.message()), "commit", "-q", "-F", "-")
		require.NoError(t, err)
	}
}

// commitRepo commits the repository's files (not _output) and returns the
// commit.
func commitRepo(t *testing.T, r *repo) string {
	t.Helper()
	g := tree.Git{Dir: r.root, Env: devEnv}
	if _, err := os.Stat(r.path(".git")); os.IsNotExist(err) {
		_, err := g.Run("init", "-q")
		require.NoError(t, err)
		fixture.WriteFiles(t, r.root, map[string]string{".gitignore": "/_output/\n"})
	}
	_, err := g.Run("add", "-A")
	require.NoError(t, err)
	_, err = g.Run("commit", "-q", "-m", "state")
	require.NoError(t, err)
	out, err := g.Line("rev-parse", "--short=12", "HEAD")
	require.NoError(t, err)
	return out
}

// guard is a Guards: trailer naming a mutant.
const guard = "Guards: mutants/alpha-guard.patch ./pkg/fixture -run '^TestFixture$'\n"

var (
	alpha  = edit{"a.txt", "line 5\n", "line 5 alpha\n"}
	bravo  = edit{"b.txt", "line 10\n", "line 10 bravo\n"}
	charl  = edit{"c.txt", "line 15\n", "line 15 charlie\n"}
	others = []version{{subject: "bravo", edits: []edit{bravo}}, {subject: "charlie", edits: []edit{charl}}}
)

// changeRepo is line v1.0 with its series and line v1.1 (v1.1.0 changes
// line 2 of a.txt) with alpha.patch ported and then adapted to its release
// (adapted: v1.1's version), both exported and committed to the
// repository (the commit is returned); then the fix (fixed: v1.0's new
// version) is made on v1.0 and exported, not committed.
func changeRepo(t *testing.T, adapted, fixed version, mutants map[string]string) (r *repo, since string, v10, v11 *tree.Tree) {
	t.Helper()
	r, v10, _ = portRepo(t, upstreamFiles("a.txt", fixture.Numbered(20, "line 2\n", "line 2 v1.1\n")), true)
	r.ok("--line", "v1.1", "port", "-from", "v1.0", "alpha.patch")
	v11, err := tree.Open(r.line("v1.1").TreeDir())
	require.NoError(t, err)
	recommit(t, v11, adapted)
	r.ok("--line", "v1.1", "export")
	since = commitRepo(t, r)
	recommit(t, v10, append([]version{fixed}, others...)...)
	fixture.WriteFiles(t, r.line("v1.0").Dir(), mutants)
	out := r.ok("--line", "v1.0", "export")
	require.Contains(t, out, "export: v1.0: 1 written, 2 unchanged, 0 removed")
	return r, since, v10, v11
}

func TestPortChange(t *testing.T) {
	adapted := version{subject: "alpha", before: "Adapted to v1.1: line 7 too.", edits: []edit{alpha, {"a.txt", "line 7\n", "line 7 v1.1 alpha\n"}}}
	fixed := version{subject: "alpha", after: "Fixed: line 12 as well.", edits: []edit{alpha, {"a.txt", "line 12\n", "line 12 fixed\n"}}}
	for _, tc := range []struct {
		name    string
		adapted version
		fixed   version
		// message is v1.1's message after the port; warning what carry
		// says about it ("" nothing).
		message, warning string
		// mutants are the mutant files of line v1.0 (name → content).
		mutants map[string]string
	}{
		{
			name:    "the change and the target's adaptation both stay, in the code and in the message",
			adapted: adapted,
			fixed:   fixed,
			message: version{subject: "alpha", before: adapted.before, after: fixed.after}.message(),
		},
		{
			name:    "a change to the message that conflicts with the target's keeps the target's message, and says so",
			adapted: version{subject: "alpha", symptom: "Symptom: v1.1 misbehaves.", edits: adapted.edits},
			fixed:   version{subject: "alpha", symptom: "Symptom: v1.0 misbehaves.", edits: fixed.edits},
			message: version{subject: "alpha", symptom: "Symptom: v1.1 misbehaves."}.message(),
			warning: "port: alpha.patch: line v1.0's change to the patch's message conflicts with line v1.1's message, which is kept: carry the change to the message by hand (git commit --amend in the tree, then make export LINE=v1.1)\n",
		},
		{
			name:    "a guard that the change adds brings its mutant, as a port of the whole patch does",
			adapted: adapted,
			fixed:   version{subject: "alpha", trailer: guard, edits: fixed.edits},
			message: version{subject: "alpha", before: adapted.before, trailer: guard}.message(),
			mutants: map[string]string{"mutants/alpha-guard.patch": "a mutant\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, since, v10, _ := changeRepo(t, tc.adapted, tc.fixed, tc.mutants)
			before := r.snapshot()
			v10Before := stateOf(t, v10.Dir)

			out := r.ok("--line", "v1.1", "port", "-from", "v1.0", "-since", "HEAD", "alpha.patch")
			assert.Contains(t, out, "port: alpha.patch: merging line v1.0's change since "+since+" into line v1.1's version\n")
			assert.Regexp(t, tableRow("alpha.patch", "clean", ""), out)
			assert.Contains(t, out, "port: done: line v1.1")
			if tc.warning != "" {
				assert.Contains(t, out, tc.warning)
			} else {
				assert.NotContains(t, out, "conflicts with")
			}

			v11, err := tree.Open(r.line("v1.1").TreeDir())
			require.NoError(t, err)
			assert.Equal(t, []string{"upstream v1.1.0", "alpha"}, commitsOf(t, v11))
			assert.Equal(t, fixture.Numbered(20, "line 2\n", "line 2 v1.1\n", "line 5\n", "line 5 alpha\n", "line 7\n", "line 7 v1.1 alpha\n", "line 12\n", "line 12 fixed\n"),
				fixture.ReadFile(t, filepath.Join(v11.Dir, "a.txt")), "v1.1's adaptation (line 7) stays, and v1.0's fix (line 12) joins it")
			msg, err := v11.Run("log", "-1", "--format=%B", "HEAD")
			require.NoError(t, err)
			assert.Equal(t, tc.message, strings.TrimRight(msg, "\n")+"\n")
			author, err := v11.Line("log", "-1", "--format=%an <%ae> %aI", "HEAD")
			require.NoError(t, err)
			assert.Equal(t, "Fixture Dev <dev@example.invalid> "+strings.Replace(authorDate, "Z", "+00:00", 1), author)

			after := r.snapshot()
			exports := exportsOf(t, v11)
			require.Len(t, exports, 1)
			assert.Equal(t, exports[0], after["patches/v1.1/alpha.patch"])
			for name, content := range tc.mutants {
				assert.Equal(t, content, after["patches/v1.1/"+name], "the mutant comes along")
			}
			assert.Equal(t, "alpha.patch\n", after["patches/v1.1/series"])
			assert.Equal(t, only(before, "patches/v1.0/"), only(after, "patches/v1.0/"), "the source line is untouched")
			assert.Equal(t, v10Before, stateOf(t, v10.Dir), "and so is its tree")
			assert.Equal(t, portedChangelog(
				"- ported `alpha.patch` from v1.0 (merged: 3-way merge)",
				"- ported the change to `alpha.patch` since "+since+" from v1.0 (clean)",
			), after["CHANGELOG.md"])
			assert.NoDirExists(t, r.line("v1.1").PortDir())
			state := stateOf(t, v11.Dir)
			assert.Empty(t, state.Status)
			r.ok("--line", "v1.1", "check-tree")
		})
	}
}

func TestPortChangeFailuresChangeNothing(t *testing.T) {
	adapted := version{subject: "alpha", edits: []edit{alpha, {"a.txt", "line 12\n", "line 12 v1.1\n"}}}
	fixed := version{subject: "alpha", edits: []edit{alpha, {"a.txt", "line 12\n", "line 12 fixed\n"}}}
	r, since, v10, v11 := changeRepo(t, adapted, fixed, nil)
	for _, tc := range []struct {
		name  string
		since string // "" for the repository's commit
		args  []string
		setup func(t *testing.T)
		want  string
	}{
		{
			name: "a change that conflicts with the target's version names the files",
			args: []string{"alpha.patch"},
			want: "carry port: the change to alpha.patch since SINCE=" + since + " conflicts with line v1.1's version of the patch in:\n  a.txt\n" +
				"port the change by hand (README: A backport); nothing was changed\n",
		},
		{
			name:  "a patch that has not changed since",
			since: "HEAD",
			args:  []string{"alpha.patch"},
			setup: func(t *testing.T) {
				commitRepo(t, r)
			},
			want: "carry port: SINCE={HEAD}: patches/v1.0/alpha.patch is the same now as at that commit: there is no change to port\n",
		},
		{
			name: "a patch the target line does not have",
			args: []string{"bravo.patch"},
			want: "carry port: line v1.1 has no patch bravo.patch: SINCE= carries a change into the line's own version of a patch; port the patch whole (no SINCE)\n",
		},
		{
			name:  "SINCE that is no commit",
			since: "no-such-commit",
			args:  []string{"alpha.patch"},
			want:  "carry port: SINCE=no-such-commit is not a commit of the repository\n",
		},
		{
			name: "the target line's patched tree is needed",
			args: []string{"alpha.patch"},
			setup: func(t *testing.T) {
				aside := r.path("_output/v1.1/src/kubernetes.aside")
				require.NoError(t, os.Rename(v11.Dir, aside))
				t.Cleanup(func() { require.NoError(t, os.Rename(aside, v11.Dir)) })
			},
			want: "carry port: SINCE= merges the change into line v1.1's version of the patch, in its patched tree: run `make apply LINE=v1.1` first\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			s := tc.since
			if s == "" {
				s = since
			}
			before := r.snapshot()
			v10Before, v11Before := stateOf(t, v10.Dir), v11State(t, r)
			out := r.fail(append([]string{"--line", "v1.1", "port", "-from", "v1.0", "-since", s}, tc.args...)...)
			head, err := tree.Git{Dir: r.root}.Line("rev-parse", "--short=12", "HEAD")
			require.NoError(t, err)
			assert.Equal(t, strings.ReplaceAll(tc.want, "{HEAD}", head), out[strings.Index(out, "carry port: "):], "the commit is named by its id")
			assert.Equal(t, before, r.snapshot(), "patches/ and CHANGELOG.md are byte-identical")
			assert.Equal(t, v10Before, stateOf(t, v10.Dir))
			assert.Equal(t, v11Before, v11State(t, r))
			assert.NoDirExists(t, r.line("v1.1").PortDir())
		})
	}
}
