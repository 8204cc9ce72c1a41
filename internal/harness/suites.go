package harness

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kube-carry/kube-carry/internal/gotest"
)

// Commit is one commit of the patched tree.
type Commit struct {
	Hash string
	// Patch is the name of the patch the commit applies; empty for the
	// upstream commit.
	Patch string
}

// Probe is a suite's run at one commit.
type Probe struct {
	Verdict Verdict
	// Result is the go test run; nil for NoPackage.
	Result *gotest.Result
	// Log is the path of the run's full log; empty for NoPackage.
	Log string
}

// VerdictOf is the bisect verdict of a go test run of a suite: a suite that
// passed or ran no test does not fail.
func VerdictOf(res *gotest.Result) Verdict {
	if res.Outcome == gotest.Passed || res.Outcome == gotest.NoTests {
		return Passes
	}
	return Fails
}

// Suites finds, for the upstream suite of each package that the series
// touches, whether it passes on the patched tree and, when it fails, the
// patch from which on it fails. A suite that passes on the patched tree
// costs one run. Results are kept: each suite runs at most once per commit.
type Suites struct {
	// Upstream is the upstream release, for messages.
	Upstream string
	// Commits are the upstream commit, then one commit per patch in series
	// order; the last is the patched tree.
	Commits []Commit
	// Probe runs the suite of pkg at commit c.
	Probe func(c Commit, pkg string) (*Probe, error)

	mu     sync.Mutex
	suites map[string]*Suite
}

// Suite is one package's suite over the series.
type Suite struct {
	Package string
	// Head is its run on the patched tree.
	Head *Probe
	// Culprit is the index in Commits of the first commit from which on
	// the suite fails (0: upstream itself); -1 when it does not fail on the
	// patched tree.
	Culprit int
	// Failing is its run at the culprit commit; nil when Culprit is -1.
	Failing *Probe
	// Before is its run at the commit before the culprit, where it does
	// not fail; nil when Culprit is -1 or 0.
	Before *Probe
	// Runs is the number of commits it ran at (commits without the package
	// not counted).
	Runs int

	upstream string
	commits  []Commit
}

// Of runs pkg's suite on the patched tree and, when it fails there, at the
// commits Bisect picks.
func (s *Suites) Of(pkg string) (*Suite, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if su, ok := s.suites[pkg]; ok {
		return su, nil
	}
	if len(s.Commits) == 0 {
		return nil, errors.New("harness: a series without commits")
	}
	su := &Suite{Package: pkg, Culprit: -1, upstream: s.Upstream, commits: s.Commits}
	probes := map[int]*Probe{}
	culprit, err := Bisect(len(s.Commits), func(i int) (Verdict, error) {
		p, err := s.Probe(s.Commits[i], pkg)
		if err != nil {
			return 0, fmt.Errorf("suite of %s at %s: %w", pkg, su.Name(i), err)
		}
		probes[i] = p
		if p.Verdict != NoPackage {
			su.Runs++
		}
		return p.Verdict, nil
	})
	if err != nil {
		return nil, err
	}
	su.Head = probes[len(s.Commits)-1]
	if culprit >= 0 {
		// The search ran the commit before the culprit too: it moved its
		// lower bound past that commit.
		su.Culprit, su.Failing = culprit, probes[culprit]
		if culprit > 0 {
			su.Before = probes[culprit-1]
		}
	}
	if s.suites == nil {
		s.suites = map[string]*Suite{}
	}
	s.suites[pkg] = su
	return su, nil
}

// Done are the suites run so far, by package.
func (s *Suites) Done() []*Suite {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Suite
	for _, su := range s.suites {
		out = append(out, su)
	}
	slices.SortFunc(out, func(a, b *Suite) int { return strings.Compare(a.Package, b.Package) })
	return out
}

// Name names commit i for messages: its patch, or "upstream vX.Y.Z".
func (su *Suite) Name(i int) string {
	if su.commits[i].Patch == "" {
		return "upstream " + su.upstream
	}
	return su.commits[i].Patch
}

// Standing is how a suite stands for one patch.
type Standing int

const (
	// SuitePasses: it passes on the patched tree and ran tests.
	SuitePasses Standing = iota
	// SuiteRunsNoTests: it runs no test on the patched tree; never a pass.
	SuiteRunsNoTests
	// SuiteAbsent: the patched tree does not have the package.
	SuiteAbsent
	// SuiteBrokenHere: it fails from this patch on; the patch broke it.
	SuiteBrokenHere
	// SuiteBrokenElsewhere: it fails from another patch on; not this
	// patch's failure.
	SuiteBrokenElsewhere
	// SuiteBrokenUpstream: it fails on upstream itself; no patch's failure.
	SuiteBrokenUpstream
)

// For is how the suite stands for the patch of commit i (1 ≤ i <
// len(Commits)), with a note that says why.
func (su *Suite) For(i int) (Standing, string) {
	switch {
	case su.Culprit == i:
		before := "it passes at " + su.Name(i-1)
		if su.Before.Verdict == NoPackage {
			before = su.Name(i-1) + " does not have the package"
		}
		return SuiteBrokenHere, fmt.Sprintf("%s from this patch on; %s", su.Failing.Result.Outcome, before)
	case su.Culprit == 0:
		return SuiteBrokenUpstream, fmt.Sprintf("fails on upstream %s itself", su.upstream)
	case su.Culprit > 0:
		return SuiteBrokenElsewhere, fmt.Sprintf("fails from %s on, not this patch", su.commits[su.Culprit].Patch)
	case su.Head.Verdict == NoPackage:
		return SuiteAbsent, "the patched tree does not have the package"
	case su.Head.Result.Outcome == gotest.NoTests:
		return SuiteRunsNoTests, "no tests"
	default:
		n := len(su.Head.Result.Passed)
		tests := "tests"
		if n == 1 {
			tests = "test"
		}
		return SuitePasses, fmt.Sprintf("%d %s passed in %s", n, tests, su.Head.Result.Elapsed.Round(1e8))
	}
}

// SuiteSummary is a patch's SUITES cell of the report: the suites it broke,
// then how many of its other suites pass, run no test, fail from another
// patch on, fail on upstream itself, or are gone from the patched tree.
type SuiteSummary struct {
	Broke                                      []string
	Pass, NoTests, Elsewhere, Upstream, Absent int
}

// Add counts the suite of pkg as it stands for the patch.
func (s *SuiteSummary) Add(pkg string, st Standing) {
	switch st {
	case SuiteBrokenHere:
		s.Broke = append(s.Broke, pkg)
	case SuitePasses:
		s.Pass++
	case SuiteRunsNoTests:
		s.NoTests++
	case SuiteBrokenElsewhere:
		s.Elsewhere++
	case SuiteBrokenUpstream:
		s.Upstream++
	case SuiteAbsent:
		s.Absent++
	}
}

func (s SuiteSummary) String() string {
	var parts []string
	if len(s.Broke) > 0 {
		parts = append(parts, "BROKE "+strings.Join(s.Broke, " "))
	}
	for _, c := range []struct {
		n    int
		what string
	}{
		{s.Pass, "pass"},
		{s.NoTests, "no tests"},
		{s.Elsewhere, "broken by another patch"},
		{s.Upstream, "broken upstream"},
		{s.Absent, "gone"},
	} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
