package main

// The commands on a line's patched tree (internal/linetree, internal/modfetch
// and internal/gomod do the work).

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/kube-carry/kube-carry/internal/gomod"
	"github.com/kube-carry/kube-carry/internal/linetree"
	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/tree"
)

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
