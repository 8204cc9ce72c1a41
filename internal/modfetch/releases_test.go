package modfetch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/pin"
)

// fakeLister is a module proxy's version list of k8s.io/kubernetes, which
// can lag behind the versions it serves.
type fakeLister struct {
	listed []string
	// served are the versions Exists reports, besides the listed ones.
	served    map[string]bool
	listErr   error
	existsErr error
	// probed lists the versions Exists was asked about, in order.
	probed []string
}

func (l *fakeLister) List(modPath string) ([]string, error) {
	if modPath != pin.MainModule {
		return nil, errors.New("fakeLister: unexpected module " + modPath)
	}
	return l.listed, l.listErr
}

func (l *fakeLister) Exists(modPath, version string) (bool, error) {
	l.probed = append(l.probed, version)
	if l.existsErr != nil {
		return false, l.existsErr
	}
	for _, v := range l.listed {
		if v == version {
			return true, nil
		}
	}
	return l.served[version], nil
}

func set(versions ...string) map[string]bool {
	out := map[string]bool{}
	for _, v := range versions {
		out[v] = true
	}
	return out
}

func TestReleases(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lister     *fakeLister
		minor      string
		from       string
		want       []string
		wantProbed []string
	}{
		{
			name: "the minor's patch releases of the list, in semver order; other minors and pre-releases are left out",
			lister: &fakeLister{listed: []string{
				"v1.1.0", "v1.0.10", "v1.0.1", "v1.0.0", "v1.0.2", "v1.0.11-rc.0", "v1.0.3-alpha.1", "v0.1.0",
			}},
			minor:      "v1.0",
			from:       "v1.0.1",
			want:       []string{"v1.0.0", "v1.0.1", "v1.0.2", "v1.0.10"},
			wantProbed: []string{"v1.0.11"},
		},
		{
			name:       "a list that lags: the patch releases after the newest listed that the proxy serves are found by probing",
			lister:     &fakeLister{listed: []string{"v1.0.0", "v1.0.1"}, served: set("v1.0.2", "v1.0.3")},
			minor:      "v1.0",
			from:       "v1.0.0",
			want:       []string{"v1.0.0", "v1.0.1", "v1.0.2", "v1.0.3"},
			wantProbed: []string{"v1.0.2", "v1.0.3", "v1.0.4"},
		},
		{
			name:       "the pinned release counts even when the list does not have it yet, and probing starts after it",
			lister:     &fakeLister{served: set("v1.0.5")},
			minor:      "v1.0",
			from:       "v1.0.4",
			want:       []string{"v1.0.4", "v1.0.5"},
			wantProbed: []string{"v1.0.5", "v1.0.6"},
		},
		{
			name:       "probing stops at the first patch release the proxy does not serve",
			lister:     &fakeLister{listed: []string{"v1.0.0"}, served: set("v1.0.1", "v1.0.3")},
			minor:      "v1.0",
			from:       "v1.0.0",
			want:       []string{"v1.0.0", "v1.0.1"},
			wantProbed: []string{"v1.0.1", "v1.0.2"},
		},
		{
			name:       "a minor the list does not have yet, without a pin: probing starts at its .0",
			lister:     &fakeLister{listed: []string{"v1.0.0", "v1.0.1"}, served: set("v1.1.0", "v1.1.1")},
			minor:      "v1.1",
			from:       "",
			want:       []string{"v1.1.0", "v1.1.1"},
			wantProbed: []string{"v1.1.0", "v1.1.1", "v1.1.2"},
		},
		{
			name:       "a minor the proxy has nothing of",
			lister:     &fakeLister{listed: []string{"v1.0.0"}},
			minor:      "v1.1",
			from:       "",
			want:       nil,
			wantProbed: []string{"v1.1.0"},
		},
		{
			name:       "a served pre-release is never probed for",
			lister:     &fakeLister{listed: []string{"v1.0.0", "v1.0.1-rc.0"}, served: set("v1.0.1-rc.1")},
			minor:      "v1.0",
			from:       "v1.0.0",
			want:       []string{"v1.0.0"},
			wantProbed: []string{"v1.0.1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := modfetch.Releases(tc.minor, tc.from, tc.lister)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantProbed, tc.lister.probed)
		})
	}
}

