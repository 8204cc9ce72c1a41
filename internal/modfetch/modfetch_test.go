package modfetch_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/pin"
)

const (
	release = "v1.34.4"
	staging = "v0.34.4"
)

var releaseTime = time.Date(2026, 2, 10, 12, 53, 36, 0, time.UTC)

const goWork = `go 1.24.0

godebug default=go1.24

use (
	.
	./staging/src/k8s.io/api
	./staging/src/k8s.io/sample-controller
)
`

// kubernetesFiles is a fake k8s.io/kubernetes source tree. The staging
// modules in it are nested modules, which a module zip omits.
func kubernetesFiles() map[string]string {
	return map[string]string{
		"go.mod":                                             "module k8s.io/kubernetes\n\ngo 1.24.0\n",
		"go.work":                                            goWork,
		"cmd/kube-scheduler/main.go":                         "package main\n\nfunc main() {}\n",
		"staging/README.md":                                  "staging modules live here\n",
		"staging/src/k8s.io/api/go.mod":                      "module k8s.io/api\n\ngo 1.24.0\n",
		"staging/src/k8s.io/api/core/v1/types.go":            "package v1 // from the kubernetes repository, not the api zip\n",
		"staging/src/k8s.io/sample-controller/go.mod":        "module k8s.io/sample-controller\n\ngo 1.24.0\n",
		"staging/src/k8s.io/sample-controller/controller.go": "package main\n",
	}
}

func apiFiles() map[string]string {
	return map[string]string{
		"go.mod":           "module k8s.io/api\n\ngo 1.24.0\n",
		"core/v1/types.go": "package v1\n\ntype Pod struct{}\n",
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// makeZip makes the module zip of files, as the module proxy serves it.
func makeZip(t *testing.T, modPath, version string, files map[string]string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	writeFiles(t, src, files)
	zipPath := filepath.Join(t.TempDir(), strings.ReplaceAll(modPath, "/", "_")+"@"+version+".zip")
	f, err := os.Create(zipPath)
	require.NoError(t, err)
	require.NoError(t, modzip.CreateFromDir(f, module.Version{Path: modPath, Version: version}, src))
	require.NoError(t, f.Close())
	return zipPath
}

// fakeProxy serves module zips; a module it does not have is not served.
type fakeProxy struct {
	zips map[string]string // path@version -> zip
	time time.Time
	// asked lists the requests in order.
	asked []string
}

func (f *fakeProxy) Download(path, version string) (*modfetch.Downloaded, error) {
	key := path + "@" + version
	f.asked = append(f.asked, key)
	z, ok := f.zips[key]
	if !ok {
		return nil, &modfetch.NotServedError{Path: path, Version: version, Detail: "reading https://proxy.golang.org/" + key + ": 404 Not Found"}
	}
	return &modfetch.Downloaded{Path: path, Version: version, Zip: z, Time: f.time}, nil
}

type fixture struct {
	proxy           *fakeProxy
	mainZip, apiZip string
	mainSum, apiSum string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		mainZip: makeZip(t, pin.MainModule, release, kubernetesFiles()),
		apiZip:  makeZip(t, "k8s.io/api", staging, apiFiles()),
	}
	var err error
	f.mainSum, err = dirhash.HashZip(f.mainZip, dirhash.Hash1)
	require.NoError(t, err)
	f.apiSum, err = dirhash.HashZip(f.apiZip, dirhash.Hash1)
	require.NoError(t, err)
	f.proxy = &fakeProxy{
		zips: map[string]string{
			pin.MainModule + "@" + release: f.mainZip,
			"k8s.io/api@" + staging:        f.apiZip,
		},
		time: releaseTime,
	}
	return f
}

type progressLog []string

func (l *progressLog) progress(format string, args ...any) {
	*l = append(*l, fmt.Sprintf(format, args...))
}

func TestCompute(t *testing.T) {
	f := newFixture(t)
	var log progressLog
	got, err := modfetch.Compute(release, f.proxy, log.progress)
	require.NoError(t, err)
	want := &pin.Pin{
		Version: release,
		Date:    releaseTime,
		Modules: []pin.Module{
			{Path: "k8s.io/kubernetes", Version: release, Sum: f.mainSum},
			{Path: "k8s.io/api", Version: staging, Sum: f.apiSum},
			{Path: "k8s.io/sample-controller", Version: staging, Stub: true},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Compute mismatch (-want +got):\n%s", diff)
	}
	assert.Equal(t, []string{
		"k8s.io/kubernetes@v1.34.4",
		"k8s.io/api@v0.34.4",
		"k8s.io/sample-controller@v0.34.4",
	}, f.proxy.asked)
	assert.Contains(t, log, "pin: k8s.io/sample-controller v0.34.4 is not served; it becomes a stub (nothing builds it)")

	// The computed pin is a valid pin file.
	var b bytes.Buffer
	require.NoError(t, got.Write(&b))
	parsed, err := pin.Parse("UPSTREAM", b.Bytes())
	require.NoError(t, err)
	assert.Equal(t, got.Version, parsed.Version)
	assert.Len(t, parsed.Modules, 3)
}

func TestComputeErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release string
		prepare func(f *fixture)
		want    string
	}{
		{
			name:    "a staging module that is not served and not a sample is an error naming it",
			release: release,
			prepare: func(f *fixture) { delete(f.proxy.zips, "k8s.io/api@"+staging) },
			want:    "staging module k8s.io/api: k8s.io/api@v0.34.4 is not served by the module proxy: reading https://proxy.golang.org/k8s.io/api@v0.34.4: 404 Not Found",
		},
		{
			name:    "a release the proxy does not serve is an error naming it",
			release: "v1.34.99",
			prepare: func(f *fixture) {},
			want:    "k8s.io/kubernetes@v1.34.99 is not served by the module proxy: reading https://proxy.golang.org/k8s.io/kubernetes@v1.34.99: 404 Not Found",
		},
		{
			name:    "a release without a time cannot date the builds",
			release: release,
			prepare: func(f *fixture) { f.proxy.time = time.Time{} },
			want:    "k8s.io/kubernetes@v1.34.4: the module proxy reported no release time",
		},
		{
			name:    "a version that is not a release is rejected before any download",
			release: "1.34.4",
			prepare: func(f *fixture) {},
			want:    `"1.34.4" is not a Kubernetes release version like v1.34.4`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.prepare(f)
			var log progressLog
			got, err := modfetch.Compute(tc.release, f.proxy, log.progress)
			require.EqualError(t, err, tc.want)
			assert.Nil(t, got)
		})
	}
}

