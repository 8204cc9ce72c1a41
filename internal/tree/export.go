package tree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kube-carry/kube-carry/internal/series"
)

// ExportResult says what an export changed.
type ExportResult struct {
	Written, Unchanged, Removed []string
}

// Export regenerates the patch files and the series from the tree's commits.
// A commit keeps the name of the patch it was applied from (or of the patch
// with the same subject, after an amend or an interactive rebase); a new
// commit gets a name made from its subject. Patch files of the old series
// that no commit produces any more are removed (git history keeps them).
func (t *Tree) Export(s *series.Series, progress Progress) (*ExportResult, error) {
	if op := t.InProgress(); op != "" {
		return nil, &SyncError{fmt.Sprintf("%s: a %s is in progress in the patched tree; finish it first", t.Dir, op)}
	}
	dirty, err := t.Dirty()
	if err != nil {
		return nil, err
	}
	if len(dirty) > 0 {
		return nil, &SyncError{fmt.Sprintf("%s: the patched tree has uncommitted changes; commit them first (export writes commits only):\n  %s", t.Dir, strings.Join(limit(dirty, 10), "\n  "))}
	}
	commits, err := t.Commits()
	if err != nil {
		return nil, err
	}
	records, err := t.AppliedRecords()
	if err != nil {
		return nil, err
	}
	// A series patch that this tree never applied would be lost: the tree
	// is behind the series, not the other way round.
	appliedNames := map[string]bool{}
	for _, r := range records {
		appliedNames[r.Patch] = true
	}
	// A commit whose export is the patch file counts as applied too (as in
	// Plan): apply keeps such commits without recording them.
	var exports map[string]bool
	for _, e := range s.Entries {
		if appliedNames[e.Name] {
			continue
		}
		if exports == nil {
			exports = map[string]bool{}
			for _, c := range commits {
				data, err := t.FormatPatch(c)
				if err != nil {
					return nil, err
				}
				exports[string(data)] = true
			}
		}
		if file, err := os.ReadFile(s.Path(e)); err != nil || !exports[string(file)] {
			return nil, &SyncError{fmt.Sprintf("%s:%d: %s was never applied to the patched tree, so exporting would remove it; run `make apply` first (nothing was changed)", s.File, e.Line, e.Name)}
		}
	}
	bySubject := map[string]string{}
	inSeries := map[string]bool{}
	for _, e := range s.Entries {
		inSeries[e.Name] = true
		// A patch whose message does not validate (a trailer being added,
		// say) is still found by its subject; without one, export would
		// give its commit a new name and remove the patch.
		subject, err := series.ReadSubject(s.Path(e))
		if errors.Is(err, fs.ErrNotExist) {
			// Its commit's record still names it.
			continue
		}
		if err != nil {
			return nil, &SyncError{fmt.Sprintf("%s:%d: %s: its subject cannot be read, so no commit can be matched to it (nothing was changed): %v", s.File, e.Line, e.Name, err)}
		}
		bySubject[subject] = e.Name
	}
	res := &ExportResult{}
	var names []string
	used := map[string]bool{}
	for i, c := range commits {
		subject, err := t.Line("log", "-1", "--format=%s", c)
		if err != nil {
			return nil, err
		}
		// The recorded name, unless the series no longer has it (the patch
		// was renamed in patches/: its subject finds the new name).
		name := ""
		r, recorded := records[c]
		if recorded && inSeries[r.Patch] {
			name = r.Patch
		} else if n, ok := bySubject[subject]; ok {
			name = n
		} else if recorded {
			name = r.Patch
		} else {
			name = Slug(subject) + ".patch"
		}
		if used[name] {
			return nil, fmt.Errorf("commit %.12s %q: patch name %s is already taken by an earlier commit; give the commit a distinct subject", c, subject, name)
		}
		used[name] = true
		names = append(names, name)
		data, err := t.FormatPatch(c)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(s.Dir, name)
		old, err := os.ReadFile(path)
		if err == nil && bytes.Equal(old, data) {
			res.Unchanged = append(res.Unchanged, name)
			progress("export: [%d/%d] %s (unchanged)", i+1, len(commits), name)
		} else {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return nil, err
			}
			res.Written = append(res.Written, name)
			progress("export: [%d/%d] %s (written)", i+1, len(commits), name)
		}
		if r, ok := records[c]; !ok || r.Patch != name || !sameSum(path, r.SHA256) {
			if err := t.Record(c, path); err != nil {
				return nil, err
			}
		}
	}
	for _, e := range s.Entries {
		if !used[e.Name] {
			if err := os.Remove(s.Path(e)); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
			res.Removed = append(res.Removed, e.Name)
			progress("export: %s removed (no commit in the tree makes it)", e.Name)
		}
	}
	if err := WriteSeries(s.File, names); err != nil {
		return nil, err
	}
	return res, nil
}

func sameSum(path, sum string) bool {
	got, err := fileSHA256(path)
	return err == nil && got == sum
}

// WriteSeries rewrites the series file with names, keeping the comment
// block at its top.
func WriteSeries(file string, names []string) error {
	var header []string
	if data, err := os.ReadFile(file); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(l, "#") {
				break
			}
			header = append(header, l)
		}
	}
	var b strings.Builder
	for _, l := range header {
		b.WriteString(l + "\n")
	}
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// Slug makes a patch file name from a commit subject.
func Slug(subject string) string {
	s := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(subject), "-"), "-")
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-")
		if i := strings.LastIndexByte(s, '-'); i > 30 {
			s = s[:i]
		}
	}
	if s == "" {
		s = "patch"
	}
	return s
}
