package status_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/status"
)

func pinOf(version string) string {
	return "version " + version + "\n" +
		"date 2026-02-10T12:53:36Z\n" +
		"module k8s.io/kubernetes " + version + " h1:Yy6R4QB8C9kJPp25GFqEvX5XQwY5qzKeqD0Xx6oAcmk=\n"
}

func TestLinesOffline(t *testing.T) {
	root := t.TempDir()
	fixture.WriteFiles(t, root, map[string]string{
		"patches/v1.0/UPSTREAM": pinOf("v1.0.3"),
		"patches/v1.0/REVISION": "2\n",
		"patches/v1.0/series":   "# header\na.patch\nb.patch\n",
		"patches/v1.0/EOL":      "end of life since 2026-03-01\n",
		"patches/v1.0/a.patch":  "",
		"patches/v1.0/b.patch":  "",
		"patches/v1.1/UPSTREAM": pinOf("v1.1.0"),
		"patches/v1.1/REVISION": "1\n",
		"patches/v1.1/series":   "",
	})
	infos, err := status.Lines(root, true)
	require.NoError(t, err)
	want := []status.LineInfo{
		{Line: "v1.0", Pinned: "v1.0.3", Newest: "?", Revision: 2, Version: "v1.0.3-carry.2", Patches: 2, EOL: "end of life since 2026-03-01"},
		{Line: "v1.1", Pinned: "v1.1.0", Newest: "?", Revision: 1, Version: "v1.1.0-carry.1"},
	}
	assert.Equal(t, want, infos)

	var table strings.Builder
	require.NoError(t, status.WriteTable(&table, append(infos, status.LineInfo{
		Line: "v1.2", Pinned: "v1.2.0", Newest: "v1.2.1", Behind: true, Revision: 1, Version: "v1.2.0-carry.1",
		Unusable: []string{"v1.2.2 is listed but not usable: gone"},
	})))
	assert.Equal(t, `LINE  PINNED  NEWEST SERVED                         REVISION            PATCHES  END OF LIFE
v1.0  v1.0.3  ?                                     2 (v1.0.3-carry.2)  2        end of life since 2026-03-01
v1.1  v1.1.0  ?                                     1 (v1.1.0-carry.1)  0        -
v1.2  v1.2.0  v1.2.1 (behind: make bump LINE=v1.2)  1 (v1.2.0-carry.1)  0        -
  v1.2: v1.2.2 is listed but not usable: gone
`, table.String())

	require.NoError(t, status.WriteJSON(root, infos))
	data, err := os.ReadFile(line.LinesFile(root))
	require.NoError(t, err)
	var got []status.LineInfo
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, want, got)
}
