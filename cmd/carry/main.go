// Command carry is kube-carry's small Go tool: everything the scripts need
// that parses (UPSTREAM, the series, patches) or keeps state (the patched
// tree) lives here, one subcommand per step. The scripts in scripts/ wire
// the steps; run `carry help` for the list.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/rebase"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// Paths of the repository layout, relative to its root.
const (
	PinFile      = "UPSTREAM"
	SeriesFile   = "patches/series"
	RevisionFile = "patches/REVISION"
	TreeDir      = "_output/src/kubernetes"
	MatrixDir    = "_output/matrix"
	RebaseDir    = "_output/rebase"
	DroppedFile  = "patches/DROPPED"
	Changelog    = "CHANGELOG.md"
	MatrixFile   = "_output/matrix.md"
)

type command struct {
	usage string
	run   func(args []string) error
}

var commands = map[string]command{
	"pin":             {"pin VERSION: compute the pin of an upstream release and write UPSTREAM", cmdPin},
	"assemble":        {"assemble DIR: assemble the pinned upstream tree into the new directory DIR", cmdAssemble},
	"init-tree":       {"init-tree DIR: make the assembled tree DIR a git repository with one commit \"upstream vX.Y.Z\"", cmdInitTree},
	"upstream":        {"upstream: print the pinned upstream release", cmdUpstream},
	"tree-status":     {"tree-status: print `absent` or `current` for the patched tree; fail when it is at another release than the pin", cmdTreeStatus},
	"apply":           {"apply: apply patches/series to the patched tree (idempotent; never overwrites local work)", cmdApply},
	"export":          {"export: regenerate patches/ and patches/series from the patched tree's commits", cmdExport},
	"check-tree":      {"check-tree: fail when the patched tree holds work that is in no patch file", cmdCheckTree},
	"removable":       {"removable: fail when the patched tree holds work that is in no patch file (so removing it would lose it)", cmdRemovable},
	"version":         {"version: print the fork version, vX.Y.Z-carry.N", cmdVersion},
	"ldflags":         {"ldflags: print the -ldflags that stamp the fork version into a binary", cmdLdflags},
	"rebase":          {"rebase VERSION: replay the series on a fresh tree of VERSION; stops on a conflict, finishes by moving the pin", cmdRebase},
	"rebase-continue": {"rebase-continue: go on after resolving a conflict (git am --continue or --skip in the rebased tree)", cmdRebaseContinue},
	"rebase-abort":    {"rebase-abort: throw the rebase away; pin, series and patched tree stay as they were", cmdRebaseAbort},
	"etcd-version":    {"etcd-version: print the etcd version upstream's hack/lib/etcd.sh names for the pin; fail when tools/etcd builds another", cmdEtcdVersion},
	"matrix":          {"matrix VERSION...: replay the series (apply only) on each upstream release; print a patch × version table and write " + MatrixFile, cmdMatrix},
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "help" || os.Args[1] == "-h" || os.Args[1] == "--help" {
		usage()
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "carry: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := c.run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "carry %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: carry COMMAND [ARGS]\n\ncommands:")
	for _, name := range []string{"pin", "assemble", "init-tree", "upstream", "tree-status", "apply", "export", "check-tree", "removable", "version", "ldflags", "matrix", "rebase", "rebase-continue", "rebase-abort", "etcd-version"} {
		fmt.Fprintf(os.Stderr, "  %s\n", commands[name].usage)
	}
}

func progress(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func cmdPin(args []string) error {
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	out := fs.String("o", PinFile, "file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: carry pin VERSION (e.g. v1.34.4)")
	}
	p, err := modfetch.Compute(fs.Arg(0), modfetch.GoCommand{}, progress)
	if err != nil {
		return err
	}
	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	progress("pin: wrote %s for %s (%d modules)", *out, p.Version, len(p.Modules))
	return nil
}

func cmdAssemble(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: carry assemble DIR")
	}
	p, err := pin.ReadFile(PinFile)
	if err != nil {
		return err
	}
	return modfetch.Assemble(p, PinFile, args[0], modfetch.GoCommand{}, progress)
}

func cmdInitTree(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: carry init-tree DIR")
	}
	p, err := pin.ReadFile(PinFile)
	if err != nil {
		return err
	}
	progress("fetch: committing %s as %q", args[0], tree.UpstreamSubject(p.Version))
	_, err = tree.Init(args[0], p.Version, p.Date)
	return err
}

