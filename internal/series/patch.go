package series

import (
	"bufio"
	"bytes"
	"fmt"
	"mime"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/kballard/go-shellquote"
)

// Trailer is one `Key: value` line of a patch message.
type Trailer struct {
	Key, Value string
	Line       int
}

// Patch is the metadata of one git format-patch file.
type Patch struct {
	File    string
	Subject string
	// Body is the message between the subject and the trailers.
	Body     string
	Trailers []Trailer
	// Files are the paths the diff touches (new names for renames).
	Files []string
	// Status is the parsed Upstream-Status trailer.
	Status Status
	// Tests and Regressions are the parsed Test: and Regression: trailers.
	Tests, Regressions []GoTest
	// Races are the parsed Race: trailers: tests of the patch's concurrent
	// code, run under the race detector.
	Races []GoTest
	// RegressionNone is the reason given by `Regression: none (...)`.
	RegressionNone string
	// Guards are the parsed Guards: trailers of a guard-test patch.
	Guards []Guard
}

// Guard names a mutant (a patch in the line's mutants/ folder that
// re-introduces a bug in the patched tree) and the test that must kill it:
// fail on the tree with the mutant, pass without it.
//
//	Guards: mutants/<name>.patch ./pkg/path -run '^TestX$'
type Guard struct {
	// Mutant is the mutant patch, relative to the line's folder.
	Mutant string
	// Test is the go test invocation that kills it.
	Test GoTest
	Line int
}

// GoTest is a `go test` invocation from a trailer: one package directory,
// relative to the tree root, and the flags that follow it.
type GoTest struct {
	Package string
	Flags   []string
	Line    int
	Raw     string
	// Without names, for a Regression: of a test-only patch, the earlier
	// patch whose fix the test proves: `... (without <name>.patch)`. The
	// proof then runs the test on the series before that patch plus this
	// patch's test files, instead of on this patch's parent.
	Without string
}

func (t GoTest) String() string { return t.Raw }

// Integration reports whether the command runs tests of test/integration:
// they start etcd and an API server, so they need the line's etcd built
// (make etcd) and the compile of kube-apiserver.
func (t GoTest) Integration() bool {
	pkg := strings.TrimPrefix(t.Package, "./")
	return pkg == "test/integration" || strings.HasPrefix(pkg, "test/integration/")
}

// Status is an Upstream-Status value (DEP-3 / OpenEmbedded style).
type Status struct {
	Kind string // Inappropriate, Pending, Submitted, Backport
	// Detail is the text in brackets.
	Detail string
	// PR is the kubernetes PR number for Submitted and Backport.
	PR int
	// Releases are the upstream releases that carry a backport.
	Releases []string
}

// metaTrailers are the trailers that describe a patch (every patch has
// both); the others ask for checks (Checks).
var metaTrailers = []string{"Upstream-Status", "Bug"}

// Known trailer keys, a closed vocabulary (README, "The patch workflow").
var knownTrailers = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range append(slices.Clone(metaTrailers), CheckTrailers()...) {
		m[k] = true
	}
	return m
}()

// trailerList is "A:, B: and C:".
func trailerList(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	out := strings.Join(keys[:len(keys)-1], ":, ") + ":"
	if len(keys) > 1 {
		out += " and " + keys[len(keys)-1] + ":"
	}
	return out
}

// requiredTrailers are the trailers every patch must have.
var requiredTrailers = func() []string {
	out := slices.Clone(metaTrailers)
	for _, c := range Checks {
		if c.Required && c.Trailer != "" {
			out = append(out, c.Trailer)
		}
	}
	return out
}()

var (
	trailerRE     = regexp.MustCompile(`^([A-Z][A-Za-z-]*): (.*\S)\s*$`)
	statusRE      = regexp.MustCompile(`^(Inappropriate|Pending|Submitted|Backport)(?: \[(.+)\])?$`)
	submittedRE   = regexp.MustCompile(`^kubernetes#([1-9][0-9]*)$`)
	backportRE    = regexp.MustCompile(`^kubernetes#([1-9][0-9]*), (v[0-9]+\.[0-9]+\.[0-9]+(?:/v[0-9]+\.[0-9]+\.[0-9]+)*)$`)
	bugRE         = regexp.MustCompile(`^seed [0-9]{3} \(.+\)$`)
	noneRE        = regexp.MustCompile(`^none \((.+)\)$`)
	withoutRE     = regexp.MustCompile(`^(.+) \(without ([A-Za-z0-9._-]+\.patch)\)$`)
	diffGitRE     = regexp.MustCompile(`^diff --git a/(.+) b/(.+)$`)
	formatPatchRE = regexp.MustCompile(`^From [0-9a-f]{40} `)
)

// ReadPatch parses and validates the patch file at file.
func ReadPatch(file string) (*Patch, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParsePatch(file, data)
}

// ReadSubject reads the subject of a git format-patch file, as ReadPatch
// does, without validating the rest of the patch: a patch whose message is
// being fixed still has its subject.
func ReadSubject(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	lines, err := splitLines(file, data)
	if err != nil {
		return "", err
	}
	subject, _, _, err := parseSubject(file, lines)
	return subject, err
}

