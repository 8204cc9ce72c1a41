package release

import (
	"runtime/debug"
	"testing"

	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The module resolutions the fixture binaries do not exercise (they have
// one plain dependency and one workspace module).
func TestModulePackage(t *testing.T) {
	const (
		sumA = "h1:ICeL3t2L30ljSPHHxDnR4fqVcBt/zR2zJAb9juavmQg="
		hexA = "20278bdedd8bdf496348f1c7c439d1e1fa95701b7fcd1db32406fd8ee6af9908"
		sumB = "h1:u5fzIrRInkL8MaO1cbRkUHT64v303YIT5KEqpNr7jRs="
	)
	spec := SBOMSpec{Version: "v1.37.2-carry.1", Revision: "abc", LocalModuleVersion: "v0.37.2"}
	for _, tc := range []struct {
		name string
		dep  debug.Module
		want spdx.Package
		err  string
	}{
		{
			name: "plain",
			dep:  debug.Module{Path: "github.com/Foo/bar", Version: "v1.0.0+incompatible", Sum: sumA},
			want: spdx.Package{
				PackageVersion:          "v1.0.0+incompatible",
				PackageDownloadLocation: "https://proxy.golang.org/github.com/!foo/bar/@v/v1.0.0+incompatible.zip",
				PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: hexA}},
				PackageComment:          "go.sum " + sumA,
				PackageExternalReferences: []*spdx.PackageExternalReference{
					purlRef("pkg:golang/github.com/Foo/bar@v1.0.0%2Bincompatible"),
				},
			},
		},
		{
			name: "replaced by a module",
			dep: debug.Module{Path: "example.com/a", Version: "v1.0.0", Sum: sumB,
				Replace: &debug.Module{Path: "example.com/fork/a", Version: "v1.0.1", Sum: sumA}},
			want: spdx.Package{
				PackageVersion:          "v1.0.1",
				PackageDownloadLocation: "https://proxy.golang.org/example.com/fork/a/@v/v1.0.1.zip",
				PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: hexA}},
				PackageComment:          "replaced: example.com/a v1.0.0 => example.com/fork/a v1.0.1; go.sum " + sumA,
				PackageExternalReferences: []*spdx.PackageExternalReference{
					purlRef("pkg:golang/example.com/fork/a@v1.0.1"),
				},
			},
		},
		{
			name: "replaced by a directory",
			dep: debug.Module{Path: "k8s.io/api", Version: "v0.0.0",
				Replace: &debug.Module{Path: "./staging/src/k8s.io/api", Version: "(devel)"}},
			want: spdx.Package{
				PackageVersion:          "v1.37.2-carry.1",
				PackageDownloadLocation: "NOASSERTION",
				PackageComment:          "replaced by the directory ./staging/src/k8s.io/api of the main module's tree, built at abc",
				PackageExternalReferences: []*spdx.PackageExternalReference{
					purlRef("pkg:golang/k8s.io/api@v0.37.2"),
				},
			},
		},
		{
			name: "workspace module",
			dep:  debug.Module{Path: "k8s.io/client-go", Version: "(devel)"},
			want: spdx.Package{
				PackageVersion:          "v1.37.2-carry.1",
				PackageDownloadLocation: "NOASSERTION",
				PackageComment:          "a module of the main module's workspace (go.work), built at abc",
				PackageExternalReferences: []*spdx.PackageExternalReference{
					purlRef("pkg:golang/k8s.io/client-go@v0.37.2"),
				},
			},
		},
		{
			name: "not an h1 sum",
			dep:  debug.Module{Path: "example.com/a", Version: "v1.0.0", Sum: "h2:abc"},
			err:  `checksum "h2:abc" is not an h1: hash`,
		},
		{
			name: "replaced by a module without a version",
			dep:  debug.Module{Path: "example.com/a", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/b", Version: "(devel)"}},
			err:  "no version",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := modulePackage(spec, &tc.dep, idSet{})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			// The fields every module package has alike.
			assert.Equal(t, tc.dep.Path, got.PackageName)
			assert.Equal(t, "LIBRARY", got.PrimaryPackagePurpose)
			got.PackageName, got.PackageSPDXIdentifier, got.PrimaryPackagePurpose = "", "", ""
			got.PackageLicenseConcluded, got.PackageLicenseDeclared, got.PackageCopyrightText = "", "", ""
			assert.Equal(t, tc.want, *got)
		})
	}
}

func TestIDSet(t *testing.T) {
	ids := idSet{}
	assert.Equal(t, common.ElementID("Package-go-module-golang.org-x-mod"), ids.add("Package-go-module-golang.org/x/mod"))
	// Another path that sanitizes to the same ID gets a suffix.
	assert.Equal(t, common.ElementID("Package-go-module-golang.org-x-mod-2"), ids.add("Package-go-module-golang.org/x_mod"))
	assert.Equal(t, common.ElementID("Patch-a.b-c"), ids.add("Patch-a.b~c"))
}
