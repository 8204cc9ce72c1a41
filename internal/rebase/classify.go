// Package rebase replays the patch series on another upstream release and
// says, per patch, how it fares there: clean, merged, conflict or already
// upstream. `carry matrix` uses it apply-only on several releases; `make
// rebase` builds on the same classification.
package rebase

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// Outcome is how one patch fares on a release.
type Outcome string

const (
	// Clean: the patch applies exactly, with no offset.
	Clean Outcome = "clean"
	// Merged: the patch applies only with offsets or a 3-way merge, without
	// conflict; a rebase refreshes it.
	Merged Outcome = "merged"
	// Conflict: the 3-way merge left conflicts (Files), or the patch could
	// not be merged at all.
	Conflict Outcome = "conflict"
	// Upstream: the release already contains the change.
	Upstream Outcome = "upstream"
)

// Result is the outcome of one patch on one release.
type Result struct {
	// Patch is the patch file name.
	Patch   string
	Outcome Outcome
	// Detail says why, in a few words (which offset, which release
	// contains a backport, what git said).
	Detail string
	// Files are the files that conflict.
	Files []string
	// After names earlier patches of the same replay that did not apply
	// (conflict) and touch a file this patch touches: its outcome is on a
	// tree without them, so it may change once they are resolved.
	After []string
}

// Progress receives one line per step.
type Progress func(format string, args ...any)

// Contained reports whether a backport to releases (the vA.B.C list of an
// `Upstream-Status: Backport [...]` trailer) is contained in the release
// target: some listed release has target's minor and is not newer than
// target, or target's minor is newer than every listed release's minor.
func Contained(releases []string, target string) (bool, string) {
	if len(releases) == 0 || !semver.IsValid(target) {
		return false, ""
	}
	newerMinor := true
	for _, r := range releases {
		if !semver.IsValid(r) {
			return false, ""
		}
		c := semver.Compare(semver.MajorMinor(r), semver.MajorMinor(target))
		if c == 0 && semver.Compare(r, target) <= 0 {
			return true, fmt.Sprintf("Backport %s ≤ %s", r, target)
		}
		if c >= 0 {
			newerMinor = false
		}
	}
	if newerMinor {
		return true, fmt.Sprintf("Backport %s: %s is a newer minor", strings.Join(releases, "/"), target)
	}
	return false, ""
}

// Classify replays the patch files patches, in order, on the tree t, which
// must be clean and at the commit to replay on (its upstream commit for a
// matrix column). Every patch that applies (clean or merged) is committed
// with `git am --3way`, so later patches see it; a patch that conflicts is
// aborted and the replay goes on, so every patch gets an outcome. A patch
// already upstream is not applied.
//
// 3-way merges need the blobs the patches were made against: when t is
// another release than the series', share the objects of a tree that has
// the series applied (ShareObjects) first.
func Classify(t *tree.Tree, patches []string, progress Progress) ([]Result, error) {
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if op := t.InProgress(); op != "" {
		return nil, fmt.Errorf("%s: a %s is in progress; finish or abort it first", t.Dir, op)
	}
	dirty, err := t.Dirty()
	if err != nil {
		return nil, err
	}
	if len(dirty) > 0 {
		return nil, fmt.Errorf("%s has uncommitted changes; replaying needs a clean tree:\n  %s", t.Dir, strings.Join(dirty, "\n  "))
	}
	_, target, err := t.Base()
	if err != nil {
		return nil, err
	}
	var results []Result
	failed := map[string][]string{} // conflicting patch → its files
	var failedOrder []string
	for i, path := range patches {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		p, err := series.ReadPatch(abs)
		if err != nil {
			return results, err
		}
		r, err := classifyOne(t, abs, p, target, false)
		if err != nil {
			return results, fmt.Errorf("%s on %s: %w", filepath.Base(path), target, err)
		}
		for _, f := range failedOrder {
			if slices.ContainsFunc(p.Files, func(file string) bool { return slices.Contains(failed[f], file) }) {
				r.After = append(r.After, f)
			}
		}
		if r.Outcome == Conflict {
			failed[r.Patch] = p.Files
			failedOrder = append(failedOrder, r.Patch)
		}
		line := fmt.Sprintf("%s: [%d/%d] %s: %s", target, i+1, len(patches), r.Patch, r.Outcome)
		if r.Detail != "" {
			line += " (" + r.Detail + ")"
		}
		if len(r.After) > 0 {
			line += "; after the conflict of " + strings.Join(r.After, ", ")
		}
		progress("%s", line)
		results = append(results, r)
	}
	return results, nil
}

var (
	failedRE = regexp.MustCompile(`^error: (?:patch failed: (.+):[0-9]+|(.+): (?:does not exist in index|already exists in (?:index|working directory)|patch does not apply))$`)
)

