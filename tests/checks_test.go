package tests

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-carry/kube-carry/internal/harness"
	"github.com/kube-carry/kube-carry/internal/series"
)

// TestCheckKinds holds everything that names the kinds of check and the
// proofs' tests to their one declaration (series.Checks,
// harness.LineProofTests, harness.PerLineOnlyTests): every check has a
// runner in the harness and every runner a check; docs/design.md's table
// of the kinds is the declaration; the proofs' lists name tests that
// exist. It needs no tree: make lint runs it.
func TestCheckKinds(t *testing.T) {
	t.Run("runners", func(t *testing.T) {
		var declared []string
		for _, c := range series.Checks {
			declared = append(declared, c.Name)
		}
		runners := checkRunners(nil, 0, &series.Patch{File: "x.patch"})
		var have []string
		for name := range runners {
			have = append(have, name)
		}
		slices.Sort(declared)
		slices.Sort(have)
		if diff := cmp.Diff(declared, have); diff != "" {
			t.Errorf("series.Checks and the harness's runners (checkRunners) differ (-declared +runners):\n%s", diff)
		}
	})
	t.Run("docs/design.md", func(t *testing.T) {
		const heading = "### Kinds of check"
		data, err := os.ReadFile(rootPath("docs/design.md"))
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(string(data), "\n"+heading+"\n")
		if !ok {
			t.Fatalf("docs/design.md has no section %q", heading)
		}
		var got []string
		for _, l := range strings.Split(after, "\n") {
			if strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "### ") {
				break
			}
			if strings.HasPrefix(l, "| `") {
				got = append(got, l)
			}
		}
		var want []string
		for _, c := range series.Checks {
			trailer := "(every patch)"
			if c.Trailer != "" {
				trailer = "`" + c.Trailer + ":`"
			}
			want = append(want, fmt.Sprintf("| `%s` | %s | %s | `%s` | %s | %s |", c.Name, trailer, yesDash(c.Required), c.Column, yesDash(c.LineProof), c.Proves))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("docs/design.md, %q, is not series.Checks (-declared +docs):\n%s", heading, diff)
		}
	})
	t.Run("proofs' tests exist", func(t *testing.T) {
		fset := token.NewFileSet()
		files, err := filepath.Glob(rootPath("tests/*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		exist := map[string]bool{}
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
					exist[fd.Name.Name] = true
				}
			}
		}
		for _, list := range []struct {
			name  string
			tests []string
		}{{"harness.LineProofTests", harness.LineProofTests}, {"harness.PerLineOnlyTests", harness.PerLineOnlyTests}} {
			for _, name := range list.tests {
				if !exist[name] {
					t.Errorf("%s names %s, which is no test of tests/", list.name, name)
				}
			}
		}
		for _, name := range harness.LineProofTests {
			if slices.Contains(harness.PerLineOnlyTests, name) {
				t.Errorf("%s is in the line proof and left to make test LINE= only", name)
			}
		}
	})
}

func yesDash(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}
