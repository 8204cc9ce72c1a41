// Package build is the one place that says how the project builds a
// patched tree: the go command's settings of every build and test on a
// tree and its worktrees, and which programs it builds. The scripts read
// them with `carry build-env` (scripts/lib.sh); the harness and the e2e
// tests use them directly.
package build

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/kballard/go-shellquote"
)

// Setting is one environment variable of the go command.
type Setting struct{ Name, Value string }

// Settings are the go command's settings for every build and test on a
// patched tree and its worktrees, and for the project's own tools and
// tests: the same everywhere, so that the build cache is shared between
// them (README, build cache), and the binaries are reproducible (no VCS
// stamp, no local paths) and static (the release image has no libc).
// They are settings.env's, which scripts/lib.sh reads to build carry.
var Settings = mustParseSettings(settingsFile)

//go:embed settings.env
var settingsFile string

var settingNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// ParseSettings reads settings.env: one NAME=value per line, blank lines
// and lines starting with '#' ignored. The value is taken as written
// (scripts/lib.sh passes each line to env(1) as one argument), so it may
// not hold what a reader would take for shell syntax (quotes, '$', '\\',
// '#', '`'), nor be empty.
func ParseSettings(text string) ([]Setting, error) {
	var out []Setting
	seen := map[string]bool{}
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, value, ok := strings.Cut(l, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("line %d: %q is not NAME=value", i+1, l)
		case !settingNameRE.MatchString(name):
			return nil, fmt.Errorf("line %d: %q is not an environment variable's name", i+1, name)
		case value == "":
			return nil, fmt.Errorf("line %d: %s has no value", i+1, name)
		case strings.ContainsAny(value, "\"'$\\#`"):
			return nil, fmt.Errorf("line %d: the value of %s holds a quote, '$', '\\', '#' or '`', which would be taken as written, not as shell syntax", i+1, name)
		case seen[name]:
			return nil, fmt.Errorf("line %d: %s is set twice", i+1, name)
		}
		seen[name] = true
		out = append(out, Setting{name, value})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no settings")
	}
	return out, nil
}

func mustParseSettings(text string) []Setting {
	s, err := ParseSettings(text)
	if err != nil {
		panic("internal/build/settings.env: " + err.Error())
	}
	return s
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
