package harness_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/harness"
)

// fakeSeries is upstream and four patches.
var fakeSeries = []harness.Commit{
	{Hash: "c0"},
	{Hash: "c1", Patch: "capacity-oversell"},
	{Hash: "c2", Patch: "pools-package"},
	{Hash: "c3", Patch: "units-round-down"},
	{Hash: "c4", Patch: "capacity-doc"},
}

// fakeSuites are Suites whose probes return verdicts[pkg][commit]; a
// passing suite has one test, a failing one fails TestFree. probed counts
// the probes per package.
func fakeSuites(verdicts map[string][]harness.Verdict, probed map[string]int) *harness.Suites {
	return &harness.Suites{
		Upstream: "v1.0.0",
		Commits:  fakeSeries,
		Probe: func(c harness.Commit, pkg string) (*harness.Probe, error) {
			probed[pkg]++
			i := strings.TrimPrefix(c.Hash, "c")
			v := verdicts[pkg][i[0]-'0']
			p := &harness.Probe{Verdict: v, Log: "logs/" + c.Patch + "/suite.log"}
			switch v {
			case harness.Passes:
				p.Result = &gotest.Result{Outcome: gotest.Passed, Passed: []string{"TestFree"}}
			case harness.Fails:
				p.Result = &gotest.Result{Outcome: gotest.TestsFailed, Failed: []string{"TestFree"}}
			}
			return p, nil
		},
	}
}

func TestSuiteFor(t *testing.T) {
	probed := map[string]int{}
	s := fakeSuites(map[string][]harness.Verdict{
		"./capacity": {P, P, P, F, F},
		"./units":    {F, F, F, F, F},
		"./pools":    {N, N, P, P, P},
		"./gone":     {P, P, P, P, N},
		"./new":      {N, N, F, F, F},
	}, probed)
	noTests := &harness.Suites{Upstream: "v1.0.0", Commits: fakeSeries, Probe: func(harness.Commit, string) (*harness.Probe, error) {
		return &harness.Probe{Verdict: harness.Passes, Result: &gotest.Result{Outcome: gotest.NoTests}}, nil
	}}
	for _, tc := range []struct {
		name        string
		suites      *harness.Suites
		pkg         string
		patch       int
		want        harness.Standing
		wantNote    string
		wantRuns    int
		wantCulprit int
	}{
		{
			name: "the patch that broke a suite is blamed for it", suites: s, pkg: "./capacity", patch: 3,
			want: harness.SuiteBrokenHere, wantNote: "tests failed from this patch on; it passes at pools-package", wantRuns: 3, wantCulprit: 3,
		},
		{
			name: "an earlier patch that touches the broken suite passes it with a note naming the culprit", suites: s, pkg: "./capacity", patch: 1,
			want: harness.SuiteBrokenElsewhere, wantNote: "fails from units-round-down on, not this patch", wantRuns: 3, wantCulprit: 3,
		},
		{
			name: "a later patch that touches the broken suite passes it with a note naming the culprit", suites: s, pkg: "./capacity", patch: 4,
			want: harness.SuiteBrokenElsewhere, wantNote: "fails from units-round-down on, not this patch", wantRuns: 3, wantCulprit: 3,
		},
		{
			name: "a suite that fails on upstream itself blames no patch", suites: s, pkg: "./units", patch: 3,
			want: harness.SuiteBrokenUpstream, wantNote: "fails on upstream v1.0.0 itself", wantRuns: 4, wantCulprit: 0,
		},
		{
			name: "a suite that passes on the patched tree passes for every patch after one run", suites: s, pkg: "./pools", patch: 2,
			want: harness.SuitePasses, wantNote: "1 test passed in 0s", wantRuns: 1, wantCulprit: -1,
		},
		{
			name: "a patch that adds a failing package is blamed for it, and the note says the commit before has no such package", suites: s, pkg: "./new", patch: 2,
			want: harness.SuiteBrokenHere, wantNote: "tests failed from this patch on; capacity-oversell does not have the package", wantRuns: 2, wantCulprit: 2,
		},
		{
			name: "a package the patched tree no longer has is absent, not failed", suites: s, pkg: "./gone", patch: 1,
			want: harness.SuiteAbsent, wantNote: "the patched tree does not have the package", wantRuns: 0, wantCulprit: -1,
		},
		{
			name: "a suite that runs no test shows no tests, never a pass", suites: noTests, pkg: "./capacity", patch: 1,
			want: harness.SuiteRunsNoTests, wantNote: "no tests", wantRuns: 1, wantCulprit: -1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			su, err := tc.suites.Of(tc.pkg)
			require.NoError(t, err)
			got, note := su.For(tc.patch)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantNote, note)
			assert.Equal(t, tc.wantRuns, su.Runs)
			assert.Equal(t, tc.wantCulprit, su.Culprit)
		})
	}
	t.Run("each suite is probed only by its first Of, and Done lists them by package", func(t *testing.T) {
		assert.Equal(t, map[string]int{"./capacity": 3, "./units": 4, "./pools": 1, "./gone": 1, "./new": 3}, probed)
		var done []string
		for _, su := range s.Done() {
			done = append(done, su.Package)
		}
		assert.Equal(t, []string{"./capacity", "./gone", "./new", "./pools", "./units"}, done)
	})
}

