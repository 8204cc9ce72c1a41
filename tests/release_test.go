package tests

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/build"
	"github.com/kube-carry/kube-carry/internal/release"
)

// TestRelease makes the line's release as an operator does (`make
// release`: the binaries cross-compiled for linux/amd64 and linux/arm64,
// then the image, SBOMs, notes and sums) and checks what an operator relies
// on: the kube-scheduler inside the image is byte for byte the released
// binary and runs from the extracted layer; the image runs it as non-root;
// a second `carry release` of the same binaries gives the same digest; an
// independent OCI tool (skopeo, from Debian's packages: make tools)
// reads the layout, the OCI archive and the docker archive; containerd's
// importer (what ctr images import and kind load image-archive run) takes
// the OCI archive and the docker archives; every SBOM parses with the SPDX
// library; the arm64 binaries are ELF aarch64; the sums check.
func TestRelease(t *testing.T) {
	skopeo, err := exec.LookPath("skopeo")
	require.NoError(t, err, "skopeo is needed to check the image with a tool of its own: make tools installs it")
	load(t)
	version := strings.TrimSpace(carryOut(t, root, "version"))
	dir := filepath.Join(ln.OutDir(), "release")

	out, err := run(root, "scripts/release.sh")
	require.NoError(t, err, "%s", out)

	t.Run("SHA256SUMS", func(t *testing.T) {
		cmd := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	})
	for _, arch := range []string{"amd64", "arm64"} {
		for _, b := range build.Binaries {
			file := filepath.Join(dir, "linux-"+arch, b)
			assert.NoError(t, release.CheckELF(file, arch), "%s", file)
			doc, err := release.ReadSBOM(file + ".spdx.json")
			if assert.NoError(t, err, "%s.spdx.json", file) {
				assert.NoError(t, release.ValidateSBOM(doc))
			}
		}
	}
	t.Run("the amd64 kube-scheduler is the one make builds", func(t *testing.T) {
		built, err := os.ReadFile(filepath.Join(ln.BinDir(), "kube-scheduler"))
		require.NoError(t, err)
		released, err := os.ReadFile(filepath.Join(dir, "linux-amd64", "kube-scheduler"))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(built, released), "the released linux/amd64 kube-scheduler differs from _output/<line>/bin/kube-scheduler")
	})

	idx, ref, err := release.ReadLayout(filepath.Join(dir, "kube-scheduler.oci"))
	require.NoError(t, err)
	assert.Equal(t, version, ref.TagStr())
	digest, err := idx.Digest()
	require.NoError(t, err)

	t.Run("the image runs the released binary as non-root", func(t *testing.T) {
		for _, arch := range []string{"amd64", "arm64"} {
			p, err := release.ParsePlatform("linux/" + arch)
			require.NoError(t, err)
			img, err := release.ImageFor(idx, p)
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, arch, cfg.Architecture)
			assert.Equal(t, "65532:65532", cfg.Config.User)
			assert.Equal(t, []string{"/usr/local/bin/kube-scheduler"}, cfg.Config.Entrypoint)
			assert.Equal(t, version, cfg.Config.Labels["org.opencontainers.image.version"])
			head, err := l0Head(t)
			require.NoError(t, err)
			assert.Equal(t, head, cfg.Config.Labels["org.opencontainers.image.revision"])

			inImage := extract(t, img, "usr/local/bin/kube-scheduler")
			released, err := os.ReadFile(filepath.Join(dir, "linux-"+arch, "kube-scheduler"))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(released, inImage), "linux/%s: the binary in the image is not the released one", arch)
			if arch == "amd64" {
				file := filepath.Join(t.TempDir(), "kube-scheduler")
				require.NoError(t, os.WriteFile(file, inImage, 0o755))
				out, err := exec.Command(file, "--version").CombinedOutput()
				require.NoError(t, err, "%s", out)
				assert.Equal(t, "Kubernetes "+version, strings.TrimSpace(string(out)))
			}
		}
	})

	t.Run("skopeo reads the layout and the archives", func(t *testing.T) {
		for _, src := range []string{
			"oci:" + filepath.Join(dir, "kube-scheduler.oci") + ":" + version,
			"oci-archive:" + filepath.Join(dir, "kube-scheduler.oci.tar") + ":" + version,
			"docker-archive:" + filepath.Join(dir, "kube-scheduler.linux-amd64.docker.tar"),
		} {
			out, err := exec.Command(skopeo, "--insecure-policy", "inspect", "--override-os", "linux", "--override-arch", "amd64", src).CombinedOutput()
			require.NoError(t, err, "skopeo inspect %s: %s", src, out)
			assert.Contains(t, string(out), `"org.opencontainers.image.version": "`+version+`"`, "skopeo inspect %s", src)
		}
	})

	t.Run("containerd imports the OCI archive and the docker archives", func(t *testing.T) {
		// With containerd's own importer: what `ctr images import` and
		// `kind load image-archive` run, and Docker's containerd image
		// store for `docker load`.
		for file, want := range map[string][]string{
			"kube-scheduler.oci.tar":                {"linux/amd64", "linux/arm64"},
			"kube-scheduler.linux-amd64.docker.tar": {"linux/amd64"},
			"kube-scheduler.linux-arm64.docker.tar": {"linux/arm64"},
		} {
			imported, err := release.ContainerdImport(t.Context(), filepath.Join(dir, file), t.TempDir())
			require.NoError(t, err)
			require.Len(t, imported, 1, file)
			assert.Equal(t, ref.String(), imported[0].Name, file)
			assert.Equal(t, want, slices.Sorted(maps.Keys(imported[0].Configs)), file)
			for platform, config := range imported[0].Configs {
				assert.Equal(t, version, config.Config.Labels["org.opencontainers.image.version"], "%s %s", file, platform)
				assert.Equal(t, "65532:65532", config.Config.User, "%s %s", file, platform)
			}
		}
	})

	t.Run("a second release of the same binaries has the same digest", func(t *testing.T) {
		again := filepath.Join(t.TempDir(), "release")
		require.NoError(t, os.MkdirAll(again, 0o755))
		for _, arch := range []string{"amd64", "arm64"} {
			for _, b := range build.Binaries {
				data, err := os.ReadFile(filepath.Join(dir, "linux-"+arch, b))
				require.NoError(t, err)
				require.NoError(t, os.MkdirAll(filepath.Join(again, "linux-"+arch), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(again, "linux-"+arch, b), data, 0o755))
			}
		}
		_ = carryOut(t, root, "release", "-dir", again, "-registry", strings.Split(ref.Name(), "/kube-scheduler")[0])
		idx2, _, err := release.ReadLayout(filepath.Join(again, "kube-scheduler.oci"))
		require.NoError(t, err)
		digest2, err := idx2.Digest()
		require.NoError(t, err)
		assert.Equal(t, digest, digest2)
		sums1, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		require.NoError(t, err)
		sums2, err := os.ReadFile(filepath.Join(again, "SHA256SUMS"))
		require.NoError(t, err)
		assert.Equal(t, string(sums1), string(sums2), "the same binaries give the same release files")
	})
}

// l0Head is the line's patched tree's HEAD commit.
func l0Head(t *testing.T) (string, error) {
	l := load(t)
	return l.tree.Line("rev-parse", "HEAD")
}

// extract reads one file of an image's flattened filesystem.
func extract(t *testing.T, img v1.Image, name string) []byte {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	var found []byte
	for _, l := range layers {
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if strings.TrimPrefix(h.Name, "./") == name {
				found, err = io.ReadAll(tr)
				require.NoError(t, err)
			}
		}
		require.NoError(t, rc.Close())
	}
	require.NotNil(t, found, "%s is not in the image", name)
	return found
}
