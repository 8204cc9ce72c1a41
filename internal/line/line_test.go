package line_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/pin"
)

// pinOf is a pin file of release version (only the main module).
func pinOf(version string) string {
	return "version " + version + "\n" +
		"date 2026-02-10T12:53:36Z\n" +
		"module k8s.io/kubernetes " + version + " h1:Yy6R4QB8C9kJPp25GFqEvX5XQwY5qzKeqD0Xx6oAcmk=\n"
}

// repo makes a repository root with the given files (slash paths).
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	fixture.WriteFiles(t, root, files)
	return root
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"v1.0":    true,
		"v1.37":   true,
		"v2.10":   true,
		"v1.37.0": false,
		"v1":      false,
		"1.37":    false,
		"v1.037":  false,
		"v1.37-x": false,
		"":        false,
		".v1.37":  false,
	} {
		assert.Equal(t, want, line.ValidName(name), name)
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		dirs    []string
		want    []string
		wantErr string
	}{
		{
			name:  "lines are in semver order, not lexical (v1.9 before v1.10)",
			files: map[string]string{"patches/v1.10/series": "", "patches/v1.9/series": "", "patches/v1.2/series": ""},
			want:  []string{"v1.2", "v1.9", "v1.10"},
		},
		{
			name: "dot-folders and dot-files (staging, backups, journals) are not lines",
			files: map[string]string{
				"patches/v1.0/series":          "",
				"patches/.v1.1.new/series":     "",
				"patches/.v1.0.export/series":  "",
				"patches/.v1.0.journal":        "{}\n",
				"patches/.v1.0.stage/UPSTREAM": "",
				"patches/.DS_Store":            "",
				"patches/v1.1/mutants/m.patch": "",
			},
			want: []string{"v1.0", "v1.1"},
		},
		{
			name:    "a folder that is not vA.B is refused, named",
			files:   map[string]string{"patches/v1.0/series": ""},
			dirs:    []string{"patches/foo"},
			wantErr: "<root>/patches/foo: not a line folder: want vA.B (e.g. v1.37)",
		},
		{
			name:    "a release folder (vA.B.C) is not a line folder",
			files:   map[string]string{"patches/v1.0.1/series": ""},
			wantErr: "<root>/patches/v1.0.1: not a line folder: want vA.B (e.g. v1.37)",
		},
		{
			name:    "a file directly in patches/ is refused",
			files:   map[string]string{"patches/v1.0/series": "", "patches/series": ""},
			wantErr: "<root>/patches/series: only line folders (vA.B) belong in patches/",
		},
		{
			name:    "no line at all",
			files:   map[string]string{"patches/.v1.0.new/series": ""},
			wantErr: "<root>/patches: no release lines (folders vA.B)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := repo(t, tc.files)
			for _, d := range tc.dirs {
				require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
			}
			got, err := line.List(root)
			if tc.wantErr != "" {
				require.EqualError(t, err, replaceRoot(tc.wantErr, root))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, line.Names(got))
			for _, l := range got {
				assert.Equal(t, root, l.Root)
			}
		})
	}
}

// replaceRoot puts the repository root in place of <root>.
func replaceRoot(s, root string) string { return strings.Replace(s, "<root>", root, 1) }

func TestListWithoutPatchesFolder(t *testing.T) {
	_, err := line.List(t.TempDir())
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestGet(t *testing.T) {
	root := repo(t, map[string]string{"patches/v1.9/series": "", "patches/v1.10/series": "", "patches/v1.2/series": ""})
	for _, tc := range []struct {
		name, arg, want, wantErr string
	}{
		{name: "no name is the newest line", arg: "", want: "v1.10"},
		{name: "a line by name", arg: "v1.9", want: "v1.9"},
		{name: "an unknown line names the lines there are", arg: "v9.9", wantErr: "LINE=v9.9: no such release line; the lines are: v1.2, v1.9, v1.10"},
		{name: "a release is not a line", arg: "v1.9.0", wantErr: "LINE=v1.9.0: no such release line; the lines are: v1.2, v1.9, v1.10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := line.Get(root, tc.arg)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				var unknown *line.UnknownError
				require.ErrorAs(t, err, &unknown)
				assert.Equal(t, []string{"v1.2", "v1.9", "v1.10"}, unknown.Lines)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, line.Line{Root: root, Name: tc.want}, got)
		})
	}
}

