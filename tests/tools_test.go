package tests

import (
	"bytes"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/build"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// TestBinaries checks what `make` built: each binary reports the fork
// version and matches SHA256SUMS.
func TestBinaries(t *testing.T) {
	want := strings.TrimSpace(carryOut(t, root, "version"))
	l := load(t)
	head, err := l.tree.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	for _, b := range build.Binaries {
		t.Run(b, func(t *testing.T) {
			out, err := exec.Command(filepath.Join(ln.BinDir(), b), "--version").CombinedOutput()
			require.NoError(t, err, "%s --version: %s", b, out)
			assert.Equal(t, "Kubernetes "+want, strings.TrimSpace(string(out)))
			raw, err := exec.Command(filepath.Join(ln.BinDir(), b), "--version=raw").CombinedOutput()
			require.NoError(t, err, "%s --version=raw: %s", b, raw)
			assert.Contains(t, string(raw), `GitCommit:"`+head+`"`, "the binary is not built from the patched tree's HEAD; run make")
			assert.Contains(t, string(raw), `GitTreeState:"clean"`)
			assert.Contains(t, string(raw), `BuildDate:"`+l.pin.Date.Format("2006-01-02T15:04:05Z")+`"`)
		})
	}
	t.Run("SHA256SUMS", func(t *testing.T) {
		cmd := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
		cmd.Dir = ln.BinDir()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, 2, strings.Count(string(out), ": OK"), "%s", out)
	})
}

// TestFetchRejectsWrongHash changes one character of a staging module's
// hash in UPSTREAM: fetch fails naming the module and leaves no tree, not
// even a partial one.
func TestFetchRejectsWrongHash(t *testing.T) {
	dir := repoCopy(t)
	cl := line.Line{Root: dir, Name: ln.Name}
	p, err := pin.ReadFile(cl.PinFile())
	require.NoError(t, err)
	var victim pin.Module
	for _, m := range p.Modules {
		if m.Path == "k8s.io/api" {
			victim = m
		}
	}
	require.NotEmpty(t, victim.Sum, "k8s.io/api is pinned")
	data, err := os.ReadFile(cl.PinFile())
	require.NoError(t, err)
	wrong := flipChar(victim.Sum)
	require.NoError(t, os.WriteFile(cl.PinFile(), bytes.Replace(data, []byte(victim.Sum), []byte(wrong), 1), 0o644))

	out, err := run(dir, "scripts/fetch.sh")
	require.Error(t, err, "fetch must fail:\n%s", out)
	assert.Contains(t, out, "k8s.io/api v0.")
	assert.Contains(t, out, "checksum mismatch")
	assert.Contains(t, out, wrong)
	assert.NoDirExists(t, cl.TreeDir())
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(cl.TreeDir()), ".kubernetes*"))
	assert.Empty(t, left, "fetch left a partial tree behind")
}