func cmdUpstream(args []string) error {
	p, err := pin.ReadFile(PinFile)
	if err != nil {
		return err
	}
	fmt.Println(p.Version)
	return nil
}

func cmdTreeStatus(args []string) error {
	p, err := pin.ReadFile(PinFile)
	if err != nil {
		return err
	}
	if _, err := os.Stat(TreeDir); os.IsNotExist(err) {
		fmt.Println("absent")
		return nil
	}
	t, err := tree.Open(TreeDir)
	if err != nil {
		return fmt.Errorf("%s exists but is not a patched tree (%v); move it aside", TreeDir, err)
	}
	_, v, err := t.Base()
	if err != nil {
		return err
	}
	if v != p.Version {
		return fmt.Errorf("%s is upstream %s but %s pins %s; export any work (make export), then `make clean-tree` and `make`", TreeDir, v, PinFile, p.Version)
	}
	fmt.Println("current")
	return nil
}

func openAll() (*pin.Pin, *series.Series, *tree.Tree, error) {
	p, err := pin.ReadFile(PinFile)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := series.Read(SeriesFile)
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := tree.Open(TreeDir)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, s, t, nil
}

func cmdApply(args []string) error {
	p, s, t, err := openAll()
	if err != nil {
		return err
	}
	// Every patch must be well formed before the tree is touched.
	for _, e := range s.Entries {
		if _, err := series.ReadPatch(s.Path(e)); err != nil {
			return err
		}
	}
	if err := t.Apply(s, p.Version, progress); err != nil {
		return err
	}
	head, err := t.Line("rev-parse", "--short=12", "HEAD")
	if err != nil {
		return err
	}
	progress("apply: %s is upstream %s + %d patches (HEAD %s)", TreeDir, p.Version, len(s.Entries), head)
	return nil
}

func cmdExport(args []string) error {
	_, s, t, err := openAll()
	if err != nil {
		return err
	}
	res, err := t.Export(s, progress)
	if err != nil {
		return err
	}
	progress("export: %d written, %d unchanged, %d removed", len(res.Written), len(res.Unchanged), len(res.Removed))
	return nil
}

func cmdCheckTree(args []string) error {
	p, s, t, err := openAll()
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
		return fmt.Errorf("%s: the tree has %d commits of which %d match the %d patches of %s; run `make apply`", TreeDir, len(commits), keep, len(s.Entries), SeriesFile)
	}
	return nil
}

func cmdRemovable(args []string) error {
	if _, err := os.Stat(TreeDir); os.IsNotExist(err) {
		return nil
	}
	t, err := tree.Open(TreeDir)
	if err != nil {
		return err
	}
	if err := t.LocalWork("patches"); err != nil {
		return fmt.Errorf("%v\nnothing was removed; to discard the work anyway: rm -rf %s", err, TreeDir)
	}
	return nil
}

// Revision reads the series revision N of vX.Y.Z-carry.N.
func Revision() (int, error) {
	data, err := os.ReadFile(RevisionFile)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s:1: want a series revision (a whole number ≥ 1), got %q", RevisionFile, strings.TrimSpace(string(data)))
	}
	return n, nil
}

func forkVersion() (string, *pin.Pin, error) {
	p, err := pin.ReadFile(PinFile)
	if err != nil {
		return "", nil, err
	}
	n, err := Revision()
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%s-carry.%d", p.Version, n), p, nil
}

func cmdVersion(args []string) error {
	v, _, err := forkVersion()
	if err != nil {
		return err
	}
	fmt.Println(v)
	return nil
}

