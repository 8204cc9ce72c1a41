// Package etcd finds the etcd version a line's upstream tests with (its
// hack/lib/etcd.sh) and checks that the repository's tools folder for that
// version (line.EtcdTool) builds it.
package etcd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/mod/modfile"

	"github.com/kube-carry/kube-carry/internal/line"
)

// Module is the module etcd is built from; line.EtcdTool pins each etcd
// version a line's upstream tests with.
const Module = "go.etcd.io/etcd/server/v3"

var versionRE = regexp.MustCompile(`(?m)^ETCD_VERSION=\$\{ETCD_VERSION:-([0-9]+\.[0-9]+\.[0-9]+)\}`)

// Version is the etcd version (vX.Y.Z) line l's upstream tests with, and
// the tools folder that builds it; a folder that is missing or builds
// another version is an error that says how to fix it.
func Version(l line.Line) (version, dir string, err error) {
	script := l.EtcdScript()
	data, err := os.ReadFile(script)
	if err != nil {
		return "", "", err
	}
	m := versionRE.FindSubmatch(data)
	if m == nil {
		return "", "", fmt.Errorf("%s: no ETCD_VERSION=${ETCD_VERSION:-X.Y.Z} line", script)
	}
	want := "v" + string(m[1])
	dir = line.EtcdTool(l.Root, want)
	gomod := filepath.Join(dir, "go.mod")
	gm, err := os.ReadFile(gomod)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("upstream %s (line %s) wants etcd %s (%s), but there is no %s; add it: mkdir -p %s && cd %s && go mod init github.com/kube-carry/kube-carry/%s && go get -tool %s@%s", upstream(l), l.Name, want, script, gomod, dir, dir, dir, Module, want)
	}
	if err != nil {
		return "", "", err
	}
	f, err := modfile.Parse(gomod, gm, nil)
	if err != nil {
		return "", "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == Module {
			if r.Mod.Version != want {
				return "", "", fmt.Errorf("%s:%d: requires %s %s but upstream %s (line %s) wants etcd %s (%s); run `cd %s && go get -tool %s@%s`", gomod, r.Syntax.Start.Line, Module, r.Mod.Version, upstream(l), l.Name, want, script, dir, Module, want)
			}
			return want, dir, nil
		}
	}
	return "", "", fmt.Errorf("%s: does not require %s", gomod, Module)
}

// upstream is line l's pinned release, for messages ("?" when unreadable).
func upstream(l line.Line) string {
	p, err := l.Pin()
	if err != nil {
		return "?"
	}
	return p.Version
}