// splitLines splits data into lines, without their line ends.
func splitLines(file string, data []byte) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return lines, nil
}

// parseSubject reads the mail headers of git format-patch lines: it returns
// the subject (unfolded, decoded, without "[PATCH]"), its line number and
// the index of the blank line that ends the headers.
func parseSubject(file string, lines []string) (subject string, subjectLine, headerEnd int, err error) {
	if len(lines) == 0 || !formatPatchRE.MatchString(lines[0]) {
		return "", 0, 0, errorf(file, 1, "not a git format-patch file (want a first line `From <hash> ...`)")
	}
	// Mail headers up to the first blank line; Subject may be folded.
	i := 1
	for ; i < len(lines) && lines[i] != ""; i++ {
		if s, ok := strings.CutPrefix(lines[i], "Subject: "); ok {
			subjectLine = i + 1
			subject = s
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], " ") {
				i++
				subject += lines[i]
			}
		}
	}
	if subjectLine == 0 {
		return "", 0, 0, errorf(file, i+1, "no Subject: header")
	}
	// --encode-email-headers writes a non-ASCII subject as RFC 2047 words.
	if dec, err := new(mime.WordDecoder).DecodeHeader(subject); err == nil {
		subject = dec
	}
	subject = strings.TrimSpace(strings.TrimPrefix(subject, "[PATCH]"))
	if subject == "" {
		return "", 0, 0, errorf(file, subjectLine, "empty subject")
	}
	return subject, subjectLine, i, nil
}

