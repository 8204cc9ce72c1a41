package rebase

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// Layout names the repository files a finished rebase rewrites, relative
// to Root.
type Layout struct {
	Root                                                          string
	PinFile, SeriesFile, DroppedFile, RevisionFile, ChangelogFile string
	// TreeDir is the patched tree the rebased tree replaces.
	TreeDir string
}

func (l Layout) path(p string) string { return filepath.Join(l.Root, p) }

// Finish makes the rebased tree the patched tree and brings the repository
// to it: UPSTREAM is the target's pin, patches already upstream (or dropped
// by hand) leave the series and are recorded in DROPPED, the patches are
// exported from the new tree, the series revision restarts at 1, and
// CHANGELOG.md gets a drafted section with one line per patch.
func (s *Session) Finish(l Layout, progress Progress) error {
	if !s.Done() {
		return fmt.Errorf("the rebase is not done: %d of %d patches replayed", len(s.Results), len(s.Patches))
	}
	t, err := s.Tree()
	if err != nil {
		return err
	}
	if err := standalone(t, progress); err != nil {
		return err
	}
	old := l.path(l.TreeDir)
	if _, err := os.Stat(old); err == nil {
		ot, err := tree.Open(old)
		if err != nil {
			return err
		}
		if err := ot.LocalWork(l.path(filepath.Dir(l.SeriesFile))); err != nil {
			return fmt.Errorf("%v\nthe rebased tree is ready in %s; export or discard that work, then `make rebase-continue` again", err, t.Dir)
		}
		progress("rebase: replacing %s (upstream %s) with the rebased tree", l.TreeDir, s.From)
		if err := os.RemoveAll(old); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		return err
	}
	if err := os.Rename(t.Dir, old); err != nil {
		return err
	}
	t, err = tree.Open(old)
	if err != nil {
		return err
	}

	pinData, err := os.ReadFile(PinFile(s.Dir))
	if err != nil {
		return fmt.Errorf("the target's pin: %w", err)
	}
	if err := os.WriteFile(l.path(l.PinFile), pinData, 0o644); err != nil {
		return err
	}
	progress("rebase: %s pins %s", l.PinFile, s.To)

	seriesDir := l.path(filepath.Dir(l.SeriesFile))
	var dropped []string
	for i, r := range s.Results {
		if r.Outcome != Upstream && r.Outcome != Skipped {
			continue
		}
		name := filepath.Base(s.Patches[i])
		reason := fmt.Sprintf("upstream in %s (%s)", s.To, r.Detail)
		if r.Outcome == Skipped {
			reason = fmt.Sprintf("dropped by hand in the rebase to %s", s.To)
		}
		dropped = append(dropped, name+" "+reason)
		if err := os.Remove(filepath.Join(seriesDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		progress("rebase: dropped %s: %s", name, reason)
	}
	if len(dropped) > 0 {
		f, err := os.OpenFile(l.path(l.DroppedFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(strings.Join(dropped, "\n") + "\n"); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if err := tree.WriteSeries(l.path(l.SeriesFile), s.Kept()); err != nil {
		return err
	}
	ser, err := series.Read(l.path(l.SeriesFile))
	if err != nil {
		return err
	}
	if _, err := t.Export(ser, tree.Progress(progress)); err != nil {
		return err
	}
	if err := os.WriteFile(l.path(l.RevisionFile), []byte("1\n"), 0o644); err != nil {
		return err
	}
	if err := s.draftChangelog(l.path(l.ChangelogFile)); err != nil {
		return err
	}
	progress("rebase: %s has a drafted section for %s-carry.1; review it", l.ChangelogFile, s.To)
	return os.RemoveAll(s.Dir)
}

// standalone copies into t the objects it borrows from another tree
// (ShareObjects), so that tree can go.
func standalone(t *tree.Tree, progress Progress) error {
	alt := filepath.Join(t.Dir, ".git", "objects", "info", "alternates")
	if _, err := os.Stat(alt); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	progress("rebase: copying the objects the rebased tree borrows (git repack)")
	if _, err := t.Run("repack", "-a", "-d", "-q"); err != nil {
		return err
	}
	return os.Remove(alt)
}

func (s *Session) draftChangelog(file string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Unreleased — %s-carry.1\n\n", s.To)
	fmt.Fprintf(&b, "Upstream: Kubernetes %s (rebased from %s with `make rebase TO=%s`).\n\n", s.To, s.From, s.To)
	b.WriteString("### Patches\n")
	for _, r := range s.Results {
		b.WriteString(s.ChangelogLine(r) + "\n")
	}
	b.WriteString("\n")
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	text := string(old)
	// The new section goes before the first existing one.
	if i := strings.Index(text, "\n## "); i >= 0 {
		text = text[:i+1] + b.String() + text[i+1:]
	} else {
		text += "\n" + b.String()
	}
	return os.WriteFile(file, []byte(text), 0o644)
}
