package gotest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/gotest"
)

// recorded parses a stream that testdata/record.sh recorded from a fixture
// module in testdata/.
func recorded(t *testing.T, name string, exitErr error) *gotest.Result {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".jsonl"))
	require.NoError(t, err)
	defer f.Close()
	res, err := gotest.Parse(f, exitErr)
	require.NoError(t, err)
	return res
}

func TestFailureOutputOfRecordedRuns(t *testing.T) {
	exit1 := exitError(t, 1)
	for _, tc := range []struct {
		name    string
		fixture string
		want    gotest.Outcome
		// wantOutput is the whole failure output.
		wantOutput string
	}{
		{
			name:    "a failing assertion among passing tests shows the failed subtests' messages with file:line and none of the log noise",
			fixture: "assertion",
			want:    gotest.TestsFailed,
			wantOutput: "--- FAIL: TestFree/an_empty_node_takes_all_its_capacity (0.00s)\n" +
				"    capacity_test.go:37: Free(9, 0) = 8, want 9\n" +
				"        reserved claims: 0\n" +
				"--- FAIL: TestFree/a_full_node_takes_nothing (0.00s)\n" +
				"    capacity_test.go:37: Free(9, 9) = -1, want 0\n" +
				"        reserved claims: 9",
		},
		{
			name:    "a test file that does not compile shows the compiler's error with file:line",
			fixture: "build",
			want:    gotest.BuildFailed,
			wantOutput: "# example.com/capacity [example.com/capacity.test]\n" +
				"./capacity_test.go:6:12: undefined: FreeOnNode\n" +
				"FAIL\texample.com/capacity [build failed]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := recorded(t, tc.fixture, exit1)
			require.Equal(t, tc.want, res.Outcome)
			assert.Equal(t, tc.wantOutput, res.FailureOutput())
		})
	}
}

func TestFailureOutputOfATimeoutShowsTheTestThatDidNotEnd(t *testing.T) {
	res := recorded(t, "timeout", exitError(t, 1))
	require.Equal(t, gotest.Errored, res.Outcome, "a timed-out test gets no fail event")
	got := res.FailureOutput()
	lines := strings.Split(got, "\n")
	require.GreaterOrEqual(t, len(lines), 4, got)
	assert.Equal(t, []string{
		"--- DID NOT END: TestWaitsForever (the test binary stopped while it ran)",
		"    capacity_test.go:11: waiting for a pod that is never bound",
		"panic: test timed out after 2s",
		"\trunning tests:",
	}, lines[:4])
	assert.NotContains(t, got, "TestQuick", "a test that passed is not shown")
	assert.LessOrEqual(t, len(lines), 32, "one test's output is limited:\n%s", got)
}

func TestFailureOutput(t *testing.T) {
	exit1 := exitError(t, 1)
	for _, tc := range []struct {
		name, stream string
		exitErr      error
		want         string
	}{
		{
			name:   "a run that passed has no failure output",
			stream: streamPassed,
		},
		{
			name:   "a run that ran no test has no failure output",
			stream: streamNoTests,
		},
		{
			name:    "a failed parent test adds nothing to its failed subtest's output",
			stream:  streamTestsFailed,
			exitErr: exit1,
			want:    "--- FAIL: TestBad/sub (0.00s)\n    fix_test.go:11: want 4, got 5",
		},
		{
			name:    "a build failure printed as plain text shows the compiler's error",
			stream:  streamOldBuildFailed,
			exitErr: exit1,
			want:    "# example.com/fix [example.com/fix.test]\n./broken_test.go:2:33: undefined: undefined\nFAIL\texample.com/fix [build failed]",
		},
		{
			name:    "a panic outside any test shows the package's own output without go test's summary",
			stream:  streamPanicOutsideTests,
			exitErr: exit1,
			want:    "--- OUTSIDE ANY TEST:\npanic: boom",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := gotest.Parse(strings.NewReader(tc.stream), tc.exitErr)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.FailureOutput())
		})
	}
}

