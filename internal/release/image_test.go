package release_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/release"
)

var (
	amd64 = release.Platform{OS: "linux", Arch: "amd64"}
	arm64 = release.Platform{OS: "linux", Arch: "arm64"}
)

func buildIndex(t *testing.T, s release.ImageSpec) v1.ImageIndex {
	t.Helper()
	idx, err := release.BuildIndex(s)
	require.NoError(t, err)
	return idx
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	require.NoError(t, err)
	return h
}

func ref(t *testing.T) name.Tag {
	t.Helper()
	r, err := release.ImageRef(registryName, "kube-scheduler", version)
	require.NoError(t, err)
	return r
}

// writeImage writes every image artifact of idx into a new directory:
// the layout, the OCI archive and a docker archive per platform.
func writeImage(t *testing.T, idx v1.ImageIndex) string {
	t.Helper()
	dir := t.TempDir()
	layoutDir := filepath.Join(dir, "kube-scheduler.oci")
	require.NoError(t, release.WriteLayout(layoutDir, idx, ref(t)))
	require.NoError(t, release.WriteOCIArchive(filepath.Join(dir, "kube-scheduler.oci.tar"), layoutDir, created))
	for _, p := range release.Platforms {
		img, err := release.ImageFor(idx, p)
		require.NoError(t, err)
		require.NoError(t, release.WriteDockerArchive(filepath.Join(dir, "kube-scheduler."+p.Dir()+".docker.tar"), ref(t), img))
	}
	return dir
}

func TestImageIsReproducible(t *testing.T) {
	first := buildIndex(t, spec())

	// The second build in another second (tar times are whole seconds),
	// from copies of the binaries elsewhere with another mtime and mode:
	// none of that may reach the image.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	s := spec()
	for i, b := range s.Binaries {
		data, err := os.ReadFile(b.Path)
		require.NoError(t, err)
		cp := filepath.Join(t.TempDir(), "copy-of-"+filepath.Base(b.Path))
		require.NoError(t, os.WriteFile(cp, data, 0o700))
		require.NoError(t, os.Chtimes(cp, created.Add(-time.Hour), created.Add(-time.Hour)))
		s.Binaries[i].Path = cp
	}
	second := buildIndex(t, s)
	require.Equal(t, digest(t, first), digest(t, second), "two builds of the same binaries give different index digests")

	// Every file written, not only the index, is the same.
	a, err := release.SumFiles(writeImage(t, first))
	require.NoError(t, err)
	b, err := release.SumFiles(writeImage(t, second))
	require.NoError(t, err)
	assert.Equal(t, a, b)
	// 4 top files + oci-layout, index.json and the blobs: 2 manifests,
	// 2 configs, the shared base layer, 2 program layers, the index.
	assert.Len(t, a, 3+2+8)

	// The inputs are what the digest depends on.
	for _, tc := range []struct {
		name   string
		change func(*release.ImageSpec)
	}{
		{"created", func(s *release.ImageSpec) { s.Created = s.Created.Add(time.Second) }},
		{"revision", func(s *release.ImageSpec) { s.Revision = "fedcba9876543210fedcba9876543210fedcba98" }},
		{"version", func(s *release.ImageSpec) { s.Version = "v1.37.2-carry.2" }},
		{"one platform", func(s *release.ImageSpec) { s.Binaries = s.Binaries[:1] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.change(&s)
			assert.NotEqual(t, digest(t, first), digest(t, buildIndex(t, s)))
		})
	}
}

