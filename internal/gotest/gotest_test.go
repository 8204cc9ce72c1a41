package gotest_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/gotest"
)

// Streams recorded from `go test -json -count=1` (go1.26) on a one-package
// module example.com/fix.
const (
	streamPassed = `{"Time":"2026-11-22T11:03:38.296004891Z","Action":"start","Package":"example.com/fix"}
{"Time":"2026-11-22T11:03:38.307196494Z","Action":"run","Package":"example.com/fix","Test":"TestAdd"}
{"Time":"2026-11-22T11:03:38.30726907Z","Action":"output","Package":"example.com/fix","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Time":"2026-11-22T11:03:38.307464915Z","Action":"output","Package":"example.com/fix","Test":"TestAdd","Output":"--- PASS: TestAdd (0.00s)\n"}
{"Time":"2026-11-22T11:03:38.308545612Z","Action":"pass","Package":"example.com/fix","Test":"TestAdd","Elapsed":0}
{"Time":"2026-11-22T11:03:38.309684758Z","Action":"run","Package":"example.com/fix","Test":"TestSub"}
{"Time":"2026-11-22T11:03:38.309704875Z","Action":"output","Package":"example.com/fix","Test":"TestSub","Output":"=== RUN   TestSub\n"}
{"Time":"2026-11-22T11:03:38.309969189Z","Action":"run","Package":"example.com/fix","Test":"TestSub/neg"}
{"Time":"2026-11-22T11:03:38.309999035Z","Action":"pass","Package":"example.com/fix","Test":"TestSub/neg","Elapsed":0}
{"Time":"2026-11-22T11:03:38.310061821Z","Action":"pass","Package":"example.com/fix","Test":"TestSub","Elapsed":0}
{"Time":"2026-11-22T11:03:38.310067141Z","Action":"output","Package":"example.com/fix","Output":"PASS\n"}
{"Time":"2026-11-22T11:03:38.311251061Z","Action":"output","Package":"example.com/fix","Output":"ok  \texample.com/fix\t0.015s\n"}
{"Time":"2026-11-22T11:03:38.311339896Z","Action":"pass","Package":"example.com/fix","Elapsed":0.015}
`
	streamTestsFailed = `{"Time":"2026-11-22T11:03:38.296004891Z","Action":"start","Package":"example.com/fix"}
{"Time":"2026-11-22T11:03:38.307196494Z","Action":"run","Package":"example.com/fix","Test":"TestAdd"}
{"Time":"2026-11-22T11:03:38.308545612Z","Action":"pass","Package":"example.com/fix","Test":"TestAdd","Elapsed":0}
{"Time":"2026-11-22T11:03:38.309684758Z","Action":"run","Package":"example.com/fix","Test":"TestBad"}
{"Time":"2026-11-22T11:03:38.309969189Z","Action":"run","Package":"example.com/fix","Test":"TestBad/sub"}
{"Time":"2026-11-22T11:03:38.309984638Z","Action":"output","Package":"example.com/fix","Test":"TestBad/sub","Output":"    fix_test.go:11: want 4, got 5\n"}
{"Time":"2026-11-22T11:03:38.309993945Z","Action":"output","Package":"example.com/fix","Test":"TestBad/sub","Output":"--- FAIL: TestBad/sub (0.00s)\n"}
{"Time":"2026-11-22T11:03:38.309999035Z","Action":"fail","Package":"example.com/fix","Test":"TestBad/sub","Elapsed":0}
{"Time":"2026-11-22T11:03:38.310005427Z","Action":"output","Package":"example.com/fix","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Time":"2026-11-22T11:03:38.310061821Z","Action":"fail","Package":"example.com/fix","Test":"TestBad","Elapsed":0}
{"Time":"2026-11-22T11:03:38.310067141Z","Action":"output","Package":"example.com/fix","Output":"FAIL\n"}
{"Time":"2026-11-22T11:03:38.311251061Z","Action":"output","Package":"example.com/fix","Output":"FAIL\texample.com/fix\t0.015s\n"}
{"Time":"2026-11-22T11:03:38.311339896Z","Action":"fail","Package":"example.com/fix","Elapsed":0.015}
`
	streamNoTests = `{"Time":"2026-11-22T11:03:38.898858985Z","Action":"start","Package":"example.com/fix"}
{"Time":"2026-11-22T11:03:38.903034547Z","Action":"output","Package":"example.com/fix","Output":"testing: warning: no tests to run\n"}
{"Time":"2026-11-22T11:03:38.903178656Z","Action":"output","Package":"example.com/fix","Output":"PASS\n"}
{"Time":"2026-11-22T11:03:38.905660877Z","Action":"output","Package":"example.com/fix","Output":"ok  \texample.com/fix\t0.006s [no tests to run]\n"}
{"Time":"2026-11-22T11:03:38.905750724Z","Action":"pass","Package":"example.com/fix","Elapsed":0.007}
`
	streamBuildFailed = `{"ImportPath":"example.com/fix [example.com/fix.test]","Action":"build-output","Output":"# example.com/fix [example.com/fix.test]\n"}
{"ImportPath":"example.com/fix [example.com/fix.test]","Action":"build-output","Output":"./broken_test.go:2:33: undefined: undefined\n"}
{"ImportPath":"example.com/fix [example.com/fix.test]","Action":"build-fail"}
{"Time":"2026-11-22T11:03:39.230918985Z","Action":"start","Package":"example.com/fix"}
{"Time":"2026-11-22T11:03:39.231070597Z","Action":"output","Package":"example.com/fix","Output":"FAIL\texample.com/fix [build failed]\n"}
{"Time":"2026-11-22T11:03:39.231080566Z","Action":"fail","Package":"example.com/fix","Elapsed":0,"FailedBuild":"example.com/fix [example.com/fix.test]"}
`
	// A package fail event that names the failed build, without the
	// build-fail event and without the [build failed] line.
	streamFailedBuildOnly = `{"Action":"start","Package":"example.com/fix"}
{"Action":"fail","Package":"example.com/fix","Elapsed":0,"FailedBuild":"example.com/nope"}
`
	streamSetupFailed = `{"Time":"2026-11-22T11:03:47.972018512Z","Action":"start","Package":"example.com/fix"}
{"Time":"2026-11-22T11:03:47.972116845Z","Action":"output","Package":"example.com/fix","Output":"FAIL\texample.com/fix [setup failed]\n"}
{"Time":"2026-11-22T11:03:47.972129559Z","Action":"fail","Package":"example.com/fix","Elapsed":0}
`
	// Before go1.24 the go command printed build errors as plain text.
	streamOldBuildFailed = `# example.com/fix [example.com/fix.test]
./broken_test.go:2:33: undefined: undefined
FAIL	example.com/fix [build failed]
`
	// TestMain panicked: the package failed and no test did.
	streamPanicOutsideTests = `{"Action":"start","Package":"example.com/fix"}
{"Action":"output","Package":"example.com/fix","Output":"panic: boom\n"}
{"Action":"output","Package":"example.com/fix","Output":"FAIL\texample.com/fix\t0.017s\n"}
{"Action":"fail","Package":"example.com/fix","Elapsed":0.017}
`
)

