package series_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/series"
)

func TestParseSeries(t *testing.T) {
	in := "# The patch series, in apply order.\n" +
		"\n" +
		"b-first.patch\n" +
		"   # an indented comment\n" +
		"a-second.patch   # trailing comment\n" +
		"\t\n" +
		"c-third.patch\n"
	got, err := series.Parse("patches/series", []byte(in))
	require.NoError(t, err)
	want := &series.Series{
		File: "patches/series",
		Dir:  "patches",
		Entries: []series.Entry{
			{Name: "b-first.patch", Line: 3},
			{Name: "a-second.patch", Line: 5},
			{Name: "c-third.patch", Line: 7},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Parse mismatch (-want +got):\n%s", diff)
	}
	assert.Equal(t, filepath.Join("patches", "a-second.patch"), got.Path(got.Entries[1]))
}

func TestParseEmptySeriesHasNoEntries(t *testing.T) {
	got, err := series.Parse("patches/series", []byte("# nothing yet\n\n"))
	require.NoError(t, err)
	assert.Empty(t, got.Entries)
	assert.Equal(t, "patches", got.Dir)
}

func TestParseSeriesErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{
			name: "a name listed twice names the first line",
			in:   "a.patch\nb.patch\n# c\na.patch\n",
			want: "patches/series:4: patch a.patch listed twice (first at line 1)",
		},
		{
			name: "a path instead of a file name is rejected",
			in:   "# header\nsub/a.patch\n",
			want: `patches/series:2: patch "sub/a.patch" must be a file name in patches, not a path`,
		},
		{
			name: "a backslash path is rejected too",
			in:   `sub\a.patch` + "\n",
			want: `patches/series:1: patch "sub\\a.patch" must be a file name in patches, not a path`,
		},
		{
			name: "a name that does not end in .patch is rejected",
			in:   "a.patch\nb.diff\n",
			want: `patches/series:2: patch "b.diff" must end in .patch`,
		},
		{
			name: "two words on a line are rejected as quilt options",
			in:   "a.patch\n\nb.patch -p1\n",
			want: `patches/series:3: want one patch file name, got "b.patch -p1" (quilt options such as -p are not supported)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := series.Parse("patches/series", []byte(tc.in))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.Equal(t, tc.want, err.Error())
			var se *series.Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "patches/series", se.File)
		})
	}
}

// inRepo makes a temporary repository root the working directory, with the
// given files under it.
func inRepo(t *testing.T, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	t.Chdir(dir)
}

func TestReadSeries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    []series.Entry
		wantErr string
	}{
		{
			name: "every entry exists so the series reads",
			files: map[string]string{
				"patches/series":  "# header\na.patch\nb.patch\n",
				"patches/a.patch": "a",
				"patches/b.patch": "b",
			},
			want: []series.Entry{{Name: "a.patch", Line: 2}, {Name: "b.patch", Line: 3}},
		},
		{
			name: "a missing patch file is named with its series line",
			files: map[string]string{
				"patches/series":  "# header\na.patch\nx.patch\n",
				"patches/a.patch": "a",
			},
			wantErr: "patches/series:3: patch patches/x.patch does not exist",
		},
		{
			name: "a parse error comes before the existence check",
			files: map[string]string{
				"patches/series": "x.patch\nx.patch\n",
			},
			wantErr: "patches/series:2: patch x.patch listed twice (first at line 1)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inRepo(t, tc.files)
			got, err := series.Read("patches/series")
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got.Entries); diff != "" {
				t.Fatalf("entries mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadSeriesOfAMissingFileIsANotExistError(t *testing.T) {
	inRepo(t, nil)
	_, err := series.Read("patches/series")
	require.Error(t, err)
	assert.True(t, os.IsNotExist(err), "want a not-exist error, got %v", err)
}

func TestDropped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content *string
		want    map[string]string
		wantErr string
	}{
		{
			name: "a missing DROPPED file means no dropped patches",
			want: map[string]string{},
		},
		{
			name: "names map to their reasons, comments and blank lines are ignored",
			content: ptr("# Patches kept but no longer applied.\n\n" +
				"old-fix.patch upstream in v1.35.0 (kubernetes#123456)  \n" +
				"  other.patch   superseded by new.patch # why\n"),
			want: map[string]string{
				"old-fix.patch": "upstream in v1.35.0 (kubernetes#123456)",
				"other.patch":   "superseded by new.patch",
			},
		},
		{
			name:    "a dropped patch without a reason is an error at its line",
			content: ptr("# header\na.patch reason\nb.patch\n"),
			wantErr: "DROPPED:3: dropped patch b.patch needs a reason",
		},
		{
			name:    "a reason that is only a comment is no reason",
			content: ptr("b.patch # upstreamed\n"),
			wantErr: "DROPPED:1: dropped patch b.patch needs a reason",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			if tc.content != nil {
				require.NoError(t, os.WriteFile("DROPPED", []byte(*tc.content), 0o644))
			}
			got, err := series.Dropped("DROPPED")
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Dropped mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestErrorWithoutLineNamesOnlyTheFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *series.Error
		want string
	}{
		{"an error at a line names file and line", &series.Error{File: "f", Line: 3, Msg: "bad"}, "f:3: bad"},
		{"an error of the whole file names only the file", &series.Error{File: "f", Msg: "bad"}, "f: bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
		})
	}
}
