// Package linetree works on a release line's patched tree
// (_output/<line>/src/kubernetes): it applies the line's series to it,
// exports the tree's commits back into the line's patches, checks it for
// work that is in no patch, and stamps the fork version into binaries built
// from it. cmd/carry only parses arguments and prints.
package linetree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
	"github.com/kube-carry/kube-carry/internal/txn"
)

// Progress reports a step of a workflow (a line of output).
type Progress = func(format string, args ...any)

// Open reads line l's pin and series and opens its patched tree.
func Open(l line.Line) (*pin.Pin, *series.Series, *tree.Tree, error) {
	p, err := l.Pin()
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := series.Read(l.SeriesFile())
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := tree.Open(l.TreeDir())
	if err != nil {
		return nil, nil, nil, err
	}
	return p, s, t, nil
}

// ReadPatches validates every patch of s before anything is touched, and
// returns their paths in series order.
func ReadPatches(s *series.Series) ([]string, error) {
	var paths []string
	for _, e := range s.Entries {
		if _, err := series.ReadPatch(s.Path(e)); err != nil {
			return nil, err
		}
		paths = append(paths, s.Path(e))
	}
	return paths, nil
}

// Status is "absent" when line l has no patched tree and "current" when it
// is at the pinned release; a tree at another release is an error that says
// how to remake it.
func Status(l line.Line) (string, error) {
	p, err := l.Pin()
	if err != nil {
		return "", err
	}
	dir := l.TreeDir()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return "absent", nil
	}
	t, err := tree.Open(dir)
	if err != nil {
		return "", fmt.Errorf("%s exists but is not a patched tree (%v); move it aside", dir, err)
	}
	_, v, err := t.Base()
	if err != nil {
		return "", err
	}
	if v != p.Version {
		return "", fmt.Errorf("%s is upstream %s but %s pins %s; export any work (make export LINE=%s), then `make clean-tree LINE=%s` and `make LINE=%s`", dir, v, l.PinFile(), p.Version, l.Name, l.Name, l.Name)
	}
	return "current", nil
}

// Apply applies line l's series to its patched tree (idempotent; never
// overwrites local work).
func Apply(l line.Line, progress Progress) error {
	p, s, t, err := Open(l)
	if err != nil {
		return err
	}
	if _, err := ReadPatches(s); err != nil {
		return err
	}
	if err := t.Apply(s, p.Version, progress); err != nil {
		return err
	}
	head, err := t.Line("rev-parse", "--short=12", "HEAD")
	if err != nil {
		return err
	}
	progress("apply: %s: %s is upstream %s + %d patches (HEAD %s)", l.Name, l.TreeDir(), p.Version, len(s.Entries), head)
	return nil
}

// Export regenerates line l's patches and series from its patched tree's
// commits. It writes the export into a staged copy of the line's folder
// and puts it in place with one journaled rename: a kill leaves the old
// patches or the new ones. Mutants that no longer apply are warned about
// on warn (CheckMutants).
func Export(l line.Line, progress Progress, warn io.Writer) error {
	_, _, t, err := Open(l)
	if err != nil {
		return err
	}
	// An export killed while git held the tree's index.lock leaves it;
	// the next command that marks the tree busy removes it.
	done, err := t.Busy()
	if err != nil {
		return err
	}
	defer done()
	stage := l.StageDir(line.StageExport)
	if err := os.RemoveAll(stage); err != nil {
		return err
	}
	if err := txn.CopyDir(l.Dir(), stage); err != nil {
		return err
	}
	s, err := series.Read(filepath.Join(stage, line.SeriesName))
	if err != nil {
		os.RemoveAll(stage)
		return err
	}
	// The tree's record of which patch each commit came from changes with
	// the patches: staged too, so a kill cannot leave the tree claiming a
	// patch file that never landed (apply and clean trust the record).
	records := t.RecordsFile() + ".stage"
	if err := copyIfExists(t.RecordsFile(), records); err != nil {
		return err
	}
	t.Records = records
	res, err := t.Export(s, progress)
	if err != nil {
		os.RemoveAll(stage)
		os.Remove(records)
		return err
	}
	if len(res.Written) == 0 && len(res.Removed) == 0 {
		same, err := sameFile(filepath.Join(stage, line.SeriesName), l.SeriesFile())
		if err != nil {
			return err
		}
		if same {
			progress("export: %s: %d unchanged", l.Name, len(res.Unchanged))
			if err := os.Rename(records, t.RecordsFile()); err != nil {
				return err
			}
			if err := os.RemoveAll(stage); err != nil {
				return err
			}
			return CheckMutants(l, t, warn)
		}
	}
	err = txn.Commit(l.JournalFile(), []txn.Move{
		{New: stage, Dst: l.Dir(), Old: l.StageDir(line.StageExportOld)},
		{New: records, Dst: t.RecordsFile(), Old: t.RecordsFile() + ".old"},
	})
	if err != nil {
		return err
	}
	progress("export: %s: %d written, %d unchanged, %d removed", l.Name, len(res.Written), len(res.Unchanged), len(res.Removed))
	return CheckMutants(l, t, warn)
}

