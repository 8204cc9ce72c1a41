package tree

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/kube-carry/kube-carry/internal/series"
)

// Progress receives one line per step.
type Progress func(format string, args ...any)

// FormatPatch exports one commit as a patch, deterministically: the same
// commit always gives the same bytes (no commit hash, no stat, no version
// signature), so re-exporting an unchanged series gives no diff.
func (t *Tree) FormatPatch(commit string) ([]byte, error) {
	out, err := t.Run("format-patch", "-1", "--stdout", "--keep-subject", "--no-stat",
		"--no-signature", "--zero-commit", "--full-index", "--no-numbered", "--encode-email-headers", commit)
	return []byte(out), err
}

// SyncError means the tree's commits and the series disagree in a way that
// would lose work if apply went on.
type SyncError struct{ Msg string }

func (e *SyncError) Error() string { return e.Msg }

// Plan works out how far the tree already is in the series: keep is the
// number of tree commits that match the first series entries. It refuses
// (SyncError) when the tree holds work that is in no patch file:
// uncommitted changes, an operation in progress, or a commit apply did not
// make whose export differs from the patch at its place in the series.
// Commits apply made from a patch file that has since changed are stale, not
// local work: apply replaces them.
func (t *Tree) Plan(s *series.Series, version string) (keep int, err error) {
	if op := t.InProgress(); op != "" {
		return 0, &SyncError{fmt.Sprintf("%s: a %s is in progress in the patched tree; finish or abort it first (nothing was changed)", t.Dir, op)}
	}
	dirty, err := t.Dirty()
	if err != nil {
		return 0, err
	}
	if len(dirty) > 0 {
		return 0, &SyncError{fmt.Sprintf("%s: the patched tree has uncommitted changes; commit them and run `make export`, or discard them (nothing was changed):\n  %s", t.Dir, strings.Join(limit(dirty, 10), "\n  "))}
	}
	_, have, err := t.Base()
	if err != nil {
		return 0, err
	}
	if have != version {
		return 0, &SyncError{fmt.Sprintf("%s: the patched tree is upstream %s but UPSTREAM pins %s; export any work (`make export`), then `make clean-tree` and `make` (nothing was changed)", t.Dir, have, version)}
	}
	commits, err := t.Commits()
	if err != nil {
		return 0, err
	}
	records, err := t.AppliedRecords()
	if err != nil {
		return 0, err
	}
	keep = -1
	for i, c := range commits {
		inSync := false
		if i < len(s.Entries) {
			path := s.Path(s.Entries[i])
			if r, ok := records[c]; ok && r.Patch == s.Entries[i].Name {
				sum, err := fileSHA256(path)
				if err != nil {
					return 0, err
				}
				inSync = sum == r.SHA256
			}
			if !inSync {
				// A commit the user made and exported counts as applied.
				exported, err := t.FormatPatch(c)
				if err != nil {
					return 0, err
				}
				file, err := os.ReadFile(path)
				if err != nil {
					return 0, err
				}
				inSync = string(exported) == string(file)
			}
		}
		if !inSync && keep < 0 {
			keep = i
		}
		if keep >= 0 {
			// Everything from keep on gets replaced: it must come from a patch.
			if _, ok := records[c]; !ok {
				subject, _ := t.Line("log", "-1", "--format=%s", c)
				return 0, &SyncError{fmt.Sprintf("%s: commit %.12s %q is not in patches/: run `make export` to keep it, or reset the tree (nothing was changed)", t.Dir, c, subject)}
			}
		}
	}
	if keep < 0 {
		keep = len(commits)
	}
	return keep, nil
}

func limit(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("... and %d more", len(s)-n))
}

// ApplyError names the patch, file and hunk that stopped apply.
type ApplyError struct {
	Patch string
	Msg   string
}

func (e *ApplyError) Error() string { return fmt.Sprintf("%s: %s", e.Patch, e.Msg) }

