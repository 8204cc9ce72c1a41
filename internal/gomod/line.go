package gomod

import (
	"errors"
	"fmt"
	"io"

	"github.com/kballard/go-shellquote"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/linetree"
)

// readLine reads line l's patched tree and the line's fork version.
func readLine(l line.Line) (*Tree, string, error) {
	t, err := ReadTree(l.TreeDir())
	if errors.Is(err, ErrNoTree) {
		return nil, "", fmt.Errorf("line %s has no patched tree (%s): run `make LINE=%s` first", l.Name, l.TreeDir(), l.Name)
	}
	if err != nil {
		return nil, "", fmt.Errorf("line %s: %w", l.Name, err)
	}
	v, _, err := l.Version()
	if err != nil {
		return nil, "", err
	}
	return t, v, nil
}

// WriteLineReplaces writes to w the replace block that points a go.mod at
// line l's patched tree (README, "Out-of-tree plugins"), after a comment
// that says what it is.
func WriteLineReplaces(w io.Writer, l line.Line) error {
	t, v, err := readLine(l)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "// kube-carry line %s (%s): k8s.io/kubernetes and its %d staging modules from the patched tree %s.\n", l.Name, v, len(t.Staging()), t.Dir)
	fmt.Fprintf(w, "// Put this in your go.mod instead of any replace of these modules, then run `go mod tidy`.\n")
	_, err = w.Write(t.Replaces())
	return err
}

// WriteLineWork writes dir/go.work, which builds the module in dir against
// line l's patched tree, and reports with progress what it wrote and how to
// build with the flags and version stamp of `make`.
func WriteLineWork(l line.Line, dir string, progress func(format string, args ...any)) error {
	t, v, err := readLine(l)
	if err != nil {
		return err
	}
	u, err := ReadUserModule(dir, t)
	if err != nil {
		return err
	}
	path, err := t.WriteWork(u, []string{
		fmt.Sprintf("Line %s (%s), patched tree %s.", l.Name, v, t.Dir),
		fmt.Sprintf("Rewrite it (another line, a moved tree) with: make gomod LINE=<line> GOMOD_DIR=%s", dir),
	})
	if err != nil {
		return err
	}
	progress("gomod: wrote %s: module %s with line %s's patched tree (%s): k8s.io/kubernetes and %d staging modules", path, u.Path, l.Name, t.Dir, len(t.Staging()))
	flags, err := linetree.Ldflags(l)
	if err != nil {
		return err
	}
	progress("gomod: build it with the flags and version stamp of `make` (%s):\n  cd %s && CGO_ENABLED=0 go build -trimpath -ldflags \"%s\" .", v, shellquote.Join(dir), flags)
	return nil
}