func TestReleasesErrors(t *testing.T) {
	listErr := errors.New("go list -m -versions k8s.io/kubernetes: connection refused")
	existsErr := errors.New("go list -m k8s.io/kubernetes@v1.0.2: TLS handshake timeout")
	for _, tc := range []struct {
		name   string
		lister *fakeLister
		want   error
	}{
		{"a list that fails is the error", &fakeLister{listErr: listErr}, listErr},
		{"a probe that fails (not a plain \"not served\") is the error", &fakeLister{listed: []string{"v1.0.0", "v1.0.1"}, existsErr: existsErr}, existsErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := modfetch.Releases("v1.0", "v1.0.0", tc.lister)
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, got)
		})
	}
}

// releaseZip is a k8s.io/kubernetes release whose go.work uses no staging
// module: its pin is the main module alone.
func releaseZip(t *testing.T, version string) string {
	t.Helper()
	return makeZip(t, pin.MainModule, version, map[string]string{
		"go.mod":  "module k8s.io/kubernetes\n\ngo 1.24.0\n",
		"go.work": "go 1.24.0\n\nuse .\n",
		"a.txt":   "release " + version + "\n",
	})
}

func TestNewest(t *testing.T) {
	notServed := func(v string) string {
		return v + ": k8s.io/kubernetes@" + v + " is not served by the module proxy: reading https://proxy.golang.org/k8s.io/kubernetes@" + v + ": 404 Not Found"
	}
	for _, tc := range []struct {
		name string
		from string
		// lister lists or serves the versions; zips are the versions the
		// downloader has.
		lister *fakeLister
		zips   []string
		// noGoWork are zips without go.work.
		noGoWork    []string
		want        string
		wantPin     bool
		wantSkipped []string
		wantAsked   []string
		wantLog     []string
	}{
		{
			name:      "the newest patch release pins: it is returned with its pin, and nothing older is downloaded",
			from:      "v1.0.0",
			lister:    &fakeLister{listed: []string{"v1.0.0", "v1.0.1", "v1.0.2"}},
			zips:      []string{"v1.0.0", "v1.0.1", "v1.0.2"},
			want:      "v1.0.2",
			wantPin:   true,
			wantAsked: []string{"k8s.io/kubernetes@v1.0.2"},
			wantLog:   []string{"bump: trying v1.0.2", "pin: k8s.io/kubernetes v1.0.2"},
		},
		{
			name:        "a newer release the proxy lists but cannot serve is skipped, saying why",
			from:        "v1.0.0",
			lister:      &fakeLister{listed: []string{"v1.0.0", "v1.0.1", "v1.0.2"}},
			zips:        []string{"v1.0.0", "v1.0.1"},
			want:        "v1.0.1",
			wantPin:     true,
			wantSkipped: []string{notServed("v1.0.2")},
			wantAsked:   []string{"k8s.io/kubernetes@v1.0.2", "k8s.io/kubernetes@v1.0.1"},
			wantLog: []string{
				"bump: trying v1.0.2",
				"pin: k8s.io/kubernetes v1.0.2",
				"bump: v1.0.2 cannot be pinned: k8s.io/kubernetes@v1.0.2 is not served by the module proxy: reading https://proxy.golang.org/k8s.io/kubernetes@v1.0.2: 404 Not Found",
				"bump: trying v1.0.1",
				"pin: k8s.io/kubernetes v1.0.1",
			},
		},
		{
			name:        "a newer release that cannot be pinned for another reason is skipped too",
			from:        "v1.0.0",
			lister:      &fakeLister{listed: []string{"v1.0.0", "v1.0.1", "v1.0.2"}},
			zips:        []string{"v1.0.0", "v1.0.1", "v1.0.2"},
			noGoWork:    []string{"v1.0.2"},
			want:        "v1.0.1",
			wantPin:     true,
			wantSkipped: []string{"v1.0.2: k8s.io/kubernetes@v1.0.2: <zip v1.0.2> has no k8s.io/kubernetes@v1.0.2/go.work"},
			wantAsked:   []string{"k8s.io/kubernetes@v1.0.2", "k8s.io/kubernetes@v1.0.1"},
		},
		{
			name:      "a release newer than the list, found by probing, is the newest",
			from:      "v1.0.0",
			lister:    &fakeLister{listed: []string{"v1.0.0"}, served: set("v1.0.1", "v1.0.2")},
			zips:      []string{"v1.0.0", "v1.0.1", "v1.0.2"},
			want:      "v1.0.2",
			wantPin:   true,
			wantAsked: []string{"k8s.io/kubernetes@v1.0.2"},
		},
		{
			name:      "pre-releases are never candidates",
			from:      "v1.0.0",
			lister:    &fakeLister{listed: []string{"v1.0.0", "v1.0.1-rc.0", "v1.0.1-rc.1"}},
			zips:      []string{"v1.0.0"},
			want:      "v1.0.0",
			wantAsked: nil,
		},
		{
			name:      "nothing newer than the pin: the pin's release and no pin, nothing downloaded",
			from:      "v1.0.2",
			lister:    &fakeLister{listed: []string{"v1.0.0", "v1.0.1", "v1.0.2"}},
			zips:      []string{"v1.0.0", "v1.0.1", "v1.0.2"},
			want:      "v1.0.2",
			wantAsked: nil,
		},
		{
			name:        "when no newer release pins, the pin's release and why each was skipped, newest first",
			from:        "v1.0.0",
			lister:      &fakeLister{listed: []string{"v1.0.0", "v1.0.1", "v1.0.2"}},
			zips:        []string{"v1.0.0"},
			want:        "v1.0.0",
			wantSkipped: []string{notServed("v1.0.2"), notServed("v1.0.1")},
			wantAsked:   []string{"k8s.io/kubernetes@v1.0.2", "k8s.io/kubernetes@v1.0.1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dl := &fakeProxy{zips: map[string]string{}, time: releaseTime}
			for _, v := range tc.zips {
				dl.zips[pin.MainModule+"@"+v] = releaseZip(t, v)
			}
			for _, v := range tc.noGoWork {
				dl.zips[pin.MainModule+"@"+v] = makeZip(t, pin.MainModule, v, map[string]string{"go.mod": "module k8s.io/kubernetes\n"})
			}
			var log progressLog
			got, p, skipped, err := modfetch.Newest("v1.0", tc.from, tc.lister, dl, log.progress)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantAsked, dl.asked)
			var wantSkipped []string
			for _, s := range tc.wantSkipped {
				for _, v := range tc.noGoWork {
					s = strings.ReplaceAll(s, "<zip "+v+">", dl.zips[pin.MainModule+"@"+v])
				}
				wantSkipped = append(wantSkipped, s)
			}
			assert.Equal(t, wantSkipped, skipped)
			if tc.wantLog != nil {
				assert.Equal(t, tc.wantLog, []string(log))
			}
			if !tc.wantPin {
				assert.Nil(t, p)
				return
			}
			require.NotNil(t, p)
			assert.Equal(t, tc.want, p.Version)
			assert.Equal(t, releaseTime, p.Date)
			sum, err := modfetch.HashZip(dl.zips[pin.MainModule+"@"+tc.want])
			require.NoError(t, err)
			assert.Equal(t, []pin.Module{{Path: pin.MainModule, Version: tc.want, Sum: sum}}, p.Modules)
		})
	}
}