func cmdLdflags(args []string) error {
	v, p, err := forkVersion()
	if err != nil {
		return err
	}
	t, err := tree.Open(TreeDir)
	if err != nil {
		return err
	}
	commit, err := t.Line("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	dirty, err := t.Dirty()
	if err != nil {
		return err
	}
	state := "clean"
	if len(dirty) > 0 {
		state = "dirty"
	}
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
	fmt.Println("-s -w " + strings.Join(flags, " "))
	return nil
}

// cmdMatrix replays the series on each release in its own tree under
// MatrixDir (assembled once, reused after). The pinned release goes first,
// with the series applied: the other trees borrow its objects, so a 3-way
// merge finds the blobs the patches were made against. A release that
// cannot be assembled fails its column; the others still run.
func cmdMatrix(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: carry matrix VERSION... (e.g. v1.34.4 v1.35.4)")
	}
	p, err := pin.ReadFile(PinFile)
	if err != nil {
		return err
	}
	s, err := series.Read(SeriesFile)
	if err != nil {
		return err
	}
	n, err := Revision()
	if err != nil {
		return err
	}
	var names, paths []string
	for _, e := range s.Entries {
		if _, err := series.ReadPatch(s.Path(e)); err != nil {
			return err
		}
		names = append(names, e.Name)
		paths = append(paths, s.Path(e))
	}
	seen := map[string]bool{}
	for _, v := range args {
		if seen[v] {
			return fmt.Errorf("version %s given twice", v)
		}
		seen[v] = true
	}
	order := append([]string{p.Version}, args...)
	if seen[p.Version] {
		order = args
		for i, v := range args {
			if v == p.Version {
				order = append(append([]string{v}, args[:i:i]...), args[i+1:]...)
			}
		}
	}

	cols := map[string]rebase.Column{}
	var base *tree.Tree
	for _, v := range order {
		progress("matrix: %s", v)
		col := rebase.Column{Version: v}
		col.Results, col.Err = matrixColumn(v, p.Version, base, paths)
		if col.Err != nil {
			progress("matrix: %s: %v", v, col.Err)
		}
		if v == p.Version && col.Err == nil {
			base, _ = tree.Open(filepath.Join(MatrixDir, v, "kubernetes"))
		}
		cols[v] = col
	}

	var shown []rebase.Column
	failed := 0
	for _, v := range args {
		shown = append(shown, cols[v])
		if cols[v].Err != nil {
			failed++
		}
	}
	if err := rebase.WriteTable(os.Stdout, names, shown); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(MatrixFile), 0o755); err != nil {
		return err
	}
	f, err := os.Create(MatrixFile)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("`%s` (series revision %d, pinned on upstream %s)", SeriesFile, n, p.Version)
	if err := rebase.WriteMarkdown(f, what, names, shown); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	progress("matrix: wrote %s", MatrixFile)
	if failed > 0 {
		return fmt.Errorf("%d of %d releases could not be checked (see the notes above)", failed, len(args))
	}
	if bc := cols[p.Version]; bc.Err != nil {
		return fmt.Errorf("the pinned release %s could not be replayed, so no 3-way merges were possible: %v", p.Version, bc.Err)
	}
	return nil
}

func matrixColumn(version, pinned string, base *tree.Tree, patches []string) ([]rebase.Result, error) {
	t, err := rebase.VersionTree(filepath.Join(MatrixDir, version, "kubernetes"), version, modfetch.GoCommand{}, progress)
	if err != nil {
		return nil, err
	}
	if version != pinned && base != nil {
		if err := rebase.ShareObjects(t, base); err != nil {
			return nil, err
		}
	}
	return rebase.Classify(t, patches, progress)
}

func layout() rebase.Layout {
	return rebase.Layout{
		Root: ".", PinFile: PinFile, SeriesFile: SeriesFile, DroppedFile: DroppedFile,
		RevisionFile: RevisionFile, ChangelogFile: Changelog, TreeDir: TreeDir,
	}
}