func TestParse(t *testing.T) {
	exit1 := exitError(t, 1)
	for _, tc := range []struct {
		name       string
		stream     string
		exitErr    error
		want       gotest.Outcome
		wantPassed []string
		wantFailed []string
		wantCode   int
		wantOutput string
	}{
		{
			name:       "a run where every test passed is Passed, subtests included",
			stream:     streamPassed,
			want:       gotest.Passed,
			wantPassed: []string{"TestAdd", "TestSub", "TestSub/neg"},
		},
		{
			name:       "a failing assertion is TestsFailed and names the failing tests",
			stream:     streamTestsFailed,
			exitErr:    exit1,
			want:       gotest.TestsFailed,
			wantPassed: []string{"TestAdd"},
			wantFailed: []string{"TestBad", "TestBad/sub"},
			wantCode:   1,
			wantOutput: "want 4, got 5",
		},
		{
			name:       "a -run that matches nothing is NoTests",
			stream:     streamNoTests,
			want:       gotest.NoTests,
			wantOutput: "[no tests to run]",
		},
		{
			name:       "a test file that does not compile is BuildFailed",
			stream:     streamBuildFailed,
			exitErr:    exit1,
			want:       gotest.BuildFailed,
			wantCode:   1,
			wantOutput: "undefined: undefined",
		},
		{
			name:     "a package fail event naming the failed build is BuildFailed",
			stream:   streamFailedBuildOnly,
			exitErr:  exit1,
			want:     gotest.BuildFailed,
			wantCode: 1,
		},
		{
			name:       "a package whose imports cannot be resolved is BuildFailed (setup failed)",
			stream:     streamSetupFailed,
			exitErr:    exit1,
			want:       gotest.BuildFailed,
			wantCode:   1,
			wantOutput: "[setup failed]",
		},
		{
			name:       "a build failure printed as plain text is BuildFailed",
			stream:     streamOldBuildFailed,
			exitErr:    exit1,
			want:       gotest.BuildFailed,
			wantCode:   1,
			wantOutput: "./broken_test.go:2:33: undefined: undefined\n",
		},
		{
			name:       "a package failure outside any test is Errored",
			stream:     streamPanicOutsideTests,
			exitErr:    exit1,
			want:       gotest.Errored,
			wantCode:   1,
			wantOutput: "panic: boom",
		},
		{
			name:       "a non-zero exit with passing tests is Errored",
			stream:     streamPassed,
			exitErr:    exit1,
			want:       gotest.Errored,
			wantCode:   1,
			wantPassed: []string{"TestAdd", "TestSub", "TestSub/neg"},
		},
		{
			name:     "an error that is not an exit status gives exit code -1",
			stream:   "",
			exitErr:  errors.New("signal: killed"),
			want:     gotest.Errored,
			wantCode: -1,
		},
		{
			name:   "an empty stream ran no test",
			stream: "",
			want:   gotest.NoTests,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := gotest.Parse(strings.NewReader(tc.stream), tc.exitErr)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome, "outcome %s, output:\n%s", res.Outcome, res.Output)
			if diff := cmp.Diff(tc.wantPassed, res.Passed); diff != "" {
				t.Errorf("Passed mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFailed, res.Failed); diff != "" {
				t.Errorf("Failed mismatch (-want +got):\n%s", diff)
			}
			assert.Equal(t, tc.wantCode, res.ExitCode)
			assert.Contains(t, res.Output, tc.wantOutput)
		})
	}
}

