//go:build linux

package main

// Fault injection (README, "A killed command"): every command that changes
// the repository is killed — SIGKILL to its whole process group — at
// instants spread over its uninterrupted run. `carry resume` (what any next
// carry command does first) must then leave the repository as it was
// before the command or as an uninterrupted run leaves it, never a mix;
// staging leftovers must be hidden (dot names, or in a tree's .git) and go
// with the next run of the same command, which must reach the state after
// it; the temporary files of killed writes (.<name>.kube-carry-tmp) must
// already be gone after `carry resume`. A killed bump or port leaves a
// session: its -continue must reach the state after, its -abort exactly the
// state before.
//
// The exception is apply (README, "A killed command"): the patched tree is
// the line's working copy, not repository state, and a killed apply may
// leave it at any point of the series (`carry resume` does not touch
// trees). What must hold there: nothing outside _output changes, the user's
// untracked and ignored files stay, and the next apply succeeds and reaches
// exactly the state after, leftovers gone.
//
// TestKillAtAnyInstant kills at instants; TestKillWindow kills (or leaves
// the state a kill leaves) at the precise steps where TestKillAtAnyInstant
// found, by chance, a problem, so those fail every time;
// TestFailedCommandsSayWhatTheyLeft checks commands that fail rather than
// die.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// killInstants is how many kills each command gets, at D*i/(killInstants+1)
// for i = 1..killInstants, D being its uninterrupted duration.
const killInstants = 20

// killCase is one command run on its own fixture repository.
type killCase struct {
	name string
	// releases are what the fixture proxy serves.
	releases []fixture.Release
	// prepare makes the repository the command runs in (r.root).
	prepare func(t *testing.T, r *repo)
	// args are carry's arguments; or script, a script of the repository,
	// run with env added.
	args   []string
	script string
	env    []string
	// lines are the lines whose patched trees are compared.
	lines []string
	// session is where a killed bump or port leaves its session; cont and
	// abort are the commands the refusal of the next run names.
	session     string
	cont, abort []string
	// workingCopy: the command changes only the compared trees, which a
	// kill may leave at any point (apply); see killFixture.partial.
	workingCopy bool
}

var killV100 = fixture.Release{Version: "v1.0.0", Files: upstreamFiles()}

func killCases() []killCase {
	return []killCase{
		{
			name:     "export",
			releases: []fixture.Release{killV100},
			prepare: func(t *testing.T, r *repo) {
				tr := r.startV10()
				commit(t, tr, fixturePatch{"delta", "c.txt", "line 3\n", "line 3 delta\n"})
				// export refuses an untracked file: the local edit is ignored.
				ignoredEdit(t, tr.Dir)
			},
			args:  []string{"--line", "v1.0", "export"},
			lines: []string{"v1.0"},
		},
		{
			name:     "bump",
			releases: []fixture.Release{killV100, {Version: "v1.0.1", Files: upstreamFiles("NEWS.txt", "v1.0.1\n")}},
			prepare: func(t *testing.T, r *repo) {
				tr := r.startV10()
				ignoredEdit(t, tr.Dir)
			},
			args:    []string{"--line", "v1.0", "bump"},
			lines:   []string{"v1.0"},
			session: "_output/v1.0/rebase",
			cont:    []string{"--line", "v1.0", "bump-continue"},
			abort:   []string{"--line", "v1.0", "bump-abort"},
		},
		{
			name:     "bump-continue",
			releases: []fixture.Release{killV100, {Version: "v1.0.1", Files: upstreamFiles("a.txt", fixture.Numbered(20, "line 5\n", "line 5 upstream\n"))}},
			prepare: func(t *testing.T, r *repo) {
				tr := r.startV10()
				r.fail("--line", "v1.0", "bump")
				resolve(t, r.path("_output/v1.0/rebase/kubernetes"), "a.txt", fixture.Numbered(20, "line 5\n", "line 5 upstream alpha\n"))
				ignoredEdit(t, tr.Dir)
			},
			args:  []string{"--line", "v1.0", "bump-continue"},
			lines: []string{"v1.0"},
		},
		{
			name:     "port",
			releases: []fixture.Release{killV100, {Version: "v1.1.0", Files: upstreamFiles("NEWS.txt", "v1.1.0\n")}},
			prepare: func(t *testing.T, r *repo) {
				v10 := r.startV10()
				r.ok("pin", "v1.1.0")
				v11 := r.fetch("v1.1")
				untrackedEdit(t, v10.Dir)
				ignoredEdit(t, v11.Dir)
			},
			args:    []string{"--line", "v1.1", "port", "-from", "v1.0", "alpha.patch"},
			lines:   []string{"v1.0", "v1.1"},
			session: "_output/v1.1/port",
			cont:    []string{"--line", "v1.1", "port-continue"},
			abort:   []string{"--line", "v1.1", "port-abort"},
		},
		{
			name:     "pin of a new minor",
			releases: []fixture.Release{killV100, {Version: "v1.1.0", Files: upstreamFiles()}},
			prepare: func(t *testing.T, r *repo) {
				tr := r.startV10()
				untrackedEdit(t, tr.Dir)
			},
			args:  []string{"pin", "v1.1.0"},
			lines: []string{"v1.0"},
		},
		{
			name:     "pin of an existing line",
			releases: []fixture.Release{killV100, {Version: "v1.0.1", Files: upstreamFiles("NEWS.txt", "v1.0.1\n")}},
			prepare: func(t *testing.T, r *repo) {
				tr := r.startV10()
				untrackedEdit(t, tr.Dir)
			},
			args:  []string{"pin", "v1.0.1"},
			lines: []string{"v1.0"},
		},
		{
			name:        "apply",
			releases:    []fixture.Release{killV100},
			prepare:     changedSeries,
			args:        []string{"--line", "v1.0", "apply"},
			lines:       []string{"v1.0"},
			workingCopy: true,
		},
		{
			name:     "fetch",
			releases: []fixture.Release{killV100, {Version: "v1.1.0", Files: upstreamFiles("NEWS.txt", "v1.1.0\n")}},
			prepare: func(t *testing.T, r *repo) {
				v10 := r.startV10()
				r.ok("pin", "v1.1.0")
				installScripts(t, r)
				untrackedEdit(t, v10.Dir)
			},
			script: "scripts/fetch.sh",
			env:    []string{"LINE=v1.1"},
			lines:  []string{"v1.0", "v1.1"},
		},
	}
}