// Apply brings the tree to the series: commits that already match are kept,
// the rest of the series is applied with `git am --3way`, one commit per
// patch. A patch must apply exactly: fuzz, an offset or a conflict stops the
// run naming the patch, file and hunk, and leaves the tree at the last patch
// that applied.
func (t *Tree) Apply(s *series.Series, version string, progress Progress) error {
	if err := t.undoKilledApply(progress); err != nil {
		return err
	}
	// While apply runs, a marker says so, so that an apply killed midway
	// (git holding its locks, an am half done) is undone by the next one
	// (see undoKilledApply).
	marker := t.applyingFile()
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return err
	}
	defer os.Remove(marker)
	keep, err := t.Plan(s, version)
	if err != nil {
		return err
	}
	commits, err := t.Commits()
	if err != nil {
		return err
	}
	if keep < len(commits) {
		target, _, err := t.Base()
		if err != nil {
			return err
		}
		if keep > 0 {
			target = commits[keep-1]
		}
		if keep < len(s.Entries) {
			progress("apply: the series changed at %s; re-applying from there", s.Entries[keep].Name)
		} else {
			progress("apply: the series ends after %d patches; removing the %d commits after them", keep, len(commits)-keep)
		}
		if _, err := t.Run("reset", "-q", "--hard", target); err != nil {
			return err
		}
	}
	records, err := t.AppliedRecords()
	if err != nil {
		return err
	}
	for i, e := range s.Entries {
		if i < keep {
			// A commit kept because its export is the patch file (made by
			// hand, or its patch renamed) is recorded now, so that export
			// knows which patch it is.
			if r, ok := records[commits[i]]; !ok || r.Patch != e.Name || !sameSum(s.Path(e), r.SHA256) {
				if err := t.Record(commits[i], s.Path(e)); err != nil {
					return err
				}
			}
			progress("apply: [%d/%d] %s (already applied)", i+1, len(s.Entries), e.Name)
			continue
		}
		progress("apply: [%d/%d] %s", i+1, len(s.Entries), e.Name)
		if err := t.applyExact(s.Path(e)); err != nil {
			return err
		}
	}
	return nil
}

var (
	checkingRE = regexp.MustCompile(`^Checking patch (.+)\.\.\.$`)
	offsetRE   = regexp.MustCompile(`^Hunk #([0-9]+) succeeded at ([0-9]+)(?: \(offset (-?[0-9]+) lines?\))?\.$`)
	failedRE   = regexp.MustCompile(`^error: patch failed: (.+):([0-9]+)$`)
)

