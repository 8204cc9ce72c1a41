package tree

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// UpstreamSubject is the subject of a tree's first commit.
func UpstreamSubject(version string) string { return "upstream " + version }

// Tree is the patched source tree.
type Tree struct {
	Git
	// Records, when set, is read and written instead of RecordsFile: a
	// staged copy that a command puts in place with its other results.
	Records string
}

// Open opens the tree at dir, which must be a git repository.
func Open(dir string) (*Tree, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: no patched tree here; run `make fetch` first", dir)
		}
		return nil, err
	}
	return &Tree{Git: Git{Dir: dir}}, nil
}

// Init makes the assembled tree at dir a git repository with one commit,
// "upstream <version>", dated date.
func Init(dir, version string, date time.Time) (*Tree, error) {
	t := &Tree{Git: Git{Dir: dir}}
	stamp := date.UTC().Format(time.RFC3339)
	t.Env = []string{"GIT_AUTHOR_DATE=" + stamp, "GIT_COMMITTER_DATE=" + stamp}
	if _, err := t.Run("init", "-q", "-b", "main"); err != nil {
		return nil, err
	}
	if err := KeepBytes(dir); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		// The tree's own .gitignore files must not hide upstream files.
		{"add", "-A", "-f", "."},
		{"commit", "-q", "--no-verify", "-m", UpstreamSubject(version)},
	} {
		if _, err := t.Run(args...); err != nil {
			return nil, err
		}
	}
	t.Env = nil
	return t, nil
}

// KeepBytes makes git store and check out the files of the repository at
// dir byte for byte: upstream's `* text=auto eol=lf` would turn the CRLF
// line endings of some test data (client-go's golden HTTP requests) into
// LF, so the tree would not be what the module zips hold.
// .git/info/attributes overrides the tree's own .gitattributes.
func KeepBytes(dir string) error {
	info := filepath.Join(dir, ".git", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(info, "attributes"), []byte("* -text\n"), 0o644)
}

// Base is the tree's upstream commit and the release it holds.
func (t *Tree) Base() (commit, version string, err error) {
	roots, err := t.Line("rev-list", "--max-parents=0", "HEAD")
	if err != nil {
		return "", "", err
	}
	if strings.Contains(roots, "\n") {
		return "", "", fmt.Errorf("%s: the tree has more than one root commit", t.Dir)
	}
	subject, err := t.Line("log", "-1", "--format=%s", roots)
	if err != nil {
		return "", "", err
	}
	v, ok := strings.CutPrefix(subject, "upstream ")
	if !ok {
		return "", "", fmt.Errorf("%s: the first commit is %q, not \"upstream vX.Y.Z\"", t.Dir, subject)
	}
	return roots, v, nil
}

// Commits lists the commits after the upstream commit, oldest first.
func (t *Tree) Commits() ([]string, error) {
	base, _, err := t.Base()
	if err != nil {
		return nil, err
	}
	out, err := t.Line("rev-list", "--reverse", "--first-parent", base+"..HEAD")
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Fields(out), nil
}

// InProgress names a git operation left in progress in the tree, if any.
func (t *Tree) InProgress() string {
	gitDir := filepath.Join(t.Dir, ".git")
	for name, what := range map[string]string{
		"rebase-apply":     "git am (or rebase)",
		"rebase-merge":     "git rebase",
		"MERGE_HEAD":       "git merge",
		"CHERRY_PICK_HEAD": "git cherry-pick",
	} {
		if _, err := os.Stat(filepath.Join(gitDir, name)); err == nil {
			return what
		}
	}
	return ""
}

// Dirty lists uncommitted changes, untracked files included.
func (t *Tree) Dirty() ([]string, error) {
	out, err := t.Run("status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l != "" {
			files = append(files, l)
		}
	}
	return files, nil
}

// Applied is one record of a commit that apply made from a patch file.
type Applied struct {
	Commit, Patch, SHA256 string
}

func (t *Tree) appliedFile() string {
	if t.Records != "" {
		return t.Records
	}
	return t.RecordsFile()
}

// RecordsFile is where the tree records which patch each commit came from.
func (t *Tree) RecordsFile() string {
	return filepath.Join(t.Dir, ".git", "kube-carry-applied")
}

// AppliedRecords maps each commit apply made to the patch it came from.
func (t *Tree) AppliedRecords() (map[string]Applied, error) {
	f, err := os.Open(t.appliedFile())
	if os.IsNotExist(err) {
		return map[string]Applied{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]Applied{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) != 3 {
			continue
		}
		out[fl[0]] = Applied{Commit: fl[0], Patch: fl[1], SHA256: fl[2]}
	}
	return out, sc.Err()
}

// Record notes that commit was made from the patch file at path.
func (t *Tree) Record(commit, path string) error {
	sum, err := fileSHA256(path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(t.appliedFile(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%s %s %s\n", commit, filepath.Base(path), sum); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:]), nil
}

// ErrLocalWork is returned when the tree holds work that only lives there.
var ErrLocalWork = errors.New("the patched tree has local work")

// LocalWork reports work that lives only in the tree: an operation in
// progress, uncommitted changes, or a commit that apply did not make and
// whose export is none of the patch files in patchDir. Nil means the tree can
// be removed and rebuilt from the repository without losing anything.
func (t *Tree) LocalWork(patchDir string) error {
	if op := t.InProgress(); op != "" {
		return &SyncError{fmt.Sprintf("%s: a %s is in progress", t.Dir, op)}
	}
	dirty, err := t.Dirty()
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return &SyncError{fmt.Sprintf("%s has uncommitted changes:\n  %s", t.Dir, strings.Join(limit(dirty, 10), "\n  "))}
	}
	commits, err := t.Commits()
	if err != nil {
		return err
	}
	records, err := t.AppliedRecords()
	if err != nil {
		return err
	}
	for _, c := range commits {
		if _, ok := records[c]; ok {
			continue
		}
		data, err := t.FormatPatch(c)
		if err != nil {
			return err
		}
		if !matchesAnyFile(data, patchDir) {
			subject, _ := t.Line("log", "-1", "--format=%s", c)
			return &SyncError{fmt.Sprintf("%s: commit %.12s %q is in no patch file; run `make export`", t.Dir, c, subject)}
		}
	}
	return nil
}

func matchesAnyFile(data []byte, dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.patch"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && string(b) == string(data) {
			return true
		}
	}
	return false
}

// RemoveStaleLocks removes the lock files of git commands that were killed
// (index.lock, HEAD.lock, a ref's .lock, ...): called only when a marker of
// kube-carry's own says its command on this tree was killed, so no git of
// its is running there.
func (t *Tree) RemoveStaleLocks() error {
	gitDir := filepath.Join(t.Dir, ".git")
	return filepath.WalkDir(gitDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != gitDir && d.Name() != "refs" && !strings.HasPrefix(p, filepath.Join(gitDir, "refs")+string(filepath.Separator)) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".lock") {
			return os.Remove(p)
		}
		return nil
	})
}

// Busy marks the tree as in use by a kube-carry command that runs git on
// it, until the returned func is called. A mark that a killed command left
// makes Busy first remove the git locks (index.lock, ...) it left, so that
// neither the next command nor the user's git fails on them.
func (t *Tree) Busy() (done func(), err error) {
	marker := filepath.Join(t.Dir, ".git", "kube-carry-busy")
	if _, err := os.Stat(marker); err == nil {
		if err := t.RemoveStaleLocks(); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return nil, err
	}
	return func() { os.Remove(marker) }, nil
}