// TestApplyRefusesMissingPatch: a series line naming a missing file fails
// with patches/<line>/series:LINE before the tree is touched.
func TestApplyRefusesMissingPatch(t *testing.T) {
	dir := repoCopy(t)
	cl := line.Line{Root: dir, Name: ln.Name}
	f, err := os.OpenFile(cl.SeriesFile(), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("no-such-change.patch\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	data, err := os.ReadFile(cl.SeriesFile())
	require.NoError(t, err)
	n := strings.Count(string(data), "\n")

	out, err := run(dir, "scripts/apply.sh")
	require.Error(t, err, "apply must fail:\n%s", out)
	dirRel := "patches/" + ln.Name
	assert.Contains(t, out, dirRel+"/series:"+strconv.Itoa(n)+": patch "+dirRel+"/no-such-change.patch does not exist")
}

// TestApplyRefusesDirtyTree: an uncommitted edit in the patched tree makes
// apply refuse, and the edit is still there afterwards.
func TestApplyRefusesDirtyTree(t *testing.T) {
	l := load(t)
	head, err := l.tree.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	edit := filepath.Join(l.tree.Dir, "kube-carry-test-local-edit.txt")
	require.NoError(t, os.WriteFile(edit, []byte("work in progress\n"), 0o644))
	t.Cleanup(func() { os.Remove(edit) })

	out, err := run(root, "scripts/apply.sh")
	require.Error(t, err, "apply must refuse a dirty tree:\n%s", out)
	assert.Contains(t, out, "uncommitted changes")
	assert.Contains(t, out, "kube-carry-test-local-edit.txt")
	got, err := os.ReadFile(edit)
	require.NoError(t, err)
	assert.Equal(t, "work in progress\n", string(got), "the local edit was changed")
	after, err := l.tree.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	assert.Equal(t, head, after, "apply moved HEAD of a dirty tree")
}

func flipChar(sum string) string {
	b := []byte(sum)
	i := len("h1:") + 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// repoCopy copies what the scripts need (not _output) into a temp dir.
func repoCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"go.mod", "go.sum", "cmd", "internal", "scripts", "patches"} {
		cmd := exec.Command("cp", "-r", rootPath(p), filepath.Join(dir, p))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	return dir
}

// run runs a script in dir and returns what it printed on both streams.
func run(dir, script string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(dir, script), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func carryOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", "./cmd/carry"}, args...)...)
	cmd.Dir = dir
	// The settings of every go command (internal/build): built with
	// others, carry's packages would be compiled again.
	cmd.Env = append(os.Environ(), build.Env()...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "carry %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// TestReproducibleBuild rebuilds kube-scheduler from a worktree of the
// patched tree at another path, with the build script's flags: the binary
// is byte-identical to the one in _output/<line>/bin (no path, time or host in it).
func TestReproducibleBuild(t *testing.T) {
	l := load(t)
	head, err := l.tree.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	wt := worktree(t, l.tree, head)
	out := filepath.Join(t.TempDir(), "kube-scheduler")
	buildCommand(t, wt.Dir, "./cmd/kube-scheduler", out)

	sums, err := os.ReadFile(filepath.Join(ln.BinDir(), "SHA256SUMS"))
	require.NoError(t, err)
	got := exec.Command("sha256sum", out)
	gotOut, err := got.Output()
	require.NoError(t, err)
	gotSum := strings.Fields(string(gotOut))[0]
	assert.Contains(t, string(sums), gotSum+"  kube-scheduler", "a rebuild elsewhere differs from %s", filepath.Join(ln.BinDir(), "kube-scheduler"))
}

// buildCommand builds the command pkg of the tree in dir into out with the
// build script's flags and version stamp.
func buildCommand(t *testing.T, dir, pkg, out string) {
	t.Helper()
	ldflags := strings.TrimSpace(carryOut(t, root, "ldflags"))
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), goEnv...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "building %s: %s", pkg, b)
}

// TestEtcdBinary: `make` built the etcd that upstream's hack/lib/etcd.sh
// names for the pin, for the integration tests.
func TestEtcdBinary(t *testing.T) {
	want, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(carryOut(t, root, "etcd-version")), "v"), " ")
	out, err := exec.Command(filepath.Join(ln.BinDir(), "etcd"), "--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "etcd Version: "+want+"\n")
}

// TestFetchFromGitVerifiesEveryModule fetches the line's upstream with
// UPSTREAM_SOURCE=git from a git repository holding what the module zips
// hold (the tree `carry assemble` makes), so every module directory must
// hash to the pin; then from one whose k8s.io/api differs by one file: the
// fetch fails naming the module and leaves no tree.
func TestFetchFromGitVerifiesEveryModule(t *testing.T) {
	l := load(t)
	version := l.pin.Version
	work := filepath.Join(t.TempDir(), "work")
	_ = carryOut(t, root, "assemble", work)
	upstream := filepath.Join(t.TempDir(), "kubernetes.git")
	git := func(t *testing.T, dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@invalid"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git(t, work, "init", "-q", "-b", "main")
	// What upstream's git stores: its CRLF test data as CRLF.
	require.NoError(t, tree.KeepBytes(work))
	git(t, work, "add", "-A", "-f", ".")
	git(t, work, "commit", "-q", "-m", "upstream "+version)
	git(t, work, "tag", version)
	git(t, work, "init", "-q", "--bare", upstream)
	git(t, work, "push", "-q", upstream, "main", "refs/tags/"+version)

	fetch := func(t *testing.T) (string, error, line.Line) {
		dir := repoCopy(t)
		cl := line.Line{Root: dir, Name: ln.Name}
		cmd := exec.Command(filepath.Join(dir, "scripts/fetch.sh"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "UPSTREAM_SOURCE=git", "UPSTREAM_GIT_URL=file://"+upstream)
		out, err := cmd.CombinedOutput()
		return string(out), err, cl
	}
	t.Run("the upstream release", func(t *testing.T) {
		out, err, cl := fetch(t)
		require.NoError(t, err, "%s", out)
		assert.Contains(t, out, "verify: [")
		assert.DirExists(t, cl.TreeDir())
	})
	t.Run("one file of k8s.io/api changed", func(t *testing.T) {
		doc := filepath.Join(work, "staging/src/k8s.io/api/core/v1/doc.go")
		f, err := os.OpenFile(doc, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString("// changed\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		git(t, work, "commit", "-q", "-am", "change k8s.io/api")
		git(t, work, "tag", "-f", version)
		git(t, work, "push", "-q", "-f", upstream, "refs/tags/"+version)

		out, err, cl := fetch(t)
		require.Error(t, err, "fetch must fail:\n%s", out)
		assert.Contains(t, out, "k8s.io/api v0.")
		assert.Contains(t, out, "checksum mismatch")
		assert.NoDirExists(t, cl.TreeDir())
		left, _ := filepath.Glob(filepath.Join(filepath.Dir(cl.TreeDir()), ".kubernetes*"))
		assert.Empty(t, left, "fetch left a partial tree behind")
	})
}

// TestToolsScript: where `make tools` cannot install what is missing, it
// fails naming the Debian packages and why, and installs nothing. The
// machine's tools are hidden by a PATH of fakes.
func TestToolsScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		fakes map[string]string // command -> script body
		want  string
	}{
		{
			name: "no apt-get",
			want: "there is no apt-get (this is not a Debian or Ubuntu machine)",
		},
		{
			name: "not root and no sudo",
			fakes: map[string]string{
				"apt-get": "echo apt-get must not run >&2; exit 3",
				"id":      `case "$1" in -u) echo 1000;; -un) echo builder;; esac`,
			},
			want: "installing needs root, and this is user builder without sudo",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			for name, body := range tc.fakes {
				require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!"+bash+"\n"+body+"\n"), 0o755))
			}
			cmd := exec.Command(bash, rootPath("scripts/tools.sh"))
			cmd.Env = append(os.Environ(), "PATH="+bin)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "tools.sh must fail:\n%s", out)
			assert.Contains(t, string(out), "tools: missing Debian packages: shellcheck skopeo")
			assert.Contains(t, string(out), tc.want)
			assert.NotContains(t, string(out), "apt-get must not run")
		})
	}
}

// TestMakePassesPatterns: RUN, PERF_BENCH and PERF_UPSTREAM_BENCH, regular
// expressions, reach the scripts as written when given on make's command
// line, where make
// would otherwise expand an anchor followed by a character as a variable
// (`$ `, `$|`): `make perf PERF_BENCH='…plain$ …csistoragecapacity$'`
// ran one benchmark named by both patterns joined, which matched nothing.
func TestMakePassesPatterns(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	require.NoError(t, err, "make is missing")
	show := filepath.Join(t.TempDir(), "show.mk")
	require.NoError(t, os.WriteFile(show, []byte(".PHONY: show-patterns\nshow-patterns:\n\t@printf '%s\\n' \"RUN=[$$RUN]\" \"PERF_BENCH=[$$PERF_BENCH]\" \"PERF_UPSTREAM_BENCH=[$$PERF_UPSTREAM_BENCH]\"\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{
			name: "command line",
			args: []string{"RUN=^TestSeries/(lint$|a)$", "PERF_BENCH=a/variant=plain$ b/variant=(x|y)$", "PERF_UPSTREAM_BENCH=volumes:a/b$ misc:c$"},
			want: "RUN=[^TestSeries/(lint$|a)$]\nPERF_BENCH=[a/variant=plain$ b/variant=(x|y)$]\nPERF_UPSTREAM_BENCH=[volumes:a/b$ misc:c$]\n",
		},
		{
			name: "environment",
			env:  []string{"RUN=^TestA$", "PERF_BENCH=a$ b$", "PERF_UPSTREAM_BENCH=volumes:a$ misc:b$"},
			want: "RUN=[^TestA$]\nPERF_BENCH=[a$ b$]\nPERF_UPSTREAM_BENCH=[volumes:a$ misc:b$]\n",
		},
		{
			name: "unset",
			want: "RUN=[]\nPERF_BENCH=[]\nPERF_UPSTREAM_BENCH=[]\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-s", "-f", rootPath("Makefile"), "-f", show, "show-patterns"}, tc.args...)
			cmd := exec.Command(makeBin, args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "RUN=", "PERF_BENCH=", "PERF_UPSTREAM_BENCH=")
			cmd.Env = append(cmd.Env, tc.env...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Equal(t, tc.want, string(out))
		})
	}
}

