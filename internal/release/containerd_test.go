package release_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/release"
)

func TestContainerdImport(t *testing.T) {
	dir := writeImage(t, buildIndex(t, spec()))
	ctx := context.Background()
	labels := spec().Labels()

	t.Run("the OCI archive is one image of both platforms", func(t *testing.T) {
		got, err := release.ContainerdImport(ctx, filepath.Join(dir, "kube-scheduler.oci.tar"), t.TempDir())
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, imageRef, got[0].Name)
		assert.Equal(t, []string{"linux/amd64", "linux/arm64"}, slices.Sorted(maps.Keys(got[0].Configs)))
		for platform, config := range got[0].Configs {
			assert.Equal(t, platform, config.OS+"/"+config.Architecture)
			assert.Equal(t, labels, config.Config.Labels, platform)
		}
	})
	for _, p := range release.Platforms {
		t.Run("the docker archive of "+p.String(), func(t *testing.T) {
			got, err := release.ContainerdImport(ctx, filepath.Join(dir, "kube-scheduler."+p.Dir()+".docker.tar"), t.TempDir())
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, imageRef, got[0].Name)
			require.Equal(t, []string{p.String()}, slices.Collect(maps.Keys(got[0].Configs)))
			assert.Equal(t, labels, got[0].Configs[p.String()].Config.Labels)
		})
	}

	t.Run("a blob that is not what its digest says is refused", func(t *testing.T) {
		var changed string
		broken := rewriteTar(t, filepath.Join(dir, "kube-scheduler.oci.tar"), func(name string, data []byte) []byte {
			if changed == "" && strings.HasPrefix(name, "blobs/sha256/") && len(data) > 1<<10 {
				changed = "sha256:" + strings.TrimPrefix(name, "blobs/sha256/")
				data = bytes.Clone(data)
				data[len(data)/2] ^= 0xff
			}
			return data
		})
		require.NotEmpty(t, changed)
		_, err := release.ContainerdImport(ctx, broken, t.TempDir())
		require.Error(t, err)
		assert.Contains(t, err.Error(), changed, "the error names the blob")
	})

	t.Run("an archive that names no image is refused", func(t *testing.T) {
		broken := rewriteTar(t, filepath.Join(dir, "kube-scheduler."+amd64.Dir()+".docker.tar"), func(name string, data []byte) []byte {
			if name != "manifest.json" {
				return data
			}
			var m []map[string]any
			require.NoError(t, json.Unmarshal(data, &m))
			delete(m[0], "RepoTags")
			data, err := json.Marshal(m)
			require.NoError(t, err)
			return data
		})
		_, err := release.ContainerdImport(ctx, broken, t.TempDir())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "has no io.containerd.image.name")
	})
}

// rewriteTar writes a copy of the tar file src with each regular file's
// content passed through edit, and returns its path.
func rewriteTar(t *testing.T, src string, edit func(name string, data []byte) []byte) string {
	t.Helper()
	f, err := os.Open(src)
	require.NoError(t, err)
	defer f.Close()
	var out bytes.Buffer
	tr, tw := tar.NewReader(f), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			data = edit(h.Name, data)
			h.Size = int64(len(data))
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err = tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.WriteFile(dst, out.Bytes(), 0o644))
	return dst
}