// exitError is a real *exec.ExitError with the given status.
func exitError(t *testing.T, code int) error {
	t.Helper()
	err := exec.Command("sh", "-c", "exit "+string(rune('0'+code))).Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, code, ee.ExitCode())
	return err
}

func TestParseKeepsTheOutputInOrder(t *testing.T) {
	res, err := gotest.Parse(strings.NewReader(streamTestsFailed), nil)
	require.NoError(t, err)
	assert.Equal(t, "    fix_test.go:11: want 4, got 5\n"+
		"--- FAIL: TestBad/sub (0.00s)\n"+
		"--- FAIL: TestBad (0.00s)\n"+
		"FAIL\n"+
		"FAIL\texample.com/fix\t0.015s\n", res.Output)
}

func TestOutcomeString(t *testing.T) {
	for _, tc := range []struct {
		o    gotest.Outcome
		want string
	}{
		{gotest.Passed, "passed"},
		{gotest.TestsFailed, "tests failed"},
		{gotest.BuildFailed, "build failed"},
		{gotest.NoTests, "no tests ran"},
		{gotest.Errored, "errored"},
	} {
		t.Run("outcome "+tc.want+" has its name", func(t *testing.T) {
			assert.Equal(t, tc.want, tc.o.String())
		})
	}
}

// fixtureModule writes a module example.com/fix with one package and the
// given test file into a temporary directory.
func fixtureModule(t *testing.T, testFile string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/fix\n\ngo 1.22\n",
		"fix.go":      "package fix\n\nfunc Add(a, b int) int { return a + b }\n",
		"fix_test.go": testFile,
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

// runEnv keeps the caller's go configuration out of the fixture runs and
// any network out of reach.
var runEnv = []string{"GOFLAGS=", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local"}

func TestRun(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	const passing = `package fix

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(1, 2); got != 3 {
		t.Fatalf("Add(1, 2) = %d, want 3", got)
	}
}
`
	for _, tc := range []struct {
		name       string
		testFile   string
		args       []string
		want       gotest.Outcome
		wantPassed []string
		wantFailed []string
		wantCode   int
		wantOutput string
		// wantFailure is in the failure output; none when empty.
		wantFailure string
	}{
		{
			name:       "a passing test is Passed",
			testFile:   passing,
			args:       []string{"./..."},
			want:       gotest.Passed,
			wantPassed: []string{"TestAdd"},
		},
		{
			name: "an assertion failure is TestsFailed with the failing test's name",
			testFile: passing + `
func TestAddWrong(t *testing.T) {
	if got := Add(2, 2); got != 5 {
		t.Errorf("Add(2, 2) = %d, want 5", got)
	}
}
`,
			args:        []string{"."},
			want:        gotest.TestsFailed,
			wantPassed:  []string{"TestAdd"},
			wantFailed:  []string{"TestAddWrong"},
			wantCode:    1,
			wantOutput:  "Add(2, 2) = 4, want 5",
			wantFailure: "--- FAIL: TestAddWrong (0.00s)\n    fix_test.go:13: Add(2, 2) = 4, want 5",
		},
		{
			name: "a test file that does not compile is BuildFailed",
			testFile: `package fix

import "testing"

func TestBroken(t *testing.T) { Subtract(1, 2) }
`,
			args:        []string{"."},
			want:        gotest.BuildFailed,
			wantCode:    1,
			wantOutput:  "undefined: Subtract",
			wantFailure: "./fix_test.go:5:33: undefined: Subtract",
		},
		{
			name:       "a -run that matches nothing is NoTests",
			testFile:   passing,
			args:       []string{".", "-run", "^TestNothing$"},
			want:       gotest.NoTests,
			wantOutput: "no tests to run",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := fixtureModule(t, tc.testFile)
			res, err := gotest.Run(dir, runEnv, tc.args...)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome, "outcome %s, output:\n%s", res.Outcome, res.Output)
			if diff := cmp.Diff(tc.wantPassed, res.Passed); diff != "" {
				t.Errorf("Passed mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFailed, res.Failed); diff != "" {
				t.Errorf("Failed mismatch (-want +got):\n%s", diff)
			}
			assert.Equal(t, tc.wantCode, res.ExitCode)
			assert.Contains(t, res.Output, tc.wantOutput)
			if tc.wantFailure == "" {
				assert.Empty(t, res.FailureOutput())
			} else {
				// A test's duration is whatever the machine took.
				assert.Contains(t, testDuration.ReplaceAllString(res.FailureOutput(), "(0.00s)"), tc.wantFailure)
			}
			assert.Positive(t, res.Elapsed)
		})
	}
}

// testDuration is the duration go test prints after a test's name.
var testDuration = regexp.MustCompile(`\([0-9]+\.[0-9]+s\)`)

func TestRunWithoutAGoCommandIsAnError(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	res, err := gotest.Run(t.TempDir(), runEnv, ".")
	require.Error(t, err)
	assert.Nil(t, res)
	assert.Contains(t, err.Error(), "go test -json -count=1 .")
}

// TestRunFindsSourcesUnderTrimpath: a test built with -trimpath sees its
// own source path relative to the module, as upstream's kube-apiserver
// test server does; under Run, TEST_SRCDIR/TEST_WORKSPACE joined with that
// path is the real file, which is how the test server finds its
// certificate fixtures. The directory is gone after the run.
func TestRunFindsSourcesUnderTrimpath(t *testing.T) {
	dir := fixtureModule(t, `package fix

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestOwnSource(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	if filepath.IsAbs(file) {
		t.Fatalf("%s is absolute: not built with -trimpath", file)
	}
	path := filepath.Join(os.Getenv("TEST_SRCDIR"), os.Getenv("TEST_WORKSPACE"), file)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("source %s not found from TEST_SRCDIR: %v", file, err)
	}
	t.Logf("srcdir %s", os.Getenv("TEST_SRCDIR"))
}
`)
	env := []string{"GOFLAGS=-trimpath", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local"}
	res, err := gotest.Run(dir, env, "-v", ".")
	require.NoError(t, err)
	require.Equal(t, gotest.Passed, res.Outcome, res.Output)
	m := regexp.MustCompile(`srcdir (\S+)`).FindStringSubmatch(res.Output)
	require.NotNil(t, m, res.Output)
	assert.NoDirExists(t, m[1], "the source directory is removed after the run")
}