// classifyOne replays one patch. On a conflict it aborts the am, unless
// keepConflict: then the tree is left mid-`git am` for the user to resolve.
func classifyOne(t *tree.Tree, path string, p *series.Patch, target string, keepConflict bool) (Result, error) {
	r, err := classifyTree(t, path, p, keepConflict)
	// A Backport trailer is metadata: only the tree can say a patch is
	// upstream. Where the trailer says the release has it but the tree
	// does not show it, the report says so and the patch is kept.
	if err == nil && p.Status.Kind == "Backport" && r.Outcome != Upstream {
		if ok, why := Contained(p.Status.Releases, target); ok {
			note := "its " + why + " says the release has it, but the tree does not show it: kept"
			if r.Detail != "" {
				note = r.Detail + "; " + note
			}
			r.Detail = note
		}
	}
	return r, err
}

func classifyTree(t *tree.Tree, path string, p *series.Patch, keepConflict bool) (Result, error) {
	r := Result{Patch: filepath.Base(path)}
	report, err := t.Combined("apply", "--check", "--verbose", path)
	if err == nil {
		if offsets := offsetsIn(report); len(offsets) > 0 {
			r.Outcome, r.Detail = Merged, strings.Join(offsets, ", ")
		} else {
			r.Outcome = Clean
		}
		return r, amOrFail(t, path, &r)
	}
	forward := report
	if _, err := t.Combined("apply", "--check", "--reverse", path); err == nil {
		r.Outcome, r.Detail = Upstream, "the patch reverse-applies"
		return r, nil
	}
	before, err := t.Line("rev-parse", "HEAD")
	if err != nil {
		return r, err
	}
	out, amErr := t.Combined("am", "--3way", "--keep", "--committer-date-is-author-date", path)
	if amErr == nil {
		after, err := t.Line("rev-parse", "HEAD")
		if err != nil {
			return r, err
		}
		if after == before {
			r.Outcome, r.Detail = Upstream, "empty after the 3-way merge"
		} else {
			r.Outcome, r.Detail = Merged, "3-way merge"
		}
		return r, nil
	}
	unmerged, err := t.Line("diff", "--name-only", "--diff-filter=U")
	if err != nil {
		return r, err
	}
	r.Outcome = Conflict
	if unmerged != "" {
		r.Files = strings.Split(unmerged, "\n")
		r.Detail = "3-way merge left conflicts"
	} else {
		r.Files = failedFiles(forward)
		r.Detail = amReason(out)
	}
	if keepConflict {
		return r, nil
	}
	if _, err := t.Run("am", "--abort"); err != nil && t.InProgress() != "" {
		return r, fmt.Errorf("git am --abort: %w", err)
	}
	// am --abort restores HEAD; make sure nothing of the patch is left.
	if _, err := t.Run("reset", "-q", "--hard", before); err != nil {
		return r, err
	}
	return r, nil
}

// amOrFail commits a patch that `git apply --check` accepted.
func amOrFail(t *tree.Tree, path string, r *Result) error {
	if _, err := t.Run("am", "--3way", "--keep", "--committer-date-is-author-date", "--quiet", path); err != nil {
		_, _ = t.Run("am", "--abort")
		return fmt.Errorf("git am of a patch that git apply --check accepted: %w", err)
	}
	return nil
}

func offsetsIn(report string) []string {
	var out []string
	for _, o := range tree.Offsets(report) {
		out = append(out, fmt.Sprintf("%s: hunk #%d offset %d", o.File, o.Hunk, o.OffsetLines))
	}
	return out
}

func failedFiles(report string) []string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		if m := failedRE.FindStringSubmatch(l); m != nil {
			f := m[1] + m[2]
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// amReason is the line of git am's output that says why no 3-way merge
// was possible (e.g. the blobs the patch was made against are missing).
func amReason(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "lacks necessary blobs") || strings.Contains(l, "could not build fake ancestor") {
			return "no 3-way merge possible: " + strings.TrimSpace(strings.TrimPrefix(l, "error: "))
		}
	}
	return "does not apply"
}

// ShareObjects lets t read the git objects of the tree from, so that a
// 3-way merge on t finds the blobs the patches were made against (from is
// the series' upstream with the series applied). Objects t writes that from
// already has are not copied: keep from while t is in use.
func ShareObjects(t *tree.Tree, from *tree.Tree) error {
	objects, err := filepath.Abs(filepath.Join(from.Dir, ".git", "objects"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(objects); err != nil {
		return fmt.Errorf("%s: not a git repository: %w", from.Dir, err)
	}
	file := filepath.Join(t.Dir, ".git", "objects", "info", "alternates")
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	have := strings.Fields(string(data))
	if slices.Contains(have, objects) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	// Added, not replaced: a tree reused for another line's replay still
	// holds objects (its index, its commits) that an earlier lender has.
	return os.WriteFile(file, []byte(strings.Join(append(have, objects), "\n")+"\n"), 0o644)
}
