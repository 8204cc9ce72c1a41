// Command carry is kube-carry's small Go tool: everything the scripts need
// that parses (pins, series, patches) or keeps state (the patched trees,
// sessions) lives here, one subcommand per step. The scripts in scripts/
// wire the steps; run `carry help` for the list.
//
// Every command works on one release line: --line vA.B, or the LINE
// environment variable, or the newest line (internal/line owns its paths).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kube-carry/kube-carry/internal/etcd"
	"github.com/kube-carry/kube-carry/internal/gomod"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/linetree"
	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/rebase"
	"github.com/kube-carry/kube-carry/internal/status"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// root is the repository root: the scripts run carry there.
const root = "."

type command struct {
	usage string
	run   func(args []string) error
	// noLine: the command does not work on one line.
	noLine bool
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"paths":           {usage: "paths: print the line's paths as shell assignments (for scripts/lib.sh)", run: cmdPaths},
		"lines":           {usage: "lines: print every line: pinned release, newest release the proxy serves, revision, patches, end of life", run: cmdLines, noLine: true},
		"pin":             {usage: "pin VERSION: compute the pin of an upstream release and write it as its line's " + line.PinName + " (a new minor starts an empty line)", run: cmdPin, noLine: true},
		"assemble":        {usage: "assemble DIR: assemble the line's pinned upstream tree into the new directory DIR", run: cmdAssemble},
		"verify-tree":     {usage: "verify-tree DIR: check that every pinned module's directory of the tree DIR hashes to the line's pin (for a tree not assembled from module zips)", run: cmdVerifyTree},
		"init-tree":       {usage: "init-tree DIR: make the assembled tree DIR a git repository with one commit \"upstream vX.Y.Z\"", run: cmdInitTree},
		"upstream":        {usage: "upstream: print the line's pinned upstream release", run: cmdUpstream},
		"tree-status":     {usage: "tree-status: print `absent` or `current` for the line's patched tree; fail when it is at another release than the pin", run: cmdTreeStatus},
		"apply":           {usage: "apply: apply the line's series to its patched tree (idempotent; never overwrites local work)", run: cmdApply},
		"export":          {usage: "export: regenerate the line's patches and series from its patched tree's commits", run: cmdExport},
		"check-tree":      {usage: "check-tree: fail when the patched tree holds work that is in no patch file", run: cmdCheckTree},
		"removable":       {usage: "removable: fail when the patched tree holds work that is in no patch file (so removing it would lose it)", run: cmdRemovable},
		"version":         {usage: "version: print the line's fork version, vX.Y.Z-carry.N", run: cmdVersion},
		"ldflags":         {usage: "ldflags: print the -ldflags that stamp the fork version into a binary", run: cmdLdflags},
		"gomod":           {usage: "gomod [DIR]: print the go.mod replace block that points a module at the line's patched tree; with DIR, write DIR/go.work that builds the module in DIR against the tree", run: cmdGomod},
		"matrix":          {usage: "matrix VERSION...: replay the line's series (apply only) on each upstream release; print a patch × version table and write " + line.MatrixFile, run: cmdMatrix},
		"rebase":          {usage: "rebase VERSION: replay the line's series on a fresh tree of VERSION (another minor starts that line); stops on a conflict", run: cmdRebase},
		"rebase-continue": {usage: "rebase-continue: go on after resolving a conflict (git am --continue or --skip in the session's tree)", run: cmdContinue},
		"rebase-abort":    {usage: "rebase-abort: throw the rebase or bump away; the line and its tree stay as they were", run: cmdAbortRebase},
		"bump":            {usage: "bump: move the line to the newest patch release of its minor that the proxy serves (a rebase within the minor)", run: cmdBump},
		"port":            {usage: "port -from vA.B PATCH...: carry patches of line vA.B into this line (3-way merge); stops on a conflict", run: cmdPort},
		"port-continue":   {usage: "port-continue: go on after resolving a conflict", run: cmdPortContinue},
		"port-abort":      {usage: "port-abort: throw the port away; the line and its tree stay as they were", run: cmdPortAbort},
		"resume":          {usage: "resume: finish a command that was killed while putting its result in place (also done by every command)", run: cmdResume},
		"cluster-up":      {usage: "cluster-up [-nodes N] [-scheduler BIN] [-kubelet BIN] [-upstream]: start the line as a cluster on this machine (needs root; make cluster)", run: cmdClusterUp},
		"cluster-down":    {usage: "cluster-down: stop the cluster this machine runs and remove every process, mount, network namespace and cgroup it made", run: cmdClusterDown},
		"etcd-version":    {usage: "etcd-version: print the etcd version upstream's hack/lib/etcd.sh names for the line; fail when tools/etcd builds another", run: cmdEtcdVersion},
	}
	commands["bump-continue"] = command{usage: "bump-continue: same as rebase-continue", run: cmdContinue}
	commands["bump-abort"] = command{usage: "bump-abort: same as rebase-abort", run: cmdAbortRebase}
}