// TestPerfProfileKinds: PERF_PROFILE picks scheduler_perf's profiles of
// each run's measured phase by name, 1 being the CPU profile it always
// meant; an empty or unknown name is an error that names it.
func TestPerfProfileKinds(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  string
		// wantErr is in the error; none when empty.
		wantErr string
	}{
		{value: "0", want: ""},
		{value: "1", want: "-perf-cpuprofile\n"},
		{value: "cpu,mutex", want: "-perf-cpuprofile\n-perf-mutexprofile\n"},
		{value: "block,mem,trace", want: "-perf-blockprofile\n-perf-memprofile\n-perf-trace\n"},
		{value: "cpu,mutexes", wantErr: "PERF_PROFILE=cpu,mutexes: 'mutexes' is not a profile"},
		{value: "cpu,", wantErr: "PERF_PROFILE=cpu,: '' is not a profile"},
		{value: "cpu,,mutex", wantErr: "PERF_PROFILE=cpu,,mutex: '' is not a profile"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			cmd := exec.Command("bash", "-c", `source scripts/lib.sh && perf_profile_args && if ((${#perf_profile[@]})); then printf '%s\n' "${perf_profile[@]}"; fi`)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "PERF_PROFILE="+tc.value)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if tc.wantErr != "" {
				require.Error(t, err, "stdout:\n%s", stdout.String())
				assert.Contains(t, stderr.String(), tc.wantErr)
				return
			}
			require.NoError(t, err, "stderr:\n%s", stderr.String())
			assert.Equal(t, tc.want, stdout.String())
		})
	}
}

