package rebase

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// portChange writes, in dir, the target line's own version of the patch
// name with the change that the source line made to its version since the
// repository's commit since (a commit id): the source's patch at since and now are
// applied to the source tree's base of the patch, and the difference is
// merged (3-way) into the target's version (its commit in cur, the target
// line's patched tree). The messages are merged the same way: the target's
// message with what the source changed in its own. t is the port's
// session tree: it holds cur's commits and borrows the source tree's
// objects; the work happens in a temporary index there, so nothing of the
// source's or the target's tree changes. It returns the patch file's path,
// and whether the target's message was kept because the source's change
// to it conflicts with the target's.
func portChange(root string, src, dst line.Line, srcTree, cur, t *tree.Tree, name, since, dir string) (path string, messageKept bool, err error) {
	old, now, err := changedSince(root, src, name, since)
	if err != nil {
		return "", false, err
	}
	target, err := os.ReadFile(filepath.Join(dst.Dir(), name))
	if err != nil {
		return "", false, err
	}
	srcCommit, err := commitOf(srcTree, now)
	if err != nil {
		return "", false, fmt.Errorf("line %s's patched tree has no commit that exports to %s (%v): run `make apply LINE=%s` first", src.Name, name, err, src.Name)
	}
	dstCommit, err := commitOf(cur, target)
	if err != nil {
		return "", false, fmt.Errorf("line %s's patched tree has no commit that exports to %s (%v): run `make apply LINE=%s` first", dst.Name, name, err, dst.Name)
	}
	// git runs in the session tree: dir must not depend on the working
	// directory.
	if dir, err = filepath.Abs(dir); err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	g := tree.Git{Dir: t.Dir, Env: []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index")}}
	oldFile := filepath.Join(dir, "since.patch")
	if err := os.WriteFile(oldFile, old, 0o644); err != nil {
		return "", false, err
	}

	// What the source's patch at since made of the files, on the base its
	// patch has now.
	if _, err := g.Run("read-tree", srcCommit+"^"); err != nil {
		return "", false, err
	}
	if _, err := g.Run("apply", "--cached", oldFile); err != nil {
		if _, err3 := g.Run("apply", "--cached", "--3way", oldFile); err3 != nil {
			return "", false, fmt.Errorf("%s of line %s at SINCE=%s does not apply where line %s's patched tree has the patch now (%v): port the change by hand (README: A backport)", name, src.Name, since, src.Name, err)
		}
	}
	oldTree, err := g.Line("write-tree")
	if err != nil {
		return "", false, err
	}
	change, err := g.Run("diff", "--full-index", "--binary", oldTree, srcCommit+"^{tree}")
	if err != nil {
		return "", false, err
	}

	if _, err := g.Run("read-tree", dstCommit); err != nil {
		return "", false, err
	}
	if change != "" {
		changeFile := filepath.Join(dir, "change.diff")
		if err := os.WriteFile(changeFile, []byte(change), 0o644); err != nil {
			return "", false, err
		}
		if _, err := g.Run("apply", "--cached", "--3way", changeFile); err != nil {
			return "", false, fmt.Errorf("the change to %s since SINCE=%s conflicts with line %s's version of the patch in:\n  %s\nport the change by hand (README: A backport); nothing was changed", name, since, dst.Name, strings.Join(unmerged(g, err), "\n  "))
		}
	}
	newTree, err := g.Line("write-tree")
	if err != nil {
		return "", false, err
	}

	message, messageKept, err := mergedMessage(g, dir, dstCommit, srcCommit, oldFile)
	if err != nil {
		return "", false, err
	}
	msgFile := filepath.Join(dir, "message")
	if err := os.WriteFile(msgFile, []byte(message), 0o644); err != nil {
		return "", false, err
	}
	author, err := g.Run("log", "-1", "--format=%an%n%ae", dstCommit)
	if err != nil {
		return "", false, err
	}
	date, err := g.Line("log", "-1", "--format=%ad", "--date=raw", srcCommit)
	if err != nil {
		return "", false, err
	}
	who := strings.SplitN(strings.TrimRight(author, "\n"), "\n", 2)
	if len(who) != 2 {
		return "", false, fmt.Errorf("commit %.12s of line %s's tree has no author", dstCommit, dst.Name)
	}
	c := tree.Git{Dir: t.Dir, Env: []string{"GIT_AUTHOR_NAME=" + who[0], "GIT_AUTHOR_EMAIL=" + who[1], "GIT_AUTHOR_DATE=" + date}}
	commit, err := c.Line("commit-tree", newTree, "-p", dstCommit+"^", "-F", msgFile)
	if err != nil {
		return "", false, err
	}
	data, err := t.FormatPatch(commit)
	if err != nil {
		return "", false, err
	}
	path = filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", false, err
	}
	pt, err := series.ReadPatch(path)
	if err != nil {
		return "", false, fmt.Errorf("the merged message of %s does not validate: %w", name, err)
	}
	// The mutants its guards name come from the source line, as in a port
	// of the whole patch (the target keeps its own of the same name).
	for _, gd := range pt.Guards {
		from := filepath.Join(src.Dir(), filepath.FromSlash(gd.Mutant))
		if _, err := os.Stat(from); err != nil {
			continue
		}
		to := filepath.Join(dir, filepath.FromSlash(gd.Mutant))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return "", false, err
		}
		if err := copyFile(from, to); err != nil {
			return "", false, err
		}
	}
	return path, messageKept, nil
}

