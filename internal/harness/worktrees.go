package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/kube-carry/kube-carry/internal/tree"
)

// Worktrees lends worktrees of a repository (the patched tree) at the
// commits the checks ask for, in the folders Dir/1, Dir/2, …. A worktree
// given back is moved to the next commit asked for (git checkout and git
// clean: a fraction of a second) instead of being removed and made again
// (git worktree add of a Kubernetes tree took 7 s, and the full proof of a
// line made about thirty). With -trimpath the build cache does not see the
// folder, so reusing one costs nothing in compiling. Close removes them all.
type Worktrees struct {
	Repo tree.Git
	Dir  string

	mu   sync.Mutex
	free []string
	made []string
	// adding: git worktree add and remove change the repository's
	// worktree list; two at once may trip over each other's lock.
	adding sync.Mutex
}

// Get returns a worktree at commit with nothing of an earlier use left in
// it (no changed, untracked or ignored file), and the function that gives
// it back. Two worktrees held at once are two folders.
func (w *Worktrees) Get(commit string) (dir string, release func(), err error) {
	w.mu.Lock()
	if n := len(w.free); n > 0 {
		dir = w.free[n-1]
		w.free = w.free[:n-1]
	}
	w.mu.Unlock()
	if dir != "" {
		err = w.move(dir, commit)
	} else {
		dir, err = w.add(commit)
	}
	if err != nil {
		return "", nil, err
	}
	var once sync.Once
	return dir, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.free = append(w.free, dir)
		})
	}, nil
}

// move puts the worktree in dir at commit: every tracked file as commit
// has it, and nothing else.
func (w *Worktrees) move(dir, commit string) error {
	wt := tree.Git{Dir: dir}
	if _, err := wt.Run("checkout", "-q", "--detach", "--force", commit); err != nil {
		return fmt.Errorf("worktree %s: %w", dir, err)
	}
	if _, err := wt.Run("clean", "-q", "-f", "-f", "-d", "-x"); err != nil {
		return fmt.Errorf("worktree %s: %w", dir, err)
	}
	return nil
}

// add makes a new worktree at commit in the next numbered folder, over
// whatever an interrupted run left there.
func (w *Worktrees) add(commit string) (string, error) {
	w.mu.Lock()
	dir := filepath.Join(w.Dir, fmt.Sprint(len(w.made)+1))
	w.made = append(w.made, dir)
	w.mu.Unlock()
	w.adding.Lock()
	defer w.adding.Unlock()
	w.remove(dir)
	if err := os.MkdirAll(w.Dir, 0o755); err != nil {
		return "", err
	}
	if _, err := w.Repo.Run("worktree", "add", "--detach", "--force", dir, commit); err != nil {
		return "", err
	}
	return dir, nil
}

func (w *Worktrees) remove(dir string) error {
	_, _ = w.Repo.Run("worktree", "remove", "--force", dir)
	err := os.RemoveAll(dir)
	_, _ = w.Repo.Run("worktree", "prune")
	return err
}

// Close removes every worktree Get made (also those not given back) and
// Dir when that leaves it empty.
func (w *Worktrees) Close() error {
	w.mu.Lock()
	made := w.made
	w.made, w.free = nil, nil
	w.mu.Unlock()
	var first error
	for _, dir := range made {
		if err := w.remove(dir); err != nil && first == nil {
			first = err
		}
	}
	_ = os.Remove(w.Dir)
	return first
}
