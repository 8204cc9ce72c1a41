package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	// outOfTreeExample is the module of a kube-scheduler with an
	// out-of-tree plugin, outOfTreePlugin, that users build against a
	// line's tree with `make gomod` (its README).
	outOfTreeExample = "examples/out-of-tree-scheduler"
	outOfTreePlugin  = "PreFilterCount"
)

// buildCommandRE is the build command `carry gomod DIR` prints.
var buildCommandRE = regexp.MustCompile(`(?m)^  (cd .* && CGO_ENABLED=0 go build -trimpath -ldflags ".*" \.)$`)

// TestOutOfTreeScheduler builds examples/out-of-tree-scheduler (kube-scheduler
// with an out-of-tree plugin) against the line's patched tree as its README
// says: `carry gomod DIR` writes the go.work, and the build command it
// prints builds the binary. Then: the binary reports the line's fork
// version and the tree's HEAD; the plugin is registered (a profile that
// enables it is accepted, where the line's own kube-scheduler rejects it);
// and the fork's local-dynamic capacity check is active in it: the binary
// smoke test passes with it as the scheduler (as TestSmokeBinary with the
// line's kube-scheduler).
func TestOutOfTreeScheduler(t *testing.T) {
	l := load(t)
	version := strings.TrimSpace(carryOut(t, root, "version"))
	head, err := l.tree.Line("rev-parse", "HEAD")
	require.NoError(t, err)

	dir := filepath.Join(t.TempDir(), "out-of-tree-scheduler")
	cp := exec.Command("cp", "-r", rootPath(outOfTreeExample), dir)
	out, err := cp.CombinedOutput()
	require.NoError(t, err, "%s", out)
	// What `make gomod` and a build left in the repository's copy.
	for _, f := range []string{"go.work", "go.work.sum", "out-of-tree-scheduler"} {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, f)))
	}

	gomod := carryOut(t, root, "gomod", dir)
	t.Logf("carry gomod %s:\n%s", dir, gomod)
	require.Contains(t, gomod, "gomod: wrote "+filepath.Join(dir, "go.work")+": module example.com/out-of-tree-scheduler with line "+ln.Name+"'s patched tree ("+l.tree.Dir+")")
	m := buildCommandRE.FindStringSubmatch(gomod)
	require.NotNil(t, m, "carry gomod printed no build command")

	t.Logf("building the example against %s (the printed command)", l.tree.Dir)
	start := time.Now()
	build := exec.Command("bash", "-c", m[1])
	build.Env = append(os.Environ(), goEnv...)
	out, err = build.CombinedOutput()
	require.NoError(t, err, "building %s with go.work %s:\n%s", outOfTreeExample, filepath.Join(dir, "go.work"), out)
	scheduler := filepath.Join(dir, "out-of-tree-scheduler")
	t.Logf("built %s in %s", scheduler, time.Since(start).Round(time.Second))

	t.Run("plugin unit test", func(t *testing.T) {
		cmd := exec.Command("go", "test", "-count=1", "./prefiltercount/")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), goEnv...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	})

	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(scheduler, "--version").CombinedOutput()
		require.NoError(t, err, "--version: %s", out)
		assert.Equal(t, "Kubernetes "+version, strings.TrimSpace(string(out)))
		raw, err := exec.Command(scheduler, "--version=raw").CombinedOutput()
		require.NoError(t, err, "--version=raw: %s", raw)
		assert.Contains(t, string(raw), `GitCommit:"`+head+`"`, "the example is not stamped with the patched tree's HEAD")
	})

	t.Run("plugin registered", func(t *testing.T) {
		out, err := writeConfigWithPlugin(t, scheduler)
		require.NoError(t, err, "a profile that enables %s is refused:\n%s", outOfTreePlugin, out)
		assert.Contains(t, out, `"Out-of-tree plugin created" plugin="`+outOfTreePlugin+`"`)
		// The control: the line's own kube-scheduler has no such plugin.
		own := filepath.Join(ln.BinDir(), "kube-scheduler")
		out, err = writeConfigWithPlugin(t, own)
		require.Error(t, err, "%s accepts a profile with %s; the check above proves nothing:\n%s", own, outOfTreePlugin, out)
		assert.Contains(t, out, `PreFilterPlugin \"`+outOfTreePlugin+`\" does not exist`)
	})
	smoke(t, l, "TestOutOfTreeScheduler", scheduler)
}

// writeConfigWithPlugin runs scheduler with a profile that enables
// outOfTreePlugin and --write-config-to: the scheduler builds its profiles
// (every enabled plugin's factory runs, an unknown plugin fails), writes
// the configuration and exits, without an API server. It returns the
// scheduler's output.
func writeConfigWithPlugin(t *testing.T, scheduler string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	// Nothing listens there; the scheduler does not connect before exiting.
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: none
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: none
  context:
    cluster: none
    user: none
users:
- name: none
  user:
    token: none
current-context: none
`), 0o600))
	config := filepath.Join(dir, "kube-scheduler.yaml")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    preFilter:
      enabled:
      - name: %s
`, kubeconfig, outOfTreePlugin), 0o600))
	written := filepath.Join(dir, "written.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, scheduler, "--config="+config, "--secure-port=0", "--write-config-to="+written).CombinedOutput()
	if err != nil {
		return string(out), err
	}
	data, err := os.ReadFile(written)
	require.NoError(t, err, "%s exited 0 but wrote no configuration:\n%s", scheduler, out)
	assert.Regexp(t, `(?m)^    preFilter:\n      enabled:\n(      - name: .*\n        weight: .*\n)*      - name: `+outOfTreePlugin+`\n`, string(data), "the written configuration does not enable %s", outOfTreePlugin)
	return string(out), nil
}
