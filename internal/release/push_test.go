package release_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/release"
)

// isolateCredentials points every place authn.DefaultKeychain reads at an
// empty temporary directory: the tests see only the credentials they
// write, never the user's.
func isolateCredentials(t *testing.T) (dockerConfig string) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", filepath.Join(home, "docker"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(home, "run"))
	t.Setenv("REGISTRY_AUTH_FILE", filepath.Join(home, "auth.json"))
	return filepath.Join(home, "docker")
}

// startRegistry serves go-containerregistry's in-memory registry on
// loopback, behind wrap.
func startRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func pushRef(t *testing.T, host string) name.Tag {
	t.Helper()
	r, err := release.ImageRef(host+"/kube-carry", "kube-scheduler", version)
	require.NoError(t, err)
	return r
}

func TestPush(t *testing.T) {
	isolateCredentials(t)
	host := startRegistry(t, nil)
	idx := buildIndex(t, spec())
	layoutDir := filepath.Join(writeImage(t, idx), "kube-scheduler.oci")
	ref := pushRef(t, host)

	got, err := release.Push(context.Background(), layoutDir, ref)
	require.NoError(t, err)
	assert.Equal(t, digest(t, idx), got)

	// Read back from the registry: the same index, and its images.
	pulled, err := remote.Index(ref)
	require.NoError(t, err)
	assert.Equal(t, digest(t, idx), digest(t, pulled))
	for _, p := range release.Platforms {
		want, err := release.ImageFor(idx, p)
		require.NoError(t, err)
		img, err := release.ImageFor(pulled, p)
		require.NoError(t, err)
		assert.Equal(t, digest(t, want), digest(t, img))
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, version, cf.Config.Labels["org.opencontainers.image.version"])
		layers, err := img.Layers()
		require.NoError(t, err)
		require.Len(t, layers, 2)
		_, files := layerFiles(t, layers[1])
		bin, err := os.ReadFile(bins[p.Arch])
		require.NoError(t, err)
		assert.Equal(t, len(bin), len(files["usr/local/bin/kube-scheduler"]))
	}
}

func TestPushUsesTheDockerConfig(t *testing.T) {
	const user, password = "operator", "fixture-password"
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="fixture"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	idx := buildIndex(t, spec())
	layoutDir := filepath.Join(writeImage(t, idx), "kube-scheduler.oci")

	t.Run("no credentials", func(t *testing.T) {
		isolateCredentials(t)
		_, err := release.Push(context.Background(), layoutDir, pushRef(t, host))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "401")
	})
	t.Run("docker login", func(t *testing.T) {
		dockerConfig := isolateCredentials(t)
		require.NoError(t, os.MkdirAll(dockerConfig, 0o700))
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
		require.NoError(t, os.WriteFile(filepath.Join(dockerConfig, "config.json"),
			[]byte(fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, auth)), 0o600))
		got, err := release.Push(context.Background(), layoutDir, pushRef(t, host))
		require.NoError(t, err)
		assert.Equal(t, digest(t, idx), got)
	})
}

// digestRewriter answers every manifest request by tag with another
// digest, as a registry that converts what it is given would.
type digestRewriter struct{ http.ResponseWriter }

const otherDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

func (w digestRewriter) WriteHeader(code int) {
	if w.Header().Get("Docker-Content-Digest") != "" {
		w.Header().Set("Docker-Content-Digest", otherDigest)
	}
	w.ResponseWriter.WriteHeader(code)
}

func TestPushChecksTheDigestTheRegistryServes(t *testing.T) {
	isolateCredentials(t)
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/manifests/"+version) {
				w = digestRewriter{w}
			}
			h.ServeHTTP(w, r)
		})
	})
	layoutDir := filepath.Join(writeImage(t, buildIndex(t, spec())), "kube-scheduler.oci")
	_, err := release.Push(context.Background(), layoutDir, pushRef(t, host))
	require.ErrorIs(t, err, release.ErrDigestMismatch)
	assert.Contains(t, err.Error(), otherDigest)
}
