package rebase

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
	"github.com/kube-carry/kube-carry/internal/txn"
)

// Finish writes the session's result: the line's folder (the target's pin,
// patches already upstream or dropped by hand leave the series and are
// recorded in DROPPED, the kept patches exported from the session's tree, the
// new revision), a drafted CHANGELOG.md section, and the session's tree as
// the line's patched tree. Everything is staged first and put in place with
// renames under a journal (txn), the patched tree last, so a kill leaves
// the state before or one the next run finishes.
func (s *Session) Finish(l line.Line, progress Progress) error {
	lineDir, changelogFile, treeDir := l.Dir(), line.ChangelogFile(l.Root), l.TreeDir()
	if !s.Done() {
		return fmt.Errorf("the %s is not done: %d of %d patches replayed", s.Verb(), len(s.Results), len(s.Patches))
	}
	t, err := s.Tree()
	if err != nil {
		return err
	}
	// The session's tree is the tool's own: a lock in it is left by a
	// finish that was killed, and would move into the line's tree.
	if err := t.RemoveStaleLocks(); err != nil {
		return err
	}
	if err := standalone(t, progress); err != nil {
		return err
	}
	if _, err := os.Stat(treeDir); err == nil {
		ot, err := tree.Open(treeDir)
		if err != nil {
			return err
		}
		done, err := ot.Busy()
		if err != nil {
			return err
		}
		err = ot.LocalWork(lineDir)
		done()
		if err != nil {
			return fmt.Errorf("%v\nthe %s tree is ready in %s; export or discard that work, then `make %s-continue` again", err, s.Verb(), t.Dir, s.Verb())
		}
	}

	// Stage the line's folder: a copy of it (or a new one) changed in place.
	stage := l.StageDir(line.StageFinish)
	if err := os.RemoveAll(stage); err != nil {
		return err
	}
	if _, err := os.Stat(lineDir); err == nil {
		if err := txn.CopyDir(lineDir, stage); err != nil {
			return err
		}
	} else if err := os.MkdirAll(stage, 0o755); err != nil {
		return err
	}
	oldRevision := 0
	if data, err := os.ReadFile(filepath.Join(stage, line.RevisionName)); err == nil {
		oldRevision, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	pinData, err := os.ReadFile(PinFile(s.Dir))
	if err != nil {
		return fmt.Errorf("the target's pin: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stage, line.PinName), pinData, 0o644); err != nil {
		return err
	}
	var dropped []string
	for i, r := range s.Results {
		if r.Outcome != Upstream && r.Outcome != Skipped {
			continue
		}
		name := filepath.Base(s.Patches[i])
		reason := fmt.Sprintf("upstream in %s (%s)", s.To, r.Detail)
		if r.Outcome == Skipped {
			reason = fmt.Sprintf("dropped by hand in the %s to %s", s.Verb(), s.To)
		}
		if s.Kind == KindPort && s.isPorted(s.Patches[i]) {
			// A ported patch that the line does not take never was in it.
			progress("%s: %s not ported: %s", s.Verb(), name, reason)
			continue
		}
		dropped = append(dropped, name+" "+reason)
		if err := os.Remove(filepath.Join(stage, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		progress("%s: dropped %s: %s", s.Verb(), name, reason)
	}
	if len(dropped) > 0 {
		old, err := os.ReadFile(filepath.Join(stage, line.DroppedName))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.WriteFile(filepath.Join(stage, line.DroppedName), append(old, []byte(strings.Join(dropped, "\n")+"\n")...), 0o644); err != nil {
			return err
		}
	}
	// A ported patch enters the line's folder as its source file (the
	// export below rewrites it from its commit on this line), with the
	// mutants its Guards: trailers name, when the line has none of that
	// name: the line's full proof shows whether they still apply and die.
	for i, p := range s.Patches {
		if !s.isPorted(p) || s.Results[i].Outcome == Upstream || s.Results[i].Outcome == Skipped {
			continue
		}
		if err := copyFile(p, filepath.Join(stage, filepath.Base(p))); err != nil {
			return err
		}
		pt, err := series.ReadPatch(p)
		if err != nil {
			return err
		}
		for _, g := range pt.Guards {
			dst := filepath.Join(stage, filepath.FromSlash(g.Mutant))
			if _, err := os.Stat(dst); err == nil {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := copyFile(filepath.Join(filepath.Dir(p), filepath.FromSlash(g.Mutant)), dst); err != nil {
				return err
			}
			progress("%s: %s: carried its mutant %s", s.Verb(), filepath.Base(p), g.Mutant)
		}
	}
	if err := tree.WriteSeries(filepath.Join(stage, line.SeriesName), s.Kept()); err != nil {
		return err
	}
	ser, err := series.Read(filepath.Join(stage, line.SeriesName))
	if err != nil {
		return err
	}
	if _, err := t.Export(ser, tree.Progress(progress)); err != nil {
		return err
	}
	revision := 1
	if s.Kind == KindPort {
		revision = s.portRevision(changelogFile, oldRevision)
	}
	if err := os.WriteFile(filepath.Join(stage, line.RevisionName), []byte(strconv.Itoa(revision)+"\n"), 0o644); err != nil {
		return err
	}

	changelog := line.Aside(changelogFile, line.StageFinish)
	if err := s.draftChangelog(changelogFile, changelog, revision); err != nil {
		return err
	}
	// The session's folder is replaced by an empty one in the same commit,
	// so a finished session can never be finished twice.
	ended := line.Aside(s.Dir, line.SessionEnded)
	if err := os.RemoveAll(ended); err != nil {
		return err
	}
	if err := os.MkdirAll(ended, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(treeDir), 0o755); err != nil {
		return err
	}
	err = txn.Commit(l.JournalFile(), []txn.Move{
		{New: stage, Dst: lineDir, Old: l.StageDir(line.StageOld)},
		{New: changelog, Dst: changelogFile, Old: line.Aside(changelogFile, line.StageOld)},
		{New: t.Dir, Dst: treeDir, Old: line.Aside(treeDir, line.StageOld)},
		{New: ended, Dst: s.Dir, Old: line.Aside(s.Dir, line.StageOld)},
	})
	if err != nil {
		return err
	}
	progress("%s: %s is on %s (%s-carry.%d)", s.Verb(), lineDir, s.To, s.To, revision)
	progress("%s: %s has a drafted section for %s-carry.%d; review it", s.Verb(), changelogFile, s.To, revision)
	return os.RemoveAll(s.Dir)
}

func (s *Session) isPorted(path string) bool {
	for _, p := range s.Ported {
		if p == path {
			return true
		}
	}
	return false
}

// standalone copies into t the objects it borrows from another tree
// (ShareObjects), so that tree can go.
func standalone(t *tree.Tree, progress Progress) error {
	alt := filepath.Join(t.Dir, ".git", "objects", "info", "alternates")
	if _, err := os.Stat(alt); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	progress("%s: copying the objects the tree borrows (git repack)", filepath.Base(filepath.Dir(t.Dir)))
	if _, err := t.Run("repack", "-a", "-d", "-q"); err != nil {
		return err
	}
	return os.Remove(alt)
}

// SectionHeading is the CHANGELOG.md heading of an unreleased fork release.
func SectionHeading(version, line string) string {
	return fmt.Sprintf("## %s (line %s, unreleased)", version, line)
}

// unreleasedSection finds the heading line of version's unreleased section.
func unreleasedSection(text, version string) int {
	for i := 0; i < len(text); {
		end := strings.IndexByte(text[i:], '\n')
		if end < 0 {
			end = len(text) - i
		}
		l := text[i : i+end]
		if strings.HasPrefix(l, "## "+version+" ") && strings.Contains(l, "unreleased") {
			return i
		}
		i += end + 1
	}
	return -1
}

// portRevision is the revision after a port: the next one once the line's
// current version is released (CHANGELOG.md has its section, not marked
// unreleased); unchanged while it is not (the change joins that release).
func (s *Session) portRevision(changelog string, current int) int {
	if current < 1 {
		return 1
	}
	data, _ := os.ReadFile(changelog)
	if releasedSection(string(data), fmt.Sprintf("%s-carry.%d", s.To, current)) {
		return current + 1
	}
	return current
}

// releasedSection reports whether text has a section for version that is
// not marked unreleased.
func releasedSection(text, version string) bool {
	for _, l := range strings.Split(text, "\n") {
		if (strings.HasPrefix(l, "## "+version+" ") || l == "## "+version) && !strings.Contains(l, "unreleased") {
			return true
		}
	}
	return false
}

func (s *Session) draftChangelog(file, out string, revision int) error {
	version := fmt.Sprintf("%s-carry.%d", s.To, revision)
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	text := string(old)
	var lines strings.Builder
	for i, r := range s.Results {
		if s.Kind == KindPort && !s.isPorted(s.Patches[i]) && r.Outcome == Clean {
			continue // the line's own patches, unchanged
		}
		lines.WriteString(s.ChangelogLine(r) + "\n")
	}
	if at := unreleasedSection(text, version); at >= 0 {
		// Add to the section: before the next one.
		next := strings.Index(text[at+1:], "\n## ")
		if next < 0 {
			text = strings.TrimRight(text, "\n") + "\n" + lines.String()
		} else {
			cut := at + 1 + next
			text = strings.TrimRight(text[:cut], "\n") + "\n" + lines.String() + text[cut:]
		}
		return txn.WriteFile(out, []byte(text))
	}
	var b strings.Builder
	b.WriteString(SectionHeading(version, s.Line) + "\n\n")
	switch s.Kind {
	case KindBump:
		fmt.Fprintf(&b, "Upstream: Kubernetes %s (bumped from %s with `make bump LINE=%s`).\n\n", s.To, s.From, s.Line)
	case KindPort:
		fmt.Fprintf(&b, "Upstream: Kubernetes %s. Patches ported from line %s with `make port`.\n\n", s.To, s.FromLine)
	default:
		if s.FromLine != "" && s.FromLine != s.Line {
			fmt.Fprintf(&b, "Upstream: Kubernetes %s. A new line, started from line %s (%s) with `make rebase LINE=%s TO=%s`.\n\n", s.To, s.FromLine, s.From, s.FromLine, s.To)
		} else {
			fmt.Fprintf(&b, "Upstream: Kubernetes %s (rebased from %s with `make rebase TO=%s`).\n\n", s.To, s.From, s.To)
		}
	}
	b.WriteString("### Patches\n")
	b.WriteString(lines.String())
	b.WriteString("\n")
	// The new section goes before the first existing one.
	if i := strings.Index(text, "\n## "); i >= 0 {
		text = text[:i+1] + b.String() + text[i+1:]
	} else {
		text += "\n" + b.String()
	}
	return txn.WriteFile(out, []byte(text))
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
