package release_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/release"
	"github.com/kube-carry/kube-carry/internal/release/releasetest"
)

func sbomSpec(t *testing.T, arch string) release.SBOMSpec {
	return release.SBOMSpec{
		Binary:             bins[arch],
		Version:            version,
		Upstream:           upstream,
		LocalModuleVersion: "v0.37.2",
		Revision:           commit,
		Source:             source,
		Created:            created,
		Patches:            fixturePatches(t),
	}
}

func fileSHA256(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func pkgNamed(t *testing.T, doc *spdx.Document, name string) *spdx.Package {
	t.Helper()
	for _, p := range doc.Packages {
		if p.PackageName == name {
			return p
		}
	}
	t.Fatalf("no package %s in the SBOM", name)
	return nil
}

// related lists the relationships of type typ as "A -> B" element IDs.
func related(doc *spdx.Document, typ string) []string {
	var out []string
	for _, r := range doc.Relationships {
		if r.Relationship == typ {
			out = append(out, string(r.RefA.ElementRefID)+" -> "+string(r.RefB.ElementRefID))
		}
	}
	return out
}

func purls(p *spdx.Package) []string {
	var out []string
	for _, r := range p.PackageExternalReferences {
		if r.RefType == common.TypePackageManagerPURL {
			out = append(out, r.Locator)
		}
	}
	return out
}

func TestSBOMRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kube-scheduler.spdx.json")
	s := sbomSpec(t, "arm64")
	written, err := release.SBOM(s)
	require.NoError(t, err)
	require.NoError(t, release.WriteSBOM(file, written))

	// Parsed back by the library's JSON reader, and valid.
	doc, err := release.ReadSBOM(file)
	require.NoError(t, err)
	require.NoError(t, release.ValidateSBOM(doc))
	binSum := fileSHA256(t, bins["arm64"])

	assert.Equal(t, "SPDX-2.3", doc.SPDXVersion)
	assert.Equal(t, "CC0-1.0", doc.DataLicense)
	assert.Equal(t, "kube-scheduler-"+version+"-linux-arm64", doc.DocumentName)
	assert.Equal(t, "https://github.com/kube-carry/kube-carry/spdx/kube-scheduler-"+version+"-linux-arm64-sha256-"+binSum, doc.DocumentNamespace)
	assert.Equal(t, "2026-10-27T12:01:04Z", doc.CreationInfo.Created)
	assert.Equal(t, []common.Creator{{CreatorType: "Tool", Creator: "kube-carry"}}, doc.CreationInfo.Creators)

	bin := pkgNamed(t, doc, "kube-scheduler")
	assert.Equal(t, version, bin.PackageVersion)
	assert.Equal(t, []common.Checksum{{Algorithm: common.SHA256, Value: binSum}}, bin.PackageChecksums)
	assert.Equal(t, []string{"pkg:golang/k8s.io/kubernetes@" + upstream + "#cmd/kube-scheduler"}, purls(bin))
	assert.Equal(t, source, bin.PackageDownloadLocation)
	assert.Equal(t, "Apache-2.0", bin.PackageLicenseDeclared)
	assert.Contains(t, bin.PackageComment, "GOARCH=arm64")
	assert.Contains(t, bin.PackageComment, "-trimpath=true")
	assert.Contains(t, bin.PackageSourceInfo, commit)

	// The Go version the binary was built with (this toolchain).
	goPkg := pkgNamed(t, doc, "stdlib")
	assert.Equal(t, runtime.Version(), goPkg.PackageVersion)
	assert.Equal(t, []string{"pkg:golang/stdlib@v" + strings.TrimPrefix(runtime.Version(), "go")}, purls(goPkg))

	// A module dependency, with its go.sum hash as SHA-256.
	dm, err := releasetest.DepModule()
	require.NoError(t, err)
	depVersion, sum := dm.Version, dm.Sum
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sum, "h1:"))
	require.NoError(t, err)
	dep := pkgNamed(t, doc, releasetest.Dep)
	assert.Equal(t, depVersion, dep.PackageVersion)
	assert.Equal(t, []common.Checksum{{Algorithm: common.SHA256, Value: hex.EncodeToString(raw)}}, dep.PackageChecksums)
	assert.Contains(t, dep.PackageComment, "go.sum "+sum)
	assert.Equal(t, []string{"pkg:golang/golang.org/x/mod@" + depVersion}, purls(dep))
	assert.Equal(t, "https://proxy.golang.org/golang.org/x/mod/@v/"+depVersion+".zip", dep.PackageDownloadLocation)

	// A staging module (a workspace module of the tree, as Kubernetes
	// builds): the fork's version, upstream's for the package URL.
	staging := pkgNamed(t, doc, "k8s.io/component-base")
	assert.Equal(t, version, staging.PackageVersion)
	assert.Equal(t, "a module of the main module's workspace (go.work), built at "+commit, staging.PackageComment)
	assert.Equal(t, []string{"pkg:golang/k8s.io/component-base@v0.37.2"}, purls(staging))
	assert.Empty(t, staging.PackageChecksums)

	// One package per patch, with its file's SHA-256 and metadata.
	var patchIDs []string
	for i, pf := range releasetest.Patches {
		p := pkgNamed(t, doc, pf.Name)
		patchIDs = append(patchIDs, string(p.PackageSPDXIdentifier)+" -> Package-kube-scheduler")
		assert.Equal(t, []common.Checksum{{Algorithm: common.SHA256, Value: fileSHA256(t, s.Patches[i].File)}}, p.PackageChecksums)
		assert.Equal(t, pf.Subject, p.PackageSummary)
		assert.Equal(t, pf.Trailers[0]+"\n"+pf.Trailers[1], p.PackageComment)
	}
	assert.Equal(t, []string{
		"Patch-volumebinding-local-dynamic-capacity -> Package-kube-scheduler",
		"Patch-scheduler-upstream-fix-guards -> Package-kube-scheduler",
	}, patchIDs)
	assert.Equal(t, patchIDs, related(doc, common.TypeRelationshipPatchApplied))

	assert.Equal(t, []string{"DOCUMENT -> Package-kube-scheduler"}, related(doc, common.TypeRelationshipDescribe))
	assert.Equal(t, []string{
		"Package-kube-scheduler -> Package-go-stdlib",
		"Package-kube-scheduler -> Package-go-module-golang.org-x-mod",
		"Package-kube-scheduler -> Package-go-module-k8s.io-component-base",
	}, related(doc, common.TypeRelationshipDependsOn))
	// The binary, Go, two modules, two patches.
	assert.Len(t, doc.Packages, 6)

	// The same inputs (the patches copied elsewhere) give the same file.
	again := filepath.Join(t.TempDir(), "again.spdx.json")
	doc2, err := release.SBOM(sbomSpec(t, "arm64"))
	require.NoError(t, err)
	require.NoError(t, release.WriteSBOM(again, doc2))
	assert.Equal(t, readFile(t, file), readFile(t, again))
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	return string(b)
}

func TestValidateSBOMRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(*spdx.Document)
		want  string
	}{
		{"version", func(d *spdx.Document) { d.SPDXVersion = "SPDX-2.2" }, "spdxVersion"},
		{"namespace with #", func(d *spdx.Document) { d.DocumentNamespace += "#x" }, "documentNamespace"},
		{"relative namespace", func(d *spdx.Document) { d.DocumentNamespace = "kube-scheduler" }, "documentNamespace"},
		{"created", func(d *spdx.Document) { d.CreationInfo.Created = "2026-10-27" }, "created"},
		{"duplicate ID", func(d *spdx.Document) { d.Packages[1].PackageSPDXIdentifier = d.Packages[0].PackageSPDXIdentifier }, "used twice"},
		{"ID characters", func(d *spdx.Document) { d.Packages[1].PackageSPDXIdentifier = "Package-go/mod" }, "SPDXID"},
		{"checksum", func(d *spdx.Document) { d.Packages[0].PackageChecksums[0].Value = "ABC" }, "checksum"},
		{"no download location", func(d *spdx.Document) { d.Packages[2].PackageDownloadLocation = "" }, "downloadLocation"},
		{"dangling relationship", func(d *spdx.Document) { d.Relationships[1].RefB.ElementRefID = "Package-absent" }, "no such package"},
		{"describes nothing", func(d *spdx.Document) { d.Relationships = d.Relationships[1:] }, "DESCRIBES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := release.SBOM(sbomSpec(t, "amd64"))
			require.NoError(t, err)
			require.NoError(t, release.ValidateSBOM(doc))
			tc.spoil(doc)
			err = release.ValidateSBOM(doc)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestReadStamp(t *testing.T) {
	for _, p := range release.Platforms {
		st, err := release.ReadStamp(bins[p.Arch])
		require.NoError(t, err)
		assert.Equal(t, release.Stamp{
			GoVersion: runtime.Version(),
			Path:      "k8s.io/kubernetes/cmd/kube-scheduler",
			Module:    "k8s.io/kubernetes",
			GOOS:      "linux",
			GOARCH:    p.Arch,
			CGO:       false,
			Trimpath:  true,
		}, *st)
	}
	_, err := release.ReadStamp(filepath.Join("testdata", "absent"))
	require.Error(t, err)
}

func TestCheckStamped(t *testing.T) {
	for _, tc := range []struct {
		name, version, commit, err string
	}{
		{"stamped", version, commit, ""},
		{"other version", "v1.37.2-carry.2", commit, `not stamped with version "v1.37.2-carry.2"`},
		{"other commit", version, "fedcba9876543210fedcba9876543210fedcba98", `not stamped with commit "fedcba9876543210fedcba9876543210fedcba98"`},
		{"neither", "v9.9.9", "", `not stamped with version "v9.9.9" and commit ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := release.CheckStamped(bins["arm64"], tc.version, tc.commit)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}
