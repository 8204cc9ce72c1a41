package rebase

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/linetree"
	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// Port carries the patches names (file names, with or without .patch) of
// line from into line l: l's series is replayed on its own release with the
// ported patches inserted where their neighbours in the source line put
// them (or in place of l's version of the same patch), with 3-way merges
// against the source line's tree. It stops on a conflict.
//
// With since (a commit of the repository), only the change that the source
// line made to each patch since then is carried: it is merged into the
// target's own version of the patch, which keeps what the target adapted
// to its release (see portChange). The target must have the patch and its
// patched tree; a change that conflicts with the target's version is an
// error, and nothing changes.
func Port(l line.Line, from string, names []string, since string, progress Progress, warn io.Writer) error {
	src, err := line.Get(l.Root, from)
	if err != nil {
		return fmt.Errorf("FROM: %w", err)
	}
	if src.Name == l.Name {
		return fmt.Errorf("FROM=%s and TO=%s are the same line", src.Name, l.Name)
	}
	if err := inProgress(l); err != nil {
		return err
	}
	srcSeries, err := series.Read(src.SeriesFile())
	if err != nil {
		return err
	}
	var ported []string
	for _, name := range names {
		name = filepath.Base(name)
		if !strings.HasSuffix(name, ".patch") {
			name += ".patch"
		}
		found := false
		for _, e := range srcSeries.Entries {
			if e.Name == name {
				found = true
			}
		}
		if !found {
			var have []string
			for _, e := range srcSeries.Entries {
				have = append(have, e.Name)
			}
			return fmt.Errorf("line %s has no patch %s in %s; its patches are:\n  %s", src.Name, name, src.SeriesFile(), strings.Join(have, "\n  "))
		}
		if _, err := series.ReadPatch(filepath.Join(src.Dir(), name)); err != nil {
			return err
		}
		ported = append(ported, name)
	}
	p, err := l.Pin()
	if err != nil {
		return err
	}
	s, err := series.Read(l.SeriesFile())
	if err != nil {
		return err
	}
	if _, err := linetree.ReadPatches(s); err != nil {
		return err
	}
	if since != "" {
		commit, err := tree.Git{Dir: l.Root}.Line("rev-parse", "--verify", "--quiet", "--short=12", since+"^{commit}")
		if err != nil {
			return fmt.Errorf("SINCE=%s is not a commit of the repository", since)
		}
		since = commit
		for _, name := range ported {
			if !slices.ContainsFunc(s.Entries, func(e series.Entry) bool { return e.Name == name }) {
				return fmt.Errorf("line %s has no patch %s: SINCE= carries a change into the line's own version of a patch; port the patch whole (no SINCE)", l.Name, name)
			}
			if _, _, err := changedSince(l.Root, src, name, since); err != nil {
				return err
			}
		}
		if _, err := os.Stat(l.TreeDir()); err != nil {
			return fmt.Errorf("SINCE= merges the change into line %s's version of the patch, in its patched tree: run `make apply LINE=%s` first", l.Name, l.Name)
		}
	}
	var paths, portedPaths []string
	for _, n := range portOrder(srcSeries, s, ported) {
		path := filepath.Join(l.Dir(), n)
		for _, pn := range ported {
			if pn == n {
				path = filepath.Join(src.Dir(), n)
				portedPaths = append(portedPaths, path)
			}
		}
		paths = append(paths, path)
	}
	srcTree, err := tree.Open(src.TreeDir())
	if err != nil {
		return fmt.Errorf("the 3-way merge needs line %s's patched tree: run `make apply LINE=%s` first (%v)", src.Name, src.Name, err)
	}
	dir := l.PortDir()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := newSessionDir(dir, p); err != nil {
		return err
	}
	var t, cur *tree.Tree
	if _, err := os.Stat(l.TreeDir()); err == nil {
		cur, err = linetree.CleanSeriesTree(l, p, s, progress)
		if err != nil {
			os.RemoveAll(dir)
			return err
		}
		progress("port: copying line %s's tree at upstream %s", l.Name, p.Version)
		t, err = CloneBase(cur, TreeDir(dir))
		if err != nil {
			os.RemoveAll(dir)
			return err
		}
	} else {
		t, err = AssembleTree(TreeDir(dir), p, modfetch.GoCommand{}, progress)
		if err != nil {
			os.RemoveAll(dir)
			return err
		}
	}
	if err := ShareObjects(t, srcTree); err != nil {
		return err
	}
	if since != "" {
		for i, path := range portedPaths {
			name := filepath.Base(path)
			progress("port: %s: merging line %s's change since %s into line %s's version", name, src.Name, since, l.Name)
			changed, kept, err := portChange(l.Root, src, l, srcTree, cur, t, name, since, filepath.Join(dir, "change"))
			if err != nil {
				os.RemoveAll(dir)
				return err
			}
			if kept {
				fmt.Fprintf(warn, "port: %s: line %s's change to the patch's message conflicts with line %s's message, which is kept: carry the change to the message by hand (git commit --amend in the tree, then make export LINE=%s)\n", name, src.Name, l.Name, l.Name)
			}
			portedPaths[i] = changed
			paths[slices.Index(paths, path)] = changed
		}
	}
	progress("port: %s from line %s into line %s (%s)", strings.Join(ported, ", "), src.Name, l.Name, p.Version)
	sess, err := StartSession(&Session{Dir: dir, Kind: KindPort, FromLine: src.Name, Line: l.Name, From: p.Version, To: p.Version, Ported: portedPaths, Since: since}, paths, progress)
	if err != nil {
		return err
	}
	return afterReplay(l, sess, progress, warn)
}

// portOrder is the target series with the ported patches: one the target
// has already is replaced in place; a new one goes after the nearest
// patch before it in the source series that the target has (first when
// there is none).
func portOrder(src, dst *series.Series, ported []string) []string {
	var out []string
	for _, e := range dst.Entries {
		out = append(out, e.Name)
	}
	index := func(name string) int {
		for i, n := range out {
			if n == name {
				return i
			}
		}
		return -1
	}
	for _, name := range ported {
		if index(name) >= 0 {
			continue
		}
		at := 0
		for _, e := range src.Entries {
			if e.Name == name {
				break
			}
			if i := index(e.Name); i >= 0 {
				at = i + 1
			}
		}
		out = append(out[:at], append([]string{name}, out[at:]...)...)
	}
	return out
}
