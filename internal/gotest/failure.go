package gotest

import (
	"fmt"
	"regexp"
	"strings"
)

// Limits of FailureOutput: a report shows what failed, the full log has the
// rest.
const (
	// maxTestLines is the most lines shown of one test's output.
	maxTestLines = 30
	// maxTests is the most failed tests whose output is shown; the others
	// are named.
	maxTests = 8
	// maxOtherLines is the most lines shown of build errors or of the
	// output outside any test.
	maxOtherLines = 40
)

var (
	// framingRE matches the lines go test prints to mark a test's start
	// and its turns among parallel tests.
	framingRE = regexp.MustCompile(`^\s*=== (RUN|PAUSE|CONT|NAME)\s`)
	// testLogRE matches the first line of a t.Log, t.Error or t.Fatal
	// message: file:line and the message. Its further lines are indented
	// deeper.
	testLogRE = regexp.MustCompile(`^ +[^ :]+\.go:\d+: `)
	// panicRE matches the start of a panic or runtime crash; the stacks
	// follow it.
	panicRE = regexp.MustCompile(`^(panic: |fatal error: )`)
	// summaryRE matches go test's closing lines of a package.
	summaryRE = regexp.MustCompile(`^(PASS|FAIL|ok  \t.*|FAIL\t.*|testing: warning: no tests to run|coverage: .*)$`)
)

// FailureOutput is what a report shows of a run that did not pass: each
// failed test's own output (its `--- FAIL` line, then what it logged:
// file:line and the assertion), the output of tests that never ended (the
// test binary timed out or crashed while they ran), the compiler's errors of
// a build failure, and what a test binary printed outside any test when it
// failed there. The log lines of the code under test are left out of a long
// test output, and every part is limited in length; the full log
// (Output) has everything. FailureOutput is empty for a run that passed or
// ran no test.
func (r *Result) FailureOutput() string {
	var out []string
	if r.Outcome == BuildFailed {
		var lines []string
		for _, l := range r.build {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		for _, l := range r.pkg {
			if strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
				lines = append(lines, l)
			}
		}
		out = append(out, limit(lines, maxOtherLines)...)
	}
	if r.Outcome == Passed || r.Outcome == NoTests || r.Outcome == BuildFailed {
		return strings.Join(out, "\n")
	}
	var shown, left []string
	for _, to := range r.tests {
		if to.status != "fail" && to.status != "" {
			continue
		}
		header, body := to.split()
		if len(body) == 0 && r.hasFailingSubtest(to) {
			// A parent that only failed because of its subtests: theirs
			// is the output to show.
			continue
		}
		if len(shown) >= maxTests {
			left = append(left, to.name)
			continue
		}
		shown = append(shown, to.name)
		out = append(out, header)
		out = append(out, limit(relevant(body), maxTestLines)...)
	}
	if len(left) > 0 {
		out = append(out, fmt.Sprintf("… and %d more failed tests (their output is in the full log): %s", len(left), strings.Join(left, ", ")))
	}
	if r.Outcome == Errored {
		var lines []string
		for _, l := range r.pkg {
			if strings.TrimSpace(l) != "" && !summaryRE.MatchString(l) {
				lines = append(lines, l)
			}
		}
		if len(lines) > 0 {
			out = append(out, "--- OUTSIDE ANY TEST:")
			out = append(out, limit(lines, maxOtherLines)...)
		}
	}
	return strings.Join(out, "\n")
}

// split returns the header of a test's report, its `--- FAIL` line (or a
// note that it never ended), and its own output without go test's framing
// lines.
func (to *testOutput) split() (header string, body []string) {
	end := "--- FAIL: " + to.name + " "
	for _, l := range splitLines(to.out.String()) {
		switch {
		case framingRE.MatchString(l):
		case header == "" && strings.HasPrefix(strings.TrimSpace(l), end):
			header = strings.TrimSpace(l)
		default:
			body = append(body, l)
		}
	}
	for len(body) > 0 && strings.TrimSpace(body[len(body)-1]) == "" {
		body = body[:len(body)-1]
	}
	switch {
	case header != "":
	case to.status == "":
		header = "--- DID NOT END: " + to.name + " (the test binary stopped while it ran)"
	default:
		header = "--- FAIL: " + to.name
	}
	return header, body
}

func (r *Result) hasFailingSubtest(parent *testOutput) bool {
	for _, to := range r.tests {
		if to.pkg == parent.pkg && strings.HasPrefix(to.name, parent.name+"/") && (to.status == "fail" || to.status == "") {
			return true
		}
	}
	return false
}

// relevant keeps, of a test output longer than maxTestLines, the lines of
// the test itself: its t.Log/t.Error messages (file:line and their indented
// continuation lines) and a panic with its stacks. The code under test's
// own logging is left out. An output with none of these is kept whole.
func relevant(lines []string) []string {
	if len(lines) <= maxTestLines {
		return lines
	}
	var keep []string
	inMessage := false
	for i, l := range lines {
		switch {
		case panicRE.MatchString(l):
			return append(keep, lines[i:]...)
		case testLogRE.MatchString(l):
			inMessage = true
		case inMessage && (strings.HasPrefix(l, "     ") || strings.HasPrefix(l, "\t")):
			// A continuation line of the message: deeper than the
			// 4 spaces of its first line.
		default:
			inMessage = false
		}
		if inMessage {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return lines
	}
	return keep
}

// limit keeps at most n lines: the first three quarters and the last
// quarter, with a line that says how many were left out.
func limit(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	tail := n / 4
	head := n - tail - 1
	out := append([]string{}, lines[:head]...)
	out = append(out, fmt.Sprintf("        … %d lines left out (the full log has them)", len(lines)-head-tail))
	return append(out, lines[len(lines)-tail:]...)
}

// splitLines splits output into lines, without the newline at its end.
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