func TestComputeOfAReleaseWithoutGoWork(t *testing.T) {
	f := newFixture(t)
	files := kubernetesFiles()
	delete(files, "go.work")
	f.proxy.zips[pin.MainModule+"@"+release] = makeZip(t, pin.MainModule, release, files)
	var log progressLog
	_, err := modfetch.Compute(release, f.proxy, log.progress)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "k8s.io/kubernetes@v1.34.4: ")
	assert.Contains(t, err.Error(), "has no k8s.io/kubernetes@v1.34.4/go.work")
}

// pinFile is the pin of the fixture as UPSTREAM holds it: main module at
// line 4, k8s.io/api at 5, the sample-controller stub at 6.
func (f *fixture) pinFile(t *testing.T, edit func(string) string) *pin.Pin {
	t.Helper()
	text := "version v1.34.4\n" +
		"date 2026-02-10T12:53:36Z\n" +
		"# modules\n" +
		"module k8s.io/kubernetes v1.34.4 " + f.mainSum + "\n" +
		"module k8s.io/api v0.34.4 " + f.apiSum + "\n" +
		"stub k8s.io/sample-controller v0.34.4\n"
	if edit != nil {
		text = edit(text)
	}
	p, err := pin.Parse("UPSTREAM", []byte(text))
	require.NoError(t, err)
	return p
}

// listTree lists the files under dir with their contents.
func listTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	return out
}

func TestAssemble(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "tree")
	var log progressLog
	require.NoError(t, modfetch.Assemble(f.pinFile(t, nil), "UPSTREAM", dir, f.proxy, log.progress))

	want := map[string]string{
		"go.mod":                     "module k8s.io/kubernetes\n\ngo 1.24.0\n",
		"go.work":                    goWork,
		"cmd/kube-scheduler/main.go": "package main\n\nfunc main() {}\n",
		"staging/README.md":          "staging modules live here\n",
		// k8s.io/api comes from its own module zip.
		"staging/src/k8s.io/api/go.mod":           "module k8s.io/api\n\ngo 1.24.0\n",
		"staging/src/k8s.io/api/core/v1/types.go": "package v1\n\ntype Pod struct{}\n",
		// The stub has the go version of the main module.
		"staging/src/k8s.io/sample-controller/go.mod": "// kube-carry stub: the module proxy does not serve this module and nothing builds it.\n" +
			"module k8s.io/sample-controller\n\ngo 1.24.0\n",
	}
	if diff := cmp.Diff(want, listTree(t, dir)); diff != "" {
		t.Fatalf("assembled tree mismatch (-want +got):\n%s", diff)
	}
	assert.Equal(t, progressLog{
		"fetch: [1/3] k8s.io/kubernetes v1.34.4",
		"fetch: [2/3] k8s.io/api v0.34.4",
		"fetch: [3/3] k8s.io/sample-controller v0.34.4 (stub: not served, not built)",
	}, log)

	mods, err := modfetch.WorkspaceModules(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"k8s.io/api", "k8s.io/sample-controller"}, mods)
}

