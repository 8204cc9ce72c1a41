package series

import (
	"strings"
)

// NotAGuard are the beginnings of a `Regression: none (<reason>)` reason by
// which a test-only patch says that it guards no fix, so that it needs no
// mutant (CheckTestOnly):
//
//   - "test-only: the fix is the test": the patch repairs a test (a
//     deflake); its reason gives the runs that failed before and after.
//   - "test-only: a measurement": a benchmark scenario, which asserts no fix.
//   - "test-only: the binary smoke test": a smoke test of the built
//     binaries, which kube-carry's harness runs and requires to pass.
var NotAGuard = []string{
	"test-only: the fix is the test",
	"test-only: a measurement",
	"test-only: the binary smoke test",
}

// TestOnly reports whether every file the patch changes belongs to tests
// only (IsTestFile).
func (p *Patch) TestOnly() bool {
	return len(p.Files) > 0 && len(p.TestFiles()) == len(p.Files)
}

// CheckTestOnly checks that a test-only patch proves that its tests can
// fail. Such a patch changes no behaviour: its tests passing on the patched
// tree proves nothing by itself. They must be shown to fail without what
// they guard, by one of
//
//   - `Regression: <test> (without <fix>.patch)`: the test fails on the
//     series before an earlier fix, or
//   - `Guards: mutants/<m>.patch <test>`: the test kills a mutant that
//     re-introduces the bug in the patched tree.
//
// So `Regression: none (<reason>)` in a test-only patch without a Guards:
// trailer is an error at the Regression: line, unless the reason starts
// with one of NotAGuard. A plain `Regression: <test>` of a test-only patch
// is an error at its line too: it would run on the patch's parent plus the
// patch's test files, which is the patched tree itself, where it passes.
// Patches that change code are not checked here. The error is a *Error.
func CheckTestOnly(p *Patch) error {
	if !p.TestOnly() {
		return nil
	}
	for _, gt := range p.Regressions {
		if gt.Without == "" {
			return errorf(p.File, gt.Line, "Regression: %s: the patch changes only test files, so its parent plus its test files is the patch itself, where the test passes; "+
				"prove the test against the earlier fix it tests, `Regression: %s (without <fix>.patch)`, or against a mutant, `Guards: mutants/<name>.patch %s`", gt, gt, gt)
		}
	}
	if p.RegressionNone == "" || len(p.Guards) > 0 {
		return nil
	}
	for _, prefix := range NotAGuard {
		if strings.HasPrefix(p.RegressionNone, prefix) {
			return nil
		}
	}
	test := "<pkg> -run '^TestX$'"
	if len(p.Tests) > 0 {
		test = p.Tests[0].Raw
	}
	return errorf(p.File, p.trailerLine("Regression"), "Regression: none (%s): the patch changes only test files, so nothing shows that its test can fail; "+
		"name a mutant that re-introduces the bug it guards and that the test kills, `Guards: mutants/<name>.patch %s` (the mutant in the line's mutants/), "+
		"or prove the test against an earlier fix of the series, `Regression: %s (without <fix>.patch)`. "+
		"A test-only patch that guards no fix starts its reason with one of: %s",
		p.RegressionNone, test, test, strings.Join(NotAGuard, "; "))
}

// trailerLine is the line of the first trailer with key, 0 if none.
func (p *Patch) trailerLine(key string) int {
	for _, t := range p.Trailers {
		if t.Key == key {
			return t.Line
		}
	}
	return 0
}
