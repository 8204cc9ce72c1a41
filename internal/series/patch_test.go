package series_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/series"
)

// The fixtures follow `git format-patch --keep-subject --no-stat
// --no-signature --zero-commit --full-index --no-numbered` output, which has
// no `---` line: the message ends where the first `diff --git` starts.

const (
	fromLine = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
	// Lines 1-9 of every fixture.
	header = fromLine + "\n" +
		"From: kube-carry <kube-carry@invalid>\n" +
		"Date: Tue, 10 Feb 2026 12:53:36 +0000\n" +
		"Subject: scheduler: count in-flight local-dynamic volumes\n" +
		"\n" +
		"Symptom: pods over-schedule local-dynamic PVCs.\n" +
		"\n" +
		"Root cause: getUsedCapacity misses assumed claims. Fix: count them.\n" +
		"\n"
	// The trailers start at line 10.
	goodTrailers = "Upstream-Status: Backport [kubernetes#138324, v1.35.6/v1.36.3]\n" +
		"Bug: seed 000 (local-dynamic over-scheduling)\n" +
		"Test: ./pkg/scheduler -run '^TestX$'\n" +
		"Test: ./pkg/scheduler/framework/plugins/volumebinding -run \"^TestLocalDynamic\" -count=2\n" +
		"Regression: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicWindow$'\n"
	diffs = "diff --git a/pkg/scheduler/framework/plugins/volumebinding/binder.go b/pkg/scheduler/framework/plugins/volumebinding/binder.go\n" +
		"index de980441c3ab03a8c07dda1ad27b8a11f39deb1e..7be73ce3c1b1cdaea86e8168dfee8575175953bf 100644\n" +
		"--- a/pkg/scheduler/framework/plugins/volumebinding/binder.go\n" +
		"+++ b/pkg/scheduler/framework/plugins/volumebinding/binder.go\n" +
		"@@ -1,3 +1,3 @@\n" +
		" package volumebinding\n" +
		"-var x = 1\n" +
		"+var x = 2\n" +
		" \n" +
		"diff --git a/pkg/scheduler/framework/plugins/volumebinding/binder_test.go b/pkg/scheduler/framework/plugins/volumebinding/binder_test.go\n" +
		"new file mode 100644\n" +
		"index 0000000000000000000000000000000000000000..823aafd0712b6c533df84b17d9b7ac6ae43e66fa\n" +
		"--- /dev/null\n" +
		"+++ b/pkg/scheduler/framework/plugins/volumebinding/binder_test.go\n" +
		"@@ -0,0 +1 @@\n" +
		"+package volumebinding\n" +
		"diff --git a/pkg/scheduler/testdata/local.yaml b/pkg/scheduler/testdata/local.yaml\n" +
		"new file mode 100644\n" +
		"index 0000000000000000000000000000000000000000..823aafd0712b6c533df84b17d9b7ac6ae43e66fa\n" +
		"--- /dev/null\n" +
		"+++ b/pkg/scheduler/testdata/local.yaml\n" +
		"@@ -0,0 +1 @@\n" +
		"+a: b\n" +
		"diff --git a/pkg/scheduler/old_name.go b/pkg/scheduler/new_name.go\n" +
		"similarity index 100%\n" +
		"rename from pkg/scheduler/old_name.go\n" +
		"rename to pkg/scheduler/new_name.go\n" +
		"diff --git a/docs/local-dynamic.md b/docs/local-dynamic.md\n" +
		"index de980441c3ab03a8c07dda1ad27b8a11f39deb1e..7be73ce3c1b1cdaea86e8168dfee8575175953bf 100644\n" +
		"--- a/docs/local-dynamic.md\n" +
		"+++ b/docs/local-dynamic.md\n" +
		"@@ -1 +1 @@\n" +
		"-old\n" +
		"+new\n"
)

// patchWith is a format-patch file with the given trailers block (ending
// in a newline), starting at line 10.
func patchWith(trailers string) string {
	return header + trailers + "\n" + diffs
}

