package modfetch_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fx "github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/pin"
)

// The tests in this file run the real go command (modfetch.GoCommand)
// against a local module proxy (internal/fixture): offline, in a fresh
// module cache, with no checksum database.

// localProxy serves k8s.io/kubernetes v1.0.0 and v1.0.1 (listed), v1.0.2
// (listed, but its zip is missing: it cannot be downloaded) and v1.0.3
// (served but not listed yet: the list lags).
func localProxy(t *testing.T) *fx.Proxy {
	t.Helper()
	p := fx.NewProxy(t)
	for _, r := range []fx.Release{
		{Version: "v1.0.0", Files: map[string]string{"a.txt": fx.Numbered(3), "docs/b.txt": "b\n"}},
		{Version: "v1.0.1", Files: map[string]string{"a.txt": fx.Numbered(3, "line 2\n", "line 2 fixed\n"), "docs/b.txt": "b\n"}},
		{Version: "v1.0.2", NoZip: true},
		{Version: "v1.0.3", Unlisted: true, Files: map[string]string{"a.txt": "v1.0.3\n"}},
	} {
		p.Add(r)
	}
	return p
}

var transports = []fx.Transport{fx.HTTP, fx.File}

func TestGoCommandAgainstALocalProxy(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.String(), func(t *testing.T) {
			p := localProxy(t)
			p.Setenv(t, tr)
			g := modfetch.GoCommand{}

			var log progressLog
			got, err := modfetch.Compute("v1.0.1", g, log.progress)
			require.NoError(t, err)
			want := &pin.Pin{
				Version: "v1.0.1",
				Date:    fx.ReleaseTime("v1.0.1"),
				Modules: []pin.Module{{Path: pin.MainModule, Version: "v1.0.1", Sum: p.Sum("v1.0.1")}},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Compute: the pin is the main module alone, with the proxy's time and the zip's hash (-want +got):\n%s", diff)
			}
			assert.Equal(t, progressLog{"pin: k8s.io/kubernetes v1.0.1"}, log, "a go.work without staging modules downloads nothing else")
			var b bytes.Buffer
			require.NoError(t, got.Write(&b))
			assert.Equal(t, p.PinText("v1.0.1"), b.String())

			t.Run("Assemble unpacks the pinned release", func(t *testing.T) {
				parsed, err := pin.Parse("UPSTREAM", b.Bytes())
				require.NoError(t, err)
				dir := filepath.Join(t.TempDir(), "tree")
				var log progressLog
				require.NoError(t, modfetch.Assemble(parsed, "UPSTREAM", dir, g, log.progress))
				if diff := cmp.Diff(p.Files("v1.0.1"), listTree(t, dir)); diff != "" {
					t.Errorf("assembled tree (-want +got):\n%s", diff)
				}
				assert.Equal(t, progressLog{"fetch: [1/1] k8s.io/kubernetes v1.0.1"}, log)
			})
			t.Run("Assemble checks the zip against the pin", func(t *testing.T) {
				bad := strings.Replace(b.String(), p.Sum("v1.0.1"), oneCharOff(p.Sum("v1.0.1")), 1)
				parsed, err := pin.Parse("UPSTREAM", []byte(bad))
				require.NoError(t, err)
				var log progressLog
				err = modfetch.Assemble(parsed, "UPSTREAM", filepath.Join(t.TempDir(), "tree"), g, log.progress)
				require.EqualError(t, err, "UPSTREAM:6: k8s.io/kubernetes v1.0.1: checksum mismatch: the module zip has "+p.Sum("v1.0.1")+", UPSTREAM pins "+oneCharOff(p.Sum("v1.0.1")))
			})
			t.Run("List is the proxy's list; Exists sees a served version the list lacks", func(t *testing.T) {
				listed, err := g.List(pin.MainModule)
				require.NoError(t, err)
				assert.Equal(t, []string{"v1.0.0", "v1.0.1", "v1.0.2"}, listed)
				for _, v := range []string{"v1.0.0", "v1.0.2", "v1.0.3"} {
					ok, err := g.Exists(pin.MainModule, v)
					require.NoError(t, err, v)
					assert.True(t, ok, "%s has its .info", v)
				}
			})
		})
	}
}

// TestGoCommandKnowsWhatALocalProxyDoesNotServe: a version the proxy does
// not have is "not served" (Exists false, Download a NotServedError), which
// is what lets Releases probe past the list and Newest skip a release.
func TestGoCommandKnowsWhatALocalProxyDoesNotServe(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.String(), func(t *testing.T) {
			p := localProxy(t)
			p.Setenv(t, tr)
			g := modfetch.GoCommand{}

			t.Run("Exists of a version the proxy does not have is false, without error", func(t *testing.T) {
				ok, err := g.Exists(pin.MainModule, "v1.0.4")
				require.NoError(t, err)
				assert.False(t, ok)
			})
			for _, v := range []string{"v1.0.2", "v1.0.4"} {
				t.Run("Download of "+v+" is a NotServedError", func(t *testing.T) {
					_, err := g.Download(pin.MainModule, v)
					var ns *modfetch.NotServedError
					require.ErrorAs(t, err, &ns)
					assert.Equal(t, pin.MainModule, ns.Path)
					assert.Equal(t, v, ns.Version)
				})
			}
			t.Run("Releases probes past the lagging list", func(t *testing.T) {
				rels, err := modfetch.Releases("v1.0", "v1.0.0", g)
				require.NoError(t, err)
				assert.Equal(t, []string{"v1.0.0", "v1.0.1", "v1.0.2", "v1.0.3"}, rels)
			})
			t.Run("Newest takes the unlisted v1.0.3", func(t *testing.T) {
				var log progressLog
				v, np, skipped, err := modfetch.Newest("v1.0", "v1.0.0", g, g, log.progress)
				require.NoError(t, err)
				assert.Equal(t, "v1.0.3", v)
				require.NotNil(t, np)
				assert.Equal(t, p.Sum("v1.0.3"), np.Main().Sum)
				assert.Empty(t, skipped)
			})
			t.Run("Newest skips the listed v1.0.2 it cannot download, saying why", func(t *testing.T) {
				p.Remove(pin.MainModule, "v1.0.3")
				// A fresh module cache: the go command would find v1.0.3 there.
				p.Setenv(t, tr)
				var log progressLog
				v, np, skipped, err := modfetch.Newest("v1.0", "v1.0.0", g, g, log.progress)
				require.NoError(t, err)
				assert.Equal(t, "v1.0.1", v)
				require.NotNil(t, np)
				assert.Equal(t, p.Sum("v1.0.1"), np.Main().Sum)
				require.Len(t, skipped, 1)
				assert.True(t, strings.HasPrefix(skipped[0], "v1.0.2: k8s.io/kubernetes@v1.0.2 is not served by the module proxy: "), skipped[0])
				assert.Contains(t, skipped[0], "/k8s.io/kubernetes/@v/v1.0.2.zip")
			})
		})
	}
}

func TestGoCommandFailsOnAProxyThatServesNothing(t *testing.T) {
	p := fx.NewProxy(t)
	p.Setenv(t, fx.HTTP)
	var log progressLog
	_, err := modfetch.Compute("v1.0.0", modfetch.GoCommand{}, log.progress)
	var ns *modfetch.NotServedError
	require.ErrorAs(t, err, &ns)
	assert.Contains(t, err.Error(), "k8s.io/kubernetes@v1.0.0 is not served by the module proxy: ")
	assert.Contains(t, err.Error(), "404 Not Found")
}