func killCaseNamed(t *testing.T, name string) killCase {
	t.Helper()
	for _, c := range killCases() {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no kill case %q", name)
	return killCase{}
}

// untrackedEdit leaves local work in the tree that git status shows.
func untrackedEdit(t *testing.T, dir string) {
	t.Helper()
	fixture.WriteFiles(t, dir, map[string]string{"wip.txt": "local work in progress\n"})
}

// ignoredEdit leaves a local file that git ignores (.git/info/exclude):
// the commands that refuse a dirty tree accept it.
func ignoredEdit(t *testing.T, dir string) {
	t.Helper()
	exclude := filepath.Join(dir, ".git", "info", "exclude")
	require.NoError(t, os.MkdirAll(filepath.Dir(exclude), 0o755))
	f, err := os.OpenFile(exclude, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString("notes.local\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fixture.WriteFiles(t, dir, map[string]string{"notes.local": "local notes, ignored by git\n"})
}

// changedSeries is line v1.0 whose bravo.patch changed in the repository
// (as after a git pull) while its patched tree still has the old one.
func changedSeries(t *testing.T, r *repo) {
	t.Helper()
	tr := r.startV10()
	g := tree.Git{Dir: tr.Dir, Env: devEnv}
	head, err := g.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	records := fixture.ReadFile(t, filepath.Join(tr.Dir, ".git", "kube-carry-applied"))
	_, err = g.Run("reset", "-q", "--hard", "HEAD~2")
	require.NoError(t, err)
	commit(t, tr, fixturePatch{"bravo", "b.txt", "line 10\n", "line 10 bravo, reworked\n"})
	commit(t, tr, v10Series[2])
	require.Contains(t, r.ok("--line", "v1.0", "export"), "export: v1.0: 1 written, 2 unchanged, 0 removed")
	_, err = g.Run("reset", "-q", "--hard", head)
	require.NoError(t, err)
	fixture.WriteFiles(t, tr.Dir, map[string]string{".git/kube-carry-applied": records})
	ignoredEdit(t, tr.Dir)
}

// installScripts puts scripts/ in the repository with the carry under test
// as scripts/lib.sh's prebuilt tool: _output/tools/carry, newer than the
// cmd/, internal/, go.mod and go.sum it would be rebuilt from (stubs here).
func installScripts(t *testing.T, r *repo) {
	t.Helper()
	src := filepath.Join("..", "..", "scripts")
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(r.path("scripts"), 0o755))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(r.path("scripts/"+e.Name()), data, 0o755))
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []string{"cmd", "internal"} {
		require.NoError(t, os.MkdirAll(r.path(p), 0o755))
		require.NoError(t, os.Chtimes(r.path(p), old, old))
	}
	for _, p := range []string{"go.mod", "go.sum"} {
		require.NoError(t, os.WriteFile(r.path(p), nil, 0o644))
		require.NoError(t, os.Chtimes(r.path(p), old, old))
	}
	require.NoError(t, os.MkdirAll(r.path("_output/tools"), 0o755))
	require.NoError(t, os.Symlink(carryBinary(t), r.path("_output/tools/carry")))
}

// killState is what a kill may change: every repository file outside
// _output, and each compared line's patched tree.
type killState struct {
	Files map[string]string
	Trees map[string]treeProbe
}

// treeProbe is what a user sees of a patched tree: HEAD, git status, every
// file (untracked and ignored ones included), the files git does not track
// (the user's edits that apply allows), the tree's record of which patch
// each commit came from (apply, clean and export trust it; see
// killRecords), whether `carry
// removable` (what `make clean` asks) lets it go, and what a killed command
// left in its .git (staged records, apply's marker, a git operation or lock).
type treeProbe struct {
	Absent       bool
	Head, Status string
	Files        map[string]string
	Local        map[string]string
	Records      string
	Removable    bool
	Leftovers    []string
}

// killFixture is one case's repository. Every run uses the same root (a
// session records absolute paths), restored from the template first.
type killFixture struct {
	t        *testing.T
	c        killCase
	r        *repo
	template string
	// tmp is the TMPDIR of the commands, emptied by restore.
	tmp                 string
	before, after       killState
	beforeOut, afterOut map[string]bool
}

func newKillFixture(t *testing.T, c killCase) *killFixture {
	t.Helper()
	carryBinary(t)
	becomeSubreaper(t)
	proxy := fixture.NewProxy(t)
	for _, rel := range c.releases {
		proxy.Add(rel)
	}
	r := newRepo(t, proxy, fixture.File)
	k := &killFixture{t: t, c: c, r: r, template: filepath.Join(t.TempDir(), "template"), tmp: filepath.Join(t.TempDir(), "tmp")}
	require.NoError(t, os.Mkdir(k.tmp, 0o755))
	r.env = append(r.env, "TMPDIR="+k.tmp)
	c.prepare(t, r)
	killCopyDir(t, r.root, k.template)
	k.before, k.beforeOut = k.state(), k.outputEntries()
	k.requireNoTreeLeftovers(k.before, "prepare")
	return k
}

func (k *killFixture) requireNoTreeLeftovers(s killState, what string) {
	k.t.Helper()
	for name, p := range s.Trees {
		require.Empty(k.t, p.Leftovers, "%s leaves these in the .git of line %s's tree", what, name)
	}
}

// measure runs the command uninterrupted from the template: the state
// after, and how long it took.
func (k *killFixture) measure() time.Duration {
	k.t.Helper()
	k.restore()
	_, out, code, took := k.exec(0, nil)
	require.Equal(k.t, 0, code, "%s:\n%s", k.name(), out)
	k.after, k.afterOut = k.state(), k.outputEntries()
	require.NotEqual(k.t, k.before, k.after, "the command changes something")
	k.requireNoTreeLeftovers(k.after, "an uninterrupted run")
	return took
}

func killCopyDir(t *testing.T, src, dst string) {
	t.Helper()
	out, err := exec.Command("cp", "-a", src, dst).CombinedOutput()
	require.NoError(t, err, "cp -a %s %s: %s", src, dst, out)
}

// restore puts the repository back as prepare left it.
func (k *killFixture) restore() {
	k.t.Helper()
	require.NoError(k.t, os.RemoveAll(k.r.root))
	killCopyDir(k.t, k.template, k.r.root)
	require.NoError(k.t, os.RemoveAll(k.tmp))
	require.NoError(k.t, os.Mkdir(k.tmp, 0o755))
}

// exec runs the case's command (with extraEnv) in its own process group;
// killAfter > 0 kills the group that long after the start unless the
// command ended before. killed says whether the kill ended it.
func (k *killFixture) exec(killAfter time.Duration, extraEnv []string) (killed bool, out string, code int, took time.Duration) {
	k.t.Helper()
	var cmd *exec.Cmd
	if k.c.script != "" {
		cmd = exec.Command(filepath.Join(k.r.root, filepath.FromSlash(k.c.script)))
	} else {
		cmd = exec.Command(carryBinary(k.t), k.c.args...)
	}
	cmd.Dir = k.r.root
	cmd.Env = slices.Concat(k.r.env, k.c.env, extraEnv)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	require.NoError(k.t, cmd.Start())
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	var timeout <-chan time.Time
	if killAfter > 0 {
		timeout = time.After(killAfter)
	}
	select {
	case <-done:
	case <-timeout:
		// ESRCH: it has just ended.
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			require.NoError(k.t, err)
		}
		<-done
	}
	took = time.Since(start)
	reapGroup(cmd.Process.Pid)
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws.Signaled(), buf.String(), cmd.ProcessState.ExitCode(), took
}

// rerun runs the case's command to its end.
func (k *killFixture) rerun() (string, int) {
	_, out, code, _ := k.exec(0, nil)
	return out, code
}

func (k *killFixture) name() string {
	if k.c.script != "" {
		return k.c.script
	}
	return "carry " + strings.Join(k.c.args, " ")
}

func (k *killFixture) state() killState {
	k.t.Helper()
	s := killState{Files: k.r.snapshot(), Trees: map[string]treeProbe{}}
	for _, name := range k.c.lines {
		s.Trees[name] = k.probeTree(name)
	}
	return s
}

