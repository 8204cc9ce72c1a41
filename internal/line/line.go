// Package line owns the release lines: every path of a line, in the
// repository (patches/<line>/: pin, series, revision, dropped list, end of
// life, mutants) and in _output/<line>/ (patched tree, binaries, worktrees,
// rebase and port sessions). cmd/carry, the harness and the scripts (through
// `carry paths`) all take their paths from here, so they cannot drift.
package line

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/txn"
)

// PatchesDir holds one folder per line, relative to the repository root.
const PatchesDir = "patches"

// Files of a line's folder.
const (
	PinName      = "UPSTREAM"
	SeriesName   = "series"
	RevisionName = "REVISION"
	DroppedName  = "DROPPED"
	EOLName      = "EOL"
	MutantsName  = "mutants"
)

// Shared paths, relative to the repository root: the release trees of the
// matrix are per release, not per line; LinesJSONFile is the table of
// `carry lines`; EtcdToolsDir holds one module per etcd version the lines'
// upstreams test with.
const (
	OutputDir      = "_output"
	MatrixDir      = "_output/matrix"
	MatrixFile     = "_output/matrix.md"
	MatrixJSONFile = "_output/matrix.json"
	LinesJSONFile  = "_output/lines.json"
	Changelog      = "CHANGELOG.md"
	EtcdToolsDir   = "tools/etcd"
)

// Kinds of the staging and backup paths a command puts beside what it
// replaces (Aside), e.g. patches/.<line>.new.
const (
	// StageNew is the folder `carry pin` starts a line in.
	StageNew = "new"
	// StageExport is the line's folder `carry export` writes, and
	// StageExportOld the folder it replaces.
	StageExport    = "export"
	StageExportOld = "export-old"
	// StageFinish is what the finish of a rebase, bump or port writes
	// (the line's folder, CHANGELOG.md), and StageOld what it replaces
	// (also the patched tree and the session's folder).
	StageFinish = "stage"
	StageOld    = "old"
	// SessionEnded is the empty folder a finish puts in place of the
	// session's, so a finished session cannot be finished twice.
	SessionEnded = "ended"
	// journalKind names the journal of a line's commands.
	journalKind = "journal"
)

// Aside is the staging or backup path of the given kind beside path:
// <dir>/.<base>.<kind>. Dot-names are never lines (List skips them).
func Aside(path, kind string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+kind)
}

// LinesFile is where `carry lines` writes its table as JSON.
func LinesFile(root string) string { return filepath.Join(root, LinesJSONFile) }

// MatrixMarkdown is the matrix of `carry matrix` as Markdown, and
// MatrixJSON the same as JSON (line, releases, and per patch and release
// the outcome, for tests to read).
func MatrixMarkdown(root string) string { return filepath.Join(root, MatrixFile) }
func MatrixJSON(root string) string     { return filepath.Join(root, MatrixJSONFile) }

// MatrixTree is the tree of upstream release that `carry matrix` replays
// the series on.
func MatrixTree(root, release string) string {
	return filepath.Join(root, MatrixDir, release, "kubernetes")
}

// ChangelogFile is the repository's CHANGELOG.md.
func ChangelogFile(root string) string { return filepath.Join(root, Changelog) }

// EtcdTool is the module folder that builds etcd version (vX.Y.Z or X.Y.Z):
// tools/etcd/X.Y.Z.
func EtcdTool(root, version string) string {
	return filepath.Join(root, EtcdToolsDir, strings.TrimPrefix(version, "v"))
}

// JournalGlob matches the journal of every line (JournalFile).
func JournalGlob(root string) string {
	return filepath.Join(root, PatchesDir, ".*."+journalKind)
}

// Line is one release line: the fork on one upstream minor.
type Line struct {
	// Root is the repository root ("." when commands run there).
	Root string
	// Name is the minor, vA.B.
	Name string
}

// ValidName reports whether name is a line name: vA.B.
func ValidName(name string) bool {
	return semver.IsValid(name) && semver.MajorMinor(name) == name && semver.Canonical(name) == name+".0"
}

// Minor is the line of a release vA.B.C: vA.B.
func Minor(release string) string { return semver.MajorMinor(release) }

func (l Line) path(elem ...string) string {
	return filepath.Join(append([]string{l.Root}, elem...)...)
}

// Dir is patches/<line>.
func (l Line) Dir() string { return l.path(PatchesDir, l.Name) }