// CheckMutants warns on w about every mutant of line l that no longer
// applies to its patched tree t. The harness applies mutants to the fully
// patched tree, so a later patch that moves a guarded line breaks its
// mutant; the export or port that made the change is the cheapest place to
// say so. A warning, not an error: the export or port itself is done and in
// place.
func CheckMutants(l line.Line, t *tree.Tree, w io.Writer) error {
	files, err := filepath.Glob(filepath.Join(l.MutantsDir(), "*.patch"))
	if err != nil {
		return err
	}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		if _, err := t.Run("apply", "--check", abs); err != nil {
			msg := err.Error()
			var gerr *tree.GitError
			if errors.As(err, &gerr) {
				msg = strings.TrimSpace(gerr.Stderr)
			}
			fmt.Fprintf(w, "line %s: warning: %s no longer applies to the patched tree; make it again as a diff against the tree:\n  %s\n",
				l.Name, filepath.ToSlash(l.Mutant(line.MutantsName+"/"+filepath.Base(f))),
				strings.ReplaceAll(msg, "\n", "\n  "))
		}
	}
	return nil
}

func sameFile(a, b string) (bool, error) {
	da, err := os.ReadFile(a)
	if err != nil {
		return false, err
	}
	db, err := os.ReadFile(b)
	if err != nil {
		return false, err
	}
	return string(da) == string(db), nil
}

// copyIfExists copies src to dst (an empty dst when src does not exist).
func copyIfExists(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// Check fails when line l's patched tree holds work that is in no patch
// file, or lacks patches of the series.
func Check(l line.Line) error {
	p, s, t, err := Open(l)
	if err != nil {
		return err
	}
	keep, err := t.Plan(s, p.Version)
	if err != nil {
		return err
	}
	commits, err := t.Commits()
	if err != nil {
		return err
	}
	if keep != len(s.Entries) || keep != len(commits) {
		return fmt.Errorf("%s: the tree has %d commits of which %d match the %d patches of %s; run `make apply LINE=%s`", l.TreeDir(), len(commits), keep, len(s.Entries), l.SeriesFile(), l.Name)
	}
	return nil
}

// Removable fails when line l's patched tree holds work that is in no
// patch file (so removing it would lose it).
func Removable(l line.Line) error {
	if _, err := os.Stat(l.TreeDir()); os.IsNotExist(err) {
		return nil
	}
	t, err := tree.Open(l.TreeDir())
	if err != nil {
		return err
	}
	if err := t.LocalWork(l.Dir()); err != nil {
		return fmt.Errorf("%v\nnothing was removed; to discard the work anyway: rm -rf %s", err, l.TreeDir())
	}
	return nil
}

// CleanSeriesTree is line l's patched tree, checked to hold nothing but
// the series s of pin p (it lends its objects to a session, and the
// session's tree replaces it), with the series applied.
func CleanSeriesTree(l line.Line, p *pin.Pin, s *series.Series, progress Progress) (*tree.Tree, error) {
	t, err := tree.Open(l.TreeDir())
	if err != nil {
		return nil, fmt.Errorf("%v (run `make apply LINE=%s` first)", err, l.Name)
	}
	done, err := t.Busy()
	if err != nil {
		return nil, err
	}
	defer done()
	if err := t.LocalWork(l.Dir()); err != nil {
		return nil, fmt.Errorf("%v\nexport or discard that work first (make export LINE=%s)", err, l.Name)
	}
	if err := t.Apply(s, p.Version, progress); err != nil {
		return nil, err
	}
	return t, nil
}

// Unbusy clears what a command killed while it ran git on line l's tree
// left there (its git locks), for an -abort.
func Unbusy(l line.Line) error {
	t, err := tree.Open(l.TreeDir())
	if err != nil {
		return nil
	}
	done, err := t.Busy()
	if err != nil {
		return err
	}
	done()
	return nil
}

// Ldflags are the -ldflags that stamp line l's fork version, its tree's
// commit and state and the upstream release time into a binary.
func Ldflags(l line.Line) (string, error) {
	v, p, err := l.Version()
	if err != nil {
		return "", err
	}
	t, err := tree.Open(l.TreeDir())
	if err != nil {
		return "", err
	}
	commit, err := t.Line("rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	dirty, err := t.Dirty()
	if err != nil {
		return "", err
	}
	state := "clean"
	if len(dirty) > 0 {
		state = "dirty"
	}
	return versionFlags(p, v, commit, state), nil
}

// UpstreamLdflags stamp plain upstream: the pinned release and the tree's
// first commit (`upstream vX.Y.Z`), for the binaries scenarios compare the
// fork with.
func UpstreamLdflags(l line.Line) (string, error) {
	p, err := l.Pin()
	if err != nil {
		return "", err
	}
	t, err := tree.Open(l.TreeDir())
	if err != nil {
		return "", err
	}
	commit, version, err := t.Base()
	if err != nil {
		return "", err
	}
	if version != p.Version {
		return "", fmt.Errorf("%s is at upstream %s, the pin is %s: run make", l.TreeDir(), version, p.Version)
	}
	return versionFlags(p, p.Version, commit, "clean"), nil
}

func versionFlags(p *pin.Pin, v, commit, state string) string {
	major, minor := "1", strings.Split(strings.TrimPrefix(p.Version, "v"), ".")[1]
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for _, kv := range [][2]string{
			{"gitVersion", v},
			{"gitMajor", major},
			{"gitMinor", minor},
			{"gitCommit", commit},
			{"gitTreeState", state},
			{"buildDate", p.Date.UTC().Format(time.RFC3339)},
		} {
			flags = append(flags, fmt.Sprintf("-X '%s.%s=%s'", pkg, kv[0], kv[1]))
		}
	}
	return "-s -w " + strings.Join(flags, " ")
}
