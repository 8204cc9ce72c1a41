package harness

import (
	"fmt"
	"strings"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// MutantOutcome is what a mutant proved: only Killed proves the guard.
type MutantOutcome int

const (
	// Killed: the guard test fails on the tree with the mutant.
	Killed MutantOutcome = iota
	// Survived: the guard test passes (or runs no test) with the mutant:
	// it does not catch the bug.
	Survived
	// DoesNotBuild: the tree with the mutant does not build, which proves
	// nothing; a mutant must compile.
	DoesNotBuild
	// DoesNotApply: the mutant does not apply to the patched tree.
	DoesNotApply
)

func (o MutantOutcome) String() string {
	switch o {
	case Killed:
		return "killed"
	case Survived:
		return "SURVIVED"
	case DoesNotBuild:
		return "does not build"
	case DoesNotApply:
		return "does not apply"
	}
	return fmt.Sprintf("MutantOutcome(%d)", int(o))
}

// ClassifyMutant is the outcome of a guard test run on the tree with a
// mutant. A test binary that fails outside any test (a panic in TestMain,
// a timeout) caught the bug too.
func ClassifyMutant(res *gotest.Result) MutantOutcome {
	switch res.Outcome {
	case gotest.TestsFailed, gotest.Errored:
		return Killed
	case gotest.BuildFailed:
		return DoesNotBuild
	default:
		return Survived
	}
}

// MutantResult is a guard test's run against one mutant.
type MutantResult struct {
	Outcome MutantOutcome
	// Result is the guard test's run with the mutant; nil when the mutant
	// does not apply.
	Result *gotest.Result
	// Detail says why, in a few words: the tests that failed, or what git
	// apply said.
	Detail string
}

// TryMutant applies the mutant patch file to the worktree wt, which is at
// commit head (the patched tree), runs the guard test there with run, and
// puts the worktree back at head, also when something failed.
func TryMutant(wt tree.Git, head, mutant string, run func(dir string) (*gotest.Result, error)) (res *MutantResult, err error) {
	defer func() {
		if _, rerr := wt.Run("reset", "-q", "--hard", head); rerr != nil && err == nil {
			res, err = nil, rerr
		}
		if _, cerr := wt.Run("clean", "-q", "-f", "-d"); cerr != nil && err == nil {
			res, err = nil, cerr
		}
	}()
	if out, aerr := wt.Combined("apply", mutant); aerr != nil {
		return &MutantResult{Outcome: DoesNotApply, Detail: strings.TrimSpace(out)}, nil
	}
	r, err := run(wt.Dir)
	if err != nil {
		return nil, err
	}
	m := &MutantResult{Outcome: ClassifyMutant(r), Result: r}
	switch m.Outcome {
	case Killed:
		if len(r.Failed) > 0 {
			m.Detail = "failed: " + strings.Join(r.Failed, ", ")
		} else {
			m.Detail = "the test binary failed outside any test"
		}
	case DoesNotBuild:
		m.Detail = "a tree that does not build proves nothing; a mutant must compile"
	case Survived:
		m.Detail = "the guard passes with the mutant: it does not catch the bug"
		if r.Outcome == gotest.NoTests {
			m.Detail = "the guard runs no test with the mutant"
		}
	}
	return m, nil
}
