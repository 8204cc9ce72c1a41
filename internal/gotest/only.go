package gotest

import (
	"strings"
)

// Only is the part of a run that concerns the tests whose top-level name
// match accepts (a subtest counts with its top-level test): what the run
// would have said had its -run pattern named only those tests. Tests of
// other names are left out of Passed, Failed and the failure output;
// Output stays the whole run's, for its log. A run that did not build or
// failed outside any test gives that outcome to every part: nothing tells
// which tests it concerned.
func (r *Result) Only(match func(test string) bool) *Result {
	top := func(name string) string {
		t, _, _ := strings.Cut(name, "/")
		return t
	}
	out := &Result{
		Output:   r.Output,
		Elapsed:  r.Elapsed,
		ExitCode: r.ExitCode,
		build:    r.build,
		pkg:      r.pkg,
	}
	for _, name := range r.Passed {
		if match(top(name)) {
			out.Passed = append(out.Passed, name)
		}
	}
	for _, name := range r.Failed {
		if match(top(name)) {
			out.Failed = append(out.Failed, name)
		}
	}
	for _, to := range r.tests {
		if to.name == "" || match(top(to.name)) {
			out.tests = append(out.tests, to)
		}
	}
	switch {
	case r.Outcome == BuildFailed || r.Outcome == Errored:
		out.Outcome = r.Outcome
	case len(out.Failed) > 0:
		out.Outcome = TestsFailed
	case len(out.Passed) == 0:
		out.Outcome = NoTests
	default:
		out.Outcome = Passed
	}
	return out
}