func cmdRebase(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: carry rebase vA.B.C")
	}
	to := args[0]
	if _, err := rebase.Load(RebaseDir); err == nil {
		return fmt.Errorf("a rebase is already in progress in %s: `make rebase-continue` or `make rebase-abort`", RebaseDir)
	}
	p, s, cur, err := openAll()
	if err != nil {
		return err
	}
	if to == p.Version {
		return fmt.Errorf("the series is already on %s", to)
	}
	var paths []string
	for _, e := range s.Entries {
		if _, err := series.ReadPatch(s.Path(e)); err != nil {
			return err
		}
		paths = append(paths, s.Path(e))
	}
	// The patched tree lends its objects to the rebase (3-way bases), and
	// a finished rebase replaces it: it must hold nothing but the series.
	if err := cur.LocalWork("patches"); err != nil {
		return fmt.Errorf("%v\nexport or discard that work before rebasing", err)
	}
	if err := cur.Apply(s, p.Version, progress); err != nil {
		return err
	}
	if err := os.RemoveAll(RebaseDir); err != nil {
		return err
	}
	progress("rebase: %s → %s: pinning %s", p.Version, to, to)
	np, err := modfetch.Compute(to, modfetch.GoCommand{}, progress)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(RebaseDir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(rebase.PinFile(RebaseDir))
	if err != nil {
		return err
	}
	if err := np.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	t, err := rebase.AssembleTree(rebase.TreeDir(RebaseDir), np, modfetch.GoCommand{}, progress)
	if err != nil {
		os.RemoveAll(RebaseDir)
		return err
	}
	if err := rebase.ShareObjects(t, cur); err != nil {
		return err
	}
	sess, err := rebase.Start(RebaseDir, p.Version, to, paths, progress)
	if err != nil {
		return err
	}
	return afterReplay(sess)
}

func cmdRebaseContinue(args []string) error {
	sess, err := rebase.Load(RebaseDir)
	if err != nil {
		return fmt.Errorf("no rebase in progress (%v)", err)
	}
	if err := sess.Continue(progress); err != nil {
		return err
	}
	return afterReplay(sess)
}

func cmdRebaseAbort(args []string) error {
	if err := rebase.Abort(RebaseDir); err != nil {
		return err
	}
	progress("rebase: aborted; %s, %s and %s are as they were", PinFile, SeriesFile, TreeDir)
	return nil
}

// afterReplay either explains the conflict the replay stopped at, or
// finishes the rebase.
func afterReplay(sess *rebase.Session) error {
	if sess.Stopped {
		t := rebase.TreeDir(RebaseDir)
		return fmt.Errorf(`%s does not apply on %s: conflicts in
  %s
The rebased tree is left mid-git-am in %s. Next:
  cd %s
  # resolve the conflicts, then
  git add <files> && git am --continue     # or: git am --skip to drop the patch
  cd - && make rebase-continue             # or: make rebase-abort`,
			sess.Conflict.Patch, sess.To, strings.Join(sess.Conflict.Files, "\n  "), t, t)
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATCH\tON "+sess.To+"\tDETAIL")
	for _, r := range sess.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Patch, r.Outcome, r.Detail)
	}
	tw.Flush()
	fmt.Print(b.String())
	if err := sess.Finish(layout(), progress); err != nil {
		return err
	}
	progress("rebase: done: the series is on %s (%s-carry.1); review CHANGELOG.md, then `make test`", sess.To, sess.To)
	return nil
}

// EtcdModule is the module tools/etcd builds etcd from.
const (
	EtcdModule = "go.etcd.io/etcd/server/v3"
	EtcdGoMod  = "tools/etcd/go.mod"
)

var etcdVersionRE = regexp.MustCompile(`(?m)^ETCD_VERSION=\$\{ETCD_VERSION:-([0-9]+\.[0-9]+\.[0-9]+)\}`)

func cmdEtcdVersion(args []string) error {
	script := filepath.Join(TreeDir, "hack/lib/etcd.sh")
	data, err := os.ReadFile(script)
	if err != nil {
		return err
	}
	m := etcdVersionRE.FindSubmatch(data)
	if m == nil {
		return fmt.Errorf("%s: no ETCD_VERSION=${ETCD_VERSION:-X.Y.Z} line", script)
	}
	want := "v" + string(m[1])
	gm, err := os.ReadFile(EtcdGoMod)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(EtcdGoMod, gm, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Require {
		if r.Mod.Path == EtcdModule {
			if r.Mod.Version != want {
				return fmt.Errorf("%s:%d: requires %s %s but upstream %s wants etcd %s (%s); run `cd tools/etcd && go get -tool %s@%s`", EtcdGoMod, r.Syntax.Start.Line, EtcdModule, r.Mod.Version, mustUpstream(), want, script, EtcdModule, want)
			}
			fmt.Println(want)
			return nil
		}
	}
	return fmt.Errorf("%s: does not require %s", EtcdGoMod, EtcdModule)
}

func mustUpstream() string {
	p, err := pin.ReadFile(PinFile)
	if err != nil {
		return "?"
	}
	return p.Version
}
