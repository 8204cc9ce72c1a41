package gotest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/gotest"
)

// TestOnly: the part of a run of several tests that concerns some of them
// is what a run of only those would have said.
func TestOnly(t *testing.T) {
	ev := func(action, test, output string) string {
		s := `{"Action":"` + action + `","Package":"example.com/fix"`
		if test != "" {
			s += `,"Test":"` + test + `"`
		}
		if output != "" {
			s += `,"Output":"` + output + `\n"`
		}
		return s + "}\n"
	}
	stream := ev("run", "TestA", "") + ev("run", "TestA/sub", "") + ev("pass", "TestA/sub", "") + ev("pass", "TestA", "") +
		ev("run", "TestB", "") + ev("output", "TestB", "    fix_test.go:9: B is wrong") + ev("fail", "TestB", "") +
		ev("run", "TestBB", "") + ev("pass", "TestBB", "") +
		ev("fail", "", "")
	res, err := gotest.Parse(strings.NewReader(stream), nil)
	require.NoError(t, err)
	require.Equal(t, gotest.TestsFailed, res.Outcome)
	named := func(names ...string) func(string) bool {
		return func(test string) bool {
			for _, n := range names {
				if test == n {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name                   string
		match                  func(string) bool
		want                   gotest.Outcome
		wantPassed, wantFailed []string
		wantFailure            string
	}{
		{name: "a passing test with its subtest", match: named("TestA"), want: gotest.Passed, wantPassed: []string{"TestA", "TestA/sub"}},
		{name: "a failing test", match: named("TestB"), want: gotest.TestsFailed, wantFailed: []string{"TestB"}, wantFailure: "B is wrong"},
		{name: "a passing test whose name starts like a failing one", match: named("TestBB"), want: gotest.Passed, wantPassed: []string{"TestBB"}},
		{name: "a failing and a passing test", match: named("TestA", "TestB"), want: gotest.TestsFailed, wantPassed: []string{"TestA", "TestA/sub"}, wantFailed: []string{"TestB"}, wantFailure: "B is wrong"},
		{name: "no test of the run", match: named("TestZ"), want: gotest.NoTests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := res.Only(tc.match)
			assert.Equal(t, tc.want, got.Outcome)
			assert.Equal(t, tc.wantPassed, got.Passed)
			assert.Equal(t, tc.wantFailed, got.Failed)
			if tc.wantFailure == "" {
				assert.NotContains(t, got.FailureOutput(), "B is wrong", "another test's failure")
			} else {
				assert.Contains(t, got.FailureOutput(), tc.wantFailure)
			}
			assert.Equal(t, res.Output, got.Output, "the log is the whole run's")
		})
	}

	t.Run("a run that did not build", func(t *testing.T) {
		res, err := gotest.Parse(strings.NewReader(`{"Action":"build-fail","ImportPath":"example.com/fix [example.com/fix.test]"}`+"\n"+ev("fail", "", "")), nil)
		require.NoError(t, err)
		assert.Equal(t, gotest.BuildFailed, res.Only(named("TestA")).Outcome)
	})
}