// ln is the line the command works on.
var ln line.Line

// pinLine is the line --line or LINE named for `carry pin`.
var pinLine string

func main() {
	args := os.Args[1:]
	lineName := os.Getenv("LINE")
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case args[0] == "--line" || args[0] == "-line":
			if len(args) < 2 {
				fail("carry: --line needs a value (vA.B)", 2)
			}
			lineName, args = args[1], args[2:]
		case strings.HasPrefix(args[0], "--line="):
			lineName, args = strings.TrimPrefix(args[0], "--line="), args[1:]
		case args[0] == "-h" || args[0] == "--help":
			usage()
			return
		default:
			fail(fmt.Sprintf("carry: unknown flag %s", args[0]), 2)
		}
	}
	if len(args) == 0 || args[0] == "help" {
		usage()
		return
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "carry: unknown command %q\n", args[0])
		usage()
		os.Exit(2)
	}
	if err := line.ResumeAll(root, progress); err != nil {
		fail(fmt.Sprintf("carry %s: %v", args[0], err), 1)
	}
	if !c.noLine {
		l, err := line.Get(root, lineName)
		if err != nil {
			fail(fmt.Sprintf("carry %s: %v", args[0], err), 1)
		}
		ln = l
	} else if args[0] == "pin" {
		// The line of a pin is its release's minor; --line or LINE only
		// has to agree with it.
		pinLine = lineName
	} else if lineName != "" {
		if _, err := line.Get(root, lineName); err != nil {
			fail(fmt.Sprintf("carry %s: %v", args[0], err), 1)
		}
	}
	if err := c.run(args[1:]); err != nil {
		fail(fmt.Sprintf("carry %s: %v", args[0], err), 1)
	}
}

func fail(msg string, code int) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: carry [--line vA.B] COMMAND [ARGS]\n\nThe line defaults to $LINE, then to the newest line.\n\ncommands:")
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %s\n", commands[n].usage)
	}
}

func progress(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func cmdResume(args []string) error {
	progress("%s: nothing to finish", ln.Name)
	return nil
}

func cmdPaths(args []string) error {
	for _, kv := range [][2]string{
		{"LINE", ln.Name},
		{"LINE_DIR", ln.Dir()},
		{"OUT", ln.OutDir()},
		{"TREE", ln.TreeDir()},
		{"BIN", ln.BinDir()},
		{"TEST_BIN", ln.TestBinDir()},
		{"UPSTREAM_BIN", ln.UpstreamBinDir()},
		{"CLUSTER_DIR", ln.ClusterDir()},
	} {
		abs, err := filepath.Abs(kv[1])
		if kv[0] == "LINE" {
			abs = kv[1]
		} else if err != nil {
			return err
		}
		fmt.Printf("%s=%q\n", kv[0], abs)
	}
	return nil
}

func cmdLines(args []string) error {
	fs := flag.NewFlagSet("lines", flag.ContinueOnError)
	offline := fs.Bool("offline", false, "do not ask the module proxy for newer releases")
	supported := fs.Bool("supported", false, "print only the names of the supported lines, oldest first, on one line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *supported {
		lines, err := line.List(root)
		if err != nil {
			return err
		}
		sl, err := line.Supported(lines)
		if err != nil {
			return err
		}
		fmt.Println(strings.Join(line.Names(sl), " "))
		return nil
	}
	infos, err := status.Lines(root, *offline)
	if err != nil {
		return err
	}
	if err := status.WriteTable(os.Stdout, infos); err != nil {
		return err
	}
	return status.WriteJSON(root, infos)
}

func cmdPin(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: carry pin VERSION (e.g. v1.37.2)")
	}
	version := args[0]
	if _, err := pin.StagingVersion(version); err != nil {
		return err
	}
	l := line.Line{Root: root, Name: line.Minor(version)}
	if want := pinLine; want != "" && want != l.Name {
		return fmt.Errorf("VERSION=%s is a release of line %s, not LINE=%s", version, l.Name, want)
	}
	p, err := modfetch.Compute(version, modfetch.GoCommand{}, progress)
	if err != nil {
		return err
	}
	started, err := l.WritePin(p)
	if err != nil {
		return err
	}
	if !started {
		progress("pin: wrote %s for %s (%d modules)", l.PinFile(), p.Version, len(p.Modules))
		return nil
	}
	progress("pin: started line %s in %s on %s (%d modules), with an empty series: carry patches in with `make port P=... FROM=vA.B TO=%s`", l.Name, l.Dir(), p.Version, len(p.Modules), l.Name)
	return nil
}

