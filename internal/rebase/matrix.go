package rebase

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/linetree"
	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
	"github.com/kube-carry/kube-carry/internal/txn"
)

// VersionTree is the upstream tree of version at dir, ready to replay on:
// clean and at its "upstream <version>" commit. A tree left there by an
// earlier run is reused (reset hard to that commit); otherwise the release
// is assembled from the module proxy (pin computed in memory, never
// written) into a temporary directory and renamed into place.
func VersionTree(dir, version string, dl modfetch.Downloader, progress Progress) (*tree.Tree, error) {
	if _, err := os.Stat(dir); err == nil {
		t, err := reuse(dir, version)
		if err == nil {
			progress("%s: reusing %s", version, dir)
			return t, nil
		}
		progress("%s: %v; assembling it again", version, err)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	p, err := modfetch.Compute(version, dl, modfetch.Progress(progress))
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", version, err)
	}
	return AssembleTree(dir, p, dl, progress)
}

// AssembleTree assembles the release pinned by p into dir, which must not
// exist: into a temporary directory first, committed as "upstream
// <version>", then renamed into place, so dir never holds a partial tree.
func AssembleTree(dir string, p *pin.Pin, dl modfetch.Downloader, progress Progress) (*tree.Tree, error) {
	version := p.Version
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	// A fixed staging name: what a killed run left is removed here.
	tmp := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".assemble")
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := modfetch.Assemble(p, "pin of "+version, tmp, dl, modfetch.Progress(progress)); err != nil {
		return nil, fmt.Errorf("upstream %s: %w", version, err)
	}
	progress("%s: committing %q", version, tree.UpstreamSubject(version))
	if _, err := tree.Init(tmp, version, p.Date); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return tree.Open(dir)
}

// reuse resets a cached tree of version to its upstream commit.
func reuse(dir, version string) (*tree.Tree, error) {
	t, err := tree.Open(dir)
	if err != nil {
		return nil, err
	}
	root, have, err := t.Base()
	if err != nil {
		return nil, err
	}
	if have != version {
		return nil, fmt.Errorf("%s is upstream %s, not %s", dir, have, version)
	}
	if t.InProgress() != "" {
		_, _ = t.Run("am", "--abort")
	}
	if _, err := t.Run("reset", "-q", "--hard", root); err != nil {
		return nil, err
	}
	// Every upstream file is tracked (Init adds with -f), so this only
	// removes what a replay left behind.
	if _, err := t.Run("clean", "-q", "-f", "-d", "-x"); err != nil {
		return nil, err
	}
	return t, nil
}

// Column is one release of a matrix: the results of its replay, or the
// error that kept it from being replayed.
type Column struct {
	Version string
	Results []Result
	Err     error
}

func (c Column) cell(patch string) (string, *Result) {
	if c.Err != nil {
		return "error", nil
	}
	for i, r := range c.Results {
		if r.Patch == patch {
			s := string(r.Outcome)
			if len(r.After) > 0 {
				s += "*"
			}
			return s, &c.Results[i]
		}
	}
	return "-", nil
}

// notes are the explanations under the table: one per column error and
// per result that is not clean.
func notes(cols []Column) []string {
	var out []string
	for _, c := range cols {
		if c.Err != nil {
			out = append(out, fmt.Sprintf("%s: error: %v", c.Version, c.Err))
			continue
		}
		for _, r := range c.Results {
			if r.Outcome == Clean && len(r.After) == 0 {
				continue
			}
			n := fmt.Sprintf("%s %s: %s", c.Version, r.Patch, r.Outcome)
			var why []string
			if r.Detail != "" {
				why = append(why, r.Detail)
			}
			if len(r.Files) > 0 {
				why = append(why, "files: "+strings.Join(r.Files, ", "))
			}
			if len(r.After) > 0 {
				why = append(why, "* on a tree without the conflicting "+strings.Join(r.After, ", "))
			}
			if len(why) > 0 {
				n += " (" + strings.Join(why, "; ") + ")"
			}
			out = append(out, n)
		}
	}
	return out
}

