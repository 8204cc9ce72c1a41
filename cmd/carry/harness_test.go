package main

// The tests of this package run the carry binary, built once per test
// binary, in fixture repositories (a temporary directory with patches/ and
// CHANGELOG.md; carry's root is its working directory) against a local
// module proxy that serves a small fake k8s.io/kubernetes
// (internal/fixture). Nothing goes to the network, and nothing of this
// repository is touched.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/tree"
)

var (
	buildOnce sync.Once
	binDir    string
	carryBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// carryBinary builds cmd/carry on first use (go build from the repository
// root, ../.. from here).
func carryBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "carry-test-bin-")
		if buildErr != nil {
			return
		}
		carryBin = filepath.Join(binDir, "carry")
		cmd := exec.Command("go", "build", "-o", carryBin, "./cmd/carry")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/carry: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return carryBin
}

// The fixture's upstream: three numbered files; the releases change them
// as each test needs.
func upstreamFiles(replace ...string) map[string]string {
	files := map[string]string{
		"a.txt": fixture.Numbered(20),
		"b.txt": fixture.Numbered(20),
		"c.txt": fixture.Numbered(20),
	}
	for i := 0; i+1 < len(replace); i += 2 {
		files[replace[i]] = replace[i+1]
	}
	return files
}

// fixturePatch is one commit of line v1.0's series: it changes one line of
// one file.
type fixturePatch struct {
	subject, file, from, to string
}

func (p fixturePatch) name() string { return p.subject + ".patch" }

// v10Series is the series of line v1.0: alpha.patch, bravo.patch and
// charlie.patch (the export names them after their subjects).
var v10Series = []fixturePatch{
	{"alpha", "a.txt", "line 5\n", "line 5 alpha\n"},
	{"bravo", "b.txt", "line 10\n", "line 10 bravo\n"},
	{"charlie", "c.txt", "line 15\n", "line 15 charlie\n"},
}

const (
	authorDate = "2026-03-01T10:00:00Z"
	// changelog is CHANGELOG.md before any command.
	changelog = "# Changelog\n\nWhat changed in each fork release.\n\n## v0.9.0-carry.2 (line v0.9)\n\n- an older release\n"
)

// devEnv is the git identity of the developer who commits in the patched
// tree (the tool's own git calls use their own).
var devEnv = []string{
	"GIT_AUTHOR_NAME=Fixture Dev", "GIT_AUTHOR_EMAIL=dev@example.invalid",
	"GIT_COMMITTER_NAME=Fixture Dev", "GIT_COMMITTER_EMAIL=dev@example.invalid",
	"GIT_AUTHOR_DATE=" + authorDate, "GIT_COMMITTER_DATE=" + authorDate,
}

// repo is a fixture repository.
type repo struct {
	t     *testing.T
	root  string
	proxy *fixture.Proxy
	env   []string
}

// newRepo makes an empty repository (only CHANGELOG.md) whose carry uses
// proxy through tr.
func newRepo(t *testing.T, proxy *fixture.Proxy, tr fixture.Transport) *repo {
	t.Helper()
	r := &repo{t: t, root: t.TempDir(), proxy: proxy, env: proxy.Env(t, tr)}
	fixture.WriteFiles(t, r.root, map[string]string{"CHANGELOG.md": changelog})
	return r
}

// run runs carry with args in the repository; extraEnv is added to its
// environment. It returns what carry printed (stdout and stderr, in order)
// and its exit code.
func (r *repo) runEnv(extraEnv []string, args ...string) (string, int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, carryBinary(r.t), args...)
	cmd.Dir = r.root
	cmd.Env = append(append([]string(nil), r.env...), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	r.t.Fatalf("carry %s: %v\n%s", strings.Join(args, " "), err, out.String())
	return "", -1
}

func (r *repo) run(args ...string) (string, int) {
	r.t.Helper()
	return r.runEnv(nil, args...)
}

// ok runs carry and requires it to succeed.
func (r *repo) ok(args ...string) string {
	r.t.Helper()
	out, code := r.run(args...)
	require.Equal(r.t, 0, code, "carry %s failed:\n%s", strings.Join(args, " "), out)
	return out
}

// fail runs carry and requires it to fail with exit code 1.
func (r *repo) fail(args ...string) string {
	r.t.Helper()
	out, code := r.run(args...)
	require.Equal(r.t, 1, code, "carry %s: want exit code 1:\n%s", strings.Join(args, " "), out)
	return out
}

func (r *repo) line(name string) line.Line { return line.Line{Root: r.root, Name: name} }

func (r *repo) path(rel string) string { return filepath.Join(r.root, filepath.FromSlash(rel)) }