func (k *killFixture) probeTree(name string) treeProbe {
	k.t.Helper()
	dir := k.r.line(name).TreeDir()
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return treeProbe{Absent: true}
	}
	g := tree.Git{Dir: dir}
	var p treeProbe
	var err error
	if p.Head, err = g.Line("rev-parse", "HEAD"); err != nil {
		p.Head = err.Error()
	}
	if p.Status, err = g.Run("status", "--porcelain", "--untracked-files=all"); err != nil {
		p.Status = err.Error()
	}
	p.Files = fixture.Snapshot(k.t, dir)
	p.Local = map[string]string{}
	others, err := g.Run("ls-files", "--others", "-z")
	require.NoError(k.t, err)
	for _, f := range strings.Split(others, "\x00") {
		if f != "" {
			p.Local[f] = p.Files[f]
		}
	}
	p.Records = killRecords(k.t, g, dir)
	_, code := k.r.run("--line", name, "removable")
	p.Removable = code == 0
	p.Leftovers = gitLeftovers(k.t, dir)
	return p
}

// killRecords is what the tree's record of which patch each commit came
// from (.git/kube-carry-applied, appended to, the last line of a commit
// counting) says of the commits of HEAD's history, newest first: a record
// repeated, or one of a commit that is no longer in the history, as a step
// replayed again after a kill leaves, means nothing.
func killRecords(t *testing.T, g tree.Git, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "kube-carry-applied"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	require.NoError(t, err)
	last := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			last[f[0]] = strings.Join(f, " ")
		}
	}
	revs, err := g.Run("rev-list", "HEAD")
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, c := range strings.Fields(revs) {
		if l, ok := last[c]; ok {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// gitLeftovers is what a killed command can leave in the .git of the tree
// dir: export's staged records and the old ones its journal moves aside,
// apply's marker, a git am or rebase in progress, and git's lock files.
func gitLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	gitDir := filepath.Join(dir, ".git")
	var out []string
	for _, name := range []string{"kube-carry-applied.stage", "kube-carry-applied.old", "kube-carry-applying", "rebase-apply", "rebase-merge"} {
		if _, err := os.Lstat(filepath.Join(gitDir, name)); err == nil {
			out = append(out, ".git/"+name)
		}
	}
	err := filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "objects" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return killUniq(out)
}

// outputEntries lists _output: folders with a slash, files, and each git
// tree as a whole (not its content).
func (k *killFixture) outputEntries() map[string]bool {
	k.t.Helper()
	out := map[string]bool{}
	root := k.r.path("_output")
	if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		return out
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(k.r.root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.IsDir() {
			out[rel] = true
			return nil
		}
		out[rel+"/"] = true
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			return filepath.SkipDir
		}
		return nil
	})
	require.NoError(k.t, err)
	return out
}

// The staging names in the repository and _output are fixed; only the
// temporary folders in TMPDIR have a random part.
var killRandomSuffix = regexp.MustCompile(`(kube-carry-[a-z]+-|go-build|go-)[0-9A-Za-z]+`)

// killNormalize names a leftover without its random part.
func killNormalize(p string) string { return killRandomSuffix.ReplaceAllString(p, "${1}*") }

// killTempSuffix ends the temporary file of an atomic write
// (.<name>.kube-carry-tmp), which the next carry command removes (README,
// "A killed command").
const killTempSuffix = ".kube-carry-tmp"

// visibleLeftovers splits s into the state without its leftovers — files
// outside _output that neither the state before nor after has, named like
// staging (a path component starting with a dot), and what a killed command
// left in the .git of a compared tree — and those leftovers, cut after that
// component.
func (k *killFixture) visibleLeftovers(s killState) (killState, []string) {
	rest := killState{Files: map[string]string{}, Trees: map[string]treeProbe{}}
	var left []string
	for name, p := range s.Trees {
		rel, err := filepath.Rel(k.r.root, k.r.line(name).TreeDir())
		require.NoError(k.t, err)
		for _, l := range p.Leftovers {
			left = append(left, filepath.ToSlash(rel)+"/"+l)
		}
		p.Leftovers = nil
		rest.Trees[name] = p
	}
	for p, v := range s.Files {
		_, inBefore := k.before.Files[p]
		_, inAfter := k.after.Files[p]
		cut := killDotComponent(p)
		if inBefore || inAfter || cut == "" {
			rest.Files[p] = v
			continue
		}
		left = append(left, killNormalize(cut))
	}
	return rest, killUniq(left)
}

// killDotComponent is p up to its first component that starts with a dot
// (with a slash when it is a folder), or "".
func killDotComponent(p string) string {
	parts := strings.Split(strings.TrimSuffix(p, "/"), "/")
	for i, part := range parts {
		if strings.HasPrefix(part, ".") {
			out := strings.Join(parts[:i+1], "/")
			if i < len(parts)-1 || strings.HasSuffix(p, "/") {
				out += "/"
			}
			return out
		}
	}
	return ""
}

// outputLeftovers are the entries of _output that neither the state before
// nor after has, the shallowest of each.
func (k *killFixture) outputLeftovers() []string {
	entries := k.outputEntries()
	var left []string
	for p := range entries {
		if k.beforeOut[p] || k.afterOut[p] {
			continue
		}
		parent := p[:strings.LastIndex(strings.TrimSuffix(p, "/"), "/")+1]
		if entries[parent] && !k.beforeOut[parent] && !k.afterOut[parent] {
			continue
		}
		left = append(left, killNormalize(p))
	}
	return killUniq(left)
}

// tmpLeftovers are what the commands left in their TMPDIR.
func (k *killFixture) tmpLeftovers() []string {
	entries, err := os.ReadDir(k.tmp)
	require.NoError(k.t, err)
	var left []string
	for _, e := range entries {
		left = append(left, "$TMPDIR/"+killNormalize(e.Name()))
	}
	return killUniq(left)
}

