// Command carry is kube-carry's small Go tool: one subcommand per step the
// scripts need that parses (pins, series, patches) or keeps state (the
// patched trees, sessions). The scripts in scripts/ wire the steps; run
// `carry help` for the list.
//
// carry only parses flags and arguments, calls the package that owns the
// step and prints. The steps live in internal/line (the paths and files of
// a line), internal/linetree (the patched tree), internal/rebase (rebase,
// bump, port, matrix), internal/status (lines), internal/gomod,
// internal/etcd, internal/release and internal/cluster.
//
// Every command works on one release line: --line vA.B, or the LINE
// environment variable, or the newest line (internal/line owns its paths).
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/kube-carry/kube-carry/internal/line"
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
		"build-env":       {usage: "build-env: print the go settings (GOFLAGS, CGO_ENABLED) and the programs of every build as shell code (for scripts/lib.sh)", run: cmdBuildEnv},
		"proof-tests":     {usage: "proof-tests line|per-line-only: print the go test pattern of the harness's tests that the line proof runs, or that only make test LINE=vA.B runs (for scripts/test.sh)", run: cmdProofTests},
		"ldflags":         {usage: "ldflags: print the -ldflags that stamp the fork version into a binary", run: cmdLdflags},
		"gomod":           {usage: "gomod [DIR]: print the go.mod replace block that points a module at the line's patched tree; with DIR, write DIR/go.work that builds the module in DIR against the tree", run: cmdGomod},
		"matrix":          {usage: "matrix VERSION...: replay the line's series (apply only) on each upstream release; print a patch × version table and write " + line.MatrixFile, run: cmdMatrix},
		"rebase":          {usage: "rebase VERSION: replay the line's series on a fresh tree of VERSION (another minor starts that line); stops on a conflict", run: cmdRebase},
		"rebase-continue": {usage: "rebase-continue: go on after resolving a conflict (git am --continue or --skip in the session's tree)", run: cmdContinue},
		"rebase-abort":    {usage: "rebase-abort: throw the rebase or bump away; the line and its tree stay as they were", run: cmdAbortRebase},
		"bump":            {usage: "bump: move the line to the newest patch release of its minor that the proxy serves (a rebase within the minor)", run: cmdBump},
		"port":            {usage: "port -from vA.B [-since COMMIT] PATCH...: carry patches of line vA.B into this line (3-way merge), or only their change since COMMIT; stops on a conflict", run: cmdPort},
		"port-continue":   {usage: "port-continue: go on after resolving a conflict", run: cmdPortContinue},
		"port-abort":      {usage: "port-abort: throw the port away; the line and its tree stay as they were", run: cmdPortAbort},
		"resume":          {usage: "resume: finish a command that was killed while putting its result in place (also done by every command)", run: cmdResume},
		"cluster-up":      {usage: "cluster-up [-nodes N] [-scheduler BIN] [-kubelet BIN] [-upstream]: start the line as a cluster on this machine (needs root; make cluster)", run: cmdClusterUp},
		"cluster-down":    {usage: "cluster-down: stop the cluster this machine runs and remove every process, mount, network namespace and cgroup it made", run: cmdClusterDown},
		"perf-run":        {usage: "perf-run -items DIR -log FILE -results FILE [-dir DIR] [-key K=V] -- COMMAND...: run one scheduler_perf benchmark process; append its data items as benchmark lines with its peak RSS (a missed threshold is reported, not fatal)", run: cmdPerfRun, noLine: true},
		"perf-pairs":      {usage: "perf-pairs [-key K] [-base V] [-units RE] RESULTS: compare each value of a key with its base, pairing the runs of make perf and make perf-upstream by round (geometric mean of the ratios, 95% interval, paired t-test)", run: cmdPerfPairs, noLine: true},
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