func (r *repo) read(rel string) string {
	r.t.Helper()
	return fixture.ReadFile(r.t, r.path(rel))
}

// snapshot is every repository file outside _output: the line folders
// (with any staging or journal file under patches/) and CHANGELOG.md.
func (r *repo) snapshot() map[string]string {
	r.t.Helper()
	return fixture.Snapshot(r.t, r.root, "_output")
}

// fetch assembles line name's pinned upstream into its patched tree, as
// scripts/fetch.sh does: `carry assemble` and `carry init-tree` into a
// temporary directory, renamed into place.
func (r *repo) fetch(name string) *tree.Tree {
	r.t.Helper()
	l := r.line(name)
	require.NoError(r.t, os.MkdirAll(filepath.Dir(l.TreeDir()), 0o755))
	tmp, err := os.MkdirTemp(filepath.Dir(l.TreeDir()), ".kubernetes.fetch.")
	require.NoError(r.t, err)
	out := r.ok("--line", name, "assemble", tmp)
	assert.Contains(r.t, out, "fetch: [1/1] k8s.io/kubernetes ")
	out = r.ok("--line", name, "init-tree", tmp)
	assert.Contains(r.t, out, "fetch: "+name+": committing "+tmp+" as \"upstream ")
	require.NoError(r.t, os.Rename(tmp, l.TreeDir()))
	tr, err := tree.Open(l.TreeDir())
	require.NoError(r.t, err)
	return tr
}

// commit commits the fixture patch p in the tree as the developer.
func commit(t *testing.T, tr *tree.Tree, p fixturePatch) {
	t.Helper()
	content := fixture.ReadFile(t, filepath.Join(tr.Dir, p.file))
	require.Contains(t, content, p.from)
	fixture.WriteFiles(t, tr.Dir, map[string]string{p.file: strings.Replace(content, p.from, p.to, 1)})
	g := tree.Git{Dir: tr.Dir, Env: devEnv}
	_, err := g.Run("add", "-A")
	require.NoError(t, err)
	_, err = g.RunInput([]byte(fixture.Message(p.subject)), "commit", "-q", "-F", "-")
	require.NoError(t, err)
}

// startV10 starts line v1.0 on v1.0.0, fetches its patched tree, commits
// v10Series in it and exports it: the state a developer leaves.
func (r *repo) startV10() *tree.Tree {
	r.t.Helper()
	r.ok("pin", "v1.0.0")
	tr := r.fetch("v1.0")
	for _, p := range v10Series {
		commit(r.t, tr, p)
	}
	out := r.ok("--line", "v1.0", "export")
	require.Contains(r.t, out, "export: v1.0: 3 written, 0 unchanged, 0 removed")
	return tr
}

// treeState is what a patched tree holds: HEAD, status, apply's records
// and every file.
type treeState struct {
	Head, Status, Applied string
	Files                 map[string]string
}

func stateOf(t *testing.T, dir string) treeState {
	t.Helper()
	tr, err := tree.Open(dir)
	require.NoError(t, err)
	head, err := tr.Line("rev-parse", "HEAD")
	require.NoError(t, err)
	status, err := tr.Run("status", "--porcelain", "--untracked-files=all")
	require.NoError(t, err)
	applied, _ := os.ReadFile(filepath.Join(dir, ".git", "kube-carry-applied"))
	return treeState{Head: head, Status: status, Applied: string(applied), Files: fixture.Snapshot(t, dir)}
}

// commitsOf are the subjects of the tree's commits, upstream first.
func commitsOf(t *testing.T, tr *tree.Tree) []string {
	t.Helper()
	out, err := tr.Line("log", "--reverse", "--format=%s", "HEAD")
	require.NoError(t, err)
	return strings.Split(out, "\n")
}

// exportsOf are the tree's commits after upstream exported as patches.
func exportsOf(t *testing.T, tr *tree.Tree) []string {
	t.Helper()
	commits, err := tr.Commits()
	require.NoError(t, err)
	var out []string
	for _, c := range commits {
		data, err := tr.FormatPatch(c)
		require.NoError(t, err)
		out = append(out, string(data))
	}
	return out
}

// resolve finishes the git am stopped in the session tree dir with the
// file's content resolved to content.
func resolve(t *testing.T, dir, file, content string) {
	t.Helper()
	require.Contains(t, fixture.ReadFile(t, filepath.Join(dir, file)), "<<<<<<<", "the conflict is left to resolve")
	fixture.WriteFiles(t, dir, map[string]string{file: content})
	g := tree.Git{Dir: dir, Env: devEnv}
	_, err := g.Run("add", file)
	require.NoError(t, err)
	_, err = g.Run("am", "--continue")
	require.NoError(t, err)
}