// TestPerfProfileBadValue: make perf and make perf-upstream reject a
// PERF_PROFILE that names no profile before they build anything; such a
// value, like yes, used to run without profiles. Each run also has a
// second bad input that its script checks later (an unknown PERF_NODES, a
// PERF_UPSTREAM_BENCH pair without a package), so that without the check
// the test fails at once instead of starting a run.
func TestPerfProfileBadValue(t *testing.T) {
	for _, tc := range []struct {
		script string
		env    []string
	}{
		{script: "scripts/perf.sh", env: []string{"PERF_NODES=7"}},
		{script: "scripts/perf-upstream.sh", env: []string{"PERF_UPSTREAM_BENCH=no-package"}},
	} {
		t.Run(filepath.Base(tc.script), func(t *testing.T) {
			cmd := exec.Command(rootPath(tc.script))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "PERF_PROFILE=yes")
			cmd.Env = append(cmd.Env, tc.env...)
			b, err := cmd.CombinedOutput()
			require.Error(t, err, "%s must fail:\n%s", tc.script, b)
			assert.Contains(t, string(b), "PERF_PROFILE=yes: 'yes' is not a profile")
		})
	}
}

// TestCarryBuildSettings: scripts/lib.sh builds carry with the go settings
// of every other go command (internal/build/settings.env), as go version
// -m reads them back from the binary: built with others, the packages
// carry shares with the tests would be compiled twice in a cold run.
func TestCarryBuildSettings(t *testing.T) {
	bin := rootPath("_output/tools/carry")
	require.FileExists(t, bin, "scripts/lib.sh builds carry")
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	require.NoError(t, err, "%s", out)
	recorded := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(l), "\t")
		if len(f) == 2 && f[0] == "build" {
			k, v, _ := strings.Cut(f[1], "=")
			recorded[k] = v
		}
	}
	for _, s := range build.Settings {
		switch s.Name {
		case "GOFLAGS":
			for _, flag := range strings.Fields(s.Value) {
				switch flag {
				case "-trimpath":
					assert.Equal(t, "true", recorded["-trimpath"], "carry built without -trimpath:\n%s", out)
				case "-buildvcs=false":
					assert.NotContains(t, recorded, "vcs", "carry built with a VCS stamp:\n%s", out)
				default:
					t.Errorf("settings.env: GOFLAGS flag %s: this test does not know how go version -m records it", flag)
				}
			}
		default:
			assert.Equal(t, s.Value, recorded[s.Name], "carry built with %s=%s:\n%s", s.Name, recorded[s.Name], out)
		}
	}
}

