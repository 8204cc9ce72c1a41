package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/harness"
)

const (
	// smokeTest is the tree's smoke test of the built kube-scheduler (added
	// by the series, test/integration/localdynamic).
	smokeTest = "TestLocalDynamicSmokeBinaryS1"
	smokePkg  = "./test/integration/localdynamic"
)

// testLogRE matches the lines that the tree's tests log (t.Logf), as
// opposed to the logs of the components.
var testLogRE = regexp.MustCompile(`^\s+[a-z0-9_]+_test\.go:\d+: `)

// TestSmokeBinary runs the scheduler that users deploy,
// _output/<line>/bin/kube-scheduler, as a process against a kube-apiserver built
// from the patched tree for this test, and replays the incident of seed
// 000 through the API (the tree's TestLocalDynamicSmokeBinaryS1). The
// tree's test skips itself without the binaries: here it must run and pass.
func TestSmokeBinary(t *testing.T) {
	l := load(t)
	scheduler := filepath.Join(ln.BinDir(), "kube-scheduler")
	_, err := os.Stat(scheduler)
	require.NoError(t, err, "run make LINE=%s first", ln.Name)
	smoke(t, l, "TestSmokeBinary", scheduler)
}

// smoke runs the tree's binary smoke test (smokeTest) with scheduler as the
// kube-scheduler process, against a kube-apiserver built from the tree into
// _output/<line>/test/bin; its full log goes to the logs of check. It fails
// the test unless smokeTest ran and passed.
func smoke(t *testing.T, l *loaded, check, scheduler string) {
	apiserver := filepath.Join(ln.TestBinDir(), "kube-apiserver")
	t.Logf("building kube-apiserver for the smoke test into %s", apiserver)
	buildCommand(t, l.tree.Dir, "./cmd/kube-apiserver", apiserver)

	t.Logf("running %s in %s with %s", smokeTest, smokePkg, scheduler)
	env := append([]string{
		"LOCALDYNAMIC_KUBE_SCHEDULER=" + scheduler,
		"LOCALDYNAMIC_KUBE_APISERVER=" + apiserver,
	}, goEnv...)
	args := []string{"-timeout", "10m", smokePkg, "-run", "^" + smokeTest + "$", "-v"}
	res, err := gotest.Run(l.tree.Dir, env, args...)
	require.NoError(t, err)
	log, err := logs.Write(check, smokeTest, l.tree.Dir, args, res)
	require.NoError(t, err)
	t.Logf("%s: %s in %s; full log: %s", smokeTest, res.Outcome, res.Elapsed.Round(1e9), rel(log))
	for _, line := range strings.Split(res.Output, "\n") {
		if testLogRE.MatchString(line) {
			t.Logf("  %s", strings.TrimSpace(line))
		}
	}
	if res.Outcome != gotest.Passed || !slices.Contains(res.Passed, smokeTest) {
		t.Fatalf("%s did not pass with %s (%s; passed: %v):\n%s", smokeTest, scheduler, res.Outcome, res.Passed, harness.Report(res, rel(log)))
	}
}