// ParsePatch parses and validates git format-patch content.
func ParsePatch(file string, data []byte) (*Patch, error) {
	p := &Patch{File: file}
	lines, err := splitLines(file, data)
	if err != nil {
		return nil, err
	}
	subject, subjectLine, headerEnd, err := parseSubject(file, lines)
	if err != nil {
		return nil, err
	}
	p.Subject = subject
	i := headerEnd
	// Message body up to the `---` separator or, as `git format-patch
	// --no-stat` writes no `---`, up to the first `diff --git` line (where
	// git mailinfo ends the message too).
	bodyStart := i + 1
	end := -1
	for j := bodyStart; j < len(lines); j++ {
		if lines[j] == "---" || strings.HasPrefix(lines[j], "diff --git ") {
			end = j
			break
		}
	}
	if end < 0 {
		return nil, errorf(file, len(lines), "no `---` or `diff --git` line between the message and the diff")
	}
	// Trailers: the last paragraph of the message.
	last := end - 1
	for last >= bodyStart && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	first := last
	for first > bodyStart && strings.TrimSpace(lines[first-1]) != "" {
		first--
	}
	if last < bodyStart || !trailerRE.MatchString(lines[first]) {
		return nil, errorf(file, end, "no trailers: the message must end with %s lines", trailerList(requiredTrailers))
	}
	for j := first; j <= last; j++ {
		m := trailerRE.FindStringSubmatch(lines[j])
		if m == nil {
			return nil, errorf(file, j+1, "malformed trailer %q (want `Key: value`)", lines[j])
		}
		if !knownTrailers[m[1]] {
			return nil, errorf(file, j+1, "unknown trailer %q (want one of %s)", m[1], strings.Join(sortedKeys(knownTrailers), ", "))
		}
		p.Trailers = append(p.Trailers, Trailer{Key: m[1], Value: m[2], Line: j + 1})
	}
	p.Body = strings.TrimSpace(strings.Join(lines[bodyStart:first], "\n"))
	if p.Body == "" {
		return nil, errorf(file, subjectLine, "the message has no body: explain symptom, root cause and fix")
	}
	for j := end; j < len(lines); j++ {
		if m := diffGitRE.FindStringSubmatch(lines[j]); m != nil {
			p.Files = append(p.Files, m[2])
		}
	}
	if len(p.Files) == 0 {
		return nil, errorf(file, end+1, "the patch changes no file")
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (p *Patch) validate() error {
	count := map[string]int{}
	for _, t := range p.Trailers {
		count[t.Key]++
		switch t.Key {
		case "Upstream-Status":
			if count[t.Key] > 1 {
				return errorf(p.File, t.Line, "Upstream-Status given twice")
			}
			st, err := parseStatus(t.Value)
			if err != nil {
				return errorf(p.File, t.Line, "%v", err)
			}
			p.Status = st
		case "Bug":
			if !bugRE.MatchString(t.Value) {
				return errorf(p.File, t.Line, "Bug: %q: want `seed NNN (what it is)`", t.Value)
			}
		case "Guards":
			g, err := parseGuard(t.Value)
			if err != nil {
				return errorf(p.File, t.Line, "Guards: %v", err)
			}
			g.Line, g.Test.Line = t.Line, t.Line
			p.Guards = append(p.Guards, g)
		case "Race":
			gt, err := ParseGoTest(t.Value)
			if err != nil {
				return errorf(p.File, t.Line, "%s: %v", t.Key, err)
			}
			gt.Line = t.Line
			p.Races = append(p.Races, gt)
		case "Test", "Regression":
			if m := noneRE.FindStringSubmatch(t.Value); m != nil && t.Key == "Regression" {
				p.RegressionNone = m[1]
				continue
			}
			value, without := t.Value, ""
			if m := withoutRE.FindStringSubmatch(value); m != nil && t.Key == "Regression" {
				value, without = m[1], m[2]
			}
			gt, err := ParseGoTest(value)
			if err != nil {
				return errorf(p.File, t.Line, "%s: %v", t.Key, err)
			}
			gt.Line, gt.Without = t.Line, without
			if t.Key == "Test" {
				p.Tests = append(p.Tests, gt)
			} else {
				p.Regressions = append(p.Regressions, gt)
			}
		}
	}
	for _, k := range requiredTrailers {
		if count[k] == 0 {
			return errorf(p.File, 0, "missing %s: trailer", k)
		}
	}
	if p.RegressionNone != "" && len(p.Regressions) > 0 {
		return errorf(p.File, 0, "Regression: none cannot stand beside Regression: tests")
	}
	return nil
}

func parseStatus(v string) (Status, error) {
	m := statusRE.FindStringSubmatch(v)
	if m == nil {
		return Status{}, fmt.Errorf("Upstream-Status %q: want Inappropriate [reason], Pending, Submitted [kubernetes#N] or Backport [kubernetes#N, vA.B.C]", v)
	}
	st := Status{Kind: m[1], Detail: m[2]}
	switch st.Kind {
	case "Inappropriate":
		if st.Detail == "" {
			return st, fmt.Errorf("Upstream-Status Inappropriate needs a reason in brackets")
		}
	case "Pending":
		if st.Detail != "" {
			return st, fmt.Errorf("Upstream-Status Pending takes no brackets")
		}
	case "Submitted":
		sm := submittedRE.FindStringSubmatch(st.Detail)
		if sm == nil {
			return st, fmt.Errorf("Upstream-Status Submitted [%s]: want [kubernetes#N]", st.Detail)
		}
		fmt.Sscan(sm[1], &st.PR)
	case "Backport":
		bm := backportRE.FindStringSubmatch(st.Detail)
		if bm == nil {
			return st, fmt.Errorf("Upstream-Status Backport [%s]: want [kubernetes#N, vA.B.C] (several releases joined by /)", st.Detail)
		}
		fmt.Sscan(bm[1], &st.PR)
		st.Releases = strings.Split(bm[2], "/")
	}
	return st, nil
}

func parseGuard(v string) (Guard, error) {
	mutant, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
	if !strings.HasPrefix(mutant, "mutants/") || !strings.HasSuffix(mutant, ".patch") || path.Clean(mutant) != mutant {
		return Guard{}, fmt.Errorf("%q: want `mutants/<name>.patch ./pkg/path -run '^TestX$'` (the mutant in the line's mutants/ folder)", v)
	}
	gt, err := ParseGoTest(strings.TrimSpace(rest))
	if err != nil {
		return Guard{}, err
	}
	return Guard{Mutant: mutant, Test: gt}, nil
}

// ParseGoTest parses `./pkg/path [go test flags]`, shell-quoted.
func ParseGoTest(v string) (GoTest, error) {
	words, err := shellquote.Split(v)
	if err != nil {
		return GoTest{}, fmt.Errorf("%q: %v", v, err)
	}
	if len(words) == 0 {
		return GoTest{}, fmt.Errorf("empty test command")
	}
	pkg := words[0]
	rel, ok := strings.CutPrefix(pkg, "./")
	if !ok || rel == "" || path.Clean(rel) != rel || strings.HasPrefix(rel, "../") {
		return GoTest{}, fmt.Errorf("%q: the package must be a clean path relative to the tree root, like ./pkg/scheduler", pkg)
	}
	if strings.Contains(rel, "...") {
		return GoTest{}, fmt.Errorf("%q: name one package, not a pattern", pkg)
	}
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "./") {
			return GoTest{}, fmt.Errorf("%q: one package per test line", w)
		}
	}
	return GoTest{Package: pkg, Flags: words[1:], Raw: v}, nil
}

// GoFiles are the .go files the patch touches.
func (p *Patch) GoFiles() []string {
	var out []string
	for _, f := range p.Files {
		if strings.HasSuffix(f, ".go") {
			out = append(out, f)
		}
	}
	return out
}

// IsTestFile reports whether a tree path belongs to tests only: a _test.go
// file or anything under a testdata directory.
func IsTestFile(f string) bool {
	return strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "testdata/") || strings.Contains(f, "/testdata/")
}

// TestFiles are the files of the patch that belong to tests only.
func (p *Patch) TestFiles() []string {
	var out []string
	for _, f := range p.Files {
		if IsTestFile(f) {
			out = append(out, f)
		}
	}
	return out
}

// Packages are the package directories (./-relative) of the .go files the
// patch touches, sorted.
func (p *Patch) Packages() []string {
	set := map[string]bool{}
	for _, f := range p.GoFiles() {
		if strings.Contains(f, "/testdata/") || strings.HasPrefix(f, "testdata/") {
			continue
		}
		set["./"+path.Dir(f)] = true
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
