package rebase

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/linetree"
	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/tree"
	"github.com/kube-carry/kube-carry/internal/txn"
)

// The workflows of `carry rebase`, `bump`, `port` and their -continue and
// -abort: each reports its steps with progress and warns on warn about
// mutants the result breaks (linetree.CheckMutants).

// inProgress fails when a rebase, bump or port of line l is under way.
func inProgress(l line.Line) error {
	for _, dir := range []string{l.RebaseDir(), l.PortDir()} {
		if s, err := Load(dir); err == nil {
			return fmt.Errorf("a %s of line %s is already in progress in %s: `make %s-continue LINE=%s` or `make %s-abort LINE=%s`", s.Verb(), l.Name, dir, s.Verb(), l.Name, s.Verb(), l.Name)
		}
	}
	return nil
}

// Rebase replays line l's series on a fresh tree of release to (another
// minor starts that line); it stops on a conflict.
func Rebase(l line.Line, to string, progress Progress, warn io.Writer) error {
	return start(l, KindRebase, to, nil, progress, warn)
}

// Bump moves line l to the newest patch release of its minor that the
// module proxy serves whole (a rebase within the minor).
func Bump(l line.Line, progress Progress, warn io.Writer) error {
	p, err := l.Pin()
	if err != nil {
		return err
	}
	progress("bump: line %s is on %s; asking the module proxy for newer %s releases", l.Name, p.Version, l.Name)
	to, np, skipped, err := modfetch.Newest(l.Name, p.Version, modfetch.GoCommand{}, modfetch.GoCommand{}, modfetch.Progress(progress))
	if err != nil {
		return err
	}
	for _, s := range skipped {
		progress("bump: skipped %s", s)
	}
	if np == nil {
		progress("bump: line %s is on %s, the newest %s release the proxy serves whole; nothing to do", l.Name, p.Version, l.Name)
		return nil
	}
	return start(l, KindBump, to, np, progress, warn)
}

// start replays line l's series on release to (pinned by np, or computed
// when np is nil): a rebase or bump within the line, or a rebase that
// starts the line of to's minor.
func start(l line.Line, kind, to string, np *pin.Pin, progress Progress, warn io.Writer) error {
	p, s, cur, err := linetree.Open(l)
	if err != nil {
		return err
	}
	if to == p.Version {
		return fmt.Errorf("line %s is already on %s", l.Name, to)
	}
	if _, err := pin.StagingVersion(to); err != nil {
		return err
	}
	target := line.Line{Root: l.Root, Name: line.Minor(to)}
	if target.Name != l.Name {
		if kind == KindBump {
			return fmt.Errorf("bump stays within line %s; %s is another minor", l.Name, to)
		}
		if _, err := os.Stat(target.Dir()); err == nil {
			return fmt.Errorf("line %s exists already (%s); carry patches into it with `make port`, or move it with `make rebase LINE=%s TO=%s`", target.Name, target.Dir(), target.Name, to)
		}
	}
	if err := inProgress(l); err != nil {
		return err
	}
	paths, err := linetree.ReadPatches(s)
	if err != nil {
		return err
	}
	if cur, err = linetree.CleanSeriesTree(l, p, s, progress); err != nil {
		return err
	}
	// The session lives with the line it starts from, so `make
	// rebase-continue LINE=<that line>` finds it also when it starts a new
	// line.
	dir := l.RebaseDir()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if np == nil {
		progress("%s: line %s %s → %s: pinning %s", kind, l.Name, p.Version, to, to)
		if np, err = modfetch.Compute(to, modfetch.GoCommand{}, modfetch.Progress(progress)); err != nil {
			return err
		}
	}
	if err := newSessionDir(dir, np); err != nil {
		return err
	}
	t, err := AssembleTree(TreeDir(dir), np, modfetch.GoCommand{}, progress)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	if err := ShareObjects(t, cur); err != nil {
		return err
	}
	sess, err := StartSession(&Session{Dir: dir, Kind: kind, FromLine: l.Name, Line: target.Name, From: p.Version, To: to}, paths, progress)
	if err != nil {
		return err
	}
	return afterReplay(l, sess, progress, warn)
}

// sessionOf finds the rebase/bump (or port) session of line l in dir.
func sessionOf(l line.Line, dir, verb string) (*Session, error) {
	sess, err := Load(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no %s of line %s in progress (%s)", verb, l.Name, dir)
		}
		return nil, err
	}
	return sess, nil
}

