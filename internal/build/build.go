// Package build is the one place that says how the project builds a
// patched tree: the go command's settings of every build and test on a
// tree and its worktrees, and which programs it builds. The scripts read
// them with `carry build-env` (scripts/lib.sh); the harness and the e2e
// tests use them directly.
package build

import (
	"fmt"
	"strings"

	"github.com/kballard/go-shellquote"
)

// Setting is one environment variable of the go command.
type Setting struct{ Name, Value string }

// Settings are the go command's settings for every build and test on a
// patched tree and its worktrees: the same everywhere, so that the build
// cache is shared between them (README, build cache), and the binaries
// are reproducible (no VCS stamp, no local paths) and static (the release
// image has no libc).
var Settings = []Setting{
	{"GOFLAGS", "-trimpath -buildvcs=false"},
	{"CGO_ENABLED", "0"},
}

// Env is Settings as NAME=value strings, for exec.Cmd.Env.
func Env() []string {
	env := make([]string, 0, len(Settings))
	for _, s := range Settings {
		env = append(env, s.Name+"="+s.Value)
	}
	return env
}

// Binaries are the programs a release line ships, built from the patched
// tree's cmd/<name> by make and make release; plain upstream's of the
// same release are built for the scenarios that compare with upstream.
var Binaries = []string{"kube-scheduler", "kubelet"}

// ClusterPrograms are the packages of the patched tree that make
// cluster-binaries builds besides Binaries, for make cluster: the rest of
// a control plane, kubectl, and agnhost (the pause and workload image).
var ClusterPrograms = []string{"cmd/kube-apiserver", "cmd/kube-controller-manager", "cmd/kubectl", "test/images/agnhost"}

// Shell is the settings and the lists as shell code for scripts/lib.sh:
// the settings exported, the lists as the arrays BINARIES and
// CLUSTER_PROGRAMS.
func Shell() string {
	var b strings.Builder
	for _, s := range Settings {
		fmt.Fprintf(&b, "export %s=%s\n", s.Name, shellquote.Join(s.Value))
	}
	fmt.Fprintf(&b, "BINARIES=(%s)\n", shellquote.Join(Binaries...))
	fmt.Fprintf(&b, "CLUSTER_PROGRAMS=(%s)\n", shellquote.Join(ClusterPrograms...))
	return b.String()
}
