package harness

import "strings"

// The harness's tests (tests/) that each proof runs. The full proof (make
// test LINE=vA.B) runs every test of the package; these lists are the
// other two, declared once: scripts/test.sh reads them with `carry
// proof-tests`, and TestCheckKinds holds them to the tests that exist.
var (
	// LineProofTests are the line proof's tests (make test without LINE,
	// for every supported line but the newest). Within TestSeries the
	// line proof runs the kinds of check marked LineProof
	// (series.Checks), and of the Test: lines those that are not
	// integration tests: the line proof builds neither the line's
	// binaries nor its etcd, which make test LINE=vA.B does.
	LineProofTests = []string{"TestSeries"}
	// PerLineOnlyTests are left out of the newest line's full proof in
	// make test without LINE, to fit CI's time budget: they prove the
	// release engineering around a line rather than its patches, and run
	// in make test LINE=vA.B (which the users' workflow runs for every
	// line).
	PerLineOnlyTests = []string{"TestRelease", "TestOutOfTreeScheduler", "TestMatrixOnRealReleases", "TestFetchFromGitVerifiesEveryModule"}
)

// RunPattern is the go test -run (or -skip) pattern that matches exactly
// the tests names.
func RunPattern(names []string) string {
	return "^(" + strings.Join(names, "|") + ")$"
}
