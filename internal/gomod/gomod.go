// Package gomod points a user's Go module at a line's patched tree, for
// users who build their own kube-scheduler with out-of-tree plugins and
// need the fork's in-tree plugins (README, "Out-of-tree plugins"): the
// replace block of a go.mod, and a go.work that uses the user's module
// with the tree's modules.
//
// The tree's modules are k8s.io/kubernetes and every staging module, each a
// directory staging/src/k8s.io/<name> with a go.mod; they are read from
// the tree, not from a list. The go.work takes the tree's own modules
// (`use`, as the tree's go.work does), so the user's build selects exactly
// the dependencies the fork's kube-scheduler is built with, offline and
// with the build cache of `make`.
package gomod

import (
	"bytes"
	"errors"
	"fmt"
	"go/version"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/kube-carry/kube-carry/internal/txn"
)

// MainModule is the module of a Kubernetes tree's root.
const MainModule = "k8s.io/kubernetes"

// StagingDir holds the staging modules, relative to the tree.
const StagingDir = "staging/src/k8s.io"

// WorkMarker is the first line of every go.work that WriteWork writes: a
// go.work that starts with it is rewritten, any other is left alone.
const WorkMarker = "// Written by kube-carry (`make gomod`, `carry gomod`): the module here built against a release line's patched tree."

// ErrNoTree is returned by ReadTree when the tree's directory does not
// exist.
var ErrNoTree = errors.New("no patched tree")

// Module is one module of the tree: its path and absolute directory.
type Module struct {
	Path string
	Dir  string
}

// Tree is a patched Kubernetes tree's modules and the settings of its
// workspace.
type Tree struct {
	// Dir is the tree's absolute directory.
	Dir string
	// Modules are k8s.io/kubernetes first, then the staging modules by
	// path.
	Modules []Module
	// Go, Toolchain and Godebug are the tree's go.work's (its go.mod's
	// when it has no go.work).
	Go        string
	Toolchain string
	Godebug   []Godebug
}

// Godebug is one godebug key=value setting.
type Godebug struct{ Key, Value string }

// Staging are the tree's staging modules.
func (t *Tree) Staging() []Module { return t.Modules[1:] }

// ReadTree reads the modules of the Kubernetes tree in dir: its go.mod
// must be k8s.io/kubernetes's, every staging directory with a go.mod is a
// module named k8s.io/<directory>, and every replace of the tree's go.mod
// that points into the tree must point at one of them.
func ReadTree(dir string) (*Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoTree)
	} else if err != nil {
		return nil, err
	}
	gomodPath := filepath.Join(abs, "go.mod")
	data, err := os.ReadFile(gomodPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no go.mod; not a Kubernetes tree", abs)
	}
	if err != nil {
		return nil, err
	}
	mf, err := modfile.Parse(gomodPath, data, nil)
	if err != nil {
		return nil, err
	}
	if mf.Module == nil || mf.Module.Mod.Path != MainModule {
		got := "no module line"
		if mf.Module != nil {
			got = "module " + mf.Module.Mod.Path
		}
		return nil, fmt.Errorf("%s: %s, want module %s; not a Kubernetes tree", gomodPath, got, MainModule)
	}
	t := &Tree{Dir: abs, Modules: []Module{{Path: MainModule, Dir: abs}}}

	staging := filepath.Join(abs, filepath.FromSlash(StagingDir))
	entries, err := os.ReadDir(staging)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(staging, e.Name(), "go.mod")
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		path := modfile.ModulePath(data)
		if want := "k8s.io/" + e.Name(); path != want {
			return nil, fmt.Errorf("%s: module %q, want %s (a staging module is named after its directory)", p, path, want)
		}
		t.Modules = append(t.Modules, Module{Path: path, Dir: filepath.Dir(p)})
	}
	if len(t.Modules) == 1 {
		return nil, fmt.Errorf("%s: no staging modules (directories with a go.mod); not a Kubernetes tree", staging)
	}
	slices.SortFunc(t.Modules[1:], func(a, b Module) int { return strings.Compare(a.Path, b.Path) })

	// k8s.io/kubernetes builds with the staging modules its go.mod
	// replaces: each must be in the tree.
	for _, r := range mf.Replace {
		if !modfile.IsDirectoryPath(r.New.Path) || filepath.IsAbs(r.New.Path) {
			continue
		}
		dir := filepath.Join(abs, filepath.FromSlash(r.New.Path))
		if !slices.ContainsFunc(t.Modules, func(m Module) bool { return m.Path == r.Old.Path && m.Dir == dir }) {
			return nil, fmt.Errorf("%s:%d: replaces %s with %s, which is not a module of the tree (no %s with module %s); the tree is incomplete: fetch it again (make clean-tree, then make)",
				gomodPath, r.Syntax.Start.Line, r.Old.Path, r.New.Path, filepath.Join(r.New.Path, "go.mod"), r.Old.Path)
		}
	}

	// The workspace's settings: the tree's go.work, else its go.mod.
	t.Go = goVersion(mf.Go)
	if mf.Toolchain != nil {
		t.Toolchain = mf.Toolchain.Name
	}
	for _, g := range mf.Godebug {
		t.Godebug = append(t.Godebug, Godebug{g.Key, g.Value})
	}
	workPath := filepath.Join(abs, "go.work")
	if data, err := os.ReadFile(workPath); err == nil {
		wf, err := modfile.ParseWork(workPath, data, nil)
		if err != nil {
			return nil, err
		}
		t.Go, t.Toolchain, t.Godebug = "", "", nil
		if wf.Go != nil {
			t.Go = wf.Go.Version
		}
		if wf.Toolchain != nil {
			t.Toolchain = wf.Toolchain.Name
		}
		for _, g := range wf.Godebug {
			t.Godebug = append(t.Godebug, Godebug{g.Key, g.Value})
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return t, nil
}

func goVersion(g *modfile.Go) string {
	if g == nil {
		return ""
	}
	return g.Version
}

// Replaces is the replace block that points a go.mod at the tree: every
// module of the tree to its absolute directory, formatted by modfile.
func (t *Tree) Replaces() []byte {
	// One block (modfile's File.AddReplace writes one line each).
	block := &modfile.LineBlock{Token: []string{"replace"}}
	for _, m := range t.Modules {
		block.Line = append(block.Line, &modfile.Line{Token: []string{modfile.AutoQuote(m.Path), "=>", modfile.AutoQuote(m.Dir)}, InBlock: true})
	}
	out := modfile.Format(&modfile.FileSyntax{Stmt: []modfile.Expr{block}})
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// UserModule is the module a go.work is written for.
type UserModule struct {
	// Dir is its directory, Path its module path.
	Dir, Path string
	file      *modfile.File
}

// ReadUserModule reads the go.mod in dir. It fails when there is none, when
// the module is one of the tree's, and when it replaces one of the tree's
// modules: the go.work takes those from the tree, and Go refuses a
// workspace whose module replaces another at all versions.
func ReadUserModule(dir string, t *Tree) (*UserModule, error) {
	info, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such directory; give the directory of your module (the one with its go.mod)", dir)
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a directory; give the directory of your module (the one with its go.mod)", dir)
	}
	p := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no go.mod: give the directory of a Go module (or make it one: cd %s && go mod init <module path>)", dir, dir)
	}
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(p, data, nil)
	if err != nil {
		return nil, err
	}
	if f.Module == nil {
		return nil, fmt.Errorf("%s: no module line", p)
	}
	u := &UserModule{Dir: dir, Path: f.Module.Mod.Path, file: f}
	for _, m := range t.Modules {
		if m.Path == u.Path {
			return nil, fmt.Errorf("%s:%d: module %s is a module of the patched tree itself; give the directory of your own module", p, f.Module.Syntax.Start.Line, u.Path)
		}
	}
	for _, r := range f.Replace {
		if slices.ContainsFunc(t.Modules, func(m Module) bool { return m.Path == r.Old.Path }) {
			return nil, fmt.Errorf("%s:%d: replaces %s, which the go.work takes from the patched tree; remove the replace directives of k8s.io/kubernetes and its staging modules from %s (the go.work replaces them all)", p, r.Syntax.Start.Line, r.Old.Path, p)
		}
	}
	return u, nil
}

