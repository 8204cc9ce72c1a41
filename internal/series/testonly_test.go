package series_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/series"
)

// patchOf is a format-patch file with the given trailers (lines 10 on)
// that changes files.
func patchOf(trailers string, files ...string) []byte {
	var diffs strings.Builder
	for _, f := range files {
		fmt.Fprintf(&diffs, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-a\n+b\n", f, f, f, f)
	}
	return []byte(header + trailers + "\n" + diffs.String())
}

func TestTestOnly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  bool
	}{
		{"a patch of test files and testdata is test-only", []string{"pkg/a/a_test.go", "pkg/a/testdata/x.yaml"}, true},
		{"a patch that also changes code is not test-only", []string{"pkg/a/a_test.go", "pkg/a/a.go"}, false},
		{"a patch of docs only is not test-only", []string{"docs/x.md"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := series.ParsePatch("x.patch", patchOf(goodTrailers, tc.files...))
			require.NoError(t, err)
			assert.Equal(t, tc.want, p.TestOnly())
		})
	}
}

func TestCheckTestOnly(t *testing.T) {
	const (
		status = "Upstream-Status: Inappropriate [fork-only: local-dynamic storage]\n" +
			"Bug: seed 000 (local-dynamic over-scheduling)\n"
		test  = "Test: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicStaleCacheAfterDelete$'\n"
		guard = "Guards: mutants/volumebinding-count-deleted.patch ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicStaleCacheAfterDelete$'\n"
	)
	testFiles := []string{"pkg/scheduler/framework/plugins/volumebinding/local_dynamic_test.go"}
	codeFiles := []string{"pkg/scheduler/framework/plugins/volumebinding/local_dynamic.go", testFiles[0]}
	for _, tc := range []struct {
		name     string
		trailers string
		files    []string
		// wantErr is the start of the error; none when empty.
		wantErr string
	}{
		{
			name:     "a test-only guard with Regression: none and no mutant is an error at its Regression: line",
			trailers: status + test + "Regression: none (test-only: since v1.35 upstream's passive assume caches read the informer's store)\n",
			files:    testFiles,
			wantErr:  "x.patch:13: Regression: none (test-only: since v1.35 upstream's passive assume caches read the informer's store): the patch changes only test files, so nothing shows that its test can fail; name a mutant",
		},
		{
			name:     "a test-only guard with Regression: none that names a mutant is proven by the mutant",
			trailers: status + test + guard + "Regression: none (test-only: guards a fix upstream has)\n",
			files:    testFiles,
		},
		{
			name:     "a test-only patch proven against an earlier fix needs no mutant",
			trailers: status + test + "Regression: ./test/integration/localdynamic -run '^TestLocalDynamicS1' (without volumebinding-count-selected-node-reservations.patch)\n",
			files:    []string{"test/integration/localdynamic/s1_incident_test.go"},
		},
		{
			name:     "a test-only patch whose Regression: runs on its own parent is an error at that line, since the parent plus its test files is the patch",
			trailers: status + test + "Regression: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicStaleCacheAfterDelete$'\n",
			files:    testFiles,
			wantErr:  "x.patch:13: Regression: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicStaleCacheAfterDelete$': the patch changes only test files, so its parent plus its test files is the patch itself",
		},
		{
			name:     "a deflake says the fix is the test and needs no mutant",
			trailers: "Upstream-Status: Pending\nBug: seed 002 (CSI volumes with the same unique name never mount)\nTest: ./pkg/kubelet/volumemanager -run '^TestWaitForAllPodsUnmount$'\nRegression: none (test-only: the fix is the test; 5 of 10 runs failed before, 0 of 100 after)\n",
			files:    []string{"pkg/kubelet/volumemanager/volume_manager_test.go"},
		},
		{
			name:     "a measurement needs no mutant",
			trailers: status + "Test: ./test/integration/localdynamic -run '^TestLocalDynamicThroughput$'\nRegression: none (test-only: a measurement; make bench reports it)\n",
			files:    []string{"test/integration/localdynamic/throughput_test.go"},
		},
		{
			name:     "the binary smoke test needs no mutant",
			trailers: status + "Test: ./test/integration/localdynamic -run '^TestLocalDynamicS1'\nRegression: none (test-only: the binary smoke test runs from kube-carry's harness, TestSmokeBinary)\n",
			files:    []string{"test/integration/localdynamic/smoke_test.go"},
		},
		{
			name:     "a reason that only mentions a deflake further on does not exempt a guard",
			trailers: status + test + "Regression: none (guards a fix; the fix is the test)\n",
			files:    testFiles,
			wantErr:  "x.patch:13: Regression: none (guards a fix; the fix is the test): the patch changes only test files",
		},
		{
			name:     "a patch that changes code with Regression: none (API addition) is not checked",
			trailers: status + test + "Regression: none (API addition)\n",
			files:    codeFiles,
		},
		{
			name:     "a patch that changes code and proves its fix on its parent is not checked",
			trailers: status + test + "Regression: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicStaleCacheAfterDelete$'\n",
			files:    codeFiles,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := series.ParsePatch("x.patch", patchOf(tc.trailers, tc.files...))
			require.NoError(t, err)
			err = series.CheckTestOnly(p)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.wantErr), "error:\n%v\nwant it to start with:\n%s", err, tc.wantErr)
			var se *series.Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, 13, se.Line)
		})
	}
}

func TestCheckTestOnlyTellsHowToFixIt(t *testing.T) {
	p, err := series.ParsePatch("x.patch", patchOf("Upstream-Status: Pending\nBug: seed 000 (x)\n"+
		"Test: ./pkg/a -run '^TestA$'\nRegression: none (test-only: a guard)\n", "pkg/a/a_test.go"))
	require.NoError(t, err)
	err = series.CheckTestOnly(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "`Guards: mutants/<name>.patch ./pkg/a -run '^TestA$'`")
	assert.Contains(t, err.Error(), "`Regression: ./pkg/a -run '^TestA$' (without <fix>.patch)`")
	assert.Contains(t, err.Error(), "test-only: the fix is the test; test-only: a measurement; test-only: the binary smoke test")
}