// ContinueRebase goes on with line l's rebase or bump after a conflict was
// resolved (git am --continue or --skip in the session's tree).
func ContinueRebase(l line.Line, progress Progress, warn io.Writer) error {
	return continueIn(l, l.RebaseDir(), "rebase or bump", progress, warn)
}

// ContinuePort goes on with the port into line l after a conflict was
// resolved.
func ContinuePort(l line.Line, progress Progress, warn io.Writer) error {
	return continueIn(l, l.PortDir(), "port", progress, warn)
}

func continueIn(l line.Line, dir, verb string, progress Progress, warn io.Writer) error {
	sess, err := sessionOf(l, dir, verb)
	if err != nil {
		return err
	}
	if err := sess.Continue(progress); err != nil {
		return err
	}
	return afterReplay(l, sess, progress, warn)
}

// AbortRebase throws line l's rebase or bump away; the line and its tree
// stay as they were.
func AbortRebase(l line.Line, progress Progress) error {
	if err := linetree.Unbusy(l); err != nil {
		return err
	}
	target := l
	if sess, err := Load(l.RebaseDir()); err == nil && sess.Line != "" {
		target = line.Line{Root: l.Root, Name: sess.Line}
	}
	if err := Abort(l.RebaseDir(), target); err != nil {
		return fmt.Errorf("no rebase or bump of line %s in progress: %v", l.Name, err)
	}
	progress("rebase: aborted; line %s (%s) and its patched tree are as they were", l.Name, l.Dir())
	return nil
}

// AbortPort throws the port into line l away; the line and its tree stay
// as they were.
func AbortPort(l line.Line, progress Progress) error {
	if err := linetree.Unbusy(l); err != nil {
		return err
	}
	if err := Abort(l.PortDir(), l); err != nil {
		return fmt.Errorf("no port into line %s in progress: %v", l.Name, err)
	}
	progress("port: aborted; line %s (%s) and its patched tree are as they were", l.Name, l.Dir())
	return nil
}

// afterReplay either explains the conflict the replay of line l's session
// stopped at, or finishes the session into its line.
func afterReplay(l line.Line, sess *Session, progress Progress, warn io.Writer) error {
	verb := sess.Verb()
	target := line.Line{Root: l.Root, Name: sess.Line}
	if sess.Line == "" {
		target = l
	}
	if sess.Stopped {
		t := TreeDir(sess.Dir)
		return fmt.Errorf(`%s does not apply on %s (line %s): conflicts in
  %s
The tree is left mid-git-am in %s. Next:
  cd %s
  # resolve the conflicts, then
  git add <files> && git am --continue     # or: git am --skip to drop the patch
  cd - && make %s-continue LINE=%s         # or: make %s-abort LINE=%s
Nothing in patches/ has changed yet.`,
			sess.Conflict.Patch, sess.To, target.Name, strings.Join(sess.Conflict.Files, "\n  "), t, t, verb, l.Name, verb, l.Name)
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATCH\tON "+sess.To+"\tDETAIL")
	for _, r := range sess.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Patch, r.Outcome, r.Detail)
	}
	tw.Flush()
	progress("%s", strings.TrimSuffix(b.String(), "\n"))
	if err := sess.Finish(target, progress); err != nil {
		return fmt.Errorf("%w\nthe %s's tree and state are kept in %s, and what it staged for line %s in %s (nothing in the line changed): fix the cause and run `make %s-continue LINE=%s`, which stages again, or `make %s-abort LINE=%s`, which removes both", err, verb, sess.Dir, target.Name, target.StageDir(line.StageFinish), verb, l.Name, verb, l.Name)
	}
	progress("%s: done: line %s; review CHANGELOG.md, then `make test LINE=%s`", verb, target.Name, target.Name)
	t, err := tree.Open(target.TreeDir())
	if err != nil {
		return err
	}
	return linetree.CheckMutants(target, t, warn)
}

// newSessionDir makes the folder of a rebase, bump or port session with
// the pin of the release it replays on.
func newSessionDir(dir string, p *pin.Pin) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	if err := p.Write(&b); err != nil {
		return err
	}
	return txn.WriteFile(PinFile(dir), []byte(b.String()))
}