func TestSuitesOfFailingProbeIsAnErrorNamingThePackageAndCommit(t *testing.T) {
	s := &harness.Suites{Upstream: "v1.0.0", Commits: fakeSeries, Probe: func(c harness.Commit, pkg string) (*harness.Probe, error) {
		return nil, errors.New("worktree: no space left on device")
	}}
	_, err := s.Of("./capacity")
	require.EqualError(t, err, "suite of ./capacity at capacity-doc: worktree: no space left on device")
}

// TestSuitesBlameOnlyThePatchThatBrokeTheSuite runs the real bisect with
// real go test on a fixture series of four patches. Patch 1 adds a test to
// capacity; patch 3 changes units, which capacity uses, so that patch 1's
// test fails; patches 2 and 4 are harmless. Only patch 3 is blamed for the
// capacity suite, which patches 1 and 4 touch.
func TestSuitesBlameOnlyThePatchThatBrokeTheSuite(t *testing.T) {
	requireGo(t)
	repo := newRepo(t, upstreamFork)
	base, err := repo.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	commits := []harness.Commit{{Hash: base}}
	for _, p := range []struct {
		name  string
		files map[string]string
	}{
		{"capacity-rounds-claims-up", map[string]string{"capacity/round_test.go": `package capacity

import "testing"

func TestFreeRoundsClaimsUp(t *testing.T) {
	if got := Free(9, 3<<29); got != 7 {
		t.Errorf("Free(9, 1.5 GiB) = %d, want 7: a claim takes whole GiB", got)
	}
}
`}},
		{"pools-package", map[string]string{"pools/pools.go": "// Package pools names storage pools.\npackage pools\n\n// Default is the pool of a class that names none.\nconst Default = \"default\"\n",
			"pools/pools_test.go": "package pools\n\nimport \"testing\"\n\nfunc TestDefault(t *testing.T) {\n\tif Default == \"\" {\n\t\tt.Error(\"no default pool\")\n\t}\n}\n"}},
		{"units-round-down", map[string]string{"units/units.go": `// Package units converts sizes.
package units

// GiB is a size in bytes in whole GiB.
func GiB(bytes int64) int64 { return bytes >> 30 }
`}},
		{"capacity-doc", map[string]string{"capacity/doc.go": "// Capacity is counted in GiB.\npackage capacity\n"}},
	} {
		commits = append(commits, harness.Commit{Hash: commit(t, repo, p.name, p.files), Patch: p.name})
	}
	logs := filepath.Join(t.TempDir(), "logs")
	prober := &harness.GitProber{
		Repo:     repo,
		Head:     commits[len(commits)-1].Hash,
		Worktree: filepath.Join(t.TempDir(), "bisect"),
		Env:      goEnv,
		Logs:     harness.Logs{Dir: logs},
	}
	t.Cleanup(func() { assert.NoError(t, prober.Close()) })
	suites := &harness.Suites{Upstream: "v1.0.0", Commits: commits, Probe: prober.Probe}

	capacity, err := suites.Of("./capacity")
	require.NoError(t, err)
	assert.Equal(t, 3, capacity.Culprit, "units-round-down broke the capacity suite")
	assert.Equal(t, 3, capacity.Runs, "the patched tree, then patches 2 and 3")
	for i, want := range map[int]string{
		1: "fails from units-round-down on, not this patch",
		3: "tests failed from this patch on; it passes at pools-package",
		4: "fails from units-round-down on, not this patch",
	} {
		_, note := capacity.For(i)
		assert.Equal(t, want, note, "patch %d", i)
	}
	standing, _ := capacity.For(3)
	assert.Equal(t, harness.SuiteBrokenHere, standing)
	assert.Equal(t, []string{"TestFreeRoundsClaimsUp"}, capacity.Failing.Result.Failed)
	// The test's duration is whatever the machine took.
	report := regexp.MustCompile(`\([0-9]+\.[0-9]+s\)`).ReplaceAllString(harness.Report(capacity.Failing.Result, capacity.Failing.Log), "(0.00s)")
	assert.Contains(t, report,
		"--- FAIL: TestFreeRoundsClaimsUp (0.00s)\n    round_test.go:7: Free(9, 1.5 GiB) = 8, want 7: a claim takes whole GiB\nfull log: "+filepath.Join(logs, "units-round-down", "suite-capacity.log"))
	log, err := os.ReadFile(capacity.Failing.Log)
	require.NoError(t, err)
	assert.Contains(t, string(log), "# go test -json -count=1 ./capacity\n")
	assert.Contains(t, string(log), "--- FAIL: TestFreeRoundsClaimsUp")

	for _, tc := range []struct {
		pkg   string
		patch int
	}{{"./units", 3}, {"./pools", 2}} {
		su, err := suites.Of(tc.pkg)
		require.NoError(t, err)
		standing, note := su.For(tc.patch)
		assert.Equal(t, harness.SuitePasses, standing, "%s: %s", tc.pkg, note)
		assert.Equal(t, 1, su.Runs, "%s passes on the patched tree: one run", tc.pkg)
	}

	t.Run("a commit before the patch that adds a package does not have it", func(t *testing.T) {
		p, err := prober.Probe(commits[1], "./pools")
		require.NoError(t, err)
		assert.Equal(t, harness.NoPackage, p.Verdict)
		assert.Nil(t, p.Result)
	})
	t.Run("the upstream commit's runs are logged under upstream", func(t *testing.T) {
		p, err := prober.Probe(commits[0], "./capacity")
		require.NoError(t, err)
		assert.Equal(t, harness.Passes, p.Verdict)
		assert.Equal(t, filepath.Join(logs, harness.UpstreamLog, "suite-capacity.log"), p.Log)
		assert.FileExists(t, p.Log)
	})
	t.Run("the patched tree's runs are in the repository itself, the others in the worktree", func(t *testing.T) {
		head, err := os.ReadFile(capacity.Head.Log)
		require.NoError(t, err)
		assert.Contains(t, string(head), fmt.Sprintf("# in %s\n", repo.Dir))
		culprit, err := os.ReadFile(capacity.Failing.Log)
		require.NoError(t, err)
		assert.Contains(t, string(culprit), fmt.Sprintf("# in %s\n", prober.Worktree))
	})
}

