package release_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/release"
)

func TestNotesMarkdown(t *testing.T) {
	patches := fixturePatches(t)
	n := &release.Notes{
		Line:     "v1.37",
		Version:  version,
		Upstream: upstream,
		Released: created,
		Revision: commit,
		Source:   source,
		Image: &release.ImageSummary{
			Ref:    imageRef,
			Digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111",
			Platforms: []release.PlatformImage{
				{Platform: amd64, Digest: "sha256:2222222222222222222222222222222222222222222222222222222222222222"},
				{Platform: arm64, Digest: "sha256:3333333333333333333333333333333333333333333333333333333333333333"},
			},
		},
		Artifacts: []release.Sum{
			{Path: "kube-scheduler.oci.tar", SHA256: "4444444444444444444444444444444444444444444444444444444444444444"},
			{Path: "linux-amd64/kube-scheduler", SHA256: "5555555555555555555555555555555555555555555555555555555555555555"},
		},
		Patches: patches,
	}
	want := "# kube-carry v1.37.2-carry.1\n" +
		"\n" +
		"Release line v1.37: Kubernetes v1.37.2 (upstream release 2026-10-27T12:01:04Z) with 2 patches.\n" +
		"\n" +
		"- Patched tree commit: `0123456789abcdef0123456789abcdef01234567`\n" +
		"- Source: https://github.com/kube-carry/kube-carry\n" +
		"\n" +
		"## Image\n" +
		"\n" +
		"`registry.example.com/kube-carry/kube-scheduler:v1.37.2-carry.1`, index `sha256:1111111111111111111111111111111111111111111111111111111111111111`:\n" +
		"\n" +
		"| platform | image digest |\n" +
		"|---|---|\n" +
		"| linux/amd64 | `sha256:2222222222222222222222222222222222222222222222222222222222222222` |\n" +
		"| linux/arm64 | `sha256:3333333333333333333333333333333333333333333333333333333333333333` |\n" +
		"\n" +
		"Deploy by digest: `registry.example.com/kube-carry/kube-scheduler@sha256:1111111111111111111111111111111111111111111111111111111111111111`.\n" +
		"\n" +
		"## Artifacts\n" +
		"\n" +
		"Check them with `sha256sum --check SHA256SUMS` in the release directory.\n" +
		"\n" +
		"| file | sha256 |\n" +
		"|---|---|\n" +
		"| `kube-scheduler.oci.tar` | `4444444444444444444444444444444444444444444444444444444444444444` |\n" +
		"| `linux-amd64/kube-scheduler` | `5555555555555555555555555555555555555555555555555555555555555555` |\n" +
		"\n" +
		"## Patches\n" +
		"\n" +
		"### 1. volumebinding: check local-dynamic capacity of a node in Filter\n" +
		"\n" +
		"`volumebinding-local-dynamic-capacity.patch` · Upstream-Status: Inappropriate [fork-only: local-dynamic storage] · Bug: seed 000 (local-dynamic over-scheduling)\n" +
		"\n" +
		"Pods with local-dynamic volumes are scheduled to nodes whose storage pools cannot hold them.\n" +
		"\n" +
		"- Test: `./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamic'`\n" +
		"- Regression: `./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicCapacityFilter$'`\n" +
		"\n" +
		"### 2. scheduler: guard tests for upstream fixes\n" +
		"\n" +
		"`scheduler-upstream-fix-guards.patch` · Upstream-Status: Pending · Bug: seed 001 (scheduler snapshot drops nodes)\n" +
		"\n" +
		"Upstream fixed the snapshot bug; these tests keep it fixed.\n" +
		"\n" +
		"- Test: `./pkg/scheduler/backend/cache -run '^TestGuard'`\n" +
		"- Regression: `none (guards a fix upstream already has)`\n" +
		"- Guards: `mutants/nodetree-persistent-cursors.patch ./pkg/scheduler/backend/cache -run '^TestGuardSnapshot$'`\n"
	assert.Equal(t, want, string(n.Markdown()))
}

func TestFirstParagraph(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"one line", "one line"},
		{"wrapped\nparagraph\n\nsecond", "wrapped paragraph"},
		{"\n\n  leading blank lines\n  and indent\n\nrest", "leading blank lines and indent"},
		{"- a list\n- item\n\nrest", "- a list - item"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, release.FirstParagraph(tc.body), "%q", tc.body)
	}
}

func TestWriteSums(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"b.txt":                  "b\n",
		"a/z.txt":                "z\n",
		"a b.txt":                "space\n",
		"linux-amd64/kubelet":    "",
		release.SumsName:         "stale, not summed\n",
		"kube-scheduler.oci.tar": "tar\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	sums, err := release.WriteSums(dir)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, release.SumsName))
	require.NoError(t, err)
	assert.Equal(t, string(release.FormatSums(sums)), string(got))
	var paths []string
	for _, s := range sums {
		paths = append(paths, s.Path)
	}
	// Sorted by path bytes (' ' < '/' < 'b'); SHA256SUMS itself left out.
	assert.Equal(t, []string{"a b.txt", "a/z.txt", "b.txt", "kube-scheduler.oci.tar", "linux-amd64/kubelet"}, paths)
	assert.Contains(t, string(got), "c865f6c5ab8d1b0bcd383a5e1e3879d22681c96bf462c269b7581d523fbe70ab  a/z.txt\n"+
		"0263829989b6fd954f72baaf2fc64bc2e2f01d692d4de72986ea808f6e99813f  b.txt\n")
	assert.Equal(t, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", sums[4].SHA256, "sha256 of the empty file")

	// sha256sum agrees, and notices a change.
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum")
	}
	check := func() error {
		cmd := exec.Command("sha256sum", "--check", "--strict", release.SumsName)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		t.Logf("sha256sum --check:\n%s", out)
		return err
	}
	require.NoError(t, check())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "z.txt"), []byte("changed\n"), 0o644))
	require.Error(t, check())
}

func TestSumFilesRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "link")))
	_, err := release.SumFiles(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a regular file")
}