func TestNewestFailsWhenTheProxyCannotList(t *testing.T) {
	listErr := errors.New("go list -m -versions k8s.io/kubernetes: connection refused")
	dl := &fakeProxy{zips: map[string]string{}, time: releaseTime}
	var log progressLog
	_, p, skipped, err := modfetch.Newest("v1.0", "v1.0.0", &fakeLister{listErr: listErr}, dl, log.progress)
	require.ErrorIs(t, err, listErr)
	assert.Nil(t, p)
	assert.Empty(t, skipped)
	assert.Empty(t, dl.asked)
}

// servedZips is a downloader of k8s.io/kubernetes that has the given
// versions only.
// TestNewestServed: the newest release of a minor that the proxy serves
// whole, as make bump pins it; a release whose k8s.io/kubernetes is served
// but one of whose staging modules is not (k8s.io/kms@v0.34.5 on the day
// v1.34.5 was listed) is not usable, so `carry lines` does not call a line
// behind that make bump cannot move.
func TestNewestServed(t *testing.T) {
	withStaging := func(t *testing.T, version string) string {
		return makeZip(t, pin.MainModule, version, map[string]string{
			"go.mod":  "module k8s.io/kubernetes\n\ngo 1.24.0\n",
			"go.work": "go 1.24.0\n\nuse (\n\t.\n\t./staging/src/k8s.io/kms\n)\n",
		})
	}
	for _, tc := range []struct {
		name, minor, pinned string
		listed              []string
		// zips: the releases of k8s.io/kubernetes the proxy has; staged:
		// those whose go.work uses k8s.io/kms, which the proxy has at
		// kms (v0.A.B).
		zips, staged, kms []string
		want              string
		wantUnusable      []string
	}{
		{
			name: "the newest listed release that is served whole", minor: "v1.0", pinned: "v1.0.0",
			listed: []string{"v1.0.0", "v1.0.1", "v1.0.2"}, zips: []string{"v1.0.0", "v1.0.1"},
			want: "v1.0.1", wantUnusable: []string{"v1.0.2 is listed but not usable: k8s.io/kubernetes@v1.0.2 is not served by the module proxy: reading https://proxy.golang.org/k8s.io/kubernetes@v1.0.2: 404 Not Found"},
		},
		{
			name: "a release whose staging module is not served is not usable", minor: "v1.0", pinned: "v1.0.0",
			listed: []string{"v1.0.0", "v1.0.1"}, zips: []string{"v1.0.0"}, staged: []string{"v1.0.1"},
			want: "v1.0.0", wantUnusable: []string{"v1.0.1 is listed but not usable: staging module k8s.io/kms: k8s.io/kms@v0.0.1 is not served by the module proxy: reading https://proxy.golang.org/k8s.io/kms@v0.0.1: 404 Not Found"},
		},
		{
			name: "a release whose staging modules are served is usable", minor: "v1.0", pinned: "v1.0.0",
			listed: []string{"v1.0.0", "v1.0.1"}, zips: []string{"v1.0.0"}, staged: []string{"v1.0.1"}, kms: []string{"v0.0.1"},
			want: "v1.0.1",
		},
		{
			name: "a minor without a pin and without releases has none", minor: "v1.1", pinned: "",
			listed: []string{"v1.0.0"}, zips: []string{"v1.0.0"},
			want: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dl := &fakeProxy{zips: map[string]string{}, time: releaseTime}
			for _, v := range tc.zips {
				dl.zips[pin.MainModule+"@"+v] = releaseZip(t, v)
			}
			for _, v := range tc.staged {
				dl.zips[pin.MainModule+"@"+v] = withStaging(t, v)
			}
			for _, v := range tc.kms {
				dl.zips["k8s.io/kms@"+v] = makeZip(t, "k8s.io/kms", v, map[string]string{"go.mod": "module k8s.io/kms\n"})
			}
			got, unusable, err := modfetch.NewestServed(tc.minor, tc.pinned, &fakeLister{listed: tc.listed}, dl)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantUnusable, unusable)
		})
	}
}
