// Package harness holds the logic of kube-carry's harness (tests/) that
// does not need a Kubernetes tree, so that it is tested on small fixture
// modules: which patch broke a failing upstream suite (Bisect, Suites),
// what a mutant proved (TryMutant), what a trailer's test command must do
// (MustPass, MustFail), where each check's full log goes (Logs), and that
// a command the patched tree already ran is not run again (Once).
package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/series"
)

// UpstreamLog is the folder of Logs for the checks run on the upstream
// commit.
const UpstreamLog = "upstream"

// Logs writes the full log of every check of a harness run to
// Dir/<patch>/<check>.log (Dir is _output/<line>/logs).
type Logs struct {
	Dir string
}

var unsafeRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// LogName is a file name for a check: its parts joined by '-', with
// anything but letters, digits, '.', '_' and '-' replaced by '_'.
// LogName("suite", "./pkg/kubelet") is "suite-pkg_kubelet".
func LogName(parts ...string) string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = strings.Trim(unsafeRE.ReplaceAllString(strings.TrimPrefix(p, "./"), "_"), "_")
	}
	return strings.Join(names, "-")
}

// Write writes a go test run as the log of check of patch and returns the
// log's path. The log starts with the command, where it ran and its
// outcome, then everything go test printed.
func (l Logs) Write(patch, check, dir string, args []string, res *gotest.Result) (string, error) {
	if l.Dir == "" {
		return "", errors.New("harness: no log directory")
	}
	path := filepath.Join(l.Dir, LogName(patch), LogName(check)+".log")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# go test -json -count=1 %s\n", strings.Join(args, " "))
	fmt.Fprintf(&b, "# in %s\n", dir)
	fmt.Fprintf(&b, "# %s in %s", res.Outcome, res.Elapsed.Round(1e8))
	if len(res.Failed) > 0 {
		fmt.Fprintf(&b, "; failed: %s", strings.Join(res.Failed, ", "))
	}
	b.WriteString("\n\n")
	b.WriteString(res.Output)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// Report is what a failed check prints: the failing tests' own output
// (gotest's FailureOutput), then the path of the full log.
func Report(res *gotest.Result, log string) string {
	out := res.FailureOutput()
	if log == "" {
		return out
	}
	if out != "" {
		out += "\n"
	}
	return out + "full log: " + log
}

// At names a trailer's test command for messages: file:line: Key: command.
func At(file, key string, gt series.GoTest) string {
	return fmt.Sprintf("%s:%d: %s: %s", file, gt.Line, key, gt)
}

// MustPass is nil when res passed and ran at least one test: what a Test:
// line, a guard on the patched tree and a regression test with its fix
// must do. A command that runs no test is an error, never a pass.
func MustPass(res *gotest.Result) error {
	switch res.Outcome {
	case gotest.Passed:
		return nil
	case gotest.NoTests:
		return errors.New("runs no test: the package has none or -run matches none")
	case gotest.TestsFailed:
		return fmt.Errorf("tests failed: %s", strings.Join(res.Failed, ", "))
	case gotest.BuildFailed:
		return errors.New("does not build")
	default:
		return errors.New("the test binary failed outside any test (a panic, a timeout or a bad flag)")
	}
}

// MustFail is nil when res failed a test: what a regression test must do
// without its fix. A build failure proves nothing (the test must compile
// without the fix), and a command that runs no test proves nothing either.
func MustFail(res *gotest.Result) error {
	switch res.Outcome {
	case gotest.TestsFailed:
		return nil
	case gotest.NoTests:
		return errors.New("runs no test without the fix: the package has none or -run matches none")
	case gotest.BuildFailed:
		return errors.New("the tests do not build without the fix, which proves nothing; keep the test files compiling on the parent")
	case gotest.Passed:
		return errors.New("passes without the fix; a regression test must fail without it")
	default:
		return errors.New("the test binary failed outside any test without the fix (a panic, a timeout or a bad flag), which is not a failing test")
	}
}

// maxCell is the most characters of free text in a cell of the report.
const maxCell = 48

// Cell shortens free text (a `Regression: none` reason) for a cell of the
// report: up to its first ';' or ',' and at most 48 characters; the patch
// has the rest.
func Cell(text string) string {
	if i := strings.IndexAny(text, ";,"); i >= 0 {
		text = text[:i]
	}
	text = strings.TrimSpace(text)
	if r := []rune(text); len(r) > maxCell {
		text = strings.TrimSpace(string(r[:maxCell-1])) + "…"
	}
	return text
}
