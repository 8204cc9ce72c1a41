package main

// The commands that replay a line's series: matrix, rebase, bump and port
// with their -continue and -abort (internal/rebase does the work).

import (
	"errors"
	"flag"
	"os"
	"strings"

	"github.com/kube-carry/kube-carry/internal/rebase"
	"github.com/kube-carry/kube-carry/internal/status"
)

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
	since := fs.String("since", "", "carry only the change made to the patches since this commit of the repository, into this line's own versions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || fs.NArg() == 0 {
		return errors.New("usage: carry port -from vA.B [-since COMMIT] PATCH... (make port P=<patch> FROM=vA.B TO=vC.D [SINCE=<commit>])")
	}
	return rebase.Port(ln, *from, fs.Args(), *since, progress, os.Stderr)
}

func cmdPortContinue(args []string) error {
	return rebase.ContinuePort(ln, progress, os.Stderr)
}

func cmdPortAbort(args []string) error {
	return rebase.AbortPort(ln, progress)
}