func TestImageConfig(t *testing.T) {
	idx := buildIndex(t, spec())
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	assert.Equal(t, types.OCIImageIndex, im.MediaType)
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		assert.Equal(t, types.OCIManifestSchema1, d.MediaType)
	}
	assert.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)

	var baseLayers, programLayers []v1.Hash
	for _, p := range release.Platforms {
		img, err := release.ImageFor(idx, p)
		require.NoError(t, err)
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, p.OS, cf.OS)
		assert.Equal(t, p.Arch, cf.Architecture)
		assert.Equal(t, created, cf.Created.Time.UTC())
		assert.Equal(t, "65532:65532", cf.Config.User)
		assert.Equal(t, []string{"/usr/local/bin/kube-scheduler"}, cf.Config.Entrypoint)
		assert.Empty(t, cf.Config.Cmd)
		assert.Equal(t, map[string]string{
			"org.opencontainers.image.version":  version,
			"org.opencontainers.image.revision": commit,
			"org.opencontainers.image.source":   source,
			"org.opencontainers.image.created":  "2026-10-27T12:01:04Z",
			"org.opencontainers.image.title":    "kube-scheduler",
			"org.opencontainers.image.licenses": "Apache-2.0",
		}, cf.Config.Labels)
		require.Len(t, cf.History, 2)
		for _, h := range cf.History {
			assert.Equal(t, created, h.Created.Time.UTC())
		}

		m, err := img.Manifest()
		require.NoError(t, err)
		assert.Equal(t, types.OCIConfigJSON, m.Config.MediaType)
		require.Len(t, m.Layers, 2)
		require.Len(t, cf.RootFS.DiffIDs, 2)
		for _, l := range m.Layers {
			assert.Equal(t, types.OCILayer, l.MediaType)
		}
		baseLayers = append(baseLayers, m.Layers[0].Digest)
		programLayers = append(programLayers, m.Layers[1].Digest)
	}
	assert.Equal(t, baseLayers[0], baseLayers[1], "the base layer is the same on every platform")
	assert.NotEqual(t, programLayers[0], programLayers[1])
}

// tarEntry is a tar member as the tests compare it.
type tarEntry struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
}

// readTar reads every member of a tar stream; it fails on any member that
// is not at mtime or that names a user or group.
func readTar(t *testing.T, r io.Reader, mtime time.Time) ([]tarEntry, map[string][]byte) {
	t.Helper()
	var entries []tarEntry
	data := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		assert.Equal(t, mtime, h.ModTime.UTC(), "%s: mtime", h.Name)
		assert.Empty(t, h.Uname+h.Gname, "%s: user or group name from the host", h.Name)
		entries = append(entries, tarEntry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid})
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		data[h.Name] = b
	}
	return entries, data
}

func layerFiles(t *testing.T, l v1.Layer) ([]tarEntry, map[string][]byte) {
	t.Helper()
	rc, err := l.Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	return readTar(t, rc, created)
}

