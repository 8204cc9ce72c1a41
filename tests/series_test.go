package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// TestSeries lints the series, then proves every patch: its Test: lines and
// the upstream suites of the packages it touches pass on the patched tree,
// and every Regression: test fails on the tree without the patch's fix and
// passes with it.
func TestSeries(t *testing.T) {
	l := load(t)
	t.Run("lint", func(t *testing.T) { lint(t, l) })
	if t.Failed() {
		t.Fatal("the series does not lint; no patch is proven on a tree that is not the series")
	}
	for i, p := range l.patches {
		t.Run(patchName(p.File), func(t *testing.T) { provePatch(t, l, i, p) })
	}
}

// lintFiles lints a line's files without its tree: the series and the
// folder agree, every mutant is guarded, every patch's trailers parse.
func lintFiles(t *testing.T, fl line.Line, s *series.Series, patches []*series.Patch) {
	t.Run("series-matches-directory", func(t *testing.T) {
		dropped, err := series.Dropped(fl.DroppedFile())
		if err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(s.Dir, "*.patch"))
		if err != nil {
			t.Fatal(err)
		}
		inSeries := map[string]bool{}
		for _, e := range s.Entries {
			inSeries[e.Name] = true
			if reason, ok := dropped[e.Name]; ok {
				t.Errorf("%s:%d: %s is in the series and listed as dropped in %s (%s)", rel(fl.SeriesFile()), e.Line, e.Name, rel(fl.DroppedFile()), reason)
			}
		}
		for _, f := range files {
			name := filepath.Base(f)
			if !inSeries[name] && dropped[name] == "" {
				t.Errorf("%s is in %s but neither in %s nor listed in %s", name, rel(fl.Dir()), rel(fl.SeriesFile()), rel(fl.DroppedFile()))
			}
		}
	})
	t.Run("mutants-match-guards", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(fl.MutantsDir(), "*.patch"))
		if err != nil {
			t.Fatal(err)
		}
		guarded := map[string]string{}
		for _, p := range patches {
			for _, g := range p.Guards {
				guarded[g.Mutant] = filepath.Base(p.File)
				if _, err := os.Stat(fl.Mutant(g.Mutant)); err != nil {
					t.Errorf("%s:%d: Guards: %s does not exist", p.File, g.Line, g.Mutant)
				}
			}
		}
		for _, f := range files {
			name := filepath.ToSlash(filepath.Join(line.MutantsName, filepath.Base(f)))
			if guarded[name] == "" {
				t.Errorf("mutant %s is killed by no guard: name it in a Guards: trailer of the patch whose test kills it", rel(f))
			}
		}
	})
	for _, p := range patches {
		t.Run("trailers/"+patchName(p.File), func(t *testing.T) {
			// ReadPatch validated the trailers; the lint re-reads the file so
			// the subtest names the patch and shows what it declares.
			got, err := series.ReadPatch(p.File)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: Upstream-Status %s, %d Test, %d Regression", got.Subject, got.Status.Kind, len(got.Tests), len(got.Regressions))
			// A test-only patch shows that its test can fail: a mutant or
			// an earlier fix.
			if err := series.CheckTestOnly(got); err != nil {
				var se *series.Error
				if errors.As(err, &se) {
					se.File = rel(se.File)
				}
				t.Error(err)
			}
		})
	}
}

func lint(t *testing.T, l *loaded) {
	lintFiles(t, ln, l.series, l.patches)
	t.Run("applies-exactly-to-upstream", func(t *testing.T) {
		base, version, err := l.tree.Base()
		if err != nil {
			t.Fatal(err)
		}
		if version != l.pin.Version {
			t.Fatalf("the patched tree is upstream %s but %s pins %s; run `make LINE=%s`", version, rel(ln.PinFile()), l.pin.Version, ln.Name)
		}
		if len(l.commits) != len(l.patches) {
			t.Fatalf("the patched tree has %d commits after upstream, the series %d patches; run `make apply`", len(l.commits), len(l.patches))
		}
		index := filepath.Join(t.TempDir(), "index")
		g := tree.Git{Dir: l.tree.Dir, Env: []string{"GIT_INDEX_FILE=" + index}}
		if _, err := g.Run("read-tree", base); err != nil {
			t.Fatal(err)
		}
		for i, p := range l.patches {
			if err := l.tree.CheckAgainstIndex(index, p.File); err != nil {
				t.Fatalf("%v", err)
			}
			got, err := g.Line("write-tree")
			if err != nil {
				t.Fatal(err)
			}
			want, err := l.tree.Line("rev-parse", l.commits[i]+"^{tree}")
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s: upstream %s plus the series up to this patch is not the patched tree's commit %.12s; run `make apply`", filepath.Base(p.File), version, l.commits[i])
			}
		}
	})
	t.Run("patches-are-the-tree-exported", func(t *testing.T) {
		for i, p := range l.patches {
			want, err := l.tree.FormatPatch(l.commits[i])
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p.File)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s differs from the export of tree commit %.12s (-export +file); edit patches as commits and run `make export`:\n%s", filepath.Base(p.File), l.commits[i], diff)
			}
		}
	})
}