func TestPaths(t *testing.T) {
	l := line.Line{Root: ".", Name: "v1.0"}
	in := line.Line{Root: "/repo", Name: "v1.37"}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"Dir", l.Dir(), "patches/v1.0"},
		{"PinFile", l.PinFile(), "patches/v1.0/UPSTREAM"},
		{"SeriesFile", l.SeriesFile(), "patches/v1.0/series"},
		{"RevisionFile", l.RevisionFile(), "patches/v1.0/REVISION"},
		{"DroppedFile", l.DroppedFile(), "patches/v1.0/DROPPED"},
		{"EOLFile", l.EOLFile(), "patches/v1.0/EOL"},
		{"MutantsDir", l.MutantsDir(), "patches/v1.0/mutants"},
		{"Mutant", l.Mutant("mutants/m.patch"), "patches/v1.0/mutants/m.patch"},
		{"JournalFile", l.JournalFile(), "patches/.v1.0.journal"},
		{"JournalFile under a root", in.JournalFile(), "/repo/patches/.v1.37.journal"},
		{"JournalGlob", line.JournalGlob("."), "patches/.*.journal"},
		{"StageDir new", l.StageDir(line.StageNew), "patches/.v1.0.new"},
		{"StageDir export", l.StageDir(line.StageExport), "patches/.v1.0.export"},
		{"StageDir export-old", l.StageDir(line.StageExportOld), "patches/.v1.0.export-old"},
		{"StageDir stage", l.StageDir(line.StageFinish), "patches/.v1.0.stage"},
		{"StageDir old", in.StageDir(line.StageOld), "/repo/patches/.v1.37.old"},
		{"Aside of the changelog", line.Aside(line.ChangelogFile("."), line.StageFinish), ".CHANGELOG.md.stage"},
		{"Aside of the tree", line.Aside(l.TreeDir(), line.StageOld), "_output/v1.0/src/.kubernetes.old"},
		{"Aside of a session", line.Aside(l.RebaseDir(), line.SessionEnded), "_output/v1.0/.rebase.ended"},
		{"OutDir", l.OutDir(), "_output/v1.0"},
		{"TreeDir", l.TreeDir(), "_output/v1.0/src/kubernetes"},
		{"BinDir", l.BinDir(), "_output/v1.0/bin"},
		{"TestBinDir", l.TestBinDir(), "_output/v1.0/test/bin"},
		{"WorkDir", l.WorkDir(), "_output/v1.0/work"},
		{"LogDir", l.LogDir(), "_output/v1.0/logs"},
		{"RebaseDir", l.RebaseDir(), "_output/v1.0/rebase"},
		{"PortDir", l.PortDir(), "_output/v1.0/port"},
		{"UpstreamBinDir", l.UpstreamBinDir(), "_output/v1.0/upstream/bin"},
		{"ClusterDir", l.ClusterDir(), "_output/v1.0/cluster"},
		{"ImagesDir", l.ImagesDir(), "_output/v1.0/images"},
		{"EtcdScript", l.EtcdScript(), "_output/v1.0/src/kubernetes/hack/lib/etcd.sh"},
		{"LinesFile", line.LinesFile("."), "_output/lines.json"},
		{"LinesFile under a root", line.LinesFile("/repo"), "/repo/_output/lines.json"},
		{"MatrixMarkdown", line.MatrixMarkdown("."), "_output/matrix.md"},
		{"MatrixJSON", line.MatrixJSON("."), "_output/matrix.json"},
		{"MatrixTree", line.MatrixTree(".", "v1.37.2"), "_output/matrix/v1.37.2/kubernetes"},
		{"ChangelogFile", line.ChangelogFile("."), "CHANGELOG.md"},
		{"EtcdTool", line.EtcdTool(".", "v3.6.4"), "tools/etcd/3.6.4"},
		{"EtcdTool without v", line.EtcdTool("/repo", "3.6.4"), "/repo/tools/etcd/3.6.4"},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
	assert.Equal(t, "v1.37", line.Minor("v1.37.2"))
}

