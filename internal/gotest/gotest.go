// Package gotest runs `go test -json` and tells a test failure (an assertion)
// from a build failure and from a run that executed no test at all. It keeps
// each test's own output, so that a report can show what the failing tests
// said (FailureOutput) instead of the end of everything go test printed.
package gotest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
)

// Outcome of one `go test` run.
type Outcome int

const (
	// Passed: every test passed and at least one test ran.
	Passed Outcome = iota
	// TestsFailed: the packages built and at least one test failed.
	TestsFailed
	// BuildFailed: a package (or its test files) did not compile.
	BuildFailed
	// NoTests: everything built but no test ran (e.g. -run matched nothing).
	NoTests
	// Errored: go test failed for another reason (panic outside a test,
	// timeout, bad flags).
	Errored
)

func (o Outcome) String() string {
	return [...]string{"passed", "tests failed", "build failed", "no tests ran", "errored"}[o]
}

// Result is the parsed result of a run.
type Result struct {
	Outcome Outcome
	// Passed and Failed list the tests by name (subtests included).
	Passed, Failed []string
	// Output is everything go test printed: the full log of the run.
	Output   string
	Elapsed  time.Duration
	ExitCode int

	// tests holds each test's own output, in the order the tests started.
	tests []*testOutput
	// build is what the go command printed about building the packages
	// (build-output events, and plain-text lines before Go 1.24).
	build []string
	// pkg is the output of the test binaries outside any test.
	pkg []string
}

// testOutput is one test's own output events, joined.
type testOutput struct {
	pkg, name string
	out       strings.Builder
	// status is "pass", "fail", "skip" or "" for a test that did not end
	// (the binary timed out or crashed while it ran).
	status string
}

type event struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Output      string
	FailedBuild string
}

// Parse reads a `go test -json` stream. exitErr is the error of the go
// command (nil when it exited 0).
func Parse(r io.Reader, exitErr error) (*Result, error) {
	res := &Result{}
	var out strings.Builder
	buildFailed, pkgFailed := false, false
	passed, failed := map[string]bool{}, map[string]bool{}
	tests := map[[2]string]*testOutput{}
	testFor := func(e *event) *testOutput {
		k := [2]string{e.Package, e.Test}
		to, ok := tests[k]
		if !ok {
			to = &testOutput{pkg: e.Package, name: e.Test}
			tests[k] = to
			res.tests = append(res.tests, to)
		}
		return to
	}
	var pkgOut, buildOut strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: go itself printed it (e.g. a build error
			// before Go 1.24's build events).
			out.Write(line)
			out.WriteByte('\n')
			buildOut.Write(line)
			buildOut.WriteByte('\n')
			if bytes.Contains(line, []byte("[build failed]")) || bytes.Contains(line, []byte("[setup failed]")) {
				buildFailed = true
			}
			continue
		}
		out.WriteString(e.Output)
		switch e.Action {
		case "run":
			testFor(&e)
		case "build-output":
			buildOut.WriteString(e.Output)
		case "build-fail":
			buildFailed = true
		case "pass", "skip":
			if e.Test != "" {
				testFor(&e).status = e.Action
				if e.Action == "pass" {
					passed[e.Test] = true
				}
			}
		case "fail":
			if e.Test != "" {
				testFor(&e).status = e.Action
				failed[e.Test] = true
			} else {
				pkgFailed = true
				if e.FailedBuild != "" {
					buildFailed = true
				}
			}
		case "output":
			if e.Test != "" {
				testFor(&e).out.WriteString(e.Output)
			} else {
				pkgOut.WriteString(e.Output)
			}
			if strings.Contains(e.Output, "[build failed]") || strings.Contains(e.Output, "[setup failed]") {
				buildFailed = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	res.Output = out.String()
	res.build, res.pkg = splitLines(buildOut.String()), splitLines(pkgOut.String())
	res.Passed, res.Failed = keys(passed), keys(failed)
	if exitErr != nil {
		if ee, ok := exitErr.(*exec.ExitError); ok {
			res.ExitCode = ee.ExitCode()
		} else {
			res.ExitCode = -1
		}
	}
	switch {
	case buildFailed:
		res.Outcome = BuildFailed
	case len(failed) > 0:
		res.Outcome = TestsFailed
	case pkgFailed || exitErr != nil:
		res.Outcome = Errored
	case len(passed) == 0:
		res.Outcome = NoTests
	default:
		res.Outcome = Passed
	}
	return res, nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Run runs `go test -json -count=1 <args>` in dir with env added to the
// process environment.
//
// Run also sets TEST_SRCDIR and TEST_WORKSPACE (unless env sets them) to a
// temporary directory where the module path of dir's go.mod links to dir.
// Built with -trimpath, as the harness builds everything, a source file's
// path is relative to its module ("k8s.io/kubernetes/cmd/..."), and
// upstream's in-process test servers (kube-apiserver's testing package,
// which scheduler_perf starts) then resolve their fixture directory
// against these two variables, the way they do under bazel.
func Run(dir string, env []string, args ...string) (*Result, error) {
	full := append([]string{"test", "-json", "-count=1"}, args...)
	cmd := exec.Command("go", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	srcEnv, cleanup, err := sourceDirEnv(dir, cmd.Env)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cmd.Env = append(cmd.Env, srcEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		return nil, fmt.Errorf("go %s: %w", strings.Join(full, " "), err)
	}
	res, perr := Parse(io.MultiReader(&stderr, &stdout), err)
	if perr != nil {
		return nil, perr
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// sourceDirEnv returns TEST_SRCDIR and TEST_WORKSPACE for a go test run in
// dir (see Run), and a function that removes the directory they name.
// Nothing when env sets TEST_SRCDIR already or dir has no go.mod.
func sourceDirEnv(dir string, env []string) ([]string, func(), error) {
	nothing := func() {}
	for _, kv := range env {
		if strings.HasPrefix(kv, "TEST_SRCDIR=") {
			return nil, nothing, nil
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if os.IsNotExist(err) {
		return nil, nothing, nil
	}
	if err != nil {
		return nil, nil, err
	}
	modPath := modfile.ModulePath(data)
	if modPath == "" {
		return nil, nil, fmt.Errorf("%s: no module path", filepath.Join(dir, "go.mod"))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	src, err := os.MkdirTemp("", "gotest-srcdir-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(src) }
	link := filepath.Join(src, filepath.FromSlash(modPath))
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := os.Symlink(abs, link); err != nil {
		cleanup()
		return nil, nil, err
	}
	return []string{"TEST_SRCDIR=" + src, "TEST_WORKSPACE=."}, cleanup, nil
}
