package rebase

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// Reworked is the outcome of a patch whose conflict the user resolved by
// hand during a rebase; Skipped of one the user dropped (git am --skip).
const (
	Reworked Outcome = "reworked"
	Skipped  Outcome = "skipped"
)

// Session is a rebase in progress: the series replayed, one patch at a
// time, on a fresh tree of the target release. It lives in its own
// directory (state.json, the target's pin, the target tree) and touches
// nothing of the repository until Finish, so Abort loses nothing.
type Session struct {
	// Dir holds the session; Tree is Dir/kubernetes.
	Dir string `json:"-"`
	// Kind is what the session does: KindRebase (to another release,
	// possibly starting a new line), KindBump (to the newest patch release
	// of the line's minor) or KindPort (patches of another line carried
	// into this one, on the same release).
	Kind string `json:",omitempty"`
	// FromLine and Line are the line the series comes from and the line the
	// result is written to (the same but for a rebase that starts a line).
	FromLine, Line string `json:",omitempty"`
	// From and To are the upstream releases.
	From, To string
	// Ported are the patch files a port carries in (among Patches).
	Ported []string `json:",omitempty"`
	// Since is set when the port carries only the change made to the
	// ported patches since that commit of the repository.
	Since string `json:",omitempty"`
	// Patches are the series' patch files, in order (absolute paths).
	Patches []string
	// Results are the outcomes of Patches[:len(Results)].
	Results []Result
	// Stopped is true while the patch Patches[len(Results)] is left
	// mid-`git am` with conflicts; StoppedAt is HEAD before it.
	Stopped   bool
	StoppedAt string
	// Conflict is the result that stopped the replay.
	Conflict *Result `json:",omitempty"`
	// Applying is HEAD before the patch Patches[len(Results)] is
	// replayed, saved before its git am: set when a replay was killed
	// before it recorded the patch's outcome, which is then replayed
	// again from there.
	Applying string `json:",omitempty"`
}

const stateFile = "state.json"

// TreeDir is where the target release's tree lives in a session.
func TreeDir(dir string) string { return filepath.Join(dir, "kubernetes") }

// PinFile is where the target release's pin waits for Finish.
func PinFile(dir string) string { return filepath.Join(dir, line.PinName) }

// Load reads the session in dir; os.ErrNotExist when there is none.
func Load(dir string) (*Session, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	s := &Session{Dir: dir}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return s, nil
}

func (s *Session) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, stateFile))
}

// Tree opens the session's target tree.
func (s *Session) Tree() (*tree.Tree, error) { return tree.Open(TreeDir(s.Dir)) }

// Done reports whether every patch has an outcome.
func (s *Session) Done() bool { return !s.Stopped && len(s.Results) == len(s.Patches) }

// Session kinds.
const (
	KindRebase = "rebase"
	KindBump   = "bump"
	KindPort   = "port"
)

// Verb is the make target family of the session's kind.
func (s *Session) Verb() string {
	if s.Kind == "" {
		return KindRebase
	}
	return s.Kind
}

// Start begins a rebase in dir, whose target tree (TreeDir(dir)) must
// already hold release to at its upstream commit, and replays until the
// end or the first conflict. from is the series' current release.
func Start(dir, from, to string, patches []string, progress Progress) (*Session, error) {
	return StartSession(&Session{Dir: dir, From: from, To: to}, patches, progress)
}

// StartSession begins the session s (Dir, Kind, lines and releases set)
// with the patch files patches, in order.
func StartSession(s *Session, patches []string, progress Progress) (*Session, error) {
	dir := s.Dir
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil {
		return nil, fmt.Errorf("a %s is already in progress in %s: `make %s-continue` or `make %s-abort`", s.Verb(), dir, s.Verb(), s.Verb())
	}
	to := s.To
	for _, p := range patches {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		s.Patches = append(s.Patches, abs)
	}
	for i, p := range s.Ported {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		s.Ported[i] = abs
	}
	t, err := s.Tree()
	if err != nil {
		return nil, err
	}
	if _, v, err := t.Base(); err != nil {
		return nil, err
	} else if v != to {
		return nil, fmt.Errorf("%s is upstream %s, not %s", t.Dir, v, to)
	}
	if err := s.save(); err != nil {
		return nil, err
	}
	done, err := t.Busy()
	if err != nil {
		return nil, err
	}
	defer done()
	return s, s.replay(t, progress)
}