func TestImageFilesystem(t *testing.T) {
	// Read the image back from the layout on disk, as an importer would.
	dir := writeImage(t, buildIndex(t, spec()))
	idx, gotRef, err := release.ReadLayout(filepath.Join(dir, "kube-scheduler.oci"))
	require.NoError(t, err)
	assert.Equal(t, imageRef, gotRef.String())

	for _, p := range release.Platforms {
		t.Run(p.Arch, func(t *testing.T) {
			img, err := release.ImageFor(idx, p)
			require.NoError(t, err)
			layers, err := img.Layers()
			require.NoError(t, err)
			require.Len(t, layers, 2)

			base, baseData := layerFiles(t, layers[0])
			assert.Equal(t, []tarEntry{
				{"etc/", tar.TypeDir, 0o755, 0, 0},
				{"etc/group", tar.TypeReg, 0o644, 0, 0},
				{"etc/passwd", tar.TypeReg, 0o644, 0, 0},
				{"home/", tar.TypeDir, 0o755, 0, 0},
				{"home/nonroot/", tar.TypeDir, 0o700, 65532, 65532},
				{"root/", tar.TypeDir, 0o700, 0, 0},
				{"tmp/", tar.TypeDir, 0o1777, 0, 0},
			}, base)
			assert.Contains(t, string(baseData["etc/passwd"]), "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
			assert.Contains(t, string(baseData["etc/group"]), "\nnonroot:x:65532:\n")

			prog, progData := layerFiles(t, layers[1])
			assert.Equal(t, []tarEntry{
				{"usr/", tar.TypeDir, 0o755, 0, 0},
				{"usr/local/", tar.TypeDir, 0o755, 0, 0},
				{"usr/local/bin/", tar.TypeDir, 0o755, 0, 0},
				{"usr/local/bin/kube-scheduler", tar.TypeReg, 0o755, 0, 0},
			}, prog)
			want, err := os.ReadFile(bins[p.Arch])
			require.NoError(t, err)
			got := progData["usr/local/bin/kube-scheduler"]
			require.True(t, bytes.Equal(want, got), "the binary in the %s image differs from the input (%d vs %d bytes)", p, len(got), len(want))

			extracted := filepath.Join(t.TempDir(), "kube-scheduler")
			require.NoError(t, os.WriteFile(extracted, got, 0o755))
			require.NoError(t, release.CheckELF(extracted, p.Arch))
			if p.Arch != runtime.GOARCH || runtime.GOOS != "linux" {
				return
			}
			out, err := exec.Command(extracted, "--version").CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Equal(t, "Kubernetes "+version+"\n", string(out))
		})
	}
}

func TestOCIArchive(t *testing.T) {
	idx := buildIndex(t, spec())
	dir := writeImage(t, idx)
	layoutDir := filepath.Join(dir, "kube-scheduler.oci")
	f, err := os.Open(filepath.Join(dir, "kube-scheduler.oci.tar"))
	require.NoError(t, err)
	defer f.Close()
	entries, data := readTar(t, f, created)

	// The archive is the layout: the same files, in lexical order, at
	// fixed modes; directories have entries of their own.
	sums, err := release.SumFiles(layoutDir)
	require.NoError(t, err)
	var names, files []string
	for _, e := range entries {
		names = append(names, e.Name)
		assert.Equal(t, 0, e.UID+e.GID, e.Name)
		switch e.Type {
		case tar.TypeDir:
			assert.Equal(t, int64(0o755), e.Mode, e.Name)
		case tar.TypeReg:
			assert.Equal(t, int64(0o644), e.Mode, e.Name)
			files = append(files, e.Name)
		default:
			t.Errorf("%s: type %c", e.Name, e.Type)
		}
	}
	assert.IsIncreasing(t, names)
	assert.Equal(t, []string{"blobs/", "blobs/sha256/"}, names[:2])
	var want []string
	for _, s := range sums {
		want = append(want, s.Path)
		onDisk, err := os.ReadFile(filepath.Join(layoutDir, s.Path))
		require.NoError(t, err)
		st, err := os.Stat(filepath.Join(layoutDir, s.Path))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "%s on disk", s.Path)
		assert.True(t, bytes.Equal(onDisk, data[s.Path]), s.Path)
	}
	assert.Equal(t, want, files)
	assert.JSONEq(t, `{"imageLayoutVersion": "1.0.0"}`, string(data["oci-layout"]))

	// index.json names the image for importers.
	var index v1.IndexManifest
	require.NoError(t, json.Unmarshal(data["index.json"], &index))
	require.Len(t, index.Manifests, 1)
	d := index.Manifests[0]
	assert.Equal(t, types.OCIImageIndex, d.MediaType)
	assert.Equal(t, digest(t, idx), d.Digest)
	assert.Equal(t, map[string]string{
		"org.opencontainers.image.ref.name": version,
		"io.containerd.image.name":          imageRef,
	}, d.Annotations)

	// Unpacked, it is a layout that reads back as the same index.
	unpacked := t.TempDir()
	for name, b := range data {
		if name[len(name)-1] == '/' {
			require.NoError(t, os.MkdirAll(filepath.Join(unpacked, name), 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(unpacked, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(unpacked, name), b, 0o644))
	}
	top, err := layout.ImageIndexFromPath(unpacked)
	require.NoError(t, err)
	got, err := top.ImageIndex(d.Digest)
	require.NoError(t, err)
	assert.Equal(t, digest(t, idx), digest(t, got))
}

func TestDockerArchive(t *testing.T) {
	idx := buildIndex(t, spec())
	dir := writeImage(t, idx)
	for _, p := range release.Platforms {
		t.Run(p.Arch, func(t *testing.T) {
			file := filepath.Join(dir, "kube-scheduler."+p.Dir()+".docker.tar")
			f, err := os.Open(file)
			require.NoError(t, err)
			defer f.Close()
			_, data := readTar(t, f, time.Unix(0, 0).UTC())

			var manifest tarball.Manifest
			require.NoError(t, json.Unmarshal(data["manifest.json"], &manifest))
			require.Len(t, manifest, 1)
			assert.Equal(t, []string{imageRef}, manifest[0].RepoTags)
			assert.Len(t, manifest[0].Layers, 2)

			// What docker load reads is the platform's image: the same
			// config (so the same image ID) and layers.
			want, err := release.ImageFor(idx, p)
			require.NoError(t, err)
			tag := ref(t)
			got, err := tarball.ImageFromPath(file, &tag)
			require.NoError(t, err)
			wantConfig, err := want.ConfigName()
			require.NoError(t, err)
			gotConfig, err := got.ConfigName()
			require.NoError(t, err)
			assert.Equal(t, wantConfig, gotConfig)
			assert.Equal(t, wantConfig.String(), manifest[0].Config)
			cf, err := got.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, p.Arch, cf.Architecture)
		})
	}
}

func TestBuildIndexRefuses(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "kube-scheduler")
	require.NoError(t, os.WriteFile(notELF, []byte("#!/bin/sh\necho hi\n"), 0o755))
	for _, tc := range []struct {
		name   string
		change func(*release.ImageSpec)
		want   string
	}{
		{"amd64 binary as arm64", func(s *release.ImageSpec) { s.Binaries[0].Path = bins["amd64"] }, "built for EM_X86_64, want EM_AARCH64"},
		{"not ELF", func(s *release.ImageSpec) { s.Binaries[1].Path = notELF }, "not an ELF binary"},
		{"missing binary", func(s *release.ImageSpec) { s.Binaries[1].Path = notELF + ".absent" }, "no such file"},
		{"platform twice", func(s *release.ImageSpec) { s.Binaries[1].Platform = arm64 }, "two binaries for linux/arm64"},
		{"windows", func(s *release.ImageSpec) { s.Binaries[1].Platform.OS = "windows" }, "only linux images"},
		{"no version", func(s *release.ImageSpec) { s.Version = "" }, "no version"},
		{"no revision", func(s *release.ImageSpec) { s.Revision = "" }, "no revision"},
		{"no time", func(s *release.ImageSpec) { s.Created = time.Time{} }, "no creation time"},
		{"no binaries", func(s *release.ImageSpec) { s.Binaries = nil }, "no binaries"},
		{"name with a slash", func(s *release.ImageSpec) { s.Name = "bin/kube-scheduler" }, "want a file name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.change(&s)
			_, err := release.BuildIndex(s)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestImageRef(t *testing.T) {
	for _, tc := range []struct {
		registry, want, err string
	}{
		{"registry.example.com/kube-carry", "registry.example.com/kube-carry/kube-scheduler:" + version, ""},
		{"registry.example.com/kube-carry/", "registry.example.com/kube-carry/kube-scheduler:" + version, ""},
		{"127.0.0.1:5000", "127.0.0.1:5000/kube-scheduler:" + version, ""},
		{"", "", "no registry"},
		// No silent Docker Hub: a registry must be a host.
		{"kube-carry", "", "strict validation"},
		{"Registry.example.com/UPPER", "", "repository can only contain"},
	} {
		t.Run(fmt.Sprintf("%q", tc.registry), func(t *testing.T) {
			got, err := release.ImageRef(tc.registry, "kube-scheduler", version)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.String())
		})
	}
}

func TestWriteLayoutRefusesAnExistingDirectory(t *testing.T) {
	dir := t.TempDir()
	err := release.WriteLayout(dir, buildIndex(t, spec()), ref(t))
	require.ErrorIs(t, err, os.ErrExist)
}
