package main

// The commands on a line's folder and state: its paths, pin, version,
// the status of every line, and the etcd its upstream tests with.

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kube-carry/kube-carry/internal/etcd"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/status"
)

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

func cmdUpstream(args []string) error {
	p, err := ln.Pin()
	if err != nil {
		return err
	}
	fmt.Println(p.Version)
	return nil
}

func cmdVersion(args []string) error {
	v, _, err := ln.Version()
	if err != nil {
		return err
	}
	fmt.Println(v)
	return nil
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
