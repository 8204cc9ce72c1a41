package harness_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/harness"
	"github.com/kube-carry/kube-carry/internal/series"
)

func TestMustPass(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *gotest.Result
		want string
	}{
		{"a run where tests passed passes", &gotest.Result{Outcome: gotest.Passed}, ""},
		{"a run of no test is an error, never a pass", &gotest.Result{Outcome: gotest.NoTests}, "runs no test: the package has none or -run matches none"},
		{"a run with failed tests names them", &gotest.Result{Outcome: gotest.TestsFailed, Failed: []string{"TestA", "TestA/b"}}, "tests failed: TestA, TestA/b"},
		{"a run that does not build is an error", &gotest.Result{Outcome: gotest.BuildFailed}, "does not build"},
		{"a test binary that failed outside any test is an error", &gotest.Result{Outcome: gotest.Errored}, "the test binary failed outside any test (a panic, a timeout or a bad flag)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := harness.MustPass(tc.res)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestMustFail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome gotest.Outcome
		want    string
	}{
		{"a regression test that fails without the fix proves it", gotest.TestsFailed, ""},
		{"a regression test that runs no test without the fix proves nothing", gotest.NoTests, "runs no test without the fix: the package has none or -run matches none"},
		{"a regression test that does not build without the fix proves nothing", gotest.BuildFailed, "the tests do not build without the fix, which proves nothing; keep the test files compiling on the parent"},
		{"a regression test that passes without the fix proves nothing", gotest.Passed, "passes without the fix; a regression test must fail without it"},
		{"a test binary that fails outside any test without the fix proves nothing", gotest.Errored, "the test binary failed outside any test without the fix (a panic, a timeout or a bad flag), which is not a failing test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := harness.MustFail(&gotest.Result{Outcome: tc.outcome})
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestAtNamesTheTrailerLine(t *testing.T) {
	gt, err := series.ParseGoTest("./pkg/a -run '^TestA$'")
	require.NoError(t, err)
	gt.Line = 47
	assert.Equal(t, "patches/v1.37/a.patch:47: Regression: ./pkg/a -run '^TestA$'", harness.At("patches/v1.37/a.patch", "Regression", gt))
}

func TestLogName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []string
		want  string
	}{
		{"a package path becomes one file name", []string{"suite", "./pkg/scheduler/framework"}, "suite-pkg_scheduler_framework"},
		{"a test command keeps letters, digits, dots and dashes", []string{"test", "L46"}, "test-L46"},
		{"quotes, spaces and anchors of a -run pattern are replaced", []string{"guard", "./pkg/a -run '^TestA$'"}, "guard-pkg_a_-run_TestA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, harness.LogName(tc.parts...))
		})
	}
}

func TestLogsWriteOneFilePerCheckUnderItsPatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	res := &gotest.Result{
		Outcome: gotest.TestsFailed,
		Failed:  []string{"TestA"},
		Output:  "=== RUN   TestA\n    a_test.go:3: wrong\n--- FAIL: TestA (0.00s)\n",
		Elapsed: 1234 * time.Millisecond,
	}
	path, err := harness.Logs{Dir: dir}.Write("volumebinding-capacity", "test-L46", "/tree", []string{"./pkg/a", "-run", "^TestA$"}, res)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "volumebinding-capacity", "test-L46.log"), path)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# go test -json -count=1 ./pkg/a -run ^TestA$\n"+
		"# in /tree\n"+
		"# tests failed in 1.2s; failed: TestA\n\n"+
		res.Output, string(got))

	_, err = harness.Logs{}.Write("p", "c", "/tree", nil, res)
	assert.EqualError(t, err, "harness: no log directory")
}

func TestReport(t *testing.T) {
	res, err := gotest.Parse(strings.NewReader(`{"Action":"run","Package":"example.com/a","Test":"TestA"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"    a_test.go:3: got 2 claims, want 1\n"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}
{"Action":"fail","Package":"example.com/a","Test":"TestA"}
{"Action":"fail","Package":"example.com/a"}
`), nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		res  *gotest.Result
		log  string
		want string
	}{
		{
			name: "a failed check shows the failing test's output, then the path of the full log",
			res:  res, log: "_output/v1.37/logs/a/test-L46.log",
			want: "--- FAIL: TestA (0.00s)\n    a_test.go:3: got 2 claims, want 1\nfull log: _output/v1.37/logs/a/test-L46.log",
		},
		{
			name: "a check that ran no test shows only the path of its log",
			res:  &gotest.Result{Outcome: gotest.NoTests}, log: "_output/v1.37/logs/a/test-L46.log",
			want: "full log: _output/v1.37/logs/a/test-L46.log",
		},
		{
			name: "a check without a log shows the failing test's output",
			res:  res,
			want: "--- FAIL: TestA (0.00s)\n    a_test.go:3: got 2 claims, want 1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, harness.Report(tc.res, tc.log))
		})
	}
}

func TestCell(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"a short reason is kept", "API addition", "API addition"},
		{"a reason is cut at its first semicolon", "test-only: the fix is the test; 5 of 10 runs failed before", "test-only: the fix is the test"},
		{"a reason is cut at its first comma", "test-only: the binary smoke test runs from kube-carry's harness, TestSmokeBinary", "test-only: the binary smoke test runs from kube…"},
		{"a long reason is cut at 48 characters with an ellipsis", "API addition: the capacity check uses it from volumebinding-count-selected-node-reservations.patch", "API addition: the capacity check uses it from v…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := harness.Cell(tc.text)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len([]rune(got)), 48)
		})
	}
}