// TestTestScriptStopsOnTerm: scripts/test.sh (make test) runs its steps,
// and without LINE the other lines' proofs beside them. A TERM sent to the
// script alone, not to its process group, must stop at once the step it
// waits for, the line proofs and every process under them: bash runs a
// trap only between foreground commands, so a step in the foreground kept
// the script and the line proofs running until the step ended, up to an
// hour later; and with LINE the script had no trap, so the TERM ended bash
// and left the step running. The test runs the script in a copy of the
// repository whose carry, line proofs and go are fakes that wait, each
// with a child. What ignores the TERM is killed after the grace period
// (TEST_STOP_GRACE): before, the script waited for ever for a step that
// ignored it, and left a process under it that ignored it running.
func TestTestScriptStopsOnTerm(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	for _, tool := range []string{"nice", "ionice", "pgrep", "sleep"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "scripts/test.sh needs %s", tool)
	}
	for _, tc := range []stopOnTermCase{
		{name: "newest line and line proofs", line: "", names: []string{"go", "go-child", "line-proofs", "line-proofs-child"}, sig: syscall.SIGTERM, status: 143},
		{name: "one line", line: "v1.37", names: []string{"go", "go-child"}, sig: syscall.SIGTERM, status: 143},
		{name: "ctrl-c", line: "v1.37", names: []string{"go", "go-child"}, sig: syscall.SIGINT, status: 130},
		{name: "hangup", line: "", names: []string{"go", "go-child", "line-proofs", "line-proofs-child"}, sig: syscall.SIGHUP, status: 129},
		{name: "a step that ignores the TERM is killed", line: "v1.37", names: []string{"go", "go-child"}, sig: syscall.SIGTERM, status: 143, ignoreTerm: []string{"go"}},
		{name: "a process under the line proofs that ignores the TERM is killed", line: "", names: []string{"go", "go-child", "line-proofs", "line-proofs-child"}, sig: syscall.SIGTERM, status: 143, ignoreTerm: []string{"line-proofs-child"}},
		{name: "a pid another process has taken since the TERM is not killed", line: "v1.37", names: []string{"go", "go-child"}, sig: syscall.SIGTERM, status: 143, ignoreTerm: []string{"go-child"}, reused: "go-child"},
		{name: "a grace period that is not a number of seconds is an error", line: "v1.37", stopGrace: "3s", status: 1, wantErr: "TEST_STOP_GRACE=3s: want a whole number of seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testScriptStopsOnTerm(t, bash, tc)
		})
	}
}