func TestSuiteSummary(t *testing.T) {
	for _, tc := range []struct {
		name   string
		suites map[string]harness.Standing
		want   string
	}{
		{"a patch without upstream suites has none", nil, "-"},
		{"suites that pass are counted", map[string]harness.Standing{"./a": harness.SuitePasses, "./b": harness.SuitePasses}, "2 pass"},
		{
			name: "a suite the patch broke comes first and is named, the others are counted by how they stand",
			suites: map[string]harness.Standing{
				"./a": harness.SuiteBrokenHere, "./b": harness.SuitePasses, "./c": harness.SuiteRunsNoTests,
				"./d": harness.SuiteBrokenElsewhere, "./e": harness.SuiteBrokenUpstream, "./f": harness.SuiteAbsent,
			},
			want: "BROKE ./a, 1 pass, 1 no tests, 1 broken by another patch, 1 broken upstream, 1 gone",
		},
		{"a suite that runs no test is never counted as passing", map[string]harness.Standing{"./a": harness.SuiteRunsNoTests}, "1 no tests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s harness.SuiteSummary
			for _, pkg := range slices.Sorted(maps.Keys(tc.suites)) {
				s.Add(pkg, tc.suites[pkg])
			}
			assert.Equal(t, tc.want, s.String())
		})
	}
}
