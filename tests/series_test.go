package tests

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/harness"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// TestSeries lints the series, then proves every patch: its Test: lines and
// the upstream suites of the packages it touches pass on the patched tree
// (a failing suite is blamed on the patch that broke it), and every
// Regression: test fails on the tree without the patch's fix and passes
// with it.
func TestSeries(t *testing.T) {
	l := load(t)
	t.Run("lint", func(t *testing.T) { lint(t, l) })
	if t.Failed() {
		t.Fatal("the series does not lint; no patch is proven on a tree that is not the series")
	}
	l.suites = newSuites(t, l)
	if proof == proofFull {
		t.Run("suites", func(t *testing.T) { proveSuites(t, l) })
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
	defer func() {
		setRow(name, func(r *row) {
			if !t.Failed() {
				r.Result = "PASS"
			} else {
				r.Result = "FAIL"
			}
		})
	}()

	// Each kind of check (series.Checks) that the patch asks for, in
	// order, with its runner; the line proof runs the LineProof ones and
	// the table says what it left to the full proof (make test LINE=...).
	runners := checkRunners(l, i, p)
	for _, c := range series.Checks {
		if !c.Asks(p) {
			continue
		}
		if proof == proofLine && !c.LineProof {
			setCell(name, c.Name, "not run (line proof)")
			continue
		}
		t.Run(c.Name, runners[c.Name])
	}
}

// checkRunners are the runners of the kinds of check (series.Checks) for
// patch i of the series; TestCheckRunners holds them to the declaration.
func checkRunners(l *loaded, i int, p *series.Patch) map[string]func(t *testing.T) {
	name := patchName(p.File)
	file := rel(p.File)
	return map[string]func(t *testing.T){
		"test":       func(t *testing.T) { proveTests(t, l, name, file, p) },
		"suite":      func(t *testing.T) { proveSuite(t, l, i, name, p) },
		"regression": func(t *testing.T) { proveRegressions(t, l, i, name, file, p) },
		"mutants":    func(t *testing.T) { proveGuards(t, l, name, p) },
		"race":       func(t *testing.T) { proveRaces(t, l, name, file, p) },
	}
}

// proveTests: every Test: command passes on the patched tree.
// The line proof leaves the integration tests (test/integration: etcd and
// an API server, and kube-apiserver's compile) to the line's full proof,
// make test LINE=...; a patch with nothing else to run is skipped, and
// the table says so.
func proveTests(t *testing.T, l *loaded, name, file string, p *series.Patch) {
	passed, left := 0, 0
	defer func() {
		cell := fmt.Sprintf("%d/%d pass", passed, len(p.Tests)-left)
		switch {
		case left == len(p.Tests):
			cell = "not run (line proof: integration)"
		case left > 0:
			cell += fmt.Sprintf(", %d integration not run (line proof)", left)
		}
		setCell(name, "test", cell)
	}()
	for _, gt := range p.Tests {
		at := harness.At(file, "Test", gt)
		if proof == proofLine && gt.Integration() {
			left++
			t.Logf("%s: an integration test, not run in the line proof (make test LINE=%s runs it)", at, ln.Name)
			continue
		}
		res, log, note := onPatchedTree(t, l, name, harness.LogName("test", fmt.Sprintf("L%d", gt.Line)), gt)
		if err := harness.MustPass(res); err != nil {
			t.Errorf("%s: %v%s\n%s", at, err, note, harness.Report(res, log))
			continue
		}
		passed++
		t.Logf("%s: %d passed in %s%s", at, len(res.Passed), res.Elapsed.Round(1e8), note)
	}
	if left == len(p.Tests) {
		t.Skipf("every Test: line is an integration test, left to the full proof (make test LINE=%s)", ln.Name)
	}
}

// proveRaces: every Race: command passes on the patched tree under the
// race detector (go test -race), which fails a test in which it sees a
// data race. -race needs cgo and a C compiler (make's tools step installs
// gcc); without one the command fails and says so.
func proveRaces(t *testing.T, l *loaded, name, file string, p *series.Patch) {
	passed := 0
	defer func() { setCell(name, "race", fmt.Sprintf("%d/%d pass", passed, len(p.Races))) }()
	for _, gt := range p.Races {
		at := harness.At(file, "Race", gt)
		res, log, note := onPatchedTree(t, l, name, harness.LogName("race", fmt.Sprintf("L%d", gt.Line)), raceCommand(gt))
		if err := harness.MustPass(res); err != nil {
			t.Errorf("%s: under the race detector: %v%s\n%s", at, err, note, harness.Report(res, log))
			continue
		}
		passed++
		t.Logf("%s: %d passed under the race detector in %s%s", at, len(res.Passed), res.Elapsed.Round(1e8), note)
	}
}

// raceCommand is the race proof's command for a Race: line: the line's go
// test command with -race, and the test binary in plain -v mode
// (-test.v=true after -args; go test -json still turns its output into
// events). With the -test.v=test2json that go test -json passes,
// testing.(*M).Run sets os.Stderr = os.Stdout, after TestMain may have
// started goroutines that write to os.Stderr: upstream's
// framework.EtcdMain starts the one that logs etcd's output. The race
// detector reports that as a data race outside any test, in neither the
// tests nor the code they prove.
func raceCommand(gt series.GoTest) series.GoTest {
	race := gt
	race.Flags = append([]string{"-race"}, gt.Flags...)
	if !slices.Contains(race.Flags, "-args") && !slices.Contains(race.Flags, "--args") {
		race.Flags = append(race.Flags, "-args")
	}
	race.Flags = append(race.Flags, "-test.v=true")
	return race
}

// proveSuite reports the upstream suites of the packages patch i touches,
// as TestSeries/suites ran and bisected them.
func proveSuite(t *testing.T, l *loaded, i int, name string, p *series.Patch) {
	// Each suite ran once on the patched tree (TestSeries/suites); a
	// failing one was bisected, and only the patch from which on it
	// fails is blamed.
	var sum harness.SuiteSummary
	touched := map[string]bool{}
	for _, pkg := range p.Packages() {
		touched[pkg] = true
		if !upstreamPackage(t, l, pkg) {
			// A package the series adds has no upstream suite: its
			// tests are the patch's Test: lines.
			t.Logf("%s is new in the series: no upstream suite", pkg)
			continue
		}
		su, err := l.suites.Of(pkg)
		if err != nil {
			t.Fatal(err)
		}
		st, note := su.For(i + 1)
		sum.Add(pkg, st)
		if st == harness.SuiteBrokenHere {
			t.Errorf("upstream suite of %s: %s:\n%s", pkg, note, harness.Report(su.Failing.Result, rel(su.Failing.Log)))
			continue
		}
		t.Logf("upstream suite of %s: %s", pkg, note)
	}
	// A patch can break the suite of a package it does not touch.
	for _, su := range l.suites.Done() {
		if su.Culprit == i+1 && !touched[su.Package] {
			_, note := su.For(i + 1)
			sum.Add(su.Package, harness.SuiteBrokenHere)
			t.Errorf("upstream suite of %s, a package this patch does not touch: %s:\n%s", su.Package, note, harness.Report(su.Failing.Result, rel(su.Failing.Log)))
		}
	}
	setCell(name, "suite", sum.String())
}

// proveRegressions: every Regression: test fails without the patch's fix
// and passes with it.
func proveRegressions(t *testing.T, l *loaded, i int, name, file string, p *series.Patch) {
	if p.RegressionNone != "" {
		setCell(name, "regression", "none ("+harness.Cell(p.RegressionNone)+")")
		t.Skipf("Regression: none (%s)", p.RegressionNone)
	}
	// The tree without the fix: the patch's parent plus its test files
	// or, for `(without <patch>)`, the series before the named patch
	// plus this patch's test files.
	var parentTree *tree.Tree
	proven := 0
	for _, gt := range p.Regressions {
		at := harness.At(file, "Regression", gt)
		var wt *tree.Tree
		if gt.Without == "" {
			if parentTree == nil {
				parentTree = worktree(t, l.tree, l.commits[i]+"^")
				t.Logf("worktree %s: the parent of %.12s", parentTree.Dir, l.commits[i])
				checkoutTestFiles(t, parentTree, l.commits[i], p)
			}
			wt = parentTree
		} else {
			wt = treeWithout(t, l, i, name, gt.Without)
		}
		check := harness.LogName("regression", fmt.Sprintf("L%d", gt.Line))
		without, log := runCheck(t, wt.Dir, name, check+"-without-fix", gt)
		if err := harness.MustFail(without); err != nil {
			t.Errorf("%s: %v\n%s", at, err, harness.Report(without, log))
			continue
		}
		t.Logf("%s: FAILS without the fix (%s)", at, strings.Join(without.Failed, ", "))
		with, log, note := onPatchedTree(t, l, name, check+"-with-fix", gt)
		if err := harness.MustPass(with); err != nil {
			t.Errorf("%s: with the fix: %v%s\n%s", at, err, note, harness.Report(with, log))
			continue
		}
		t.Logf("%s: PASSES with the fix%s", at, note)
		proven++
	}
	setCell(name, "regression", fmt.Sprintf("%d/%d fail without, pass with", proven, len(p.Regressions)))
}

// proveGuards shows that each guard test passes on the patched tree and
// FAILS on the patched tree plus its mutant (a patch that re-introduces the
// bug the guard is for). Every mutant gets a row: killed, SURVIVED, does not
// build, does not apply, or not tried when the guard fails on the patched
// tree. All but killed fail the proof.
func proveGuards(t *testing.T, l *loaded, name string, p *series.Patch) {
	head, err := l.tree.Line("rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	// The guards of a package run on the patched tree as one go test
	// (harness.Batches): each guard's part of that run is what its own
	// command would have given.
	guardTests := make([]series.GoTest, len(p.Guards))
	for gi, g := range p.Guards {
		guardTests[gi] = g.Test
	}
	batches := harness.Batches(guardTests)
	results := make([]string, len(p.Guards))
	var tries []int
	for gi, g := range p.Guards {
		at := guardAt(p, g)
		b := batches[gi]
		run, log, note := onPatchedTree(t, l, name, harness.LogName("guards", b.Test.Package)+"-patched-tree", b.Test)
		with := run.Only(b.Match(gi))
		if err := harness.MustPass(with); err != nil {
			results[gi] = "not tried: the guard fails on the patched tree"
			t.Errorf("%s: on the patched tree: %v%s\n%s", at, err, note, harness.Report(with, log))
			continue
		}
		tries = append(tries, gi)
	}
	// The mutants run mutantJobs at a time, each in a worktree of its
	// own at the patched tree: a mutant's go test compiles one package
	// and links a test binary, which leaves a core idle.
	type try struct {
		m   *harness.MutantResult
		log string
	}
	tried := make([]try, len(p.Guards))
	var g errgroup.Group
	g.SetLimit(mutantJobs)
	for _, gi := range tries {
		g.Go(func() error {
			guard := p.Guards[gi]
			dir, release, err := lendWorktree(l.tree, head)
			if err != nil {
				return err
			}
			defer release()
			check := harness.LogName("guard", fmt.Sprintf("L%d", guard.Line))
			m, err := harness.TryMutant(tree.Git{Dir: dir}, head, ln.Mutant(guard.Mutant), func(dir string) (*gotest.Result, error) {
				res, path, err := runLogged(dir, name, check+"-mutant", guard.Test)
				tried[gi].log = path
				return res, err
			})
			if err != nil {
				return fmt.Errorf("%s: %w", guardAt(p, guard), err)
			}
			tried[gi].m = m
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, gi := range tries {
		at, m := guardAt(p, p.Guards[gi]), tried[gi].m
		results[gi] = m.Outcome.String()
		switch m.Outcome {
		case harness.Killed:
			killed++
			t.Logf("%s: mutant KILLED (%s)", at, m.Detail)
		case harness.DoesNotApply:
			t.Errorf("%s: the mutant does not apply to the patched tree:\n%s", at, m.Detail)
		default:
			t.Errorf("%s: mutant %s: %s\n%s", at, m.Outcome, m.Detail, harness.Report(m.Result, tried[gi].log))
		}
	}
	for gi, g := range p.Guards {
		recordMutant(g.Mutant, g.Test.String(), results[gi])
	}
	setCell(name, "mutants", fmt.Sprintf("%d/%d", killed, len(p.Guards)))
}

// mutantJobs is how many mutants run at once: one a core.
var mutantJobs = runtime.GOMAXPROCS(0)

// guardAt names a guard in a check's message: file, line, mutant, test.
func guardAt(p *series.Patch, g series.Guard) string {
	return fmt.Sprintf("%s:%d: Guards: %s %s", rel(p.File), g.Line, g.Mutant, g.Test)
}

// newSuites are the upstream suites of the line's series: run at the
// patched tree's HEAD in the tree, at other commits in one worktree
// (_output/<line>/work/suites) removed when the test ends.
func newSuites(t *testing.T, l *loaded) *harness.Suites {
	t.Helper()
	base, _, err := l.tree.Base()
	if err != nil {
		t.Fatal(err)
	}
	head, err := l.tree.Line("rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	commits := []harness.Commit{{Hash: base}}
	for i, p := range l.patches {
		commits = append(commits, harness.Commit{Hash: l.commits[i], Patch: patchName(p.File)})
	}
	prober := &harness.GitProber{
		Repo:     l.tree.Git,
		Head:     head,
		Worktree: filepath.Join(ln.WorkDir(), "suites"),
		Env:      goEnv,
		Logs:     logs,
	}
	t.Cleanup(func() {
		if err := prober.Close(); err != nil {
			t.Error(err)
		}
	})
	return &harness.Suites{Upstream: l.pin.Version, Commits: commits, Probe: prober.Probe}
}

// proveSuites runs, on the patched tree, the upstream suite of every
// package that a patch of the series touches, and bisects the failing ones
// to the patch from which on they fail; each patch's suite check then
// reports what it broke. A suite that fails on upstream itself fails here:
// no patch broke it, and the table says so in a row of its own.
func proveSuites(t *testing.T, l *loaded) {
	set := map[string]bool{}
	for _, p := range l.patches {
		for _, pkg := range p.Packages() {
			set[pkg] = true
		}
	}
	var upstream []string
	for _, pkg := range slices.Sorted(maps.Keys(set)) {
		if upstreamPackage(t, l, pkg) {
			upstream = append(upstream, pkg)
		}
	}
	var broken harness.SuiteSummary
	for _, pkg := range upstream {
		su, err := l.suites.Of(pkg)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case su.Culprit == 0:
			broken.Add(pkg, harness.SuiteBrokenHere)
			t.Errorf("upstream suite of %s fails on upstream %s itself, before any patch:\n%s", pkg, l.pin.Version, harness.Report(su.Failing.Result, rel(su.Failing.Log)))
		case su.Culprit > 0:
			t.Logf("upstream suite of %s: fails from %s on (%d runs to find it)", pkg, su.Name(su.Culprit), su.Runs)
		default:
			_, note := su.For(len(l.patches))
			t.Logf("upstream suite of %s: %s", pkg, note)
		}
	}
	if len(broken.Broke) > 0 {
		setCell("upstream "+l.pin.Version, "suite", broken.String())
		setRow("upstream "+l.pin.Version, func(r *row) { r.Result = "FAIL" })
	}
}

// upstreamPackage reports whether pkg exists in the upstream commit, so
// that it has an upstream suite.
func upstreamPackage(t *testing.T, l *loaded, pkg string) bool {
	t.Helper()
	base, _, err := l.tree.Base()
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.tree.Run("cat-file", "-e", base+":"+strings.TrimPrefix(pkg, "./"))
	return err == nil
}

// runLogged runs a trailer's test command in dir with the harness's
// environment and writes its full log as check of patch.
func runLogged(dir, patch, check string, gt series.GoTest) (*gotest.Result, string, error) {
	args := goTestArgs(gt)
	env := goEnv
	if slices.Contains(gt.Flags, "-race") {
		// The race detector needs cgo.
		env = append(slices.Clone(goEnv), "CGO_ENABLED=1")
	}
	res, err := gotest.Run(dir, env, args...)
	if err != nil {
		return nil, "", err
	}
	log, err := logs.Write(patch, check, dir, args, res)
	if err != nil {
		return nil, "", err
	}
	return res, rel(log), nil
}

// goTestArgs are the go test arguments of a trailer's test command.
func goTestArgs(gt series.GoTest) []string {
	return append([]string{gt.Package}, gt.Flags...)
}

// patchedRuns are the commands run on the patched tree; see onPatchedTree.
var patchedRuns harness.Once

// onPatchedTree is runCheck on the patched tree, which no check changes
// while the harness runs: a command that a check ran there already is not
// run again, and its result and log are that run's. note says so, for the
// check's log line ("" when the command ran now).
func onPatchedTree(t *testing.T, l *loaded, patch, check string, gt series.GoTest) (res *gotest.Result, log, note string) {
	t.Helper()
	r, again, err := patchedRuns.Do(l.tree.Dir, goTestArgs(gt), patch+" "+check, func() (*gotest.Result, string, error) {
		return runLogged(l.tree.Dir, patch, check, gt)
	})
	if err != nil {
		t.Fatal(err)
	}
	if again {
		note = fmt.Sprintf(" (the run of %s: the same command on the same tree)", r.By)
	}
	return r.Result, r.Log, note
}

// runCheck is runLogged that fails the test on an error.
func runCheck(t *testing.T, dir, patch, check string, gt series.GoTest) (*gotest.Result, string) {
	t.Helper()
	res, log, err := runLogged(dir, patch, check, gt)
	if err != nil {
		t.Fatal(err)
	}
	return res, log
}

// worktrees lends the checks their worktrees of the patched tree, under
// _output/<line>/work/checks, reusing one given back instead of making a
// new one; TestMain removes them.
var (
	worktreesMu sync.Mutex
	worktrees   *harness.Worktrees
)

// worktree is a worktree of the patched tree tr at commit, given back
// when the test ends.
func worktree(t *testing.T, tr *tree.Tree, commit string) *tree.Tree {
	t.Helper()
	dir, release, err := lendWorktree(tr, commit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return &tree.Tree{Git: tree.Git{Dir: dir}}
}

// lendWorktree is a worktree of the patched tree tr at commit and the
// function that gives it back (for a check's own goroutines).
func lendWorktree(tr *tree.Tree, commit string) (string, func(), error) {
	worktreesMu.Lock()
	if worktrees == nil {
		worktrees = &harness.Worktrees{Repo: tr.Git, Dir: filepath.Join(ln.WorkDir(), "checks")}
	}
	w := worktrees
	worktreesMu.Unlock()
	return w.Get(commit)
}

// closeWorktrees removes the checks' worktrees (TestMain, after the tests).
func closeWorktrees() error {
	worktreesMu.Lock()
	defer worktreesMu.Unlock()
	if worktrees == nil {
		return nil
	}
	err := worktrees.Close()
	worktrees = nil
	return err
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
	wt := worktree(t, l.tree, l.commits[j]+"^")
	checkoutTestFiles(t, wt, l.commits[i], l.patches[i])
	// The patch's tests need the rest of their packages' test files (the
	// helpers a later test-only patch builds on), as they are at its commit.
	checkoutPackageTestFiles(t, wt, l.commits[i], l.patches[i])
	t.Logf("worktree %s: the series before %s plus the test files of %s and of its test packages", wt.Dir, fix, name)
	return wt
}

// checkoutPackageTestFiles brings the other _test.go files of the
// directories of the patch's test files, as they are at commit, into the
// worktree (checkoutTestFiles brings the patch's own).
func checkoutPackageTestFiles(t *testing.T, wt *tree.Tree, commit string, p *series.Patch) {
	t.Helper()
	own := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range p.TestFiles() {
		own[f] = true
		dirs[filepath.Dir(f)+"/"] = true
	}
	args := []string{"ls-tree", "--name-only", commit, "--"}
	for dir := range dirs {
		args = append(args, dir)
	}
	out, err := wt.Line(args...)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range strings.Fields(out) {
		if strings.HasSuffix(f, "_test.go") && !own[f] {
			files = append(files, f)
		}
	}
	if len(files) > 0 {
		if _, err := wt.Run(append([]string{"checkout", commit, "--"}, files...)...); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("worktree %s: checked out the %d other test files of the patch's test packages at %.12s", wt.Dir, len(files), commit)
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