// PinFile, SeriesFile, RevisionFile, DroppedFile and EOLFile are the
// line's files; MutantsDir holds its mutant patches.
func (l Line) PinFile() string      { return l.path(PatchesDir, l.Name, PinName) }
func (l Line) SeriesFile() string   { return l.path(PatchesDir, l.Name, SeriesName) }
func (l Line) RevisionFile() string { return l.path(PatchesDir, l.Name, RevisionName) }
func (l Line) DroppedFile() string  { return l.path(PatchesDir, l.Name, DroppedName) }
func (l Line) EOLFile() string      { return l.path(PatchesDir, l.Name, EOLName) }
func (l Line) MutantsDir() string   { return l.path(PatchesDir, l.Name, MutantsName) }

// JournalFile is where the commands of the line journal the commit of
// their result (internal/txn): patches/.<line>.journal, in the repository,
// so `make clean` cannot lose it.
func (l Line) JournalFile() string { return Aside(l.Dir(), journalKind) }

// StageDir is the staging or backup folder of the given kind (StageNew,
// StageExport, ...) beside the line's folder: patches/.<line>.<kind>.
func (l Line) StageDir(kind string) string { return Aside(l.Dir(), kind) }

// OutDir is _output/<line>: everything made for the line.
func (l Line) OutDir() string { return l.path(OutputDir, l.Name) }

// TreeDir is the patched tree, BinDir the built binaries, TestBinDir the
// binaries built for tests only, WorkDir the harness's worktrees, LogDir
// the full logs of the harness's last run (<patch>/<check>.log),
// RebaseDir a rebase or bump in progress, PortDir a port in progress.
func (l Line) TreeDir() string    { return l.path(OutputDir, l.Name, "src", "kubernetes") }
func (l Line) BinDir() string     { return l.path(OutputDir, l.Name, "bin") }
func (l Line) TestBinDir() string { return l.path(OutputDir, l.Name, "test", "bin") }
func (l Line) WorkDir() string    { return l.path(OutputDir, l.Name, "work") }
func (l Line) LogDir() string     { return l.path(OutputDir, l.Name, "logs") }
func (l Line) RebaseDir() string  { return l.path(OutputDir, l.Name, "rebase") }
func (l Line) PortDir() string    { return l.path(OutputDir, l.Name, "port") }

// EtcdScript is the script of the line's upstream that names the etcd
// version its tests run against.
func (l Line) EtcdScript() string { return filepath.Join(l.TreeDir(), "hack", "lib", "etcd.sh") }

// ImagesDir holds the container images `make cluster` builds for the line.
func (l Line) ImagesDir() string { return l.path(OutputDir, l.Name, "images") }

// UpstreamBinDir holds kube-scheduler and kubelet built from the tree's
// first commit (plain upstream vX.Y.Z), for scenarios that compare the fork
// with upstream on the same cluster.
func (l Line) UpstreamBinDir() string { return l.path(OutputDir, l.Name, "upstream", "bin") }

// ClusterDir is the state of `make cluster` on the line: certificates,
// configuration, the nodes' runtimes, and every component's log.
func (l Line) ClusterDir() string { return l.path(OutputDir, l.Name, "cluster") }

// Mutant is the path of a Guards: trailer's mutant (relative to the line's
// folder, e.g. mutants/x.patch).
func (l Line) Mutant(rel string) string { return l.path(PatchesDir, l.Name, filepath.FromSlash(rel)) }

// Pin reads the line's pin and checks that it is a release of the line.
func (l Line) Pin() (*pin.Pin, error) {
	p, err := pin.ReadFile(l.PinFile())
	if err != nil {
		return nil, err
	}
	if Minor(p.Version) != l.Name {
		return nil, fmt.Errorf("%s: pins %s, which is not a release of line %s", l.PinFile(), p.Version, l.Name)
	}
	return p, nil
}

// Revision reads N of vX.Y.Z-carry.N.
func (l Line) Revision() (int, error) {
	data, err := os.ReadFile(l.RevisionFile())
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s:1: want a series revision (a whole number ≥ 1), got %q", l.RevisionFile(), strings.TrimSpace(string(data)))
	}
	return n, nil
}

// Version is the fork version of the line, vX.Y.Z-carry.N, and its pin.
func (l Line) Version() (string, *pin.Pin, error) {
	p, err := l.Pin()
	if err != nil {
		return "", nil, err
	}
	n, err := l.Revision()
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%s-carry.%d", p.Version, n), p, nil
}

