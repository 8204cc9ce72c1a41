package harness_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/harness"
	"github.com/kube-carry/kube-carry/internal/tree"
)

func TestClassifyMutant(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome gotest.Outcome
		want    harness.MutantOutcome
	}{
		{"a guard test that fails with the mutant kills it", gotest.TestsFailed, harness.Killed},
		{"a guard test binary that fails outside any test (a timeout) kills it", gotest.Errored, harness.Killed},
		{"a guard test that passes with the mutant lets it survive", gotest.Passed, harness.Survived},
		{"a guard test that runs no test with the mutant lets it survive", gotest.NoTests, harness.Survived},
		{"a tree with the mutant that does not build proves nothing", gotest.BuildFailed, harness.DoesNotBuild},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, harness.ClassifyMutant(&gotest.Result{Outcome: tc.outcome}))
		})
	}
}

func TestMutantOutcomeString(t *testing.T) {
	for o, want := range map[harness.MutantOutcome]string{
		harness.Killed:           "killed",
		harness.Survived:         "SURVIVED",
		harness.DoesNotBuild:     "does not build",
		harness.DoesNotApply:     "does not apply",
		harness.MutantOutcome(9): "MutantOutcome(9)",
	} {
		assert.Equal(t, want, o.String())
	}
}

// mutantOf writes the diff that edit makes to the repository's tree as a
// mutant patch file, and undoes the edit.
func mutantOf(t *testing.T, repo tree.Git, name string, edit map[string]string) string {
	t.Helper()
	write(t, repo.Dir, edit)
	diff, err := repo.Run("diff")
	require.NoError(t, err)
	require.NotEmpty(t, diff)
	_, err = repo.Run("checkout", "--", ".")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), name+".patch")
	require.NoError(t, os.WriteFile(file, []byte("A mutant: "+name+"\n\n"+diff), 0o644))
	return file
}

// TestTryMutant tries four mutants of the fixture module against the guard
// TestFree with real go test: each gets its own outcome, and the worktree
// is back at the patched tree after each.
func TestTryMutant(t *testing.T) {
	requireGo(t)
	repo := newRepo(t, upstreamFork)
	head, err := repo.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	const capacityGo = "capacity/capacity.go"
	original, err := os.ReadFile(filepath.Join(repo.Dir, capacityGo))
	require.NoError(t, err)
	mutants := map[string]string{
		"killed": mutantOf(t, repo, "free-ignores-claims", map[string]string{capacityGo: `package capacity

// Free forgets the claims: the bug the guard is for.
func Free(capacity int64, claims ...int64) int64 { return capacity }
`}),
		"survived": mutantOf(t, repo, "free-comment", map[string]string{capacityGo: string(original) + "\n// A comment changes nothing.\n"}),
		"does not build": mutantOf(t, repo, "free-undefined", map[string]string{capacityGo: `package capacity

func Free(capacity int64, claims ...int64) int64 { return capacity - used(claims) }
`}),
	}
	stale := filepath.Join(t.TempDir(), "stale.patch")
	require.NoError(t, os.WriteFile(stale, []byte(`A mutant written for another release.

diff --git a/capacity/capacity.go b/capacity/capacity.go
--- a/capacity/capacity.go
+++ b/capacity/capacity.go
@@ -1,3 +1,3 @@
-// Package capacity counts the free capacity of a node, per pool.
+// Package capacity counts nothing.
 package capacity
 
`), 0o644))
	mutants["does not apply"] = stale

	wt := tree.Git{Dir: filepath.Join(t.TempDir(), "mutants")}
	_, err = repo.Run("worktree", "add", "--detach", wt.Dir, head)
	require.NoError(t, err)
	guard := func(dir string) (*gotest.Result, error) {
		return gotest.Run(dir, goEnv, "./capacity", "-run", "^TestFree$")
	}
	for _, tc := range []struct {
		name       string
		mutant     string
		want       harness.MutantOutcome
		wantDetail string
		wantRun    bool
	}{
		{"a mutant that the guard catches is killed", "killed", harness.Killed, "failed: TestFree", true},
		{"a mutant that the guard does not catch survives", "survived", harness.Survived, "the guard passes with the mutant: it does not catch the bug", true},
		{"a mutant that does not compile does not build, which is no kill", "does not build", harness.DoesNotBuild, "a tree that does not build proves nothing; a mutant must compile", true},
		{"a mutant that does not apply to the patched tree runs no guard", "does not apply", harness.DoesNotApply, "error: patch failed: capacity/capacity.go:1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := harness.TryMutant(wt, head, mutants[tc.mutant], guard)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome)
			assert.Contains(t, res.Detail, tc.wantDetail)
			assert.Equal(t, tc.wantRun, res.Result != nil)
			if tc.want == harness.DoesNotBuild {
				assert.Contains(t, res.Result.FailureOutput(), "undefined: used")
			}
			status, err := wt.Run("status", "--porcelain")
			require.NoError(t, err)
			assert.Empty(t, status, "the worktree is back at the patched tree")
			at, err := wt.Line("rev-parse", "HEAD")
			require.NoError(t, err)
			assert.Equal(t, head, at)
		})
	}
}