// Continue resumes a stopped rebase after the user resolved the conflict
// and finished the am (`git am --continue`, or `git am --skip` to drop the
// patch).
func (s *Session) Continue(progress Progress) error {
	t, err := s.Tree()
	if err != nil {
		return err
	}
	// A continue killed while git held the session tree's locks left
	// them: the tree's busy mark says so, and they go.
	done, err := t.Busy()
	if err != nil {
		return err
	}
	defer done()
	if s.Stopped {
		if op := t.InProgress(); op != "" {
			return fmt.Errorf("%s: the %s of %s is still in progress: resolve the conflicts, `git add` them and `git am --continue` (or `git am --skip` to drop the patch), then `make %s-continue`", t.Dir, op, filepath.Base(s.Patches[len(s.Results)]), s.Verb())
		}
		if dirty, err := t.Dirty(); err != nil {
			return err
		} else if len(dirty) > 0 {
			return fmt.Errorf("%s has uncommitted changes; commit them into the patch (`git commit --amend`) or discard them first:\n  %s", t.Dir, strings.Join(dirty, "\n  "))
		}
		head, err := t.Line("rev-parse", "HEAD")
		if err != nil {
			return err
		}
		r := *s.Conflict
		path := s.Patches[len(s.Results)]
		if head == s.StoppedAt {
			r.Outcome, r.Detail = Skipped, "dropped by hand during the "+s.Verb()+" (git am --skip)"
		} else {
			r.Outcome, r.Detail = Reworked, "conflict in "+strings.Join(r.Files, ", ")+" resolved by hand"
			if err := t.Record(head, path); err != nil {
				return err
			}
		}
		progress("%s: %s: %s (%s)", s.Verb(), r.Patch, r.Outcome, r.Detail)
		s.Results = append(s.Results, r)
		s.Stopped, s.StoppedAt, s.Conflict = false, "", nil
		if err := s.save(); err != nil {
			return err
		}
	}
	return s.replay(t, progress)
}

// replay goes on from the first patch without an outcome.
func (s *Session) replay(t *tree.Tree, progress Progress) error {
	if err := s.undoKilledStep(t, progress); err != nil {
		return err
	}
	for i := len(s.Results); i < len(s.Patches); i++ {
		path := s.Patches[i]
		p, err := series.ReadPatch(path)
		if err != nil {
			return err
		}
		before, err := t.Line("rev-parse", "HEAD")
		if err != nil {
			return err
		}
		s.Applying = before
		if err := s.save(); err != nil {
			return err
		}
		r, err := classifyOne(t, path, p, s.To, true)
		if err != nil {
			return fmt.Errorf("%s on %s: %w\nthe %s is kept in %s: `make %s-continue` replays this patch again, `make %s-abort` throws the %s away", filepath.Base(path), s.To, err, s.Verb(), s.Dir, s.Verb(), s.Verb(), s.Verb())
		}
		s.Applying = ""
		if r.Outcome == Conflict {
			s.Stopped, s.StoppedAt, s.Conflict = true, before, &r
			progress("%s: [%d/%d] %s: CONFLICT (%s) in %s", s.Verb(), i+1, len(s.Patches), r.Patch, r.Detail, strings.Join(r.Files, ", "))
			return s.save()
		}
		if after, err := t.Line("rev-parse", "HEAD"); err != nil {
			return err
		} else if after != before {
			if err := t.Record(after, path); err != nil {
				return err
			}
		}
		line := fmt.Sprintf("%s: [%d/%d] %s: %s", s.Verb(), i+1, len(s.Patches), r.Patch, r.Outcome)
		if r.Detail != "" {
			line += " (" + r.Detail + ")"
		}
		progress("%s", line)
		s.Results = append(s.Results, r)
		if err := s.save(); err != nil {
			return err
		}
	}
	return nil
}