func provePatch(t *testing.T, l *loaded, i int, p *series.Patch) {
	name := patchName(p.File)
	rowFor(name)
	ok := true
	defer func() {
		setRow(name, func(r *row) {
			if ok && !t.Failed() {
				r.Result = "PASS"
			} else {
				r.Result = "FAIL"
			}
		})
	}()

	passed := 0
	t.Run("test", func(t *testing.T) {
		for _, gt := range p.Tests {
			res := runGoTest(t, l.tree.Dir, append([]string{gt.Package}, gt.Flags...)...)
			if res.Outcome != gotest.Passed {
				t.Errorf("Test: %s: %s\n%s", gt, res.Outcome, res.Tail(40))
				continue
			}
			passed++
			t.Logf("Test: %s: %d passed in %s", gt, len(res.Passed), res.Elapsed.Round(1e8))
		}
	})
	setRow(name, func(r *row) { r.Tests = fmt.Sprintf("%d/%d pass", passed, len(p.Tests)) })

	if proof == proofLine {
		// The line proof: Test: lines only. The table says what was left
		// to the full proof (make test LINE=...).
		setRow(name, func(r *row) {
			r.Regression = "not run (line proof)"
			if len(p.Guards) > 0 {
				r.Mutants = "not run (line proof)"
			}
		})
		return
	}

	t.Run("suite", func(t *testing.T) {
		pkgs := p.Packages()
		if len(pkgs) == 0 {
			t.Log("the patch touches no Go package")
			return
		}
		// Every suite runs on the fully patched tree, so a package that
		// several patches touch is tested once and its result shared.
		base, _, err := l.tree.Base()
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			if _, err := l.tree.Run("cat-file", "-e", base+":"+strings.TrimPrefix(pkg, "./")); err != nil {
				// A package the series adds has no upstream suite: its
				// tests are the patch's Test: lines.
				t.Logf("%s is new in the series: no upstream suite", pkg)
				continue
			}
			res := suiteResult(t, l.tree.Dir, pkg)
			if res.Outcome != gotest.Passed && res.Outcome != gotest.NoTests {
				t.Errorf("upstream suite of %s: %s\nfailed: %s\n%s", pkg, res.Outcome, strings.Join(res.Failed, ", "), res.Tail(60))
				continue
			}
			t.Logf("upstream suite of %s: %d tests passed in %s", pkg, len(res.Passed), res.Elapsed.Round(1e8))
		}
	})

	t.Run("regression", func(t *testing.T) {
		if p.RegressionNone != "" {
			setRow(name, func(r *row) { r.Regression = "none (" + p.RegressionNone + ")" })
			t.Skipf("Regression: none (%s)", p.RegressionNone)
		}
		// The tree without the fix: the patch's parent plus its test files
		// or, for `(without <patch>)`, the series before the named patch
		// plus this patch's test files.
		var parentTree *tree.Tree
		proven := 0
		for _, gt := range p.Regressions {
			var wt *tree.Tree
			if gt.Without == "" {
				if parentTree == nil {
					parentTree = worktree(t, l.tree, name+"-regression", l.commits[i]+"^")
					t.Logf("worktree %s: the parent of %.12s", parentTree.Dir, l.commits[i])
					checkoutTestFiles(t, parentTree, l.commits[i], p)
				}
				wt = parentTree
			} else {
				wt = treeWithout(t, l, i, name, gt.Without)
			}
			without := runGoTest(t, wt.Dir, append([]string{gt.Package}, gt.Flags...)...)
			switch without.Outcome {
			case gotest.TestsFailed:
				t.Logf("Regression: %s: FAILS without the fix (%s)", gt, strings.Join(without.Failed, ", "))
			case gotest.BuildFailed:
				t.Errorf("Regression: %s: the tests do not build without the fix, which proves nothing; keep the test files compiling on the parent:\n%s", gt, without.Tail(20))
				continue
			default:
				t.Errorf("Regression: %s: %s without the fix; a regression test must fail without it", gt, without.Outcome)
				continue
			}
			with := runGoTest(t, l.tree.Dir, append([]string{gt.Package}, gt.Flags...)...)
			if with.Outcome != gotest.Passed {
				t.Errorf("Regression: %s: %s with the fix\n%s", gt, with.Outcome, with.Tail(40))
				continue
			}
			t.Logf("Regression: %s: PASSES with the fix", gt)
			proven++
		}
		setRow(name, func(r *row) {
			r.Regression = fmt.Sprintf("%d/%d fail without, pass with", proven, len(p.Regressions))
		})
	})

	if len(p.Guards) > 0 {
		t.Run("mutants", func(t *testing.T) { proveGuards(t, l, name, p) })
	}
}