// stopOnTermCase is a case of TestTestScriptStopsOnTerm.
type stopOnTermCase struct {
	name, line string
	// names are the fakes that run when the signal comes.
	names []string
	sig   syscall.Signal
	// status is the script's exit status: 128 + the signal's number.
	status int
	// ignoreTerm are the fakes among names that ignore a TERM.
	ignoreTerm []string
	// reused, one of ignoreTerm, is a fake whose pid another process has
	// taken when the grace period ends: a fake ps gives another start
	// time for it after its first answer.
	reused string
	// stopGrace is TEST_STOP_GRACE, "3" when empty.
	stopGrace string
	// wantErr is the error the script ends with at once, before it runs
	// anything, with status.
	wantErr string
}

// testScriptStopsOnTerm runs scripts/test.sh with LINE=tc.line, sends it
// tc.sig once the fakes in tc.names run, and checks that it ends with
// tc.status and that none of them is left when it ends: each fake's child
// takes a second to stop after its TERM, and outlives the fake (as the
// e2e test binary, stopping its cluster, outlives go test). The fakes in
// tc.ignoreTerm ignore the TERM: the script kills them after its grace
// period of 3 s, and says so, but for tc.reused, which it leaves alone.
func testScriptStopsOnTerm(t *testing.T, bash string, tc stopOnTermCase) {
	line, names, sig, status, ignoreTerm := tc.line, tc.names, tc.sig, tc.status, tc.ignoreTerm
	dir := t.TempDir()
	fake := filepath.Join(dir, "repo")
	pids := filepath.Join(dir, "pids")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{"scripts", "cmd", "internal", "_output/tools"} {
		require.NoError(t, os.MkdirAll(filepath.Join(fake, d), 0o755))
	}
	require.NoError(t, os.Mkdir(pids, 0o755))
	require.NoError(t, os.Mkdir(bin, 0o755))
	for _, f := range []string{"scripts/test.sh", "scripts/lib.sh"} {
		b, err := os.ReadFile(rootPath(f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(fake, f), b, 0o755))
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		require.NoError(t, os.WriteFile(filepath.Join(fake, f), nil, 0o644))
	}
	// waits writes the pids of the fake and of a child that runs until a
	// TERM and then takes a second to stop, then waits for the child.
	onTerm := func(name string) string {
		if slices.Contains(ignoreTerm, name) {
			return "''"
		}
		return "'sleep 1; exit 0'"
	}
	waits := func(name string) string {
		self, wait := "", "wait\n"
		if slices.Contains(ignoreTerm, name) {
			// It also outlives its child.
			self, wait = "trap '' TERM\n", "while :; do sleep 0.1; done\n"
		}
		return self + "(trap " + onTerm(name+"-child") + " TERM; while :; do sleep 0.1; done) &\necho $! >" + filepath.Join(pids, name+"-child") + "\necho $$ >" + filepath.Join(pids, name) + "\n" + wait
	}
	scripts := map[string]string{
		// Written after cmd/, internal/, go.mod and go.sum: lib.sh does
		// not build it again.
		filepath.Join(fake, "_output/tools/carry"): `case "$1" in
build-env) ;;
lines) echo v1.36 v1.37 ;;
proof-tests) echo '^TestNone$' ;;
*) echo "fake carry: unexpected $*" >&2; exit 2 ;;
esac`,
		filepath.Join(fake, "scripts/line-proofs.sh"): waits("line-proofs"),
		filepath.Join(bin, "go"):                      waits("go"),
	}
	if tc.reused != "" {
		ps, err := exec.LookPath("ps")
		require.NoError(t, err)
		count := filepath.Join(dir, "ps-count")
		scripts[filepath.Join(bin, "ps")] = `if [[ "$*" == "-o lstart= -p $(cat ` + filepath.Join(pids, tc.reused) + ` 2>/dev/null)" ]]; then
	if [[ -e ` + count + ` ]]; then
		echo "Thu Jan  1 00:00:00 1970"
		exit 0
	fi
	touch ` + count + `
fi
exec ` + ps + ` "$@"`
	}
	for path, body := range scripts {
		require.NoError(t, os.WriteFile(path, []byte("#!"+bash+"\n"+body), 0o755))
	}

	// A signal this test was started with ignored (HUP under nohup, INT in
	// a shell's background job) the script inherits ignored, and a shell
	// cannot trap a signal ignored on entry: handled here while the script
	// starts, it starts with the signal at its default.
	handled := make(chan os.Signal, 1)
	signal.Notify(handled, sig)
	defer signal.Stop(handled)
	cmd := exec.Command(bash, filepath.Join(fake, "scripts/test.sh"))
	stopGrace := tc.stopGrace
	if stopGrace == "" {
		stopGrace = "3"
	}
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "LINE="+line, "TEST_STOP_GRACE="+stopGrace)
	// A file, not a pipe: Wait returns when the script ends, not when the
	// last process that holds its output does.
	out := outputFile(filepath.Join(dir, "test.log"))
	f, err := os.Create(string(out))
	require.NoError(t, err)
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	readPID := func(name string) int {
		b, err := os.ReadFile(filepath.Join(pids, name))
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return 0
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		return pid
	}
	if tc.wantErr != "" {
		select {
		case err := <-done:
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "scripts/test.sh with TEST_STOP_GRACE=%s:\n%s", stopGrace, out.String())
			assert.Equal(t, status, exit.ExitCode(), "exit status of scripts/test.sh:\n%s", out.String())
			assert.Contains(t, out.String(), tc.wantErr)
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("scripts/test.sh with TEST_STOP_GRACE=%s did not end within 20s:\n%s", stopGrace, out.String())
		}
		for _, name := range []string{"go", "line-proofs"} {
			assert.Zero(t, readPID(name), "%s ran:\n%s", name, out.String())
		}
		return
	}
	started := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for len(started) < len(names) {
		select {
		case err := <-done:
			t.Fatalf("scripts/test.sh ended (%v) before its step and the line proofs started:\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the fakes did not start in 30s (started: %v):\n%s", started, out.String())
		for _, name := range names {
			if pid := readPID(name); pid != 0 {
				started[name] = pid
			}
		}
	}
	t.Cleanup(func() {
		for _, pid := range started {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	require.NoError(t, cmd.Process.Signal(sig))
	select {
	case err := <-done:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "scripts/test.sh after %v:\n%s", sig, out.String())
		assert.Equal(t, status, exit.ExitCode(), "exit status of scripts/test.sh after %v:\n%s", sig, out.String())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("scripts/test.sh did not end within 20s of a %v sent to it alone, while its step (the tooling's tests) ran:\n%s", sig, out.String())
	}
	for _, name := range names {
		if name == tc.reused {
			assert.True(t, running(started[name]), "%s (pid %d), whose pid another process took, was killed:\n%s", name, started[name], out.String())
			continue
		}
		assert.False(t, running(started[name]), "%s (pid %d) still runs when scripts/test.sh has ended:\n%s", name, started[name], out.String())
	}
	killed := strings.Contains(out.String(), "still running 3 s after a TERM, killing:")
	assert.Equal(t, len(ignoreTerm) > 0 && tc.reused == "", killed, "whether scripts/test.sh says it killed what ignored the TERM:\n%s", out.String())
}

// outputFile is a file a command writes its output to.
type outputFile string

func (o outputFile) String() string {
	b, _ := os.ReadFile(string(o))
	return string(b)
}
