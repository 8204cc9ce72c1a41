package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/gomod"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// gomodRepo is a repository with line v1.0, whose patched tree is the
// small Kubernetes tree of fixture.KubernetesTree (a git repository, as
// fetch makes it), and line v1.1 without a tree.
func gomodRepo(t *testing.T) *repo {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LINE=") {
			env = append(env, kv)
		}
	}
	r := &repo{t: t, root: t.TempDir(), env: env}
	for _, v := range []string{"v1.0", "v1.1"} {
		fixture.WriteFiles(t, r.root, map[string]string{
			"patches/" + v + "/UPSTREAM": "version " + v + ".0\ndate 2026-02-10T12:53:36Z\n" +
				"module k8s.io/kubernetes " + v + ".0 h1:Yy6R4QB8C9kJPp25GFqEvX5XQwY5qzKeqD0Xx6oAcmk=\n",
			"patches/" + v + "/series":   "",
			"patches/" + v + "/REVISION": "3\n",
		})
	}
	dir := r.line("v1.0").TreeDir()
	fixture.KubernetesTree(t, dir)
	_, err := tree.Init(dir, "v1.0.0", time.Date(2026, 2, 10, 12, 53, 36, 0, time.UTC))
	require.NoError(t, err)
	return r
}

// userDir is a module that prints what the tree's scheduler package says.
func userDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "my scheduler")
	fixture.WriteFiles(t, dir, map[string]string{
		"go.mod":  "module example.com/myscheduler\n\ngo 1.24\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"k8s.io/kubernetes/pkg/scheduler\"\n)\n\nfunc main() { fmt.Println(scheduler.Plugins()) }\n",
	})
	return dir
}

// goEnvOffline is the environment of the go commands that build the user's
// module: no module proxy (everything comes from the tree), the local
// toolchain, no workspace or flags from outside.
func goEnvOffline() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains([]string{"GOFLAGS", "GOWORK", "GOPROXY", "GOSUMDB", "GOTOOLCHAIN", "LINE"}, name) {
			env = append(env, kv)
		}
	}
	return append(env, "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
}

func runIn(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = goEnvOffline()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s in %s:\n%s", name, strings.Join(args, " "), dir, out)
	return string(out)
}

// TestGomodReplaceBlock: `carry gomod` prints a replace block that, put in
// a module's go.mod, builds the module against the tree's packages.
func TestGomodReplaceBlock(t *testing.T) {
	r := gomodRepo(t)
	out := r.ok("--line", "v1.0", "gomod")
	treeDir, err := filepath.Abs(r.line("v1.0").TreeDir())
	require.NoError(t, err)
	assert.Equal(t, "// kube-carry line v1.0 (v1.0.0-carry.3): k8s.io/kubernetes and its 2 staging modules from the patched tree "+treeDir+".\n"+
		"// Put this in your go.mod instead of any replace of these modules, then run `go mod tidy`.\n"+
		"replace (\n"+
		"\tk8s.io/kubernetes => "+treeDir+"\n"+
		"\tk8s.io/api => "+treeDir+"/staging/src/k8s.io/api\n"+
		"\tk8s.io/apimachinery => "+treeDir+"/staging/src/k8s.io/apimachinery\n"+
		")\n", out)

	dir := userDir(t)
	f, err := os.OpenFile(filepath.Join(dir, "go.mod"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\n" + out)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	runIn(t, dir, "go", "mod", "tidy")
	runIn(t, dir, "go", "build", "-o", "myscheduler", ".")
	assert.Equal(t, "VolumeBinding(local-dynamic patched)\n", runIn(t, dir, "./myscheduler"))
}

// TestGomodWork: `carry gomod DIR` writes DIR/go.work, and the build
// command it prints builds the module in DIR against the tree, stamped
// with the line's version flags.
func TestGomodWork(t *testing.T) {
	r := gomodRepo(t)
	dir := userDir(t)
	out := r.ok("--line", "v1.0", "gomod", dir)
	work := filepath.Join(dir, "go.work")
	assert.Contains(t, out, "gomod: wrote "+work+": module example.com/myscheduler with line v1.0's patched tree (")
	assert.Contains(t, out, "): k8s.io/kubernetes and 2 staging modules\n")
	data := fixture.ReadFile(t, work)
	assert.True(t, strings.HasPrefix(data, gomod.WorkMarker+"\n// Line v1.0 (v1.0.0-carry.3), patched tree "), "%s", data)
	assert.Contains(t, data, "\ngo 1.25.0\n\ngodebug default=go1.25\n\nuse (\n\t.\n")

	m := regexp.MustCompile(`(?m)^  (cd .* && CGO_ENABLED=0 go build -trimpath -ldflags ".*" \.)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "no build command in:\n%s", out)
	assert.Contains(t, m[1], "-X 'k8s.io/component-base/version.gitVersion=v1.0.0-carry.3'")
	assert.Contains(t, m[1], "-X 'k8s.io/component-base/version.buildDate=2026-02-10T12:53:36Z'")
	// The directory has a space: the printed command must quote it.
	runIn(t, t.TempDir(), "bash", "-c", m[1])
	assert.Equal(t, "VolumeBinding(local-dynamic patched)\n", runIn(t, dir, "./myscheduler"))

	t.Run("a second run rewrites its go.work", func(t *testing.T) {
		r.ok("--line", "v1.0", "gomod", dir)
		assert.Equal(t, data, fixture.ReadFile(t, work))
	})
}

func TestGomodFailures(t *testing.T) {
	r := gomodRepo(t)
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
		want string
	}{
		{"the line has no tree", func(t *testing.T) []string { return []string{"--line", "v1.1", "gomod"} },
			"carry gomod: line v1.1 has no patched tree (" + filepath.FromSlash("_output/v1.1/src/kubernetes") + "): run `make LINE=v1.1` first\n"},
		{"the line has no tree, with a directory", func(t *testing.T) []string { return []string{"--line", "v1.1", "gomod", userDir(t)} },
			"run `make LINE=v1.1` first"},
		{"the directory has no go.mod", func(t *testing.T) []string { return []string{"--line", "v1.0", "gomod", t.TempDir()} },
			"has no go.mod: give the directory of a Go module"},
		{"the directory does not exist", func(t *testing.T) []string {
			return []string{"--line", "v1.0", "gomod", filepath.Join(t.TempDir(), "nope")}
		}, "nope: no such directory"},
		{"two directories", func(t *testing.T) []string { return []string{"--line", "v1.0", "gomod", "a", "b"} },
			"usage: carry gomod [DIR]"},
		{"a go.work of the user's", func(t *testing.T) []string {
			dir := userDir(t)
			fixture.WriteFiles(t, dir, map[string]string{"go.work": "go 1.24\n\nuse .\n"})
			return []string{"--line", "v1.0", "gomod", dir}
		}, "go.work exists and was not written by `make gomod`; it is left as it is"},
		{"an unknown line", func(t *testing.T) []string { return []string{"--line", "v9.9", "gomod"} },
			"LINE=v9.9: no such release line; the lines are: v1.0, v1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := r.fail(tc.args(t)...)
			assert.Contains(t, out, tc.want)
		})
	}
}
