package tests

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/harness"
	"github.com/kube-carry/kube-carry/internal/series"
)

// TestCheckKinds holds everything that names the kinds of check and the
// proofs' tests to their one declaration (series.Checks,
// harness.LineProofTests, harness.PerLineOnlyTests): every check has a
// runner in the harness and every runner a check; docs/design.md's table
// of the kinds is the declaration; the proofs' lists name tests that
// exist. It needs no tree: make lint runs it.
func TestCheckKinds(t *testing.T) {
	t.Run("runners", func(t *testing.T) {
		var declared []string
		for _, c := range series.Checks {
			declared = append(declared, c.Name)
		}
		runners := checkRunners(nil, 0, &series.Patch{File: "x.patch"})
		var have []string
		for name := range runners {
			have = append(have, name)
		}
		slices.Sort(declared)
		slices.Sort(have)
		if diff := cmp.Diff(declared, have); diff != "" {
			t.Errorf("series.Checks and the harness's runners (checkRunners) differ (-declared +runners):\n%s", diff)
		}
	})
	t.Run("docs/design.md", func(t *testing.T) {
		const heading = "### Kinds of check"
		data, err := os.ReadFile(rootPath("docs/design.md"))
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(string(data), "\n"+heading+"\n")
		if !ok {
			t.Fatalf("docs/design.md has no section %q", heading)
		}
		var got []string
		for _, l := range strings.Split(after, "\n") {
			if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "### ") {
				break
			}
			if strings.HasPrefix(l, "| `") {
				got = append(got, l)
			}
		}
		var want []string
		for _, c := range series.Checks {
			trailer := "(every patch)"
			if c.Trailer != "" {
				trailer = "`" + c.Trailer + ":`"
			}
			want = append(want, fmt.Sprintf("| `%s` | %s | %s | `%s` | %s | %s |", c.Name, trailer, yesDash(c.Required), c.Column, yesDash(c.LineProof), c.Proves))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("docs/design.md, %q, is not series.Checks (-declared +docs):\n%s", heading, diff)
		}
	})
	t.Run("proofs' tests exist", func(t *testing.T) {
		fset := token.NewFileSet()
		files, err := filepath.Glob(rootPath("tests/*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		exist := map[string]bool{}
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
					exist[fd.Name.Name] = true
				}
			}
		}
		for _, list := range []struct {
			name  string
			tests []string
		}{{"harness.LineProofTests", harness.LineProofTests}, {"harness.PerLineOnlyTests", harness.PerLineOnlyTests}} {
			for _, name := range list.tests {
				if !exist[name] {
					t.Errorf("%s names %s, which is no test of tests/", list.name, name)
				}
			}
		}
		for _, name := range harness.LineProofTests {
			if slices.Contains(harness.PerLineOnlyTests, name) {
				t.Errorf("%s is in the line proof and left to make test LINE= only", name)
			}
		}
	})
}

func yesDash(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}

// TestRaceCheck: the race proof's run (runLogged of raceCommand) fails a
// test with a data race and passes one without: it gets the cgo that -race
// needs (goEnv has CGO_ENABLED=0, with which no -race run passes), and the
// race detector fails the test it sees a race in. A TestMain that starts a
// goroutine writing to os.Stderr before m.Run (as upstream's
// framework.EtcdMain does) passes: the test binary runs in plain -v mode,
// where the testing package does not set os.Stderr under that goroutine.
func TestRaceCheck(t *testing.T) {
	modules := map[string]map[string]string{
		"racecheck": {
			"race_test.go": `package racecheck

import (
	"sync"
	"testing"
)

func count(lock bool) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	n := 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if lock {
				mu.Lock()
				defer mu.Unlock()
			}
			n++
		}()
	}
	wg.Wait()
	return n
}

func TestLocked(t *testing.T) { count(true) }
func TestRacy(t *testing.T)   { count(false) }
`,
		},
		"stderrlog": {
			"main_test.go": `package stderrlog

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	go func() {
		for {
			fmt.Fprintln(os.Stderr, "a server's log line")
			time.Sleep(time.Millisecond)
		}
	}()
	os.Exit(m.Run())
}

func TestServed(t *testing.T) { time.Sleep(100 * time.Millisecond) }
`,
		},
	}
	dirs := map[string]string{}
	for module, files := range modules {
		dir := t.TempDir()
		files["go.mod"] = "module example.com/" + module + "\n\ngo 1.22\n"
		fixture.WriteFiles(t, dir, files)
		dirs[module] = dir
	}
	for _, tc := range []struct {
		module, run string
		wantErr     bool
	}{
		{module: "racecheck", run: "^TestLocked$"},
		{module: "racecheck", run: "^TestRacy$", wantErr: true},
		{module: "stderrlog", run: "^TestServed$"},
	} {
		t.Run(tc.module+"/"+tc.run, func(t *testing.T) {
			res, log, err := runLogged(dirs[tc.module], tc.module, "race", raceCommand(series.GoTest{Package: ".", Flags: []string{"-run", tc.run}}))
			if err != nil {
				t.Fatal(err)
			}
			err = harness.MustPass(res)
			switch {
			case tc.wantErr && err == nil:
				t.Errorf("a test with a data race passed under -race (log %s)", log)
			case tc.wantErr && !strings.Contains(res.FailureOutput(), "race detected during execution of test"):
				t.Errorf("the racy test failed without the race detector's report: %v\n%s", err, res.FailureOutput())
			case !tc.wantErr && err != nil:
				t.Errorf("a test without a data race failed under -race: %v\n%s", err, harness.Report(res, log))
			}
		})
	}
}
