// Package tests is kube-carry's harness: it lints the series and proves
// every patch on the patched tree (README, "The two commands"). `make test` runs it
// after `make`, so the tree and the binaries exist.
package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"

	"github.com/kube-carry/kube-carry/internal/build"
	"github.com/kube-carry/kube-carry/internal/harness"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// root is the repository root: go test runs a package's tests in its
// directory, tests/.
var root = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Dir(wd)
}()

func rootPath(p string) string { return filepath.Join(root, p) }

// rel is p relative to the repository root, for messages.
func rel(p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

// ln is the release line under test: $LINE, or the newest line. Its paths
// (internal/line) are absolute here.
var ln = func() line.Line {
	l, err := line.Get(root, os.Getenv("LINE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return l
}()

// Proof modes ($KUBE_CARRY_PROOF): full (the default) runs every check of
// every patch; line runs, per patch, its Test: lines only (suites,
// regression proofs and mutants are left to the line's full proof, `make
// test LINE=...`), and says so in the table.
const (
	proofFull = "full"
	proofLine = "line"
)

var proof = func() string {
	switch p := os.Getenv("KUBE_CARRY_PROOF"); p {
	case "", proofFull:
		return proofFull
	case proofLine:
		return proofLine
	default:
		fmt.Fprintf(os.Stderr, "KUBE_CARRY_PROOF=%s: want full or line\n", p)
		os.Exit(2)
		return ""
	}
}()

// goEnv is the environment of every go command on the tree and its
// worktrees: the settings of every build (internal/build), so the build
// cache is shared; and the line's bin folder first on PATH, where
// upstream's integration framework finds the etcd that `make` built.
var goEnv = append(build.Env(), "PATH="+ln.BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))

// logs holds the full log of every check of this run, under
// _output/<line>/logs/<patch>/<check>.log; a failed check prints the
// failing tests' own output and the path of its log.
var logs = harness.Logs{Dir: ln.LogDir()}

// report collects one row per patch for the table printed at the end:
// one cell per kind of check (series.Checks), by the check's name.
type row struct {
	Patch  string
	Cells  map[string]string
	Result string
}

var (
	reportMu sync.Mutex
	rows     = map[string]*row{}
	order    []string
)

func rowFor(patch string) *row {
	reportMu.Lock()
	defer reportMu.Unlock()
	r, ok := rows[patch]
	if !ok {
		r = &row{Patch: patch, Cells: map[string]string{}}
		rows[patch] = r
		order = append(order, patch)
	}
	return r
}

func setRow(patch string, f func(r *row)) {
	r := rowFor(patch)
	reportMu.Lock()
	defer reportMu.Unlock()
	f(r)
}

// setCell sets the cell of check (a series.Checks name) in patch's row.
func setCell(patch, check, value string) {
	setRow(patch, func(r *row) { r.Cells[check] = value })
}

type mutantRow struct{ Mutant, Guard, Result string }

var mutantRows []mutantRow

// recordMutant adds a mutant's row: its outcome (harness.MutantOutcome) or
// why it was not tried.
func recordMutant(mutant, guard, result string) {
	reportMu.Lock()
	defer reportMu.Unlock()
	mutantRows = append(mutantRows, mutantRow{Mutant: mutant, Guard: guard, Result: result})
}

func TestMain(m *testing.M) {
	// The logs are those of this run only.
	if err := os.RemoveAll(ln.LogDir()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	if err := closeWorktrees(); err != nil {
		fmt.Fprintln(os.Stderr, "removing the checks' worktrees:", err)
		code = 1
	}
	printReport()
	os.Exit(code)
}

func printReport() {
	reportMu.Lock()
	defer reportMu.Unlock()
	if len(order) == 0 {
		return
	}
	upstream := "?"
	if p, err := ln.Pin(); err == nil {
		upstream = p.Version
	}
	fmt.Println()
	fmt.Printf("kube-carry series report: line %s, upstream %s (%s proof); full logs in %s\n", ln.Name, upstream, proof, rel(ln.LogDir()))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	header := []string{"PATCH"}
	for _, c := range series.Checks {
		header = append(header, c.Column)
	}
	fmt.Fprintln(w, strings.Join(append(header, "RESULT"), "\t"))
	for _, k := range order {
		r := rows[k]
		cells := []string{r.Patch}
		for _, c := range series.Checks {
			v := r.Cells[c.Name]
			if v == "" {
				v = "-"
			}
			cells = append(cells, v)
		}
		result := r.Result
		if result == "" {
			result = "not run"
		}
		fmt.Fprintln(w, strings.Join(append(cells, result), "\t"))
	}
	w.Flush()
	if len(mutantRows) > 0 {
		fmt.Println()
		w = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "MUTANT\tGUARD\tRESULT")
		for _, m := range mutantRows {
			fmt.Fprintf(w, "%s\t%s\t%s\n", m.Mutant, m.Guard, m.Result)
		}
		w.Flush()
	}
}

// loaded is the series, the pin and the patched tree, read once.
type loaded struct {
	pin     *pin.Pin
	series  *series.Series
	patches []*series.Patch
	tree    *tree.Tree
	// commits[i] is the tree commit of series entry i.
	commits []string
	// suites are the upstream suites of the packages the series touches,
	// run (and bisected when they fail) once per harness run.
	suites *harness.Suites
}

func load(t *testing.T) *loaded {
	t.Helper()
	p, err := ln.Pin()
	if err != nil {
		t.Fatalf("%v", err)
	}
	s, err := series.Read(ln.SeriesFile())
	if err != nil {
		t.Fatalf("series: %v", err)
	}
	l := &loaded{pin: p, series: s}
	for _, e := range s.Entries {
		pt, err := series.ReadPatch(s.Path(e))
		if err != nil {
			t.Fatalf("%v", err)
		}
		l.patches = append(l.patches, pt)
	}
	tr, err := tree.Open(ln.TreeDir())
	if err != nil {
		t.Fatalf("%v (run `make LINE=%s` first)", err, ln.Name)
	}
	l.tree = tr
	commits, err := tr.Commits()
	if err != nil {
		t.Fatalf("%v", err)
	}
	l.commits = commits
	return l
}

func patchName(file string) string { return strings.TrimSuffix(filepath.Base(file), ".patch") }