func TestParsePatch(t *testing.T) {
	got, err := series.ParsePatch("patches/x.patch", []byte(patchWith(goodTrailers)))
	require.NoError(t, err)

	want := &series.Patch{
		File:    "patches/x.patch",
		Subject: "scheduler: count in-flight local-dynamic volumes",
		Body: "Symptom: pods over-schedule local-dynamic PVCs.\n\n" +
			"Root cause: getUsedCapacity misses assumed claims. Fix: count them.",
		Trailers: []series.Trailer{
			{Key: "Upstream-Status", Value: "Backport [kubernetes#138324, v1.35.6/v1.36.3]", Line: 10},
			{Key: "Bug", Value: "seed 000 (local-dynamic over-scheduling)", Line: 11},
			{Key: "Test", Value: "./pkg/scheduler -run '^TestX$'", Line: 12},
			{Key: "Test", Value: `./pkg/scheduler/framework/plugins/volumebinding -run "^TestLocalDynamic" -count=2`, Line: 13},
			{Key: "Regression", Value: "./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicWindow$'", Line: 14},
		},
		Files: []string{
			"pkg/scheduler/framework/plugins/volumebinding/binder.go",
			"pkg/scheduler/framework/plugins/volumebinding/binder_test.go",
			"pkg/scheduler/testdata/local.yaml",
			"pkg/scheduler/new_name.go",
			"docs/local-dynamic.md",
		},
		Status: series.Status{
			Kind:     "Backport",
			Detail:   "kubernetes#138324, v1.35.6/v1.36.3",
			PR:       138324,
			Releases: []string{"v1.35.6", "v1.36.3"},
		},
		Tests: []series.GoTest{
			{Package: "./pkg/scheduler", Flags: []string{"-run", "^TestX$"}, Line: 12, Raw: "./pkg/scheduler -run '^TestX$'"},
			{
				Package: "./pkg/scheduler/framework/plugins/volumebinding",
				Flags:   []string{"-run", "^TestLocalDynamic", "-count=2"},
				Line:    13,
				Raw:     `./pkg/scheduler/framework/plugins/volumebinding -run "^TestLocalDynamic" -count=2`,
			},
		},
		Regressions: []series.GoTest{{
			Package: "./pkg/scheduler/framework/plugins/volumebinding",
			Flags:   []string{"-run", "^TestLocalDynamicWindow$"},
			Line:    14,
			Raw:     "./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicWindow$'",
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ParsePatch mismatch (-want +got):\n%s", diff)
	}

	assert.Equal(t, []string{
		"pkg/scheduler/framework/plugins/volumebinding/binder_test.go",
		"pkg/scheduler/testdata/local.yaml",
	}, got.TestFiles())
	assert.Equal(t, []string{
		"pkg/scheduler/framework/plugins/volumebinding/binder.go",
		"pkg/scheduler/framework/plugins/volumebinding/binder_test.go",
		"pkg/scheduler/new_name.go",
	}, got.GoFiles())
	assert.Equal(t, []string{
		"./pkg/scheduler",
		"./pkg/scheduler/framework/plugins/volumebinding",
	}, got.Packages())
	assert.Equal(t, "./pkg/scheduler -run '^TestX$'", got.Tests[0].String())
}

func TestParsePatchWithDiffstatSeparator(t *testing.T) {
	// Plain `git format-patch` (with a stat) separates message and diff by ---.
	in := header + goodTrailers + "---\n" +
		" docs/local-dynamic.md | 2 +-\n" +
		" 1 file changed, 1 insertion(+), 1 deletion(-)\n" +
		"\n" +
		"diff --git a/docs/local-dynamic.md b/docs/local-dynamic.md\n" +
		"--- a/docs/local-dynamic.md\n" +
		"+++ b/docs/local-dynamic.md\n" +
		"@@ -1 +1 @@\n-old\n+new\n" +
		"-- \n2.39.5\n"
	got, err := series.ParsePatch("patches/x.patch", []byte(in))
	require.NoError(t, err)
	assert.Equal(t, []string{"docs/local-dynamic.md"}, got.Files)
	assert.Len(t, got.Trailers, 5)
	assert.Equal(t, 138324, got.Status.PR)
	assert.Empty(t, got.Packages())
}

func TestParsePatchFoldedSubject(t *testing.T) {
	in := strings.Replace(patchWith(goodTrailers),
		"Subject: scheduler: count in-flight local-dynamic volumes\n",
		"Subject: [PATCH] scheduler: count in-flight local-dynamic volumes of\n every pool\n", 1)
	got, err := series.ParsePatch("patches/x.patch", []byte(in))
	require.NoError(t, err)
	assert.Equal(t, "scheduler: count in-flight local-dynamic volumes of every pool", got.Subject)
	// The fold moved the trailers one line down.
	assert.Equal(t, 11, got.Trailers[0].Line)
}

func TestParsePatchEncodedSubject(t *testing.T) {
	// What git format-patch --encode-email-headers writes for a subject
	// with a non-ASCII character.
	in := strings.Replace(patchWith(goodTrailers),
		"Subject: scheduler: count in-flight local-dynamic volumes\n",
		"Subject: =?UTF-8?q?kubelet:=20fail=20fast=20=E2=80=94=20duplicate=20volume?=\n"+
			" =?UTF-8?q?s=20of=20the=20same=20CSI=20driver=20and=20handle?=\n"+
			"MIME-Version: 1.0\n"+
			"Content-Type: text/plain; charset=UTF-8\n"+
			"Content-Transfer-Encoding: 8bit\n", 1)
	got, err := series.ParsePatch("patches/x.patch", []byte(in))
	require.NoError(t, err)
	assert.Equal(t, "kubelet: fail fast — duplicate volumes of the same CSI driver and handle", got.Subject)
	assert.Equal(t, 14, got.Trailers[0].Line)
}

func TestParsePatchStatus(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        series.Status
	}{
		{
			name:  "Inappropriate keeps its reason",
			value: "Inappropriate [fork-only: local-dynamic storage]",
			want:  series.Status{Kind: "Inappropriate", Detail: "fork-only: local-dynamic storage"},
		},
		{
			name:  "Pending has no detail",
			value: "Pending",
			want:  series.Status{Kind: "Pending"},
		},
		{
			name:  "Submitted gives the PR number",
			value: "Submitted [kubernetes#120586]",
			want:  series.Status{Kind: "Submitted", Detail: "kubernetes#120586", PR: 120586},
		},
		{
			name:  "a Backport to one release gives the PR and the release",
			value: "Backport [kubernetes#93387, v1.19.0]",
			want:  series.Status{Kind: "Backport", Detail: "kubernetes#93387, v1.19.0", PR: 93387, Releases: []string{"v1.19.0"}},
		},
		{
			name:  "a Backport to several releases lists all of them",
			value: "Backport [kubernetes#138324, v1.35.6/v1.36.3]",
			want:  series.Status{Kind: "Backport", Detail: "kubernetes#138324, v1.35.6/v1.36.3", PR: 138324, Releases: []string{"v1.35.6", "v1.36.3"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trailers := strings.Replace(goodTrailers, "Backport [kubernetes#138324, v1.35.6/v1.36.3]", tc.value, 1)
			got, err := series.ParsePatch("patches/x.patch", []byte(patchWith(trailers)))
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got.Status); diff != "" {
				t.Fatalf("Status mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePatchRegressionNoneForAnAPIAddition(t *testing.T) {
	trailers := "Upstream-Status: Inappropriate [fork-only: local-dynamic storage]\n" +
		"Bug: seed 000 (local-dynamic over-scheduling)\n" +
		"Test: ./pkg/apis/storage -run '^TestLocalDynamic$'\n" +
		"Regression: none (API addition)\n"
	got, err := series.ParsePatch("patches/x.patch", []byte(patchWith(trailers)))
	require.NoError(t, err)
	assert.Equal(t, "API addition", got.RegressionNone)
	assert.Empty(t, got.Regressions)
	require.Len(t, got.Tests, 1)
	assert.Equal(t, "./pkg/apis/storage", got.Tests[0].Package)
}

func TestParsePatchGuardsTrailerIsKnown(t *testing.T) {
	got, err := series.ParsePatch("patches/x.patch", []byte(patchWith(goodTrailers+"Guards: mutants/nodetree.patch ./pkg/a -run '^TestA$'\n")))
	require.NoError(t, err)
	last := got.Trailers[len(got.Trailers)-1]
	assert.Equal(t, series.Trailer{Key: "Guards", Value: "mutants/nodetree.patch ./pkg/a -run '^TestA$'", Line: 15}, last)
	require.Len(t, got.Guards, 1)
	assert.Equal(t, "mutants/nodetree.patch", got.Guards[0].Mutant)
}

// TestParsePatchRace: Race: trailers are parsed as Test: lines are, into
// Races, and their errors name the trailer.
func TestParsePatchRace(t *testing.T) {
	got, err := series.ParsePatch("patches/x.patch", []byte(patchWith(goodTrailers+"Race: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamic'\n")))
	require.NoError(t, err)
	assert.Equal(t, []series.GoTest{{
		Package: "./pkg/scheduler/framework/plugins/volumebinding",
		Flags:   []string{"-run", "^TestLocalDynamic"},
		Line:    15,
		Raw:     "./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamic'",
	}}, got.Races)
	assert.Len(t, got.Tests, 2, "a Race: line is not a Test: line")

	_, err = series.ParsePatch("patches/x.patch", []byte(patchWith(goodTrailers+"Race: ./pkg/... -run '^TestX$'\n")))
	assert.EqualError(t, err, `patches/x.patch:15: Race: "./pkg/...": name one package, not a pattern`)
}

func TestParsePatchErrors(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(goodTrailers, old) {
			panic("fixture has no " + old)
		}
		return patchWith(strings.Replace(goodTrailers, old, new, 1))
	}
	drop := func(prefix string) string {
		var keep []string
		for _, l := range strings.SplitAfter(goodTrailers, "\n") {
			if !strings.HasPrefix(l, prefix) {
				keep = append(keep, l)
			}
		}
		return patchWith(strings.Join(keep, ""))
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{
			name: "an unknown trailer key names the key and its line",
			in:   patchWith(goodTrailers + "Signed-off-by: Someone <someone@example.com>\n"),
			want: `patches/x.patch:15: unknown trailer "Signed-off-by" (want one of Bug, Guards, Race, Regression, Test, Upstream-Status)`,
		},
		{
			name: "a line of the trailer block that is no trailer is malformed",
			in:   patchWith(goodTrailers + "and a stray sentence\n"),
			want: "patches/x.patch:15: malformed trailer \"and a stray sentence\" (want `Key: value`)",
		},
		{
			name: "an Upstream-Status outside the vocabulary is rejected",
			in:   replace("Backport [kubernetes#138324, v1.35.6/v1.36.3]", "Merged [kubernetes#138324]"),
			want: `patches/x.patch:10: Upstream-Status "Merged [kubernetes#138324]": want Inappropriate [reason], Pending, Submitted [kubernetes#N] or Backport [kubernetes#N, vA.B.C]`,
		},
		{
			name: "Submitted without kubernetes#N is rejected",
			in:   replace("Backport [kubernetes#138324, v1.35.6/v1.36.3]", "Submitted [PR 138324]"),
			want: "patches/x.patch:10: Upstream-Status Submitted [PR 138324]: want [kubernetes#N]",
		},
		{
			name: "Submitted without brackets is rejected",
			in:   replace("Backport [kubernetes#138324, v1.35.6/v1.36.3]", "Submitted"),
			want: "patches/x.patch:10: Upstream-Status Submitted []: want [kubernetes#N]",
		},
		{
			name: "Backport without a release is rejected",
			in:   replace("Backport [kubernetes#138324, v1.35.6/v1.36.3]", "Backport [kubernetes#138324]"),
			want: "patches/x.patch:10: Upstream-Status Backport [kubernetes#138324]: want [kubernetes#N, vA.B.C] (several releases joined by /)",
		},
		{
			name: "Inappropriate without a reason is rejected",
			in:   replace("Backport [kubernetes#138324, v1.35.6/v1.36.3]", "Inappropriate"),
			want: "patches/x.patch:10: Upstream-Status Inappropriate needs a reason in brackets",
		},
		{
			name: "Pending with brackets is rejected",
			in:   replace("Backport [kubernetes#138324, v1.35.6/v1.36.3]", "Pending [soon]"),
			want: "patches/x.patch:10: Upstream-Status Pending takes no brackets",
		},
		{
			name: "a second Upstream-Status is rejected at its line",
			in:   patchWith(goodTrailers + "Upstream-Status: Pending\n"),
			want: "patches/x.patch:15: Upstream-Status given twice",
		},
		{
			name: "a Bug that names no seed is rejected",
			in:   replace("seed 000 (local-dynamic over-scheduling)", "over-scheduling"),
			want: "patches/x.patch:11: Bug: \"over-scheduling\": want `seed NNN (what it is)`",
		},
		{
			name: "a missing Bug trailer is reported for the file",
			in:   drop("Bug:"),
			want: "patches/x.patch: missing Bug: trailer",
		},
		{
			name: "a missing Test trailer is reported for the file",
			in:   drop("Test:"),
			want: "patches/x.patch: missing Test: trailer",
		},
		{
			name: "a missing Regression trailer is reported for the file",
			in:   drop("Regression:"),
			want: "patches/x.patch: missing Regression: trailer",
		},
		{
			name: "a missing Upstream-Status trailer is reported for the file",
			in:   drop("Upstream-Status:"),
			want: "patches/x.patch: missing Upstream-Status: trailer",
		},
		{
			name: "Regression none beside Regression tests is rejected",
			in:   patchWith(goodTrailers + "Regression: none (API addition)\n"),
			want: "patches/x.patch: Regression: none cannot stand beside Regression: tests",
		},
		{
			name: "Test none is not accepted (only Regression may say none)",
			in:   replace("Test: ./pkg/scheduler -run '^TestX$'", "Test: none (API addition)"),
			want: `patches/x.patch:12: Test: "none": the package must be a clean path relative to the tree root, like ./pkg/scheduler`,
		},
		{
			name: "a Test with a package pattern is rejected",
			in:   replace("Test: ./pkg/scheduler -run '^TestX$'", "Test: ./pkg/... -run '^TestX$'"),
			want: `patches/x.patch:12: Test: "./pkg/...": name one package, not a pattern`,
		},
		{
			name: "a Test with an absolute path is rejected",
			in:   replace("Test: ./pkg/scheduler -run '^TestX$'", "Test: /pkg/scheduler -run '^TestX$'"),
			want: `patches/x.patch:12: Test: "/pkg/scheduler": the package must be a clean path relative to the tree root, like ./pkg/scheduler`,
		},
		{
			name: "a Test with an import path instead of a directory is rejected",
			in:   replace("Test: ./pkg/scheduler -run '^TestX$'", "Test: k8s.io/kubernetes/pkg/scheduler"),
			want: `patches/x.patch:12: Test: "k8s.io/kubernetes/pkg/scheduler": the package must be a clean path relative to the tree root, like ./pkg/scheduler`,
		},
		{
			name: "a Test that leaves the tree is rejected",
			in:   replace("Test: ./pkg/scheduler -run '^TestX$'", "Test: ./../pkg/scheduler"),
			want: `patches/x.patch:12: Test: "./../pkg/scheduler": the package must be a clean path relative to the tree root, like ./pkg/scheduler`,
		},
		{
			name: "a Test naming two packages is rejected",
			in:   replace("Test: ./pkg/scheduler -run '^TestX$'", "Test: ./pkg/scheduler ./pkg/kubelet"),
			want: `patches/x.patch:12: Test: "./pkg/kubelet": one package per test line`,
		},
		{
			name: "a Regression with an unbalanced quote is rejected",
			in:   replace("Regression: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicWindow$'", "Regression: ./pkg/scheduler -run '^TestX"),
			want: `patches/x.patch:14: Regression: "./pkg/scheduler -run '^TestX": Unterminated single-quoted string`,
		},
		{
			name: "a message without a body is rejected at the subject",
			in:   strings.Replace(patchWith(goodTrailers), "Symptom: pods over-schedule local-dynamic PVCs.\n\nRoot cause: getUsedCapacity misses assumed claims. Fix: count them.\n\n", "", 1),
			want: "patches/x.patch:4: the message has no body: explain symptom, root cause and fix",
		},
		{
			name: "a message without trailers is rejected",
			in:   header + "\n" + diffs,
			want: "patches/x.patch:10: no trailers: the message must end with Upstream-Status:, Bug:, Test: and Regression: lines",
		},
		{
			name: "a file that is not a format-patch file is rejected at line 1",
			in:   "diff --git a/x b/x\n--- a/x\n+++ b/x\n",
			want: "patches/x.patch:1: not a git format-patch file (want a first line `From <hash> ...`)",
		},
		{
			name: "an empty file is rejected at line 1",
			in:   "",
			want: "patches/x.patch:1: not a git format-patch file (want a first line `From <hash> ...`)",
		},
		{
			name: "a patch without a Subject header is rejected at the end of the headers",
			in:   strings.Replace(patchWith(goodTrailers), "Subject: scheduler: count in-flight local-dynamic volumes\n", "", 1),
			want: "patches/x.patch:4: no Subject: header",
		},
		{
			name: "a message with no diff after it has no separator",
			in:   header + goodTrailers,
			want: "patches/x.patch:14: no `---` or `diff --git` line between the message and the diff",
		},
		{
			name: "a separator followed by no diff changes no file",
			in:   header + goodTrailers + "---\n",
			want: "patches/x.patch:15: the patch changes no file",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := series.ParsePatch("patches/x.patch", []byte(tc.in))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.Equal(t, tc.want, err.Error())
			var se *series.Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "patches/x.patch", se.File)
		})
	}
}

func TestReadPatch(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.patch")
	require.NoError(t, os.WriteFile(file, []byte(patchWith(goodTrailers)), 0o644))
	got, err := series.ReadPatch(file)
	require.NoError(t, err)
	assert.Equal(t, file, got.File)
	assert.Equal(t, "scheduler: count in-flight local-dynamic volumes", got.Subject)

	_, err = series.ReadPatch(filepath.Join(dir, "missing.patch"))
	assert.True(t, os.IsNotExist(err), "want a not-exist error, got %v", err)
}

func TestParseGoTest(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     series.GoTest
		wantErr  string
	}{
		{
			name: "a package with a quoted -run pattern splits like a shell",
			in:   "./pkg/scheduler -run '^TestX$'",
			want: series.GoTest{Package: "./pkg/scheduler", Flags: []string{"-run", "^TestX$"}, Raw: "./pkg/scheduler -run '^TestX$'"},
		},
		{
			name: "a package alone has no flags",
			in:   "./pkg/kubelet/volumemanager",
			want: series.GoTest{Package: "./pkg/kubelet/volumemanager", Flags: []string{}, Raw: "./pkg/kubelet/volumemanager"},
		},
		{
			name: "a staging package is a tree path like any other",
			in:   "./staging/src/k8s.io/client-go/tools/cache -race",
			want: series.GoTest{Package: "./staging/src/k8s.io/client-go/tools/cache", Flags: []string{"-race"}, Raw: "./staging/src/k8s.io/client-go/tools/cache -race"},
		},
		{name: "an empty command is rejected", in: "   ", wantErr: "empty test command"},
		{name: "the tree root alone is no package", in: "./", wantErr: `"./": the package must be a clean path relative to the tree root, like ./pkg/scheduler`},
		{name: "an unclean path is rejected", in: "./pkg//scheduler", wantErr: `"./pkg//scheduler": the package must be a clean path relative to the tree root, like ./pkg/scheduler`},
		{name: "a pattern in the middle is rejected", in: "./pkg/.../cache", wantErr: `"./pkg/.../cache": name one package, not a pattern`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := series.ParseGoTest(tc.in)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ParseGoTest mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsTestFile(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       bool
	}{
		{"a _test.go file is a test file", "pkg/a/a_test.go", true},
		{"a file under a nested testdata dir is a test file", "pkg/a/testdata/x.yaml", true},
		{"a file under a top-level testdata dir is a test file", "testdata/x.yaml", true},
		{"a plain .go file is not a test file", "pkg/a/a.go", false},
		{"a directory merely named like testdata is not a test file", "pkg/mytestdata/x.go", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, series.IsTestFile(tc.file))
		})
	}
}

// ReadSubject reads the subject as ParsePatch does, also of a patch whose
// message does not validate: export matches commits to patches by it.
func TestReadSubject(t *testing.T) {
	folded := strings.Replace(patchWith(""),
		"Subject: scheduler: count in-flight local-dynamic volumes\n",
		"Subject: [PATCH] scheduler: count in-flight local-dynamic volumes of\n every pool\n", 1)
	for _, tc := range []struct {
		name, in, want, wantErr string
	}{
		{name: "valid patch", in: patchWith(goodTrailers), want: "scheduler: count in-flight local-dynamic volumes"},
		{name: "folded subject, no trailers", in: folded, want: "scheduler: count in-flight local-dynamic volumes of every pool"},
		{name: "folded subject, CRLF line ends", in: strings.ReplaceAll(folded, "\n", "\r\n"), want: "scheduler: count in-flight local-dynamic volumes of every pool"},
		{name: "not a patch", in: "Subject: x\n", wantErr: "x.patch:1: not a git format-patch file"},
		{name: "no subject", in: fromLine + "\nFrom: a <a@b>\n\nbody\n", wantErr: "x.patch:3: no Subject: header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "x.patch")
			require.NoError(t, os.WriteFile(file, []byte(tc.in), 0o644))
			got, err := series.ReadSubject(file)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := series.ReadSubject(filepath.Join(t.TempDir(), "missing.patch"))
	assert.True(t, os.IsNotExist(err), "want a not-exist error, got %v", err)
}

func TestGoTestIntegration(t *testing.T) {
	for _, tc := range []struct {
		pkg  string
		want bool
	}{
		{"./test/integration/localdynamic", true},
		{"./test/integration/scheduler_perf/volumes", true},
		{"./test/integration", true},
		{"test/integration/framework", true},
		{"./test/integrationx", false},
		{"./test/e2e/storage", false},
		{"./pkg/scheduler/framework/plugins/volumebinding", false},
		{"./pkg/kubelet/volumemanager", false},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			assert.Equal(t, tc.want, series.GoTest{Package: tc.pkg}.Integration())
		})
	}
}