// killUniq is s sorted without duplicates (a copy: s is left as it is).
func killUniq(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

// killDiff says how a differs from b, briefly.
func killDiff(a, b killState) string {
	var out []string
	for p, v := range a.Files {
		if w, ok := b.Files[p]; !ok {
			out = append(out, "+"+p)
		} else if v != w {
			out = append(out, "~"+p)
		}
	}
	for p := range b.Files {
		if _, ok := a.Files[p]; !ok {
			out = append(out, "-"+p)
		}
	}
	sort.Strings(out)
	var names []string
	for name := range a.Trees {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ta, tb := a.Trees[name], b.Trees[name]
		switch {
		case ta.Absent != tb.Absent:
			out = append(out, fmt.Sprintf("tree %s: absent %v, want %v", name, ta.Absent, tb.Absent))
			continue
		case ta.Absent:
			continue
		}
		if ta.Head != tb.Head {
			out = append(out, fmt.Sprintf("tree %s: HEAD %.12s, want %.12s", name, ta.Head, tb.Head))
		}
		if ta.Status != tb.Status {
			out = append(out, fmt.Sprintf("tree %s: status %q, want %q", name, ta.Status, tb.Status))
		}
		if !assert.ObjectsAreEqual(ta.Files, tb.Files) {
			out = append(out, fmt.Sprintf("tree %s: other files", name))
		}
		if !assert.ObjectsAreEqual(ta.Local, tb.Local) {
			out = append(out, fmt.Sprintf("tree %s: other untracked or ignored files", name))
		}
		if ta.Records != tb.Records {
			out = append(out, fmt.Sprintf("tree %s: other records of which patch each commit came from", name))
		}
		if ta.Removable != tb.Removable {
			out = append(out, fmt.Sprintf("tree %s: `carry removable` %v, want %v", name, ta.Removable, tb.Removable))
		}
		if !assert.ObjectsAreEqual(ta.Leftovers, tb.Leftovers) {
			out = append(out, fmt.Sprintf("tree %s: .git leftovers %v, want %v", name, ta.Leftovers, tb.Leftovers))
		}
	}
	if len(out) == 0 {
		return "the same"
	}
	return strings.Join(out, "; ")
}

// classify compares the state after a kill and `carry resume` with the
// states before and after the command: "before", "after", "partial" (a
// working-copy command's trees midway, see partial) or "mixed", with the
// visible leftovers.
func (k *killFixture) classify() (string, killState, []string) {
	s := k.state()
	rest, visible := k.visibleLeftovers(s)
	switch {
	case assert.ObjectsAreEqual(rest, k.before):
		return "before", rest, visible
	case assert.ObjectsAreEqual(rest, k.after):
		return "after", rest, visible
	case k.c.workingCopy && k.partial(rest) == "":
		return "partial", rest, visible
	}
	return "mixed", rest, visible
}

// partial says why rest (leftovers aside) is not a state that a kill of a
// working-copy command (apply) may leave, or "": every repository file as
// before, each compared tree still there and holding the user's untracked
// and ignored files as before. Where in the series the tree is, and what
// `carry removable` says of it meanwhile, is free: the next apply undoes
// the killed one and brings the tree to the series (killAt checks that).
func (k *killFixture) partial(rest killState) string {
	if !assert.ObjectsAreEqual(rest.Files, k.before.Files) {
		return "files outside _output changed: " + killDiff(killState{Files: rest.Files}, killState{Files: k.before.Files})
	}
	var why []string
	for name, before := range k.before.Trees {
		p := rest.Trees[name]
		if p.Absent != before.Absent {
			why = append(why, fmt.Sprintf("tree %s: absent %v, was %v", name, p.Absent, before.Absent))
			continue
		}
		for f, v := range before.Local {
			if w, ok := p.Files[f]; !ok || w != v {
				why = append(why, fmt.Sprintf("tree %s: the user's %s is lost or changed", name, f))
			}
		}
	}
	sort.Strings(why)
	return strings.Join(why, "; ")
}

// killOutcome is what one kill left.
type killOutcome struct {
	at time.Duration
	// killed: the kill ended the command (else it had ended already).
	killed bool
	// resumed: `carry resume` finished a journal.
	resumed bool
	// state is "before", "after", "partial" or "mixed" (after resume,
	// leftovers aside); refused: in a partial state, `carry removable`
	// refuses a compared tree.
	state                string
	refused              bool
	visible, output, tmp []string
	// recovery is how the next run went; residual what it left behind.
	recovery string
	residual []string
}

// killAt restores the repository, kills the command at, resumes, and
// checks what is left; then runs the command again when it is not done.
func (k *killFixture) killAt(i int, at time.Duration) killOutcome {
	t := k.t
	k.restore()
	o := killOutcome{at: at}
	killed, out, code, _ := k.exec(at, nil)
	o.killed = killed
	if !killed {
		require.Equal(t, 0, code, "kill %d: the command ended before the kill, failing:\n%s", i, out)
	}
	rout, rcode := k.r.run("resume")
	require.Equal(t, 0, rcode, "kill %d at %v: carry resume failed:\n%s\nthe command printed:\n%s", i, at, rout, out)
	o.resumed = strings.Contains(rout, "carry: finishing a command that was interrupted")
	var rest killState
	o.state, rest, o.visible = k.classify()
	o.output, o.tmp = k.outputLeftovers(), k.tmpLeftovers()
	for _, p := range rest.Trees {
		o.refused = o.refused || o.state == "partial" && !p.Absent && !p.Removable
	}
	where := fmt.Sprintf("kill %d at %v of %s", i, at.Round(time.Microsecond), k.name())
	if o.state == "mixed" {
		why := ""
		if k.c.workingCopy {
			why = "\n  not a tree midway either: " + k.partial(rest)
		}
		assert.Fail(t, "a kill left a mix of the states before and after the command",
			"%s: after `carry resume` the repository is neither as before nor as after the command\n  vs before: %s\n  vs after:  %s%s\n  leftovers: %v %v\nthe command printed:\n%s\ncarry resume printed:\n%s",
			where, killDiff(rest, k.before), killDiff(rest, k.after), why, o.visible, o.output, out, rout)
	}
	for _, l := range o.visible {
		if strings.HasSuffix(l, killTempSuffix) {
			assert.Fail(t, "carry resume leaves the temporary file of a killed write", "%s: %s", where, l)
		}
	}
	// A working copy's leftovers (apply's marker in an applied tree) go
	// with the next apply; any other command's state after is final.
	if o.state == "after" && len(o.visible) > 0 && !k.c.workingCopy {
		assert.Fail(t, "leftovers in the state after the command", "%s: %v", where, o.visible)
	}
	if o.state != "after" || len(o.visible) > 0 {
		o.recovery = k.recover(where)
		o.residual = k.outputLeftovers()
		assert.Empty(t, o.residual, "%s: the next run of the command leaves these behind", where)
	}
	return o
}

// recover runs the command again and requires the state after an
// uninterrupted run, leftovers included. A bump or port whose session the
// kill left refuses to start again, naming -continue and -abort: both must
// work, and the -abort must leave the state before the command.
func (k *killFixture) recover(where string) string {
	t := k.t
	if k.c.session != "" && killExists(k.r.path(k.c.session+"/state.json")) {
		return k.recoverSession(where)
	}
	out, code := k.rerun()
	if code != 0 {
		assert.Fail(t, "the next run of the command fails", "%s: the next run:\n%s", where, out)
		return "rerun FAILED"
	}
	if !k.isAfter(where, "the next run", out) {
		return "rerun WRONG"
	}
	return "rerun"
}

func (k *killFixture) recoverSession(where string) string {
	t := k.t
	out, code := k.rerun()
	assert.Equal(t, 1, code, "%s: the next run starts although a session is left:\n%s", where, out)
	assert.Contains(t, out, "is already in progress", "%s: the next run", where)

	// -continue, on the state the kill left; then back to that state.
	side := k.template + ".killed"
	require.NoError(t, os.RemoveAll(side))
	killCopyDir(t, k.r.root, side)
	how := "continue"
	if cout, ccode := k.r.run(k.c.cont...); ccode != 0 {
		assert.Fail(t, "the -continue of the session a kill left fails", "%s: carry %s:\n%s", where, strings.Join(k.c.cont, " "), cout)
		how += " FAILED"
	} else if !k.isAfter(where, "carry "+strings.Join(k.c.cont, " "), cout) {
		how += " WRONG"
	}
	require.NoError(t, os.RemoveAll(k.r.root))
	require.NoError(t, os.Rename(side, k.r.root))

	// -abort: the state before, exactly (nothing staged left, in the
	// repository, the trees' .git or _output); then the command again.
	aout, acode := k.r.run(k.c.abort...)
	require.Equal(t, 0, acode, "%s: carry %s:\n%s", where, strings.Join(k.c.abort, " "), aout)
	if !k.isBefore(where, "carry "+strings.Join(k.c.abort, " "), aout) {
		how += ", abort WRONG"
	} else {
		how += ", abort"
	}
	out, code = k.rerun()
	if code != 0 {
		assert.Fail(t, "the run after the -abort fails", "%s:\n%s", where, out)
		return how + ", rerun FAILED"
	}
	if !k.isAfter(where, "the run after the -abort", out) {
		return how + ", rerun WRONG"
	}
	return how + ", rerun"
}

// isAfter checks that the repository is exactly as after an uninterrupted
// run, once what (which printed out) ran.
func (k *killFixture) isAfter(where, what, out string) bool {
	s := k.state()
	if assert.ObjectsAreEqual(k.after, s) {
		return true
	}
	assert.Fail(k.t, "the next run of the command does not reach the state after it",
		"%s: after %s the repository differs from an uninterrupted run: %s\nit printed:\n%s", where, what, killDiff(s, k.after), out)
	return false
}

// isBefore checks that the repository and _output are exactly as before the
// command, once what (which printed out) ran.
func (k *killFixture) isBefore(where, what, out string) bool {
	s, entries := k.state(), k.outputEntries()
	ok := true
	if !assert.ObjectsAreEqual(k.before, s) {
		assert.Fail(k.t, "not the state before the command",
			"%s: after %s the repository differs from the state before the command: %s\nit printed:\n%s", where, what, killDiff(s, k.before), out)
		ok = false
	}
	if !assert.ObjectsAreEqual(k.beforeOut, entries) {
		var extra, missing []string
		for p := range entries {
			if !k.beforeOut[p] {
				extra = append(extra, p)
			}
		}
		for p := range k.beforeOut {
			if !entries[p] {
				missing = append(missing, p)
			}
		}
		assert.Fail(k.t, "_output is not as before the command",
			"%s: after %s, _output has %v more and %v less than before the command\nit printed:\n%s", where, what, killUniq(extra), killUniq(missing), out)
		ok = false
	}
	return ok
}

func killExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// killSummary is one row of the outcome table.
type killSummary struct {
	name     string
	d        time.Duration
	outcomes []killOutcome
}

func TestKillAtAnyInstant(t *testing.T) {
	carryBinary(t)
	var mu sync.Mutex
	var rows []killSummary
	start := time.Now()
	t.Run("commands", func(t *testing.T) {
		for _, c := range killCases() {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				k := newKillFixture(t, c)
				// The state after, from an uninterrupted run; three more
				// (with the module cache as warm as the killed runs have
				// it) must leave the same state, and their median is D.
				k.measure()
				after := k.after
				var runs []time.Duration
				for range 3 {
					runs = append(runs, k.measure())
					require.Equal(t, after, k.after, "uninterrupted runs leave the same state")
					require.Empty(t, k.tmpLeftovers(), "an uninterrupted run leaves nothing in TMPDIR")
				}
				slices.Sort(runs)
				d := runs[1]

				row := killSummary{name: c.name, d: d}
				for i := 1; i <= killInstants; i++ {
					at := d * time.Duration(i) / (killInstants + 1)
					o := k.killAt(i, at)
					t.Logf("kill %2d at %5.1fms: %-7s killed=%-5v resumed=%-5v removable refused=%-5v leftovers=%v %v %v next run=%q left=%v",
						i, float64(at.Microseconds())/1000, o.state, o.killed, o.resumed, o.refused, o.visible, o.output, o.tmp, o.recovery, o.residual)
					row.outcomes = append(row.outcomes, o)
				}
				mu.Lock()
				rows = append(rows, row)
				mu.Unlock()
			})
		}
	})
	t.Logf("kill outcomes (%d kills per command; %v in all):\n%s", killInstants, time.Since(start).Round(time.Second), killTable(rows))
}

