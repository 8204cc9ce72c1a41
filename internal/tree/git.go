// Package tree manages the patched source tree: a git repository whose first
// commit is the pinned upstream and which has one commit per applied patch.
package tree

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Identity is the fixed git identity of every commit the tools make, so that
// nothing depends on the user's git configuration and commit hashes are
// reproducible.
const (
	IdentityName  = "kube-carry"
	IdentityEmail = "kube-carry@invalid"
)

// GitEnv is the environment of every git command run on the tree: the
// fixed identity and no user or system configuration (signing, hooks,
// am.threeWay and the like would change the result).
func GitEnv() []string {
	return []string{
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=" + IdentityName,
		"GIT_AUTHOR_EMAIL=" + IdentityEmail,
		"GIT_COMMITTER_NAME=" + IdentityName,
		"GIT_COMMITTER_EMAIL=" + IdentityEmail,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
		// No automatic gc or maintenance in the background: it locks
		// refs while later commands (git am) of the same replay run.
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=gc.auto",
		"GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=maintenance.auto",
		"GIT_CONFIG_VALUE_1=false",
	}
}

// repoEnv are variables that point git at another repository than the one
// of its working directory. Git exports them to hooks, so a `make` run from
// a hook of the kube-carry repository would otherwise work on that
// repository instead of the tree.
var repoEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
	"GIT_NAMESPACE", "GIT_PREFIX",
}

// baseEnv is the process environment without repoEnv.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(repoEnv, name) {
			out = append(out, kv)
		}
	}
	return out
}

// Git runs git commands in one repository.
type Git struct {
	Dir string
	// Env is added to GitEnv for every command.
	Env []string
}

// GitError is a failed git command with what it printed.
type GitError struct {
	Args           []string
	Stdout, Stderr string
	Err            error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = strings.TrimSpace(e.Stdout)
	}
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, msg)
}

// Run runs git with args and returns its standard output.
func (g Git) Run(args ...string) (string, error) {
	return g.RunInput(nil, args...)
}

// RunInput runs git with standard input.
func (g Git) RunInput(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = g.Dir
	cmd.Env = append(append(baseEnv(), GitEnv()...), g.Env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &GitError{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// Combined runs git and returns what it printed on both streams.
func (g Git) Combined(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = g.Dir
	cmd.Env = append(append(baseEnv(), GitEnv()...), g.Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), &GitError{Args: args, Stdout: string(out), Err: err}
	}
	return string(out), nil
}

// Line runs git and returns its output trimmed of surrounding space.
func (g Git) Line(args ...string) (string, error) {
	out, err := g.Run(args...)
	return strings.TrimSpace(out), err
}