// failingStream is a go test -json stream of one package in which the
// tests named fail, each with the given output lines.
func failingStream(tests []string, output []string) string {
	var b strings.Builder
	ev := func(action, test, out string) {
		fmt.Fprintf(&b, `{"Action":%q,"Package":"example.com/fix","Test":%q,"Output":%q}`+"\n", action, test, out)
	}
	for _, name := range tests {
		ev("run", name, "")
		ev("output", name, "=== RUN   "+name+"\n")
		for _, l := range output {
			ev("output", name, l+"\n")
		}
		ev("output", name, "--- FAIL: "+name+" (0.00s)\n")
		ev("fail", name, "")
	}
	fmt.Fprintf(&b, `{"Action":"fail","Package":"example.com/fix"}`+"\n")
	return b.String()
}

func TestFailureOutputIsLimited(t *testing.T) {
	noise := func(n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("I1122 09:36:15.341164   4242 queue.go:%d] pod moved", i))
		}
		return out
	}
	t.Run("of more than 8 failed tests, the first 8 are shown and the others named", func(t *testing.T) {
		var names []string
		for i := 1; i <= 11; i++ {
			names = append(names, fmt.Sprintf("TestCase%02d", i))
		}
		res, err := gotest.Parse(strings.NewReader(failingStream(names, []string{"    case_test.go:7: wrong"})), exitError(t, 1))
		require.NoError(t, err)
		got := res.FailureOutput()
		assert.Equal(t, 8, strings.Count(got, "--- FAIL: "), got)
		assert.Contains(t, got, "--- FAIL: TestCase08 (0.00s)\n    case_test.go:7: wrong")
		assert.NotContains(t, got, "--- FAIL: TestCase09")
		assert.True(t, strings.HasSuffix(got, "… and 3 more failed tests (their output is in the full log): TestCase09, TestCase10, TestCase11"), got)
	})
	t.Run("a long output keeps the test's own messages with their continuation lines", func(t *testing.T) {
		output := append(noise(50), "    case_test.go:7: ", "        \tError Trace:\tcase_test.go:7", "        \tError:      \tNot equal:")
		output = append(output, noise(10)...)
		res, err := gotest.Parse(strings.NewReader(failingStream([]string{"TestCase"}, output)), exitError(t, 1))
		require.NoError(t, err)
		assert.Equal(t, "--- FAIL: TestCase (0.00s)\n"+
			"    case_test.go:7: \n"+
			"        \tError Trace:\tcase_test.go:7\n"+
			"        \tError:      \tNot equal:", res.FailureOutput())
	})
	t.Run("a long output without a test message is cut in the middle", func(t *testing.T) {
		res, err := gotest.Parse(strings.NewReader(failingStream([]string{"TestCase"}, noise(100))), exitError(t, 1))
		require.NoError(t, err)
		lines := strings.Split(res.FailureOutput(), "\n")
		require.Len(t, lines, 31, "the --- FAIL line and 30 lines")
		assert.Equal(t, "I1122 09:36:15.341164   4242 queue.go:0] pod moved", lines[1])
		assert.Equal(t, "        … 71 lines left out (the full log has them)", lines[23])
		assert.Equal(t, "I1122 09:36:15.341164   4242 queue.go:99] pod moved", lines[30])
	})
	t.Run("a short output is shown whole, log lines included", func(t *testing.T) {
		res, err := gotest.Parse(strings.NewReader(failingStream([]string{"TestCase"}, append(noise(2), "    case_test.go:7: wrong"))), exitError(t, 1))
		require.NoError(t, err)
		assert.Equal(t, "--- FAIL: TestCase (0.00s)\n"+
			"I1122 09:36:15.341164   4242 queue.go:0] pod moved\n"+
			"I1122 09:36:15.341164   4242 queue.go:1] pod moved\n"+
			"    case_test.go:7: wrong", res.FailureOutput())
	})
}
