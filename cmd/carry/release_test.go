package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/release"
	"github.com/kube-carry/kube-carry/internal/release/releasetest"
	"github.com/kube-carry/kube-carry/internal/tree"
)

const (
	releaseVersion  = "v1.37.2-carry.1"
	releaseRegistry = "registry.example.com/kube-carry"
)

// releaseFixture makes a repository with line v1.37 (pin, revision, the
// fixture series) and its patched tree (one commit), and a release
// directory with fake binaries stamped from the tree as `carry ldflags`
// would: kube-scheduler for both platforms and kubelet for amd64. It sets
// ln to the line.
func releaseFixture(t *testing.T) (dir string, l line.Line, commit string) {
	t.Helper()
	root := t.TempDir()
	l = line.Line{Root: root, Name: "v1.37"}
	require.NoError(t, os.MkdirAll(l.Dir(), 0o755))
	date := time.Date(2026, 10, 27, 12, 1, 4, 0, time.UTC)
	sum := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, os.WriteFile(l.PinFile(), []byte("version v1.37.2\ndate "+date.Format(time.RFC3339)+"\nmodule k8s.io/kubernetes v1.37.2 h1:"+sum+"\n"), 0o644))
	require.NoError(t, os.WriteFile(l.RevisionFile(), []byte("1\n"), 0o644))
	var names []string
	for _, p := range releasetest.Patches {
		_, err := p.Write(l.Dir())
		require.NoError(t, err)
		names = append(names, p.Name)
	}
	require.NoError(t, os.WriteFile(l.SeriesFile(), []byte(strings.Join(names, "\n")+"\n"), 0o644))

	require.NoError(t, os.MkdirAll(l.TreeDir(), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(l.TreeDir(), "README.md"), []byte("fake tree\n"), 0o644))
	tr, err := tree.Init(l.TreeDir(), "v1.37.2", date)
	require.NoError(t, err)
	commit, err = tr.Line("rev-parse", "HEAD")
	require.NoError(t, err)

	dir = filepath.Join(root, "release")
	src := t.TempDir()
	for _, b := range []struct{ name, arch string }{
		{"kube-scheduler", "amd64"}, {"kube-scheduler", "arm64"}, {"kubelet", "amd64"},
	} {
		out := filepath.Join(dir, "linux-"+b.arch, b.name)
		require.NoError(t, releasetest.Build(src, b.name, b.arch, releasetest.LDFlags(releaseVersion, commit), out))
	}

	old := ln
	ln = l
	t.Cleanup(func() { ln = old })
	return dir, l, commit
}

