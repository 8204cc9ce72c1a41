package harness

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/kube-carry/kube-carry/internal/gotest"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// GitProber runs suites at the commits of a git repository (the patched
// tree): at its HEAD in the repository's own directory, at other commits in
// one worktree that it moves from commit to commit. The go command runs
// with the same environment everywhere, so the build cache is shared. Every
// run's full log is written to Logs, under the commit's patch.
type GitProber struct {
	Repo tree.Git
	// Head is the repository's HEAD commit.
	Head string
	// Worktree is the directory of the worktree for the other commits; it
	// is made on first use and removed by Close.
	Worktree string
	// Env is added to the go command's environment.
	Env []string
	// Flags are go test flags put before the package (e.g. -timeout).
	Flags []string
	Logs  Logs

	made bool
}

// Probe runs pkg's suite (./-relative) at commit c.
func (g *GitProber) Probe(c Commit, pkg string) (*Probe, error) {
	if _, err := g.Repo.Run("cat-file", "-e", c.Hash+":"+strings.TrimPrefix(pkg, "./")); err != nil {
		return &Probe{Verdict: NoPackage}, nil
	}
	dir := g.Repo.Dir
	if c.Hash != g.Head {
		if err := g.checkout(c.Hash); err != nil {
			return nil, err
		}
		dir = g.Worktree
	}
	args := append(append([]string{}, g.Flags...), pkg)
	res, err := gotest.Run(dir, g.Env, args...)
	if err != nil {
		return nil, err
	}
	patch := c.Patch
	if patch == "" {
		patch = UpstreamLog
	}
	log, err := g.Logs.Write(patch, LogName("suite", pkg), dir, args, res)
	if err != nil {
		return nil, err
	}
	return &Probe{Verdict: VerdictOf(res), Result: res, Log: log}, nil
}

// checkout puts the worktree at commit, making it first if needed.
func (g *GitProber) checkout(commit string) error {
	wt := tree.Git{Dir: g.Worktree}
	if g.made {
		if _, err := wt.Run("checkout", "-q", "--detach", "--force", commit); err != nil {
			return err
		}
		_, err := wt.Run("clean", "-q", "-f", "-d", "-x")
		return err
	}
	g.remove()
	if err := os.MkdirAll(filepath.Dir(g.Worktree), 0o755); err != nil {
		return err
	}
	if _, err := g.Repo.Run("worktree", "add", "--detach", "--force", g.Worktree, commit); err != nil {
		return err
	}
	g.made = true
	return nil
}

// Close removes the worktree.
func (g *GitProber) Close() error {
	if !g.made {
		return nil
	}
	g.made = false
	return g.remove()
}

func (g *GitProber) remove() error {
	_, _ = g.Repo.Run("worktree", "remove", "--force", g.Worktree)
	err := os.RemoveAll(g.Worktree)
	_, _ = g.Repo.Run("worktree", "prune")
	return err
}