// mergedMessage is the message of the target's commit of the patch
// (dstCommit) with what the source changed in its own since the patch file
// at since (oldFile) to its commit now (srcCommit); the target's message,
// and kept, when that change conflicts with the target's.
func mergedMessage(g tree.Git, dir, dstCommit, srcCommit, oldFile string) (message string, kept bool, err error) {
	ours, err := g.Run("log", "-1", "--format=%B", dstCommit)
	if err != nil {
		return "", false, err
	}
	theirs, err := g.Run("log", "-1", "--format=%B", srcCommit)
	if err != nil {
		return "", false, err
	}
	base, err := patchMessage(g, oldFile, dir)
	if err != nil {
		return "", false, err
	}
	message, clean, err := mergeText(dir, ours, base, theirs)
	if err != nil {
		return "", false, err
	}
	if !clean {
		return ours, true, nil
	}
	return message, false, nil
}

// changedSince returns the source line's patch name at the repository's
// commit since and now, and an error when it did not change or was not
// there.
func changedSince(root string, src line.Line, name, since string) (old, now []byte, err error) {
	rel, err := filepath.Rel(root, filepath.Join(src.Dir(), name))
	if err != nil {
		return nil, nil, err
	}
	rel = filepath.ToSlash(rel)
	out, err := tree.Git{Dir: root}.Run("show", since+":"+rel)
	if err != nil {
		return nil, nil, fmt.Errorf("SINCE=%s: the repository has no %s at that commit, so there is no change of it to port (port the patch whole: no SINCE)", since, rel)
	}
	now, err = os.ReadFile(filepath.Join(src.Dir(), name))
	if err != nil {
		return nil, nil, err
	}
	if out == string(now) {
		return nil, nil, fmt.Errorf("SINCE=%s: %s is the same now as at that commit: there is no change to port", since, rel)
	}
	return []byte(out), now, nil
}

// unmerged lists the files that a 3-way apply into g's index left in
// conflict; what git said (err) when there are none.
func unmerged(g tree.Git, err error) []string {
	out, lsErr := g.Run("ls-files", "--unmerged")
	var files []string
	for _, l := range strings.Split(out, "\n") {
		if _, file, ok := strings.Cut(l, "\t"); ok && !slices.Contains(files, file) {
			files = append(files, file)
		}
	}
	if lsErr != nil || len(files) == 0 {
		return []string{err.Error()}
	}
	return files
}

// commitOf is the commit of t whose export is the patch data.
func commitOf(t *tree.Tree, data []byte) (string, error) {
	commits, err := t.Commits()
	if err != nil {
		return "", err
	}
	for _, c := range commits {
		out, err := t.FormatPatch(c)
		if err != nil {
			return "", err
		}
		if bytes.Equal(out, data) {
			return c, nil
		}
	}
	return "", errors.New("the patch file differs from every commit's export")
}

// patchMessage is the commit message of the patch file, as git am would
// make it.
func patchMessage(g tree.Git, file, dir string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	msg, body := filepath.Join(dir, "mailinfo.msg"), filepath.Join(dir, "mailinfo.patch")
	info, err := g.RunInput(data, "mailinfo", "-k", msg, body)
	if err != nil {
		return "", err
	}
	subject := ""
	for _, l := range strings.Split(info, "\n") {
		if s, ok := strings.CutPrefix(l, "Subject: "); ok {
			subject = s
		}
	}
	text, err := os.ReadFile(msg)
	if err != nil {
		return "", err
	}
	return subject + "\n\n" + string(text), nil
}

// mergeText merges the change from base to theirs into ours, line by line
// (git merge-file); clean is false when they conflict.
func mergeText(dir, ours, base, theirs string) (merged string, clean bool, err error) {
	var files []string
	for i, text := range []string{ours, base, theirs} {
		f := filepath.Join(dir, fmt.Sprintf("merge.%d", i))
		if err := os.WriteFile(f, []byte(strings.TrimRight(text, "\n")+"\n"), 0o644); err != nil {
			return "", false, err
		}
		files = append(files, f)
	}
	out, err := tree.Git{Dir: dir}.Run(append([]string{"merge-file", "-p"}, files...)...)
	var ge *tree.GitError
	var ee *exec.ExitError
	if errors.As(err, &ge) && errors.As(ge.Err, &ee) && ee.ExitCode() > 0 && ee.ExitCode() < 128 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return out, true, nil
}