// oneCharOff changes the first character of the hash after "h1:" into
// another base64 character.
func oneCharOff(sum string) string {
	c := byte('A')
	if sum[3] == 'A' {
		c = 'B'
	}
	return sum[:3] + string(c) + sum[4:]
}

func TestAssembleErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(f *fixture, text string) string
		prepare func(f *fixture)
		want    func(f *fixture) string
	}{
		{
			name: "a hash one character off is a checksum mismatch naming the module and its pin line",
			edit: func(f *fixture, text string) string {
				return strings.Replace(text, f.apiSum, oneCharOff(f.apiSum), 1)
			},
			want: func(f *fixture) string {
				return "UPSTREAM:5: k8s.io/api v0.34.4: checksum mismatch: the module zip has " + f.apiSum + ", UPSTREAM pins " + oneCharOff(f.apiSum)
			},
		},
		{
			name: "a main module hash one character off is a checksum mismatch at its line",
			edit: func(f *fixture, text string) string {
				return strings.Replace(text, f.mainSum, oneCharOff(f.mainSum), 1)
			},
			want: func(f *fixture) string {
				return "UPSTREAM:4: k8s.io/kubernetes v1.34.4: checksum mismatch: the module zip has " + f.mainSum + ", UPSTREAM pins " + oneCharOff(f.mainSum)
			},
		},
		{
			name: "a go.work module missing from the pin is named",
			edit: func(f *fixture, text string) string {
				return strings.Replace(text, "stub k8s.io/sample-controller v0.34.4\n", "", 1)
			},
			want: func(f *fixture) string {
				return "UPSTREAM: staging module k8s.io/sample-controller is used by go.work of k8s.io/kubernetes v1.34.4 but not pinned; recompute the pin with `make pin VERSION=v1.34.4`"
			},
		},
		{
			name: "a pinned module that go.work does not use is named",
			edit: func(f *fixture, text string) string {
				return text + "stub k8s.io/sample-apiserver v0.34.4\n"
			},
			want: func(f *fixture) string {
				return "UPSTREAM: k8s.io/sample-apiserver pinned but not used by go.work of k8s.io/kubernetes v1.34.4"
			},
		},
		{
			name:    "a module the proxy does not serve is named with its pin line",
			prepare: func(f *fixture) { delete(f.proxy.zips, "k8s.io/api@"+staging) },
			want: func(f *fixture) string {
				return "UPSTREAM:5: k8s.io/api@v0.34.4 is not served by the module proxy: reading https://proxy.golang.org/k8s.io/api@v0.34.4: 404 Not Found"
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.prepare != nil {
				tc.prepare(f)
			}
			var edit func(string) string
			if tc.edit != nil {
				edit = func(text string) string { return tc.edit(f, text) }
			}
			p := f.pinFile(t, edit)
			var log progressLog
			err := modfetch.Assemble(p, "UPSTREAM", filepath.Join(t.TempDir(), "tree"), f.proxy, log.progress)
			require.EqualError(t, err, tc.want(f))
		})
	}
}

func TestAssembleKeepsNotServedErrorInTheChain(t *testing.T) {
	f := newFixture(t)
	delete(f.proxy.zips, "k8s.io/api@"+staging)
	var log progressLog
	err := modfetch.Assemble(f.pinFile(t, nil), "UPSTREAM", filepath.Join(t.TempDir(), "tree"), f.proxy, log.progress)
	var ns *modfetch.NotServedError
	require.ErrorAs(t, err, &ns)
	assert.Equal(t, modfetch.NotServedError{Path: "k8s.io/api", Version: staging, Detail: "reading https://proxy.golang.org/k8s.io/api@v0.34.4: 404 Not Found"}, *ns)
}

func TestAssembleRefusesANonEmptyDirectory(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"leftover.txt": "x\n"})
	var log progressLog
	err := modfetch.Assemble(f.pinFile(t, nil), "UPSTREAM", dir, f.proxy, log.progress)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "k8s.io/kubernetes v1.34.4: unpacking")
}

