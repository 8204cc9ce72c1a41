package etcd_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/etcd"
	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/line"
)

const pin = "version v1.0.3\n" +
	"date 2026-02-10T12:53:36Z\n" +
	"module k8s.io/kubernetes v1.0.3 h1:Yy6R4QB8C9kJPp25GFqEvX5XQwY5qzKeqD0Xx6oAcmk=\n"

const script = "#!/usr/bin/env bash\nETCD_VERSION=${ETCD_VERSION:-3.6.4}\n"

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{
			name:  "the tools folder of the version builds it",
			files: map[string]string{"tools/etcd/3.6.4/go.mod": "module m\n\ngo 1.25\n\nrequire go.etcd.io/etcd/server/v3 v3.6.4\n"},
		},
		{
			name:    "no tools folder says how to add it",
			wantErr: "upstream v1.0.3 (line v1.0) wants etcd v3.6.4 (<root>/_output/v1.0/src/kubernetes/hack/lib/etcd.sh), but there is no <root>/tools/etcd/3.6.4/go.mod; add it:",
		},
		{
			name:    "a folder that builds another version says how to move it",
			files:   map[string]string{"tools/etcd/3.6.4/go.mod": "module m\n\ngo 1.25\n\nrequire go.etcd.io/etcd/server/v3 v3.6.3\n"},
			wantErr: "<root>/tools/etcd/3.6.4/go.mod:5: requires go.etcd.io/etcd/server/v3 v3.6.3 but upstream v1.0.3 (line v1.0) wants etcd v3.6.4",
		},
		{
			name:    "a folder that does not require etcd",
			files:   map[string]string{"tools/etcd/3.6.4/go.mod": "module m\n"},
			wantErr: "<root>/tools/etcd/3.6.4/go.mod: does not require go.etcd.io/etcd/server/v3",
		},
		{
			name:    "a script without the version",
			files:   map[string]string{"_output/v1.0/src/kubernetes/hack/lib/etcd.sh": "ETCD_VERSION=3.6.4\n"},
			wantErr: "<root>/_output/v1.0/src/kubernetes/hack/lib/etcd.sh: no ETCD_VERSION=${ETCD_VERSION:-X.Y.Z} line",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"patches/v1.0/UPSTREAM": pin, "_output/v1.0/src/kubernetes/hack/lib/etcd.sh": script}
			for k, v := range tc.files {
				files[k] = v
			}
			fixture.WriteFiles(t, root, files)
			l := line.Line{Root: root, Name: "v1.0"}
			version, dir, err := etcd.Version(l)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), strings.ReplaceAll(tc.wantErr, "<root>", root))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "v3.6.4", version)
			assert.Equal(t, line.EtcdTool(root, "3.6.4"), dir)
		})
	}
}
