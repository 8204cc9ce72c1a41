package harness_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/harness"
)

func TestOnceRunsEachCommandOnce(t *testing.T) {
	var o harness.Once
	calls := 0
	run := func(outcome gotest.Outcome) func() (*gotest.Result, string, error) {
		return func() (*gotest.Result, string, error) {
			calls++
			return &gotest.Result{Outcome: outcome}, "log-" + outcome.String(), nil
		}
	}

	first, again, err := o.Do("/tree", []string{"./pkg/a", "-run", "^TestA$"}, "p1 test", run(gotest.Passed))
	require.NoError(t, err)
	assert.False(t, again)
	assert.Equal(t, 1, calls)
	assert.Equal(t, "p1 test", first.By)
	assert.Equal(t, "log-passed", first.Log)

	second, again, err := o.Do("/tree", []string{"./pkg/a", "-run", "^TestA$"}, "p2 test", run(gotest.TestsFailed))
	require.NoError(t, err)
	assert.True(t, again, "the same command in the same directory is not run again")
	assert.Equal(t, 1, calls)
	assert.Same(t, first, second)

	for _, tc := range []struct {
		name string
		dir  string
		args []string
	}{
		{"another -run pattern", "/tree", []string{"./pkg/a", "-run", "^TestA"}},
		{"another package", "/tree", []string{"./pkg/b", "-run", "^TestA$"}},
		{"another directory", "/worktree", []string{"./pkg/a", "-run", "^TestA$"}},
		{"arguments that join to the same string", "/tree", []string{"./pkg/a -run", "^TestA$"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls
			r, again, err := o.Do(tc.dir, tc.args, tc.name, run(gotest.Passed))
			require.NoError(t, err)
			assert.False(t, again)
			assert.Equal(t, before+1, calls)
			assert.Equal(t, tc.name, r.By)
		})
	}
}

func TestOnceDoesNotKeepAnError(t *testing.T) {
	var o harness.Once
	_, _, err := o.Do("/tree", []string{"./pkg/a"}, "p1", func() (*gotest.Result, string, error) {
		return nil, "", errors.New("go: not found")
	})
	require.EqualError(t, err, "go: not found")
	r, again, err := o.Do("/tree", []string{"./pkg/a"}, "p2", func() (*gotest.Result, string, error) {
		return &gotest.Result{Outcome: gotest.Passed}, "log", nil
	})
	require.NoError(t, err)
	assert.False(t, again, "a command whose run errored runs again")
	assert.Equal(t, "p2", r.By)
}
