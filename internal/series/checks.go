package series

// Check is a kind of proof the harness gives each patch. Every kind is
// declared here, once, and everything else reads this declaration:
//   - the parser knows the trailer that asks for the check, and whether a
//     patch must have it;
//   - the harness (tests/series_test.go) runs the checks in this order as
//     TestSeries/<patch>/<Name>, each with its runner;
//   - the harness's report has one column per check;
//   - the line proof runs only the checks marked LineProof;
//   - the release notes list each patch's trailers that ask for checks;
//   - the docs list the checks, which TestChecksDocumented holds to this
//     table.
//
// docs/design.md ("Adding a kind of check") says how to add one.
type Check struct {
	// Name names the subtest (TestSeries/<patch>/<Name>) and the logs.
	Name string
	// Trailer is the patch message trailer that asks for the check, or ""
	// for a check that every patch gets.
	Trailer string
	// Required: every patch must have the trailer.
	Required bool
	// Column is the check's column in the harness's report.
	Column string
	// LineProof: the line proof (make test without LINE, for every line
	// but the newest) runs the check; the full proof runs every check.
	LineProof bool
	// Proves says what passing the check shows, for the docs.
	Proves string
}

// Checks are the kinds of check, in the order the harness runs them.
var Checks = []Check{
	{
		Name: "test", Trailer: "Test", Required: true, Column: "TESTS", LineProof: true,
		Proves: "each `Test:` command passes on the patched tree and runs at least one test",
	},
	{
		Name: "suite", Column: "SUITES",
		Proves: "the upstream suites of the packages the patch touches pass on the patched tree; a failing one is bisected to the patch that broke it",
	},
	{
		Name: "regression", Trailer: "Regression", Required: true, Column: "REGRESSION PROOF",
		Proves: "each `Regression:` test fails without the patch's fix and passes with it",
	},
	{
		Name: "mutants", Trailer: "Guards", Column: "MUTANTS KILLED",
		Proves: "each `Guards:` test passes on the patched tree and fails with its mutant applied",
	},
	{
		Name: "race", Trailer: "Race", Column: "RACE",
		Proves: "each `Race:` test passes on the patched tree under the race detector (`go test -race`, which fails a test on a data race) and runs at least one test",
	},
}

// CheckTrailers are the trailers that ask for checks.
func CheckTrailers() []string {
	var out []string
	for _, c := range Checks {
		if c.Trailer != "" {
			out = append(out, c.Trailer)
		}
	}
	return out
}

// CheckOf is the check a trailer asks for.
func CheckOf(trailer string) (Check, bool) {
	for _, c := range Checks {
		if c.Trailer != "" && c.Trailer == trailer {
			return c, true
		}
	}
	return Check{}, false
}

// Asks reports whether patch p asks for check c: it has c's trailer, or c
// is for every patch.
func (c Check) Asks(p *Patch) bool {
	if c.Trailer == "" {
		return true
	}
	for _, t := range p.Trailers {
		if t.Key == c.Trailer {
			return true
		}
	}
	return false
}
