package harness

import (
	"regexp"
	"slices"
	"strings"

	"github.com/kube-carry/kube-carry/internal/series"
)

// Batch is one go test run of several test commands on the same tree: the
// commands of a package whose flags differ only in their -run pattern run
// as one command whose pattern is any of theirs. Each run of go test links
// the package's test binary again (4 to 5 s for the volumebinding plugin
// on 2 cores), and the guards of a patch are up to 22 commands of one
// package. Match tells a command's own tests in the batch's result
// (gotest.Result.Only).
type Batch struct {
	Test     series.GoTest
	patterns map[int]*regexp.Regexp
}

// Match is command i's test filter: whether a top-level test of the
// batch's run is one its -run pattern selects. A batch of one command
// matches every test.
func (b *Batch) Match(i int) func(test string) bool {
	re := b.patterns[i]
	if re == nil {
		return func(string) bool { return true }
	}
	return re.MatchString
}

// Batches groups test commands into batches and returns each command's
// batch (by the command's index). A command without -run, with a pattern
// that names subtests ('/'), with a pattern that does not compile or with
// -run given twice runs alone.
func Batches(tests []series.GoTest) []*Batch {
	out := make([]*Batch, len(tests))
	type group struct {
		batch   *Batch
		members []int
		parts   []string
	}
	groups := map[string]*group{}
	var keys []string
	for i, gt := range tests {
		pattern, rest, ok := runPattern(gt.Flags)
		var re *regexp.Regexp
		if ok && !strings.Contains(pattern, "/") {
			var err error
			if re, err = regexp.Compile(pattern); err != nil {
				ok = false
			}
		}
		if !ok || re == nil {
			out[i] = &Batch{Test: gt}
			continue
		}
		key := gt.Package + "\x00" + strings.Join(rest, "\x00")
		g := groups[key]
		if g == nil {
			g = &group{batch: &Batch{patterns: map[int]*regexp.Regexp{}}}
			groups[key] = g
			keys = append(keys, key)
		}
		g.batch.patterns[i] = re
		g.members = append(g.members, i)
		if !slices.Contains(g.parts, pattern) {
			g.parts = append(g.parts, pattern)
		}
		out[i] = g.batch
	}
	for _, key := range keys {
		g := groups[key]
		first := tests[g.members[0]]
		if len(g.members) == 1 {
			g.batch.Test, g.batch.patterns = first, nil
			continue
		}
		_, rest, _ := runPattern(first.Flags)
		combined := g.parts[0]
		if len(g.parts) > 1 {
			combined = "(?:" + strings.Join(g.parts, ")|(?:") + ")"
		}
		g.batch.Test = series.GoTest{
			Package: first.Package,
			Flags:   append([]string{"-run", combined}, rest...),
			Raw:     first.Package + " -run '" + combined + "'" + joinRest(rest),
		}
	}
	return out
}

func joinRest(rest []string) string {
	if len(rest) == 0 {
		return ""
	}
	return " " + strings.Join(rest, " ")
}

// runPattern splits go test flags into the -run pattern and the others;
// ok is false when there is no -run or more than one.
func runPattern(flags []string) (pattern string, rest []string, ok bool) {
	n := 0
	for i := 0; i < len(flags); i++ {
		f := flags[i]
		switch {
		case f == "-run" || f == "--run":
			if i+1 >= len(flags) {
				return "", nil, false
			}
			pattern = flags[i+1]
			i++
			n++
		case strings.HasPrefix(f, "-run=") || strings.HasPrefix(f, "--run="):
			_, pattern, _ = strings.Cut(f, "=")
			n++
		default:
			rest = append(rest, f)
		}
	}
	return pattern, rest, n == 1
}