func (t *Tree) applyExact(path string) error {
	name := baseName(path)
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	// git apply --verbose reports every hunk, offsets included, on stderr.
	report, err := t.Combined("apply", "--check", "--verbose", path)

	if msg := offsetProblem(report); msg != "" {
		return &ApplyError{Patch: name, Msg: msg}
	}
	if err != nil {
		return &ApplyError{Patch: name, Msg: conflictProblem(report, path)}
	}
	if _, err := t.Run("am", "--3way", "--keep", "--committer-date-is-author-date", "--quiet", path); err != nil {
		_, _ = t.Run("am", "--abort")
		return &ApplyError{Patch: name, Msg: fmt.Sprintf("git am failed: %v", err)}
	}
	head, err := t.Line("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	return t.Record(head, path)
}

// Offset is a hunk that `git apply --verbose` applied away from its line.
type Offset struct {
	File        string
	Hunk, Line  int
	OffsetLines int
}

// Offsets reads the hunks applied at an offset from a `git apply --verbose`
// report.
func Offsets(report string) []Offset {
	var out []Offset
	file := ""
	for _, l := range strings.Split(report, "\n") {
		if m := checkingRE.FindStringSubmatch(l); m != nil {
			file = m[1]
			continue
		}
		if m := offsetRE.FindStringSubmatch(l); m != nil && m[3] != "" {
			o := Offset{File: file}
			o.Hunk, _ = strconv.Atoi(m[1])
			o.Line, _ = strconv.Atoi(m[2])
			o.OffsetLines, _ = strconv.Atoi(m[3])
			out = append(out, o)
		}
	}
	return out
}

func offsetProblem(report string) string {
	if o := Offsets(report); len(o) > 0 {
		return fmt.Sprintf("%s: hunk #%d applies only at line %d (offset %d lines): the patch no longer matches the pinned upstream; refresh it", o[0].File, o[0].Hunk, o[0].Line, o[0].OffsetLines)
	}
	return ""
}

func conflictProblem(report, patchPath string) string {
	for _, l := range strings.Split(report, "\n") {
		if m := failedRE.FindStringSubmatch(l); m != nil {
			line, _ := strconv.Atoi(m[2])
			n, header := hunkAt(patchPath, m[1], line)
			if n > 0 {
				return fmt.Sprintf("%s: hunk #%d (%s) does not apply", m[1], n, header)
			}
			return fmt.Sprintf("%s: the hunk at line %d does not apply", m[1], line)
		}
	}
	return "does not apply: " + strings.TrimSpace(report)
}

var hunkRE = regexp.MustCompile(`^@@ -([0-9]+)(?:,[0-9]+)? \+[0-9]+(?:,[0-9]+)? @@`)

// hunkAt finds which hunk of file in the patch starts at old line line.
func hunkAt(patchPath, file string, line int) (int, string) {
	data, err := os.ReadFile(patchPath)
	if err != nil {
		return 0, ""
	}
	in := false
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "diff --git ") {
			in = strings.HasSuffix(l, " b/"+file) || strings.Contains(l, " a/"+file+" ")
			n = 0
			continue
		}
		if !in {
			continue
		}
		if m := hunkRE.FindStringSubmatch(l); m != nil {
			n++
			if start, _ := strconv.Atoi(m[1]); start == line {
				return n, hunkRE.FindString(l)
			}
		}
	}
	return 0, ""
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// CheckAgainstIndex applies a patch to the index file index (not to the
// work tree) exactly as apply would: an offset or a failing hunk is an
// *ApplyError naming the patch, file and hunk. Lint uses it to replay the
// series on the pinned upstream without touching the tree.
func (t *Tree) CheckAgainstIndex(index, path string) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	g := Git{Dir: t.Dir, Env: append(append([]string(nil), t.Env...), "GIT_INDEX_FILE="+index)}
	report, err := g.Combined("apply", "--cached", "--verbose", path)

	if msg := offsetProblem(report); msg != "" {
		return &ApplyError{Patch: baseName(path), Msg: msg}
	}
	if err != nil {
		return &ApplyError{Patch: baseName(path), Msg: conflictProblem(report, path)}
	}
	return nil
}

func (t *Tree) applyingFile() string {
	return filepath.Join(t.Dir, ".git", "kube-carry-applying")
}

// undoKilledApply finishes off an apply that was killed: its git am or
// reset is undone (the commits it made are kept; Plan keeps those that
// match the series). Apply only changes a tree that holds nothing but the
// series, so nothing of the user's is lost.
func (t *Tree) undoKilledApply(progress Progress) error {
	marker := t.applyingFile()
	if _, err := os.Stat(marker); err != nil {
		return nil
	}
	progress("apply: the last apply of %s was interrupted; undoing what it left half done", t.Dir)
	if err := t.RemoveStaleLocks(); err != nil {
		return err
	}
	if t.InProgress() != "" {
		_, _ = t.Run("am", "--abort")
		// An am killed while it wrote its state cannot be aborted.
		_ = os.RemoveAll(filepath.Join(t.Dir, ".git", "rebase-apply"))
	}
	// Whatever is uncommitted now is what the killed apply left, unless
	// someone edited the tree since: kept in the tree's stash, not lost.
	dirty, err := t.Dirty()
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		if _, err := t.Run("stash", "push", "--include-untracked", "-q", "-m", "kube-carry: uncommitted changes found after an interrupted apply"); err != nil {
			return err
		}
		progress("apply: %d uncommitted changes found after the interrupted apply are kept in the tree's git stash (git -C %s stash list)", len(dirty), t.Dir)
	}
	return os.Remove(marker)
}