func cmdAssemble(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: carry assemble DIR")
	}
	p, err := ln.Pin()
	if err != nil {
		return err
	}
	return modfetch.Assemble(p, ln.PinFile(), args[0], modfetch.GoCommand{}, progress)
}

func cmdVerifyTree(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: carry verify-tree DIR")
	}
	p, err := ln.Pin()
	if err != nil {
		return err
	}
	return modfetch.Verify(p, ln.PinFile(), args[0], progress)
}

func cmdInitTree(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: carry init-tree DIR")
	}
	p, err := ln.Pin()
	if err != nil {
		return err
	}
	progress("fetch: %s: committing %s as %q", ln.Name, args[0], tree.UpstreamSubject(p.Version))
	_, err = tree.Init(args[0], p.Version, p.Date)
	return err
}

func cmdUpstream(args []string) error {
	p, err := ln.Pin()
	if err != nil {
		return err
	}
	fmt.Println(p.Version)
	return nil
}

func cmdTreeStatus(args []string) error {
	st, err := linetree.Status(ln)
	if err != nil {
		return err
	}
	fmt.Println(st)
	return nil
}

func cmdApply(args []string) error {
	return linetree.Apply(ln, progress)
}

func cmdExport(args []string) error {
	return linetree.Export(ln, progress, os.Stderr)
}

func cmdCheckTree(args []string) error {
	return linetree.Check(ln)
}

func cmdRemovable(args []string) error {
	return linetree.Removable(ln)
}

func cmdVersion(args []string) error {
	v, _, err := ln.Version()
	if err != nil {
		return err
	}
	fmt.Println(v)
	return nil
}

func cmdLdflags(args []string) error {
	fs := flag.NewFlagSet("ldflags", flag.ContinueOnError)
	upstream := fs.Bool("upstream", false, "stamp plain upstream vX.Y.Z and the tree's first commit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	build := linetree.Ldflags
	if *upstream {
		build = linetree.UpstreamLdflags
	}
	flags, err := build(ln)
	if err != nil {
		return err
	}
	fmt.Println(flags)
	return nil
}

// cmdGomod points a user's module at the line's patched tree (README,
// "Out-of-tree plugins"): without an argument it prints the replace block
// for a go.mod; with a directory it writes the go.work there that uses the
// module in it and the tree's modules, and prints how to build.
func cmdGomod(args []string) error {
	switch len(args) {
	case 0:
		return gomod.WriteLineReplaces(os.Stdout, ln)
	case 1:
		return gomod.WriteLineWork(ln, args[0], progress)
	}
	return errors.New("usage: carry gomod [DIR] (DIR: the directory of your module, with its go.mod)")
}

func cmdMatrix(args []string) error {
	if len(args) == 1 && args[0] == "-newest" {
		versions, err := status.NewestReleases(root)
		if err != nil {
			return err
		}
		progress("matrix: the newest releases the module proxy serves: %s", strings.Join(versions, " "))
		args = versions
	}
	if len(args) == 0 {
		return errors.New("usage: carry matrix VERSION... (e.g. v1.37.2 v1.38.0) | carry matrix -newest")
	}
	return rebase.Matrix(ln, args, os.Stdout, progress)
}

func cmdRebase(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: carry rebase vA.B.C")
	}
	return rebase.Rebase(ln, args[0], progress, os.Stderr)
}

func cmdBump(args []string) error {
	if len(args) != 0 {
		return errors.New("usage: carry bump")
	}
	return rebase.Bump(ln, progress, os.Stderr)
}

func cmdContinue(args []string) error {
	return rebase.ContinueRebase(ln, progress, os.Stderr)
}

func cmdAbortRebase(args []string) error {
	return rebase.AbortRebase(ln, progress)
}

func cmdPort(args []string) error {
	fs := flag.NewFlagSet("port", flag.ContinueOnError)
	from := fs.String("from", "", "the line the patches come from (vA.B)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || fs.NArg() == 0 {
		return errors.New("usage: carry port -from vA.B PATCH... (make port P=<patch> FROM=vA.B TO=vC.D)")
	}
	return rebase.Port(ln, *from, fs.Args(), progress, os.Stderr)
}

func cmdPortContinue(args []string) error {
	return rebase.ContinuePort(ln, progress, os.Stderr)
}

func cmdPortAbort(args []string) error {
	return rebase.AbortPort(ln, progress)
}

// cmdEtcdVersion prints the etcd version the line's upstream tests with,
// and the tools folder that builds it.
func cmdEtcdVersion(args []string) error {
	version, dir, err := etcd.Version(ln)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", version, dir)
	return nil
}