// EOL is the line's end-of-life note (the first line of EOL), or "" while
// the line is supported.
func (l Line) EOL() (string, error) {
	data, err := os.ReadFile(l.EOLFile())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	note, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	if note == "" {
		return "", fmt.Errorf("%s:1: empty; say why and since when the line is end-of-life", l.EOLFile())
	}
	return note, nil
}

// List returns the lines of the repository at root, oldest first. Every
// folder under patches/ must be a line.
func List(root string) ([]Line, error) {
	entries, err := os.ReadDir(filepath.Join(root, PatchesDir))
	if err != nil {
		return nil, err
	}
	var lines []Line
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			// Staging and backup folders of a command in progress.
			continue
		}
		if !e.IsDir() {
			return nil, fmt.Errorf("%s: only line folders (vA.B) belong in %s/", filepath.Join(root, PatchesDir, e.Name()), PatchesDir)
		}
		if !ValidName(e.Name()) {
			return nil, fmt.Errorf("%s: not a line folder: want vA.B (e.g. v1.37)", filepath.Join(root, PatchesDir, e.Name()))
		}
		lines = append(lines, Line{Root: root, Name: e.Name()})
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s: no release lines (folders vA.B)", filepath.Join(root, PatchesDir))
	}
	slices.SortFunc(lines, func(a, b Line) int { return semver.Compare(a.Name, b.Name) })
	return lines, nil
}

// Get returns the line name, or the newest line when name is empty. An
// unknown name is an error that lists the lines there are.
func Get(root, name string) (Line, error) {
	lines, err := List(root)
	if err != nil {
		return Line{}, err
	}
	if name == "" {
		return lines[len(lines)-1], nil
	}
	for _, l := range lines {
		if l.Name == name {
			return l, nil
		}
	}
	return Line{}, &UnknownError{Name: name, Lines: Names(lines)}
}

// UnknownError is a line name that has no folder.
type UnknownError struct {
	Name  string
	Lines []string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("LINE=%s: no such release line; the lines are: %s", e.Name, strings.Join(e.Lines, ", "))
}

// Names are the names of lines.
func Names(lines []Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Name)
	}
	return out
}

// Supported are the lines without an EOL note.
func Supported(lines []Line) ([]Line, error) {
	var out []Line
	for _, l := range lines {
		eol, err := l.EOL()
		if err != nil {
			return nil, err
		}
		if eol == "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// ResumeAll finishes every command that was killed while putting its
// result in place (a journal under patches/), and removes the temporary
// files of atomic writes a kill interrupted, before anything else runs.
func ResumeAll(root string, progress func(format string, args ...any)) error {
	journals, err := filepath.Glob(JournalGlob(root))
	if err != nil {
		return err
	}
	temps, err := filepath.Glob(filepath.Join(root, ".*"+txn.TempSuffix))
	if err != nil {
		return err
	}
	for _, f := range temps {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if err := txn.RemoveTemps(filepath.Join(root, PatchesDir)); err != nil {
		return err
	}
	for _, j := range journals {
		progress("carry: finishing a command that was interrupted while putting its result in place (%s)", j)
		if err := txn.Resume(j); err != nil {
			return fmt.Errorf("finishing the interrupted command of %s: %w", j, err)
		}
	}
	return nil
}

// WritePin writes p as the line's pin. A line without a folder is started:
// its folder, with the pin, an empty series and revision 1, appears whole
// (staged as StageNew, then one rename). started says which was done.
func (l Line) WritePin(p *pin.Pin) (started bool, err error) {
	var b strings.Builder
	if err := p.Write(&b); err != nil {
		return false, err
	}
	if _, err := os.Stat(l.Dir()); err == nil {
		return false, txn.WriteFile(l.PinFile(), []byte(b.String()))
	}
	stage := l.StageDir(StageNew)
	if err := os.RemoveAll(stage); err != nil {
		return false, err
	}
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return false, err
	}
	for name, data := range map[string]string{PinName: b.String(), SeriesName: "", RevisionName: "1\n"} {
		if err := os.WriteFile(filepath.Join(stage, name), []byte(data), 0o644); err != nil {
			return false, err
		}
	}
	if err := os.Rename(stage, l.Dir()); err != nil {
		return false, err
	}
	return true, nil
}