// proveGuards shows that each guard test passes on the patched tree and
// FAILS on the patched tree plus its mutant (a patch that re-introduces the
// bug the guard is for). A mutant that does not apply, does not build, or
// survives fails the proof.
func proveGuards(t *testing.T, l *loaded, name string, p *series.Patch) {
	head, err := l.tree.Line("rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	wt := worktree(t, l.tree, name+"-mutants", head)
	killed := 0
	for _, g := range p.Guards {
		args := append([]string{g.Test.Package}, g.Test.Flags...)
		with := runGoTest(t, l.tree.Dir, args...)
		if with.Outcome != gotest.Passed {
			t.Errorf("guard %s: %s on the patched tree\n%s", g.Test, with.Outcome, with.Tail(40))
			continue
		}
		mutant := ln.Mutant(g.Mutant)
		if _, err := wt.Run("apply", "--verbose", mutant); err != nil {
			t.Errorf("mutant %s does not apply to the patched tree: %v", g.Mutant, err)
			continue
		}
		res := runGoTest(t, wt.Dir, args...)
		if _, err := wt.Run("reset", "-q", "--hard", head); err != nil {
			t.Fatal(err)
		}
		recordMutant(g.Mutant, g.Test.String(), res.Outcome == gotest.TestsFailed)
		switch res.Outcome {
		case gotest.TestsFailed:
			killed++
			t.Logf("mutant %s: KILLED by %s (%s)", g.Mutant, g.Test, strings.Join(res.Failed, ", "))
		case gotest.BuildFailed:
			t.Errorf("mutant %s: the tree with the mutant does not build, which proves nothing; a mutant must compile:\n%s", g.Mutant, res.Tail(20))
		default:
			t.Errorf("mutant %s SURVIVED %s (%s): the guard does not catch the bug", g.Mutant, g.Test, res.Outcome)
		}
	}
	setRow(name, func(r *row) { r.Mutants = fmt.Sprintf("%d/%d", killed, len(p.Guards)) })
}

var (
	suitesMu sync.Mutex
	suites   = map[string]*gotest.Result{}
)

// suiteResult runs the whole test suite of pkg on the patched tree, once
// per harness run.
func suiteResult(t *testing.T, dir, pkg string) *gotest.Result {
	t.Helper()
	suitesMu.Lock()
	defer suitesMu.Unlock()
	if res, ok := suites[pkg]; ok {
		t.Logf("upstream suite of %s: already run on the patched tree in this run", pkg)
		return res
	}
	res := runGoTest(t, dir, pkg)
	suites[pkg] = res
	return res
}

// runGoTest runs go test in dir with the harness's environment.
func runGoTest(t *testing.T, dir string, args ...string) *gotest.Result {
	t.Helper()
	res, err := gotest.Run(dir, goEnv, args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// worktree checks out commit of the patched tree into _output/<line>/work/<name>,
// removed when the test ends.
func worktree(t *testing.T, tr *tree.Tree, name, commit string) *tree.Tree {
	t.Helper()
	dir := filepath.Join(ln.WorkDir(), name)
	_, _ = tr.Run("worktree", "remove", "--force", dir)
	_ = os.RemoveAll(dir)
	_, _ = tr.Run("worktree", "prune")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run("worktree", "add", "--detach", "--force", dir, commit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = tr.Run("worktree", "remove", "--force", dir)
		_ = os.RemoveAll(dir)
		_, _ = tr.Run("worktree", "prune")
	})
	return &tree.Tree{Git: tree.Git{Dir: dir}}
}

// treeWithout is the series just before the earlier patch named fix, plus
// the test files of series entry i: the scenario of a test-only patch run
// on the tree that lacks the fix it proves. (Reverting the fix on top of
// later patches that build on it would not apply.)
func treeWithout(t *testing.T, l *loaded, i int, name, fix string) *tree.Tree {
	t.Helper()
	j := -1
	for k, e := range l.series.Entries {
		if e.Name == fix {
			j = k
		}
	}
	if j < 0 || j >= i {
		t.Fatalf("Regression: (without %s): no such patch before %s in the series", fix, name)
	}
	wt := worktree(t, l.tree, name+"-without-"+patchName(fix), l.commits[j]+"^")
	checkoutTestFiles(t, wt, l.commits[i], l.patches[i])
	t.Logf("worktree %s: the series before %s plus the test files of %s", wt.Dir, fix, name)
	return wt
}

// checkoutTestFiles brings only the patch's test files from commit into the
// worktree: the tests of the patch on the code without its fix.
func checkoutTestFiles(t *testing.T, wt *tree.Tree, commit string, p *series.Patch) {
	t.Helper()
	files := p.TestFiles()
	if len(files) == 0 {
		t.Fatalf("the patch declares Regression: tests but changes no test file")
	}
	sort.Strings(files)
	for _, f := range files {
		if _, err := wt.Run("cat-file", "-e", commit+":"+f); err != nil {
			// The patch deletes this test file.
			_ = os.Remove(filepath.Join(wt.Dir, f))
			continue
		}
		if _, err := wt.Run("checkout", commit, "--", f); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("worktree %s: checked out the %d test files of %.12s", wt.Dir, len(files), commit)
}