func TestPinAndVersion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    map[string]string
		want     string
		wantErr  string
		wantPinV string
	}{
		{
			name:     "the version is the pin's release and the revision",
			files:    map[string]string{"patches/v1.0/UPSTREAM": pinOf("v1.0.3"), "patches/v1.0/REVISION": "4\n"},
			want:     "v1.0.3-carry.4",
			wantPinV: "v1.0.3",
		},
		{
			name:    "a pin of another minor is refused",
			files:   map[string]string{"patches/v1.0/UPSTREAM": pinOf("v1.1.0"), "patches/v1.0/REVISION": "1\n"},
			wantErr: "<root>/patches/v1.0/UPSTREAM: pins v1.1.0, which is not a release of line v1.0",
		},
		{
			name:    "a revision that is not a whole number ≥ 1 is refused",
			files:   map[string]string{"patches/v1.0/UPSTREAM": pinOf("v1.0.3"), "patches/v1.0/REVISION": "0\n"},
			wantErr: `<root>/patches/v1.0/REVISION:1: want a series revision (a whole number ≥ 1), got "0"`,
		},
		{
			name:    "a revision that is no number is refused",
			files:   map[string]string{"patches/v1.0/UPSTREAM": pinOf("v1.0.3"), "patches/v1.0/REVISION": "three\n"},
			wantErr: `<root>/patches/v1.0/REVISION:1: want a series revision (a whole number ≥ 1), got "three"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := repo(t, tc.files)
			l, err := line.Get(root, "v1.0")
			require.NoError(t, err)
			v, p, err := l.Version()
			if tc.wantErr != "" {
				require.EqualError(t, err, replaceRoot(tc.wantErr, root))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, v)
			assert.Equal(t, tc.wantPinV, p.Version)
		})
	}
}

func TestEOLAndSupported(t *testing.T) {
	root := repo(t, map[string]string{
		"patches/v1.0/EOL":    "end of life since 2026-03-01: upstream v1.0 is out of support\nmore details\n",
		"patches/v1.1/series": "",
		"patches/v1.2/EOL":    "\n  \n",
		"patches/v1.3/EOL":    "  superseded by v1.4  \n",
		"patches/v1.4/series": "",
	})
	lines, err := line.List(root)
	require.NoError(t, err)
	for _, tc := range []struct {
		line, want, wantErr string
	}{
		{line: "v1.0", want: "end of life since 2026-03-01: upstream v1.0 is out of support"},
		{line: "v1.1", want: ""},
		{line: "v1.2", wantErr: "<root>/patches/v1.2/EOL:1: empty; say why and since when the line is end-of-life"},
		{line: "v1.3", want: "superseded by v1.4"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, err := line.Line{Root: root, Name: tc.line}.EOL()
			if tc.wantErr != "" {
				require.EqualError(t, err, replaceRoot(tc.wantErr, root))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}

	_, err = line.Supported(lines)
	require.EqualError(t, err, root+"/patches/v1.2/EOL:1: empty; say why and since when the line is end-of-life", "an empty EOL is an error, not a supported line")
	require.NoError(t, os.WriteFile(filepath.Join(root, "patches/v1.2/EOL"), []byte("gone\n"), 0o644))
	supported, err := line.Supported(lines)
	require.NoError(t, err)
	assert.Equal(t, []string{"v1.1", "v1.4"}, line.Names(supported))
}

func TestWritePin(t *testing.T) {
	root := repo(t, map[string]string{
		"patches/v1.0/UPSTREAM": pinOf("v1.0.0"),
		"patches/v1.0/series":   "# header\na.patch\n",
		"patches/v1.0/REVISION": "3\n",
		// A stage a killed `carry pin` left is replaced.
		"patches/.v1.1.new/junk": "x",
	})
	for _, tc := range []struct {
		name, line, version string
		wantStarted         bool
		want                map[string]string // the line's files; <pin> is the pin as Pin.Write writes it
	}{
		{
			name: "a line that exists gets its pin rewritten, nothing else", line: "v1.0", version: "v1.0.3",
			want: map[string]string{"UPSTREAM": "<pin>", "series": "# header\na.patch\n", "REVISION": "3\n"},
		},
		{
			name: "a new line starts with the pin, an empty series and revision 1", line: "v1.1", version: "v1.1.0", wantStarted: true,
			want: map[string]string{"UPSTREAM": "<pin>", "series": "", "REVISION": "1\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pin.Parse("test", []byte(pinOf(tc.version)))
			require.NoError(t, err)
			var written strings.Builder
			require.NoError(t, p.Write(&written))
			l := line.Line{Root: root, Name: tc.line}
			started, err := l.WritePin(p)
			require.NoError(t, err)
			assert.Equal(t, tc.wantStarted, started)
			entries, err := os.ReadDir(l.Dir())
			require.NoError(t, err)
			assert.Len(t, entries, len(tc.want))
			for name, want := range tc.want {
				data, err := os.ReadFile(filepath.Join(l.Dir(), name))
				require.NoError(t, err)
				assert.Equal(t, strings.Replace(want, "<pin>", written.String(), 1), string(data), name)
			}
			assert.NoDirExists(t, l.StageDir(line.StageNew))
		})
	}
}