func killTable(rows []killSummary) string {
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMAND\tD\tBEFORE\tAFTER (ended before the kill, finished by resume)\tPARTIAL (`carry removable` refuses)\tMIXED\tLEFTOVERS (kills)\tNEXT RUN (kills)\tLEFT BY THE NEXT RUN")
	for _, r := range rows {
		var before, after, partial, refused, mixed, ended, resumed int
		left, next, residual := map[string]int{}, map[string]int{}, map[string]int{}
		for _, o := range r.outcomes {
			switch o.state {
			case "before":
				before++
			case "after":
				after++
			case "partial":
				partial++
			default:
				mixed++
			}
			if o.refused {
				refused++
			}
			if !o.killed {
				ended++
			}
			if o.resumed {
				resumed++
			}
			for _, l := range slices.Concat(o.visible, o.output, o.tmp) {
				left[l]++
			}
			if o.recovery != "" {
				next[o.recovery]++
			}
			for _, l := range o.residual {
				residual[l]++
			}
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d (%d, %d)\t%d (%d)\t%d\t%s\t%s\t%s\n", r.name, r.d.Round(time.Millisecond), before, after, ended, resumed, partial, refused, mixed, killCounts(left), killCounts(next), killCounts(residual))
	}
	tw.Flush()
	return b.String()
}

func killCounts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var out []string
	for k, n := range m {
		out = append(out, k+" ×"+strconv.Itoa(n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// gitCalls is a git for the command under test (first in its PATH) that
// logs every call and, at call number KILL_AT_GIT_CALL, kills the
// command's whole process group before running it.
type gitCalls struct {
	t   *testing.T
	dir string
}

func newGitCalls(t *testing.T) *gitCalls {
	t.Helper()
	real, err := exec.LookPath("git")
	require.NoError(t, err)
	g := &gitCalls{t: t, dir: t.TempDir()}
	fixture.WriteFiles(t, g.dir, map[string]string{"bin/git": `#!/bin/sh
echo "$*" >> "$GIT_CALLS"
if [ "$(wc -l < "$GIT_CALLS")" -eq "$KILL_AT_GIT_CALL" ]; then
	kill -KILL 0
fi
exec "` + real + `" "$@"
`})
	require.NoError(t, os.Chmod(filepath.Join(g.dir, "bin", "git"), 0o755))
	return g
}

// env is the environment that puts the logging git first, killing at call
// n (none when 0), with an empty log.
func (g *gitCalls) env(n int) []string {
	g.t.Helper()
	require.NoError(g.t, os.RemoveAll(g.log()))
	return []string{
		"PATH=" + filepath.Join(g.dir, "bin") + ":" + os.Getenv("PATH"),
		"GIT_CALLS=" + g.log(),
		"KILL_AT_GIT_CALL=" + strconv.Itoa(n),
	}
}

func (g *gitCalls) log() string { return filepath.Join(g.dir, "calls") }

// find is the number (from 1) of the first call whose arguments match re
// among the calls after call number after.
func (g *gitCalls) find(after int, re string) int {
	g.t.Helper()
	calls := strings.Split(strings.TrimSuffix(fixture.ReadFile(g.t, g.log()), "\n"), "\n")
	m := regexp.MustCompile(re)
	for i := after; i < len(calls); i++ {
		if m.MatchString(calls[i]) {
			return i + 1
		}
	}
	g.t.Fatalf("no git call matches %q after call %d:\n%s", re, after, strings.Join(calls, "\n"))
	return 0
}

// last is the number of the last call whose arguments match re.
func (g *gitCalls) last(re string) int {
	g.t.Helper()
	calls := strings.Split(strings.TrimSuffix(fixture.ReadFile(g.t, g.log()), "\n"), "\n")
	m := regexp.MustCompile(re)
	for i := len(calls) - 1; i >= 0; i-- {
		if m.MatchString(calls[i]) {
			return i + 1
		}
	}
	g.t.Fatalf("no git call matches %q:\n%s", re, strings.Join(calls, "\n"))
	return 0
}

// killAtGitCall runs the command once uninterrupted to number its git
// calls, then restores the repository and kills the command at the call
// that pick names (it must die there), and runs `carry resume`.
func (k *killFixture) killAtGitCall(pick func(g *gitCalls) int) {
	k.t.Helper()
	g := newGitCalls(k.t)
	k.restore()
	_, out, code, _ := k.exec(0, g.env(0))
	require.Equal(k.t, 0, code, out)
	n := pick(g)
	k.restore()
	killed, out, _, _ := k.exec(0, g.env(n))
	require.True(k.t, killed, "the command dies at git call %d:\n%s", n, out)
	k.r.ok("resume")
}

// killHook makes git kill the whole process group of the command that runs
// it from inside a `git am` of the tree dir, after the patch is applied to
// the index and work tree, before it is committed (pre-applypatch hook,
// removed as it fires).
func killHook(t *testing.T, dir string) {
	t.Helper()
	hook := filepath.Join(dir, ".git", "hooks", "pre-applypatch")
	require.NoError(t, os.MkdirAll(filepath.Dir(hook), 0o755))
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nrm -f \"$0\"\nkill -KILL 0\n"), 0o755))
}

// killGitLocks are lock files that git am and git reset take in the tree
// (the index; ORIG_HEAD at the start of an am; REBASE_HEAD, HEAD and the
// branch HEAD names as an am commits or a reset moves HEAD): a SIGKILL
// while git holds one leaves it, and TestKillAtAnyInstant met each but the
// branch's by chance. "" is none; "branch" stands for the branch's ref.
var killGitLocks = []string{"", "index.lock", "ORIG_HEAD.lock", "REBASE_HEAD.lock", "HEAD.lock", "branch"}

func killLockName(lock string) string {
	switch lock {
	case "":
		return "no lock"
	case "branch":
		return "holding the branch's ref lock"
	}
	return "holding " + lock
}

// leaveGitLock leaves lock in the .git of the tree dir, as a git process
// killed while it held it does: the pre-applypatch hook and the logging git
// kill where git holds no lock, so that part of the window is built by hand.
func leaveGitLock(t *testing.T, dir, lock string) {
	t.Helper()
	switch lock {
	case "":
		return
	case "branch":
		ref, err := tree.Git{Dir: dir}.Line("symbolic-ref", "HEAD")
		require.NoError(t, err)
		lock = ref + ".lock"
	}
	fixture.WriteFiles(t, dir, map[string]string{".git/" + lock: ""})
}

// TestKillWindow kills each command at the steps where a kill broke the
// contract before the fixes of issue 17, and where TestKillAtAnyInstant
// still meets a problem by chance (a git lock file that a kill leaves in a
// tree), or leaves the state such a kill leaves where no external command
// runs at that step, so each problem fails here every time.
func TestKillWindow(t *testing.T) {
	t.Run("export killed after staging the tree's records before its journal", func(t *testing.T) {
		k := newKillFixture(t, killCaseNamed(t, "export"))
		k.measure()
		// What a kill in cmdExport between t.Export (which records each
		// commit's patch in the staged copy of the tree's records,
		// .git/kube-carry-applied.stage) and txn.Commit leaves: the staged
		// folder and records next to patches/v1.0 and the records as before.
		records := filepath.Join(k.r.line("v1.0").TreeDir(), ".git", "kube-carry-applied")
		require.NoError(t, os.Rename(k.r.path("patches/v1.0"), k.r.path("patches/.v1.0.export")))
		killCopyDir(t, filepath.Join(k.template, "patches", "v1.0"), k.r.path("patches/v1.0"))
		require.NoError(t, os.Rename(records, records+".stage"))
		tmplRecords, err := filepath.Rel(k.r.root, records)
		require.NoError(t, err)
		fixture.WriteFiles(t, filepath.Dir(records), map[string]string{"kube-carry-applied": fixture.ReadFile(t, filepath.Join(k.template, tmplRecords))})
		k.r.ok("resume")
		state, rest, visible := k.classify()
		assert.Equal(t, []string{"_output/v1.0/src/kubernetes/.git/kube-carry-applied.stage", "patches/.v1.0.export/"}, visible)
		assert.Equal(t, "before", state, "vs before: %s", killDiff(rest, k.before))
		// The tree's records do not claim delta, which is in no patch file
		// that landed: apply refuses to drop it.
		out, code := k.r.run("--line", "v1.0", "apply")
		assert.NotEqual(t, 0, code, "apply drops the commit that is in no patch file:\n%s", out)
		assert.Contains(t, out, `"delta" is not in patches/`)
		tr, err := tree.Open(k.r.line("v1.0").TreeDir())
		require.NoError(t, err)
		assert.Equal(t, []string{"upstream v1.0.0", "alpha", "bravo", "charlie", "delta"}, commitsOf(t, tr), "apply keeps the commit that is in no patch file:\n%s", out)
		out, code = k.rerun()
		require.Equal(t, 0, code, out)
		k.isAfter("killed before the journal", "the next export", out)
	})

	t.Run("export killed inside the git status of the tree holding index.lock", func(t *testing.T) {
		k := newKillFixture(t, killCaseNamed(t, "export"))
		k.measure()
		// git status (tree.Dirty) refreshes the index when it can, under
		// index.lock. The logging git kills before the real one runs, so
		// the lock that a kill inside git status leaves is added by hand.
		k.killAtGitCall(func(g *gitCalls) int { return g.find(0, `^status `) })
		leaveGitLock(t, k.r.line("v1.0").TreeDir(), "index.lock")
		k.r.ok("resume")
		state, rest, visible := k.classify()
		assert.Equal(t, "before", state, "vs before: %s", killDiff(rest, k.before))
		// export stages the line's folder and the tree's records before it
		// runs git on the tree; the next export removes them and the lock.
		assert.Equal(t, []string{"_output/v1.0/src/kubernetes/.git/index.lock", "_output/v1.0/src/kubernetes/.git/kube-carry-applied.stage", "patches/.v1.0.export/"}, visible)
		out, code := k.rerun()
		require.Equal(t, 0, code, out)
		k.isAfter("killed inside git status", "the next export", out)
	})

	t.Run("txn.WriteFile killed between its temporary file and the rename", func(t *testing.T) {
		for _, tc := range []struct {
			name, temp string
			// stage leaves what the command staged before that write.
			stage func(k *killFixture)
		}{
			{name: "pin of an existing line", temp: "patches/v1.0/.UPSTREAM" + killTempSuffix},
			{
				// export's txn.Commit writes its journal: the line's folder
				// and the tree's records are staged.
				name: "export", temp: "patches/..v1.0.journal" + killTempSuffix,
				stage: func(k *killFixture) {
					killCopyDir(k.t, k.r.path("patches/v1.0"), k.r.path("patches/.v1.0.export"))
					records := filepath.Join(k.r.line("v1.0").TreeDir(), ".git", "kube-carry-applied")
					fixture.WriteFiles(k.t, filepath.Dir(records), map[string]string{"kube-carry-applied.stage": fixture.ReadFile(k.t, records)})
				},
			},
			{
				// Finish drafts CHANGELOG.md (at the repository's root)
				// after exporting the session's tree into the staged
				// line folder: killed at its last format-patch, the
				// session is done and patches/.v1.0.stage is there.
				name: "bump-continue", temp: "..CHANGELOG.md.stage" + killTempSuffix,
				stage: func(k *killFixture) {
					k.killAtGitCall(func(g *gitCalls) int { return g.last(`^format-patch `) })
					require.DirExists(k.t, k.r.path("patches/.v1.0.stage"))
				},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				k := newKillFixture(t, killCaseNamed(t, tc.name))
				k.measure()
				k.restore()
				if tc.stage != nil {
					tc.stage(k)
				}
				fixture.WriteFiles(t, k.r.root, map[string]string{tc.temp: "{\"Moves\": [{\"Ne"})
				k.r.ok("resume")
				assert.NoFileExists(t, k.r.path(tc.temp), "carry resume removes the temporary file of a killed write")
				state, rest, visible := k.classify()
				assert.Equal(t, "before", state, "vs before: %s", killDiff(rest, k.before))
				t.Logf("left after carry resume: %v", visible)
				out, code := k.rerun()
				require.Equal(t, 0, code, out)
				k.isAfter(tc.temp+" left", "the next run", out)
			})
		}
	})

	t.Run("bump-continue killed between a git am and the session save", func(t *testing.T) {
		for _, recorded := range []bool{false, true} {
			name := "before the tree records the commit"
			if recorded {
				name = "after the tree records the commit"
			}
			t.Run(name, func(t *testing.T) {
				k := newKillFixture(t, killCaseNamed(t, "bump-continue"))
				k.measure()
				// The call after the am of bravo.patch is Session.replay's
				// rev-parse HEAD, before Record and save.
				k.killAtGitCall(func(g *gitCalls) int { return g.find(0, `^am .*/bravo\.patch$`) + 1 })
				if recorded {
					// Record appends to the session tree's records; no git
					// runs before the save, so the record is added by hand.
					session := k.r.path("_output/v1.0/rebase/kubernetes")
					head, err := tree.Git{Dir: session}.Line("rev-parse", "HEAD")
					require.NoError(t, err)
					sum := sha256.Sum256([]byte(k.r.read("patches/v1.0/bravo.patch")))
					f, err := os.OpenFile(filepath.Join(session, ".git", "kube-carry-applied"), os.O_APPEND|os.O_WRONLY, 0o644)
					require.NoError(t, err)
					_, err = fmt.Fprintf(f, "%s bravo.patch %s\n", head, hex.EncodeToString(sum[:]))
					require.NoError(t, err)
					require.NoError(t, f.Close())
				}
				state, rest, _ := k.classify()
				require.Equal(t, "before", state, "vs before: %s", killDiff(rest, k.before))
				out, code := k.rerun()
				require.Equal(t, 0, code, out)
				assert.Contains(t, out, "bravo.patch was being replayed when the bump was interrupted; replaying it again")
				assert.NotContains(t, out, "bravo.patch: upstream")
				k.isAfter("killed after the am of bravo.patch", "bump-continue", out)
			})
		}
	})

	t.Run("bump-continue killed inside a git am", func(t *testing.T) {
		for _, lock := range killGitLocks {
			t.Run(killLockName(lock), func(t *testing.T) {
				k := newKillFixture(t, killCaseNamed(t, "bump-continue"))
				k.measure()
				k.restore()
				session := k.r.path("_output/v1.0/rebase/kubernetes")
				killHook(t, session)
				killed, out, _, _ := k.exec(0, nil)
				require.True(t, killed, out)
				leaveGitLock(t, session, lock)
				k.r.ok("resume")
				state, rest, _ := k.classify()
				require.Equal(t, "before", state, "vs before: %s", killDiff(rest, k.before))
				out, code := k.rerun()
				if assert.Equal(t, 0, code, "the next bump-continue:\n%s", out) {
					k.isAfter("killed inside the am of bravo.patch", "bump-continue", out)
				}
			})
		}
	})

	t.Run("killed in Finish after staging then -abort", func(t *testing.T) {
		for _, name := range []string{"bump", "port"} {
			t.Run(name, func(t *testing.T) {
				k := newKillFixture(t, killCaseNamed(t, name))
				k.measure()
				// Finish's export of the session tree: the first
				// format-patch after the last git am of the replay.
				k.killAtGitCall(func(g *gitCalls) int { return g.find(g.last(`^am `), `^format-patch `) })
				state, rest, visible := k.classify()
				require.Equal(t, "before", state, "vs before: %s", killDiff(rest, k.before))
				target := k.c.lines[len(k.c.lines)-1]
				assert.Equal(t, []string{"patches/." + target + ".stage/"}, visible)
				aout := k.r.ok(k.c.abort...)
				k.isBefore("killed in Finish", "carry "+strings.Join(k.c.abort, " "), aout)
				out, code := k.rerun()
				require.Equal(t, 0, code, out)
				k.isAfter("killed in Finish, aborted", "the next "+name, out)
			})
		}
	})

	// A killed apply may leave the tree at any point of the series; the
	// next apply must undo it and reach exactly the state after.
	applyWindow := func(t *testing.T, kill func(k *killFixture), where string) {
		k := newKillFixture(t, killCaseNamed(t, "apply"))
		k.measure()
		kill(k)
		k.r.ok("resume")
		state, rest, visible := k.classify()
		assert.Contains(t, []string{"before", "after", "partial"}, state, "vs before: %s\nvs after: %s\nnot a tree midway: %s", killDiff(rest, k.before), killDiff(rest, k.after), k.partial(rest))
		t.Logf("killed %s: %s, `carry removable` %v, leftovers %v", where, state, rest.Trees["v1.0"].Removable, visible)
		out, code := k.rerun()
		if assert.Equal(t, 0, code, "the next apply:\n%s", out) {
			k.isAfter("killed "+where, "the next apply", out)
		}
	}
	t.Run("apply killed between git reset and git am", func(t *testing.T) {
		applyWindow(t, func(k *killFixture) {
			k.killAtGitCall(func(g *gitCalls) int { return g.find(0, `^am `) })
		}, "before the am of bravo.patch")
	})
	t.Run("apply killed inside the git status of its plan holding index.lock", func(t *testing.T) {
		// Before apply writes its marker, Plan's git status (tree.Dirty)
		// refreshes the index under index.lock; the lock is added by hand
		// as in the export window above.
		applyWindow(t, func(k *killFixture) {
			k.killAtGitCall(func(g *gitCalls) int { return g.find(0, `^status `) })
			leaveGitLock(k.t, k.r.line("v1.0").TreeDir(), "index.lock")
		}, "inside Plan's git status, holding index.lock")
	})
	t.Run("apply killed inside a git am", func(t *testing.T) {
		for _, lock := range killGitLocks {
			t.Run(killLockName(lock), func(t *testing.T) {
				applyWindow(t, func(k *killFixture) {
					k.restore()
					dir := k.r.line("v1.0").TreeDir()
					killHook(k.t, dir)
					killed, out, _, _ := k.exec(0, nil)
					require.True(k.t, killed, out)
					leaveGitLock(k.t, dir, lock)
				}, "inside the am of bravo.patch, "+killLockName(lock))
			})
		}
	})

	t.Run("fetch killed between staging and mv", func(t *testing.T) {
		k := newKillFixture(t, killCaseNamed(t, "fetch"))
		k.measure()
		// carry init-tree's git init: the assembled tree is in the
		// staging folder.
		k.killAtGitCall(func(g *gitCalls) int { return g.find(0, `^init `) })
		state, rest, _ := k.classify()
		require.Equal(t, "before", state, "vs before: %s", killDiff(rest, k.before))
		assert.Equal(t, []string{"_output/v1.1/src/.kubernetes.fetch/"}, k.outputLeftovers())
		out, code := k.rerun()
		require.Equal(t, 0, code, out)
		k.isAfter("killed before carry init-tree", "the next fetch", out)
		assert.Empty(t, k.outputLeftovers(), "the next fetch removes the killed fetch's staging folder")
		assert.NoDirExists(t, k.r.path("_output/v1.1/src/.kubernetes.fetch"))
	})
}

