// Package series reads the quilt series (patches/series) and the metadata of
// the git format-patch files it names.
package series

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Error is a problem at one line of a file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

func errorf(file string, line int, format string, args ...any) error {
	return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Entry is one patch named by the series.
type Entry struct {
	// Name is the patch file name, relative to the series' directory.
	Name string
	// Line is the entry's line in the series file.
	Line int
}

// Series is the parsed series file.
type Series struct {
	// File is the path of the series file; Dir holds the patches.
	File, Dir string
	Entries   []Entry
}

// Path is the path of an entry's patch file.
func (s *Series) Path(e Entry) string { return filepath.Join(s.Dir, e.Name) }

// Read parses the series file at file and checks that every entry names a
// patch file that exists.
func Read(file string) (*Series, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	s, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	for _, e := range s.Entries {
		if _, err := os.Stat(s.Path(e)); err != nil {
			if os.IsNotExist(err) {
				return nil, errorf(file, e.Line, "patch %s does not exist", s.Path(e))
			}
			return nil, errorf(file, e.Line, "%v", err)
		}
	}
	return s, nil
}

// Parse parses series content. One patch file name per line, in apply order;
// '#' starts a comment.
func Parse(file string, data []byte) (*Series, error) {
	s := &Series{File: file, Dir: filepath.Dir(file)}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if f := strings.Fields(line); len(f) > 1 {
			return nil, errorf(file, n, "want one patch file name, got %q (quilt options such as -p are not supported)", line)
		}
		if strings.ContainsAny(line, `/\`) {
			return nil, errorf(file, n, "patch %q must be a file name in %s, not a path", line, s.Dir)
		}
		if !strings.HasSuffix(line, ".patch") {
			return nil, errorf(file, n, "patch %q must end in .patch", line)
		}
		if first, ok := seen[line]; ok {
			return nil, errorf(file, n, "patch %s listed twice (first at line %d)", line, first)
		}
		seen[line] = n
		s.Entries = append(s.Entries, Entry{Name: line, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return s, nil
}

// Dropped reads the list of patch files kept in the patches directory although
// the series no longer applies them (e.g. upstreamed): the file DROPPED, one
// `<name> <reason>` per line. A missing file means none.
func Dropped(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		// A comment starts at a '#' that begins a word: reasons cite
		// kubernetes#N.
		line := stripComment(sc.Text())
		name, reason, _ := strings.Cut(strings.TrimSpace(line), " ")
		if name == "" {
			continue
		}
		if strings.TrimSpace(reason) == "" {
			return nil, errorf(file, n, "dropped patch %s needs a reason", name)
		}
		out[name] = strings.TrimSpace(reason)
	}
	return out, sc.Err()
}

// stripComment cuts line at the first '#' that starts the line or follows
// a space or tab.
func stripComment(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return line[:i]
		}
	}
	return line
}