// WriteTable writes the patch × version table, aligned, then the notes.
func WriteTable(w io.Writer, patches []string, cols []Column) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "patch")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.Version)
	}
	fmt.Fprintln(tw)
	for _, p := range patches {
		fmt.Fprint(tw, p)
		for _, c := range cols {
			s, _ := c.cell(p)
			fmt.Fprintf(tw, "\t%s", s)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes(cols) {
		if _, err := fmt.Fprintf(w, "  %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes the table as a markdown document; series names what
// was checked (e.g. "patches/series (revision 1) on upstream v1.34.4").
func WriteMarkdown(w io.Writer, series string, patches []string, cols []Column) error {
	var b strings.Builder
	b.WriteString("# Forward-compatibility matrix\n\n")
	fmt.Fprintf(&b, "Apply-only replay of %s with `git am --3way` on each release (`make matrix`).\n", series)
	b.WriteString("clean: applies exactly; merged: needs offsets or a 3-way merge; conflict: the merge leaves conflicts; upstream: the release already contains the change.\n\n")
	b.WriteString("| patch |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s |", c.Version)
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, p := range patches {
		fmt.Fprintf(&b, "| `%s` |", p)
		for _, c := range cols {
			s, _ := c.cell(p)
			fmt.Fprintf(&b, " %s |", s)
		}
		b.WriteString("\n")
	}
	if ns := notes(cols); len(ns) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range ns {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CloneBase copies the tree t, at its upstream commit, into dir (which
// must not exist) for a replay on the same release: a clone whose objects
// are hard links of t's, so it is cheap and t stays as it is.
func CloneBase(t *tree.Tree, dir string) (*tree.Tree, error) {
	base, _, err := t.Base()
	if err != nil {
		return nil, err
	}
	// git runs in the clone's parent: both paths must not depend on the
	// caller's working directory.
	src, err := filepath.Abs(t.Dir)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	tmp := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".clone")
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	g := tree.Git{Dir: filepath.Dir(tmp)}
	if _, err := g.Run("clone", "-q", "--no-checkout", src, tmp); err != nil {
		return nil, err
	}
	c := &tree.Tree{Git: tree.Git{Dir: tmp}}
	if err := tree.KeepBytes(tmp); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"remote", "remove", "origin"},
		{"checkout", "-q", "-B", "main", base},
	} {
		if _, err := c.Run(args...); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return tree.Open(dir)
}

// Matrix replays line l's series (apply only) on each release of versions
// in its own tree under line.MatrixDir (assembled once, reused after),
// prints a patch × version table on out and writes it as
// line.MatrixMarkdown and line.MatrixJSON. The pinned release goes first,
// with the series applied: the other trees borrow its objects, so a 3-way
// merge finds the blobs the patches were made against. A release that
// cannot be assembled fails its column; the others still run.
func Matrix(l line.Line, versions []string, out io.Writer, progress Progress) error {
	p, err := l.Pin()
	if err != nil {
		return err
	}
	s, err := series.Read(l.SeriesFile())
	if err != nil {
		return err
	}
	n, err := l.Revision()
	if err != nil {
		return err
	}
	paths, err := linetree.ReadPatches(s)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range s.Entries {
		names = append(names, e.Name)
	}
	seen := map[string]bool{}
	for _, v := range versions {
		if seen[v] {
			return fmt.Errorf("version %s given twice", v)
		}
		seen[v] = true
	}
	order := append([]string{p.Version}, versions...)
	if seen[p.Version] {
		order = versions
		for i, v := range versions {
			if v == p.Version {
				order = append(append([]string{v}, versions[:i:i]...), versions[i+1:]...)
			}
		}
	}

	cols := map[string]Column{}
	var base *tree.Tree
	for _, v := range order {
		progress("matrix: line %s on %s", l.Name, v)
		col := Column{Version: v}
		col.Results, col.Err = matrixColumn(l, v, p.Version, base, paths, progress)
		if col.Err != nil {
			progress("matrix: %s: %v", v, col.Err)
		}
		if v == p.Version && col.Err == nil {
			base, _ = tree.Open(line.MatrixTree(l.Root, v))
		}
		cols[v] = col
	}

	var shown []Column
	failed := 0
	for _, v := range versions {
		shown = append(shown, cols[v])
		if cols[v].Err != nil {
			failed++
		}
	}
	if err := WriteTable(out, names, shown); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(line.MatrixMarkdown(l.Root)), 0o755); err != nil {
		return err
	}
	var md strings.Builder
	what := fmt.Sprintf("the series of line %s, `%s` (revision %d, pinned on upstream %s)", l.Name, l.SeriesFile(), n, p.Version)
	if err := WriteMarkdown(&md, what, names, shown); err != nil {
		return err
	}
	if err := txn.WriteFile(line.MatrixMarkdown(l.Root), []byte(md.String())); err != nil {
		return err
	}
	if err := writeMatrixJSON(l, names, shown); err != nil {
		return err
	}
	progress("matrix: wrote %s and %s", line.MatrixMarkdown(l.Root), line.MatrixJSON(l.Root))
	if failed > 0 {
		return fmt.Errorf("%d of %d releases could not be checked (see the notes above)", failed, len(versions))
	}
	if bc := cols[p.Version]; bc.Err != nil {
		return fmt.Errorf("the pinned release %s could not be replayed, so no 3-way merges were possible: %v", p.Version, bc.Err)
	}
	return nil
}

// writeMatrixJSON writes the matrix of line l as line.MatrixJSON: line,
// releases, and per patch and release the outcome, for tests to read.
func writeMatrixJSON(l line.Line, names []string, cols []Column) error {
	type cell struct {
		Outcome string `json:"outcome"`
		Detail  string `json:"detail,omitempty"`
	}
	out := struct {
		Line     string                     `json:"line"`
		Releases []string                   `json:"releases"`
		Patches  []string                   `json:"patches"`
		Errors   map[string]string          `json:"errors,omitempty"`
		Cells    map[string]map[string]cell `json:"cells"`
	}{Line: l.Name, Patches: names, Cells: map[string]map[string]cell{}}
	for _, c := range cols {
		out.Releases = append(out.Releases, c.Version)
		if c.Err != nil {
			if out.Errors == nil {
				out.Errors = map[string]string{}
			}
			out.Errors[c.Version] = c.Err.Error()
			continue
		}
		for _, r := range c.Results {
			if out.Cells[r.Patch] == nil {
				out.Cells[r.Patch] = map[string]cell{}
			}
			o := string(r.Outcome)
			if len(r.After) > 0 {
				o += "*"
			}
			out.Cells[r.Patch][c.Version] = cell{Outcome: o, Detail: r.Detail}
		}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return txn.WriteFile(line.MatrixJSON(l.Root), append(data, '\n'))
}

// matrixColumn replays patches on the tree of version, which borrows the
// objects of base (the pinned release's tree, when it could be made).
func matrixColumn(l line.Line, version, pinned string, base *tree.Tree, patches []string, progress Progress) ([]Result, error) {
	t, err := VersionTree(line.MatrixTree(l.Root, version), version, modfetch.GoCommand{}, progress)
	if err != nil {
		return nil, err
	}
	if version != pinned && base != nil {
		if err := ShareObjects(t, base); err != nil {
			return nil, err
		}
	}
	return Classify(t, patches, progress)
}