// TestFailedCommandsSayWhatTheyLeft: a command that fails (rather than
// dies) leaves the repository as it was, staging aside, and says how to go
// on.
func TestFailedCommandsSayWhatTheyLeft(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes the failure in a repository with line v1.0 (tree
		// fetched, series exported) and line v1.1 (no tree).
		setup func(t *testing.T, r *repo, tr *tree.Tree)
		args  []string
		want  []string
	}{
		{
			name:  "export with uncommitted changes",
			setup: func(t *testing.T, r *repo, tr *tree.Tree) { untrackedEdit(t, tr.Dir) },
			args:  []string{"--line", "v1.0", "export"},
			want:  []string{"the patched tree has uncommitted changes; commit them first (export writes commits only)", "?? wip.txt"},
		},
		{
			name:  "apply with uncommitted changes",
			setup: func(t *testing.T, r *repo, tr *tree.Tree) { untrackedEdit(t, tr.Dir) },
			args:  []string{"--line", "v1.0", "apply"},
			want:  []string{"the patched tree has uncommitted changes; commit them and run `make export`, or discard them (nothing was changed)"},
		},
		{
			name: "bump with an unexported commit",
			setup: func(t *testing.T, r *repo, tr *tree.Tree) {
				commit(t, tr, fixturePatch{"delta", "c.txt", "line 3\n", "line 3 delta\n"})
			},
			args: []string{"--line", "v1.0", "bump"},
			want: []string{"is in no patch file", "export or discard that work first (make export LINE=v1.0)"},
		},
		{
			name: "port of a patch the source line does not have",
			args: []string{"--line", "v1.1", "port", "-from", "v1.0", "zulu.patch"},
			want: []string{"line v1.0 has no patch zulu.patch in patches/v1.0/series; its patches are:"},
		},
		{
			name: "pin of a release the proxy does not serve",
			args: []string{"pin", "v1.2.0"},
			want: []string{"k8s.io/kubernetes@v1.2.0 is not served by the module proxy"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := fixture.NewProxy(t)
			proxy.Add(killV100)
			proxy.Add(fixture.Release{Version: "v1.0.1", Files: upstreamFiles("NEWS.txt", "v1.0.1\n")})
			proxy.Add(fixture.Release{Version: "v1.1.0", Files: upstreamFiles()})
			r := newRepo(t, proxy, fixture.File)
			tr := r.startV10()
			r.ok("pin", "v1.1.0")
			if tc.setup != nil {
				tc.setup(t, r, tr)
			}
			before, outBefore := r.snapshot(), outputNames(t, r)
			out := r.fail(tc.args...)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			assert.Equal(t, before, r.snapshot(), "nothing changed, nothing staged is left")
			assert.Equal(t, outBefore, outputNames(t, r), "nothing is left in _output")
			t.Logf("carry %s:\n%s", strings.Join(tc.args, " "), out)
		})
	}

	t.Run("bump-continue whose export fails after staging", func(t *testing.T) {
		r, _ := conflictRepo(t)
		before, outBefore := r.snapshot(), outputNames(t, r)
		r.fail("--line", "v1.0", "bump")
		session := r.path("_output/v1.0/rebase/kubernetes")
		resolve(t, session, "a.txt", fixture.Numbered(20, "line 5\n", "line 5 upstream alpha\n"))
		// A second commit with alpha's subject: the export cannot name it.
		st, err := tree.Open(session)
		require.NoError(t, err)
		commit(t, st, fixturePatch{"alpha", "c.txt", "line 1\n", "line 1 again\n"})
		out := r.fail("--line", "v1.0", "bump-continue")
		assert.Contains(t, out, "patch name alpha.patch is already taken by an earlier commit; give the commit a distinct subject")
		assert.Contains(t, out, "the bump's tree and state are kept in _output/v1.0/rebase, and what it staged for line v1.0 in patches/.v1.0.stage (nothing in the line changed): fix the cause and run `make bump-continue LINE=v1.0`, which stages again, or `make bump-abort LINE=v1.0`, which removes both")
		var left, files []string
		for p := range r.snapshot() {
			if _, ok := before[p]; !ok {
				left, files = append(left, killDotComponent(p)), append(files, p)
			}
		}
		left = killUniq(left)
		t.Logf("carry bump-continue:\n%s\nleft: %v", out, left)
		assert.Equal(t, []string{"patches/.v1.0.stage/"}, left, "only the staged folder is left: %v", files)

		r.ok("--line", "v1.0", "bump-abort")
		assert.Equal(t, "the same", killDiff(killState{Files: r.snapshot()}, killState{Files: before}), "bump-abort leaves the repository as before the bump")
		assert.Equal(t, outBefore, outputNames(t, r), "bump-abort leaves _output as before the bump")
	})
}

// outputNames lists _output down to the trees (not into them).
func outputNames(t *testing.T, r *repo) []string {
	t.Helper()
	k := &killFixture{t: t, r: r}
	var out []string
	for p := range k.outputEntries() {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

var killSubreaper sync.Once

// becomeSubreaper makes the test process the reaper of the orphans of a
// killed process group (PR_SET_CHILD_SUBREAPER), so reapGroup can wait
// until every process of the group is gone and no zombie is left behind.
func becomeSubreaper(t *testing.T) {
	killSubreaper.Do(func() {
		const prSetChildSubreaper = 36
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
			t.Logf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
		}
	})
}

// reapGroup waits (up to 10s) until no process of group pgid is left,
// reaping those that became the test process's children.
func reapGroup(pgid int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		members := groupMembers(pgid)
		if len(members) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range members {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
		time.Sleep(time.Millisecond)
	}
}

// groupMembers are the processes of group pgid (from /proc).
func groupMembers(pgid int) []int {
	procs, _ := procfs.AllProcs()
	var out []int
	for _, p := range procs {
		if st, err := p.Stat(); err == nil && st.PGRP == pgid {
			out = append(out, p.PID)
		}
	}
	return out
}