// Work is the go.work for the user's module u: it uses u (".", the
// go.work is in its directory) and every module of the tree, with the
// tree's godebug settings, the newer go version and toolchain of the two,
// and comment lines after WorkMarker (header, without "// ").
func (t *Tree) Work(u *UserModule, header []string) ([]byte, error) {
	wf := &modfile.WorkFile{Syntax: &modfile.FileSyntax{}}
	comments := []modfile.Comment{{Token: WorkMarker}}
	for _, h := range header {
		comments = append(comments, modfile.Comment{Token: strings.TrimSpace("// " + h)})
	}
	wf.Syntax.Stmt = append(wf.Syntax.Stmt, &modfile.CommentBlock{Comments: modfile.Comments{Before: comments}})

	goV := newer(t.Go, goVersion(u.file.Go), func(v string) string { return "go" + v })
	if goV != "" {
		if err := wf.AddGoStmt(goV); err != nil {
			return nil, err
		}
	}
	var userToolchain string
	if u.file.Toolchain != nil {
		userToolchain = u.file.Toolchain.Name
	}
	if tc := newer(t.Toolchain, userToolchain, func(v string) string { return v }); tc != "" {
		if err := wf.AddToolchainStmt(tc); err != nil {
			return nil, err
		}
	}
	for _, g := range t.Godebug {
		if err := wf.AddGodebug(g.Key, g.Value); err != nil {
			return nil, err
		}
	}
	wf.AddNewUse(".", u.Path)
	for _, m := range t.Modules {
		wf.AddNewUse(m.Dir, m.Path)
	}
	return modfile.Format(wf.Syntax), nil
}

// newer is the newer of two go versions or toolchain names ("" when both
// are empty); goName maps one to its toolchain name for go/version.
func newer(a, b string, goName func(string) string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case version.Compare(goName(a), goName(b)) >= 0:
		return a
	default:
		return b
	}
}

// WriteWork writes the go.work for u in u's directory and returns its
// path. An existing go.work is replaced only when WriteWork wrote it (it
// starts with WorkMarker); any other is left as it is, and an error says
// so.
func (t *Tree) WriteWork(u *UserModule, header []string) (string, error) {
	path := filepath.Join(u.Dir, "go.work")
	old, err := os.ReadFile(path)
	switch {
	case err == nil && !strings.HasPrefix(string(old), WorkMarker+"\n"):
		return "", fmt.Errorf("%s exists and was not written by `make gomod`; it is left as it is: move it aside and run again, or add the tree's modules to it yourself (`use` %s and each module under %s)", path, t.Dir, filepath.Join(t.Dir, filepath.FromSlash(StagingDir)))
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	data, err := t.Work(u, header)
	if err != nil {
		return "", err
	}
	if err := txn.WriteFile(path, data); err != nil {
		return "", err
	}
	return path, nil
}