// undoKilledStep puts the tree back to where the replay of a patch began
// when a replay was killed after it saved Applying and before it recorded
// the patch's outcome (its git am may be half done or done): the patch is
// then replayed again, so it is classified once, on the tree before it.
func (s *Session) undoKilledStep(t *tree.Tree, progress Progress) error {
	if s.Applying == "" {
		return nil
	}
	progress("%s: %s was being replayed when the %s was interrupted; replaying it again", s.Verb(), filepath.Base(s.Patches[len(s.Results)]), s.Verb())
	// The git locks the killed replay left are gone already: its busy
	// mark made the Busy of this run remove them.
	if t.InProgress() != "" {
		_, _ = t.Run("am", "--abort")
		_ = os.RemoveAll(filepath.Join(t.Dir, ".git", "rebase-apply"))
	}
	if _, err := t.Run("reset", "-q", "--hard", s.Applying); err != nil {
		return err
	}
	s.Applying = ""
	return s.save()
}

// Abort throws the session away: the target tree and the state, and what a
// failed or killed Finish staged for l (before its journal: with a journal,
// the next command finishes it instead). The repository (pin, series,
// patches) and the patched tree were never touched.
func Abort(dir string, l line.Line) error {
	for _, p := range []string{l.StageDir(line.StageFinish), line.Aside(line.ChangelogFile(l.Root), line.StageFinish), line.Aside(dir, line.SessionEnded)} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("nothing in progress in %s", dir)
		}
	}
	return os.RemoveAll(dir)
}

// Kept are the patches that stay in the series, in order.
func (s *Session) Kept() []string {
	var out []string
	for i, r := range s.Results {
		if r.Outcome != Upstream && r.Outcome != Skipped {
			out = append(out, filepath.Base(s.Patches[i]))
		}
	}
	return out
}

// ChangelogLine says what happened to one patch, for CHANGELOG.md.
func (s *Session) ChangelogLine(r Result) string {
	for _, p := range s.Ported {
		if filepath.Base(p) == r.Patch {
			switch r.Outcome {
			case Upstream:
				return fmt.Sprintf("- not ported `%s` from %s: upstream in %s (%s)", r.Patch, s.FromLine, s.To, r.Detail)
			case Skipped:
				return fmt.Sprintf("- not ported `%s` from %s: dropped by hand during the port", r.Patch, s.FromLine)
			case Reworked:
				return fmt.Sprintf("- ported `%s` from %s, reworked (%s)", r.Patch, s.FromLine, r.Detail)
			}
			detail := string(r.Outcome)
			if r.Detail != "" {
				detail += ": " + r.Detail
			}
			if s.Since != "" {
				return fmt.Sprintf("- ported the change to `%s` since %s from %s (%s)", r.Patch, s.Since, s.FromLine, detail)
			}
			return fmt.Sprintf("- ported `%s` from %s (%s)", r.Patch, s.FromLine, detail)
		}
	}
	switch r.Outcome {
	case Clean:
		return fmt.Sprintf("- kept `%s` (applies cleanly on %s)", r.Patch, s.To)
	case Merged:
		return fmt.Sprintf("- refreshed `%s` (%s)", r.Patch, r.Detail)
	case Upstream:
		return fmt.Sprintf("- dropped `%s`: upstream in %s (%s)", r.Patch, s.To, r.Detail)
	case Reworked:
		return fmt.Sprintf("- reworked `%s` (%s)", r.Patch, r.Detail)
	case Skipped:
		return fmt.Sprintf("- dropped `%s` by hand during the %s", r.Patch, s.Verb())
	}
	return fmt.Sprintf("- `%s`: %s", r.Patch, r.Outcome)
}