func TestWorkspaceModules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		goWork  *string
		want    []string
		wantErr string
	}{
		{
			name:   "the staging modules of go.work are listed by module path, sorted",
			goWork: ptr("go 1.24.0\n\nuse (\n\t./staging/src/k8s.io/client-go\n\t.\n\tstaging/src/k8s.io/api\n)\n"),
			want:   []string{"k8s.io/api", "k8s.io/client-go"},
		},
		{
			name:    "a use outside staging is an error at its line",
			goWork:  ptr("go 1.24.0\n\nuse (\n\t.\n\t./hack/tools\n)\n"),
			wantErr: "go.work:5: use ./hack/tools is not a staging module",
		},
		{
			name:    "a tree without go.work is too old",
			wantErr: "k8s.io/kubernetes: open go.work: no such file or directory (is this a Kubernetes tree of v1.30 or newer?)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			if tc.goWork != nil {
				writeFiles(t, dir, map[string]string{"go.work": *tc.goWork})
			}
			got, err := modfetch.WorkspaceModules(".")
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func ptr(s string) *string { return &s }

func TestHashZipMatchesTheGoCommandsHash(t *testing.T) {
	f := newFixture(t)
	got, err := modfetch.HashZip(f.apiZip)
	require.NoError(t, err)
	assert.Equal(t, f.apiSum, got)
	assert.True(t, strings.HasPrefix(got, "h1:"))
	assert.Len(t, got, 47)
}

// fakeGo writes a shell script that stands in for the go command: it
// records its arguments, directory and environment and prints out, then
// exits with code.
func fakeGo(t *testing.T, out string, code int, stderr string) (goBin, record string) {
	t.Helper()
	dir := t.TempDir()
	record = filepath.Join(dir, "record")
	script := fmt.Sprintf(`#!/bin/sh
printf '%%s\n' "$*" "$PWD" "GOWORK=$GOWORK" "GOFLAGS=$GOFLAGS" > %q
cat <<'EOF'
%s
EOF
printf '%%s' %q >&2
exit %d
`, record, out, stderr, code)
	goBin = filepath.Join(dir, "go")
	require.NoError(t, os.WriteFile(goBin, []byte(script), 0o755))
	return goBin, record
}

func TestGoCommandDownload(t *testing.T) {
	info := filepath.Join(t.TempDir(), "v0.34.4.info")
	require.NoError(t, os.WriteFile(info, []byte(`{"Version":"v0.34.4","Time":"2026-02-10T12:53:36Z"}`), 0o644))
	for _, tc := range []struct {
		name     string
		out      string
		code     int
		stderr   string
		want     *modfetch.Downloaded
		wantErr  string
		notServe bool
	}{
		{
			name: "a downloaded module gives its zip, sum and release time",
			out:  `{"Path":"k8s.io/api","Version":"v0.34.4","Zip":"/cache/api.zip","Info":"` + info + `","Sum":"h1:abc="}`,
			want: &modfetch.Downloaded{Path: "k8s.io/api", Version: "v0.34.4", Zip: "/cache/api.zip", Info: info, Sum: "h1:abc=", Time: releaseTime},
		},
		{
			name:     "a 404 from the proxy is a NotServedError",
			out:      `{"Path":"k8s.io/api","Version":"v0.34.4","Error":"k8s.io/api@v0.34.4: reading https://proxy.golang.org/k8s.io/api/@v/v0.34.4.info: 404 Not Found"}`,
			code:     1,
			wantErr:  "k8s.io/api@v0.34.4 is not served by the module proxy: k8s.io/api@v0.34.4: reading https://proxy.golang.org/k8s.io/api/@v/v0.34.4.info: 404 Not Found",
			notServe: true,
		},
		{
			name:    "another download error names the module",
			out:     `{"Path":"k8s.io/api","Version":"v0.34.4","Error":"verifying module: checksum mismatch"}`,
			code:    1,
			wantErr: "k8s.io/api@v0.34.4: verifying module: checksum mismatch",
		},
		{
			name:    "a go command that prints no JSON fails with what it printed",
			out:     "",
			code:    2,
			stderr:  "go: cannot find GOROOT",
			wantErr: "k8s.io/api@v0.34.4: go mod download: exit status 2: go: cannot find GOROOT",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goBin, record := fakeGo(t, tc.out, tc.code, tc.stderr)
			got, err := modfetch.GoCommand{Go: goBin}.Download("k8s.io/api", "v0.34.4")

			rec, rerr := os.ReadFile(record)
			require.NoError(t, rerr)
			lines := strings.Split(strings.TrimSpace(string(rec)), "\n")
			require.Len(t, lines, 4)
			assert.Equal(t, "mod download -json k8s.io/api@v0.34.4", lines[0])
			assert.Contains(t, filepath.Base(lines[1]), "kube-carry-download-", "runs outside any module")
			assert.Equal(t, []string{"GOWORK=off", "GOFLAGS="}, lines[2:])

			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				var ns *modfetch.NotServedError
				assert.Equal(t, tc.notServe, errors.As(err, &ns))
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Download mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