func TestReleaseCommand(t *testing.T) {
	dir, l, commit := releaseFixture(t)
	require.NoError(t, cmdRelease([]string{"-dir", dir, "-registry", releaseRegistry}))

	sums, err := release.SumFiles(dir)
	require.NoError(t, err)
	var files []string
	layoutFiles := 0
	for _, s := range sums {
		if strings.HasPrefix(s.Path, "kube-scheduler.oci/") {
			layoutFiles++
			continue
		}
		files = append(files, s.Path)
	}
	assert.Equal(t, []string{
		"RELEASE-NOTES.md",
		"kube-scheduler.linux-amd64.docker.tar",
		"kube-scheduler.linux-arm64.docker.tar",
		"kube-scheduler.oci.tar",
		"linux-amd64/kube-scheduler",
		"linux-amd64/kube-scheduler.spdx.json",
		"linux-amd64/kubelet",
		"linux-amd64/kubelet.spdx.json",
		"linux-arm64/kube-scheduler",
		"linux-arm64/kube-scheduler.spdx.json",
	}, files)
	// oci-layout, index.json, the image index, 2 manifests, 2 configs,
	// the base layer and 2 program layers.
	assert.Equal(t, 10, layoutFiles)

	t.Run("SHA256SUMS", func(t *testing.T) {
		got, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		require.NoError(t, err)
		assert.Equal(t, string(release.FormatSums(sums)), string(got))
		if _, err := exec.LookPath("sha256sum"); err != nil {
			t.Skip("no sha256sum")
		}
		cmd := exec.Command("sha256sum", "--check", "--strict", "--quiet", "SHA256SUMS")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	})

	t.Run("image", func(t *testing.T) {
		idx, ref, err := release.ReadLayout(filepath.Join(dir, "kube-scheduler.oci"))
		require.NoError(t, err)
		assert.Equal(t, releaseRegistry+"/kube-scheduler:"+releaseVersion, ref.String())
		img, err := release.ImageFor(idx, release.Platform{OS: "linux", Arch: "arm64"})
		require.NoError(t, err)
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, commit, cf.Config.Labels[release.LabelRevision])
		assert.Equal(t, releaseVersion, cf.Config.Labels[release.LabelVersion])
		assert.Equal(t, "2026-10-27T12:01:04Z", cf.Config.Labels[release.LabelCreated])
		assert.Equal(t, defaultSource, cf.Config.Labels[release.LabelSource])
	})

	t.Run("SBOM", func(t *testing.T) {
		doc, err := release.ReadSBOM(filepath.Join(dir, "linux-amd64", "kubelet.spdx.json"))
		require.NoError(t, err)
		require.NoError(t, release.ValidateSBOM(doc))
		assert.Equal(t, "kubelet-"+releaseVersion+"-linux-amd64", doc.DocumentName)
		var patches, staging []string
		for _, p := range doc.Packages {
			if strings.HasSuffix(p.PackageName, ".patch") {
				patches = append(patches, p.PackageName)
			}
			if p.PackageName == "k8s.io/component-base" {
				staging = append(staging, p.PackageExternalReferences[0].Locator)
			}
		}
		assert.Equal(t, []string{releasetest.Patches[0].Name, releasetest.Patches[1].Name}, patches)
		// The staging version of the pin's release.
		assert.Equal(t, []string{"pkg:golang/k8s.io/component-base@v0.37.2"}, staging)
	})

	t.Run("notes", func(t *testing.T) {
		notes, err := os.ReadFile(filepath.Join(dir, "RELEASE-NOTES.md"))
		require.NoError(t, err)
		s := string(notes)
		assert.Contains(t, s, "# kube-carry "+releaseVersion+"\n")
		assert.Contains(t, s, "Release line v1.37: Kubernetes v1.37.2 (upstream release 2026-10-27T12:01:04Z) with 2 patches.")
		assert.Contains(t, s, "### 1. "+releasetest.Patches[0].Subject+"\n")
		assert.Contains(t, s, "### 2. "+releasetest.Patches[1].Subject+"\n")
		for _, sum := range sums {
			listed := strings.Contains(s, "| `"+sum.Path+"` | `"+sum.SHA256+"` |")
			// The layout's blobs are in the OCI archive, listed once.
			assert.Equal(t, !strings.HasPrefix(sum.Path, "kube-scheduler.oci/") && sum.Path != "RELEASE-NOTES.md", listed, sum.Path)
		}
	})

	t.Run("reproducible", func(t *testing.T) {
		first, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		require.NoError(t, err)
		require.NoError(t, cmdRelease([]string{"-dir", dir, "-registry", releaseRegistry}))
		second, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		require.NoError(t, err)
		assert.Equal(t, string(first), string(second))
	})

	t.Run("push", func(t *testing.T) {
		// No credentials of the user's: only the empty directories here.
		home := t.TempDir()
		for _, kv := range [][2]string{{"HOME", home}, {"DOCKER_CONFIG", home}, {"XDG_CONFIG_HOME", home}, {"XDG_RUNTIME_DIR", home}, {"REGISTRY_AUTH_FILE", filepath.Join(home, "none")}} {
			t.Setenv(kv[0], kv[1])
		}
		srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		defer srv.Close()
		host := strings.TrimPrefix(srv.URL, "http://")
		layoutDir := filepath.Join(dir, "kube-scheduler.oci")

		var out bytes.Buffer
		digest, ref, err := push(layoutDir, host+"/mirror", &out)
		require.NoError(t, err)
		assert.Equal(t, host+"/mirror/kube-scheduler:"+releaseVersion, ref.String())
		idx, _, err := release.ReadLayout(layoutDir)
		require.NoError(t, err)
		want, err := idx.Digest()
		require.NoError(t, err)
		assert.Equal(t, want.String(), digest)
		assert.Equal(t, "push: "+ref.String()+"@"+want.String()+"\n", out.String())
		got, err := remote.Index(ref)
		require.NoError(t, err)
		gotDigest, err := got.Digest()
		require.NoError(t, err)
		assert.Equal(t, want, gotDigest)
	})

	t.Run("refuses", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			args  []string
			spoil func(t *testing.T) (undo func())
			want  string
		}{
			{
				name: "no registry", args: []string{"-dir", dir},
				want: "usage: carry release -dir DIR -registry REGISTRY",
			},
			{
				name: "dirty tree",
				spoil: func(t *testing.T) func() {
					f := filepath.Join(l.TreeDir(), "local-work.go")
					require.NoError(t, os.WriteFile(f, nil, 0o644))
					return func() { os.Remove(f) }
				},
				want: "uncommitted changes (?? local-work.go)",
			},
			{
				name: "binaries from another commit",
				spoil: func(t *testing.T) func() {
					g := tree.Git{Dir: l.TreeDir()}
					_, err := g.Run("commit", "-q", "--allow-empty", "-m", "local work")
					require.NoError(t, err)
					return func() { _, err := g.Run("reset", "-q", "--hard", "HEAD~1"); require.NoError(t, err) }
				},
				want: "linux-arm64/kube-scheduler: not stamped with commit",
			},
			{
				name: "no arm64 kube-scheduler",
				spoil: func(t *testing.T) func() {
					f := filepath.Join(dir, "linux-arm64", "kube-scheduler")
					require.NoError(t, os.Rename(f, f+".moved"))
					return func() { require.NoError(t, os.Rename(f+".moved", f)) }
				},
				want: "linux-arm64: no kube-scheduler",
			},
			{
				name: "amd64 kubelet in the arm64 folder",
				spoil: func(t *testing.T) func() {
					f := filepath.Join(dir, "linux-arm64", "kubelet")
					data, err := os.ReadFile(filepath.Join(dir, "linux-amd64", "kubelet"))
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(f, data, 0o755))
					return func() { os.Remove(f) }
				},
				want: "linux-arm64/kubelet: built for EM_X86_64, want EM_AARCH64",
			},
			{
				name: "a file that is not the release's",
				spoil: func(t *testing.T) func() {
					f := filepath.Join(dir, "notes.txt")
					require.NoError(t, os.WriteFile(f, nil, 0o644))
					return func() { os.Remove(f) }
				},
				want: "not release files: notes.txt",
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.spoil != nil {
					defer tc.spoil(t)()
				}
				args := tc.args
				if args == nil {
					args = []string{"-dir", dir, "-registry", releaseRegistry}
				}
				err := cmdRelease(args)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
			})
		}
		// Nothing was spoiled for good: the release is made again.
		require.NoError(t, cmdRelease([]string{"-dir", dir, "-registry", releaseRegistry}))
	})
}
