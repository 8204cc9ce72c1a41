package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
	"github.com/spdx/tools-golang/spdxlib"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/kube-carry/kube-carry/internal/series"
)

// DefaultNamespaceBase prefixes the SPDX document namespaces: the project's
// URL, so that the namespace is a URI the project owns.
const DefaultNamespaceBase = "https://github.com/kube-carry/kube-carry/spdx"

// Creator is the SPDX tool that creates the documents.
const Creator = "kube-carry"

// noAssertion is SPDX's "the creator makes no claim".
const noAssertion = "NOASSERTION"

// SBOMSpec is what SBOM describes: one binary and how it was made.
type SBOMSpec struct {
	// Binary is the Go binary file.
	Binary string
	// Name is the program (kube-scheduler); the file's name when empty.
	Name string
	// Version is the fork version, vX.Y.Z-carry.N.
	Version string
	// Upstream is the upstream release the tree is, vX.Y.Z. It is the
	// version of the main module's package URL: vulnerability databases
	// know k8s.io/kubernetes@vX.Y.Z, and read vX.Y.Z-carry.N as a
	// pre-release of vX.Y.Z, which it is not.
	Upstream string
	// LocalModuleVersion is the version upstream publishes the modules of
	// the main module's tree under (Kubernetes' staging modules, built as
	// workspace modules or directory replacements: v0.Y.Z for v1.Y.Z); it
	// is their package URLs' version. Empty: no package URL for them.
	LocalModuleVersion string
	// Revision is the patched tree's commit.
	Revision string
	// Source is where the source is (a URL, or a description).
	Source string
	// Created is the document's creation time: the pin's release time, so
	// that the document depends only on its inputs.
	Created time.Time
	// Patches are the series applied to the tree, in apply order; File is
	// the patch file.
	Patches []*series.Patch
	// NamespaceBase prefixes the document namespace; DefaultNamespaceBase
	// when empty.
	NamespaceBase string
}

// idStdlib is the SPDX element ID of the Go standard library's package.
const idStdlib = "Package-go-stdlib"

// develVersion is the version the build info gives a module built from a
// directory: the main module, workspace modules, directory replacements.
const develVersion = "(devel)"

// SBOM describes spec.Binary as an SPDX 2.3 document: one package for the
// binary (the document DESCRIBES it), one for the Go standard library and
// one per module in the binary's build info (the binary DEPENDS_ON them),
// and one per patch of the series (PATCH_APPLIED to the binary: each is a
// patch applied to the source the binary is built from). Replaced modules
// are described as the replacement the binary holds.
func SBOM(spec SBOMSpec) (*spdx.Document, error) {
	if spec.Name == "" {
		spec.Name = filepath.Base(spec.Binary)
	}
	if spec.NamespaceBase == "" {
		spec.NamespaceBase = DefaultNamespaceBase
	}
	switch {
	case spec.Version == "":
		return nil, fmt.Errorf("SBOM of %s: no version", spec.Binary)
	case spec.Created.IsZero():
		return nil, fmt.Errorf("SBOM of %s: no creation time (the pin's release time)", spec.Binary)
	}
	data, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, err
	}
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: no Go build info: %w", spec.Binary, err)
	}
	st := stampOf(bi)
	digest := sha256.Sum256(data)
	hexDigest := hex.EncodeToString(digest[:])

	ids := idSet{}
	docName := fmt.Sprintf("%s-%s-%s-%s", spec.Name, spec.Version, st.GOOS, st.GOARCH)
	doc := &spdx.Document{
		SPDXVersion:    spdx.Version,
		DataLicense:    spdx.DataLicense,
		SPDXIdentifier: "DOCUMENT",
		DocumentName:   docName,
		// The binary's digest makes the namespace unique per binary, and
		// the same on every run for the same binary.
		DocumentNamespace: fmt.Sprintf("%s/%s-sha256-%s", strings.TrimSuffix(spec.NamespaceBase, "/"), docName, hexDigest),
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: Creator}},
			Created:  spec.Created.UTC().Format(time.RFC3339),
		},
	}

	binID := ids.add("Package-" + spec.Name)
	bin := &spdx.Package{
		PackageName:             spec.Name,
		PackageSPDXIdentifier:   binID,
		PackageVersion:          spec.Version,
		PackageFileName:         filepath.Base(spec.Binary),
		PackageDownloadLocation: downloadLocation(spec.Source),
		FilesAnalyzed:           false,
		PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: hexDigest}},
		PackageSourceInfo:       sourceInfo(spec, bi),
		PackageLicenseConcluded: noAssertion,
		PackageLicenseDeclared:  License,
		PackageCopyrightText:    noAssertion,
		PackageComment:          "Go build settings: " + settings(bi),
		PrimaryPackagePurpose:   "APPLICATION",
	}
	if spec.Upstream != "" && bi.Main.Path != "" {
		locator := purl(bi.Main.Path, spec.Upstream)
		if sub, ok := strings.CutPrefix(bi.Path, bi.Main.Path+"/"); ok {
			locator += "#" + sub
		}
		bin.PackageExternalReferences = []*spdx.PackageExternalReference{purlRef(locator)}
	}
	doc.Packages = append(doc.Packages, bin)
	doc.Relationships = append(doc.Relationships, &spdx.Relationship{
		RefA:         common.MakeDocElementID("", "DOCUMENT"),
		RefB:         common.MakeDocElementID("", string(binID)),
		Relationship: common.TypeRelationshipDescribe,
	})
	dependsOn := func(id common.ElementID) {
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA:         common.MakeDocElementID("", string(binID)),
			RefB:         common.MakeDocElementID("", string(id)),
			Relationship: common.TypeRelationshipDependsOn,
		})
	}

	goVersion, _, _ := strings.Cut(bi.GoVersion, " ")
	stdlib := &spdx.Package{
		PackageName:             "stdlib",
		PackageSPDXIdentifier:   ids.add(idStdlib),
		PackageVersion:          goVersion,
		PackageDownloadLocation: "https://go.dev/dl/",
		PackageLicenseConcluded: noAssertion,
		PackageLicenseDeclared:  "BSD-3-Clause",
		PackageCopyrightText:    noAssertion,
		PackageComment:          "the Go toolchain and standard library the binary is built with (" + bi.GoVersion + ")",
		PackageExternalReferences: []*spdx.PackageExternalReference{
			purlRef(purl("stdlib", "v"+strings.TrimPrefix(goVersion, "go"))),
		},
		PrimaryPackagePurpose: "LIBRARY",
	}
	doc.Packages = append(doc.Packages, stdlib)
	dependsOn(stdlib.PackageSPDXIdentifier)

	for _, dep := range bi.Deps {
		p, err := modulePackage(spec, dep, ids)
		if err != nil {
			return nil, fmt.Errorf("%s: module %s: %w", spec.Binary, dep.Path, err)
		}
		doc.Packages = append(doc.Packages, p)
		dependsOn(p.PackageSPDXIdentifier)
	}

	for i, p := range spec.Patches {
		pkg, err := patchPackage(p, ids)
		if err != nil {
			return nil, err
		}
		doc.Packages = append(doc.Packages, pkg)
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA:                common.MakeDocElementID("", string(pkg.PackageSPDXIdentifier)),
			RefB:                common.MakeDocElementID("", string(binID)),
			Relationship:        common.TypeRelationshipPatchApplied,
			RelationshipComment: fmt.Sprintf("patch %d of %d of the series on Kubernetes %s (patched tree %s)", i+1, len(spec.Patches), spec.Upstream, spec.Revision),
		})
	}
	if err := ValidateSBOM(doc); err != nil {
		return nil, fmt.Errorf("SBOM of %s: %w", spec.Binary, err)
	}
	return doc, nil
}

// modulePackage describes one module of the binary's build info, as the
// binary holds it: a module replaced by another module is that module's
// version and checksum. A module of the main module's tree (a Kubernetes
// staging module: a workspace module, or one replaced by a directory) has
// the fork's version, as the patches apply to it too.
func modulePackage(spec SBOMSpec, dep *debug.Module, ids idSet) (*spdx.Package, error) {
	p := &spdx.Package{
		PackageName:             dep.Path,
		PackageSPDXIdentifier:   ids.add("Package-go-module-" + dep.Path),
		PackageVersion:          dep.Version,
		PackageDownloadLocation: noAssertion,
		PackageLicenseConcluded: noAssertion,
		PackageLicenseDeclared:  noAssertion,
		PackageCopyrightText:    noAssertion,
		PrimaryPackagePurpose:   "LIBRARY",
	}
	var local string
	sum, modPath, modVersion := dep.Sum, dep.Path, dep.Version
	switch r := dep.Replace; {
	case r == nil && dep.Version == develVersion:
		local = "a module of the main module's workspace (go.work)"
	case r == nil:
	case modfile.IsDirectoryPath(r.Path):
		local = "replaced by the directory " + r.Path + " of the main module's tree"
	default:
		sum, modPath, modVersion = r.Sum, r.Path, r.Version
		p.PackageVersion = r.Version
		p.PackageComment = fmt.Sprintf("replaced: %s %s => %s %s", dep.Path, dep.Version, r.Path, r.Version)
	}
	if local != "" {
		p.PackageVersion = spec.Version
		p.PackageComment = local
		if spec.Revision != "" {
			p.PackageComment += ", built at " + spec.Revision
		}
		if spec.LocalModuleVersion != "" {
			p.PackageExternalReferences = []*spdx.PackageExternalReference{purlRef(purl(dep.Path, spec.LocalModuleVersion))}
		}
		return p, nil
	}
	if modVersion == "" || modVersion == develVersion {
		return nil, fmt.Errorf("no version")
	}
	if sum != "" {
		// The go.sum h1: hash is base64 SHA-256 (over the module's
		// dirhash), the form other SBOM tools (syft) give it in too;
		// the comment keeps it as go.sum has it.
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sum, "h1:"))
		if !strings.HasPrefix(sum, "h1:") || err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("checksum %q is not an h1: hash", sum)
		}
		p.PackageChecksums = []common.Checksum{{Algorithm: common.SHA256, Value: hex.EncodeToString(raw)}}
		p.PackageComment = strings.TrimPrefix(p.PackageComment+"; go.sum "+sum, "; ")
	}
	if ep, err := module.EscapePath(modPath); err == nil {
		if ev, err := module.EscapeVersion(modVersion); err == nil {
			p.PackageDownloadLocation = "https://proxy.golang.org/" + ep + "/@v/" + ev + ".zip"
		}
	}
	p.PackageExternalReferences = []*spdx.PackageExternalReference{purlRef(purl(modPath, modVersion))}
	return p, nil
}

// patchPackage describes one patch of the series: the patch file, by its
// name and SHA-256, with its subject and upstream status.
func patchPackage(p *series.Patch, ids idSet) (*spdx.Package, error) {
	data, err := os.ReadFile(p.File)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	name := filepath.Base(p.File)
	var bugs []string
	for _, t := range p.Trailers {
		if t.Key == "Bug" {
			bugs = append(bugs, t.Value)
		}
	}
	comment := "Upstream-Status: " + trailer(p, "Upstream-Status")
	for _, b := range bugs {
		comment += "\nBug: " + b
	}
	return &spdx.Package{
		PackageName:             name,
		PackageSPDXIdentifier:   ids.add("Patch-" + strings.TrimSuffix(name, ".patch")),
		PackageFileName:         name,
		PackageDownloadLocation: noAssertion,
		PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: hex.EncodeToString(sum[:])}},
		PackageLicenseConcluded: noAssertion,
		PackageLicenseDeclared:  noAssertion,
		PackageCopyrightText:    noAssertion,
		PackageSummary:          p.Subject,
		PackageComment:          comment,
		PrimaryPackagePurpose:   "SOURCE",
	}, nil
}

// trailer is the first value of the patch's trailer key.
func trailer(p *series.Patch, key string) string {
	for _, t := range p.Trailers {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

func sourceInfo(spec SBOMSpec, bi *debug.BuildInfo) string {
	s := fmt.Sprintf("built from %s", bi.Path)
	if spec.Upstream != "" {
		s += fmt.Sprintf(" of Kubernetes %s with %d patches applied", spec.Upstream, len(spec.Patches))
	}
	if spec.Revision != "" {
		s += ", tree commit " + spec.Revision
	}
	if spec.Source != "" {
		s += "; source: " + spec.Source
	}
	return s
}

func settings(bi *debug.BuildInfo) string {
	var kv []string
	for _, s := range bi.Settings {
		kv = append(kv, s.Key+"="+s.Value)
	}
	return strings.Join(kv, " ")
}

// downloadLocation is source when it is a URL, else NOASSERTION: SPDX
// wants a location there, not a description.
func downloadLocation(source string) string {
	if u, err := url.Parse(source); err == nil && u.Scheme != "" && u.Host != "" {
		return source
	}
	return noAssertion
}

// purl is the package URL of a Go module or the standard library
// (pkg:golang/<path>@<version>), escaped as the purl spec wants.
func purl(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = purlEscape(s)
	}
	return "pkg:golang/" + strings.Join(segs, "/") + "@" + purlEscape(version)
}

func purlEscape(s string) string { return strings.ReplaceAll(url.PathEscape(s), "+", "%2B") }

func purlRef(locator string) *spdx.PackageExternalReference {
	return &spdx.PackageExternalReference{Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: locator}
}

// idSet hands out SPDX element IDs: only letters, digits, '.' and '-',
// unique within the document.
type idSet map[common.ElementID]bool

var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func (s idSet) add(want string) common.ElementID {
	base := idUnsafe.ReplaceAllString(want, "-")
	id := common.ElementID(base)
	for n := 2; s[id]; n++ {
		id = common.ElementID(fmt.Sprintf("%s-%d", base, n))
	}
	s[id] = true
	return id
}

var (
	idRE       = regexp.MustCompile(`^[A-Za-z0-9.-]+$`)
	checksumRE = map[common.ChecksumAlgorithm]*regexp.Regexp{
		common.SHA1:   regexp.MustCompile(`^[0-9a-f]{40}$`),
		common.SHA256: regexp.MustCompile(`^[0-9a-f]{64}$`),
	}
)

// ValidateSBOM checks what SPDX 2.3 requires of the documents SBOM writes,
// beyond what the library's spdxlib.ValidateDocument checks (that every
// relationship names an element of the document): document fields, unique
// and well-formed element IDs, package download locations, checksum
// formats, and that the document describes a package.
func ValidateSBOM(doc *spdx.Document) error {
	switch {
	case doc.SPDXVersion != spdx.Version:
		return fmt.Errorf("spdxVersion %q, want %s", doc.SPDXVersion, spdx.Version)
	case doc.DataLicense != spdx.DataLicense:
		return fmt.Errorf("dataLicense %q, want %s", doc.DataLicense, spdx.DataLicense)
	case doc.SPDXIdentifier != "DOCUMENT":
		return fmt.Errorf("SPDXID %q, want SPDXRef-DOCUMENT", doc.SPDXIdentifier)
	case doc.DocumentName == "":
		return fmt.Errorf("no document name")
	case doc.CreationInfo == nil || len(doc.CreationInfo.Creators) == 0:
		return fmt.Errorf("no creators")
	}
	if u, err := url.Parse(doc.DocumentNamespace); err != nil || !u.IsAbs() || strings.Contains(doc.DocumentNamespace, "#") {
		return fmt.Errorf("documentNamespace %q: want an absolute URI without #", doc.DocumentNamespace)
	}
	if _, err := time.Parse("2006-01-02T15:04:05Z", doc.CreationInfo.Created); err != nil {
		return fmt.Errorf("created %q: want YYYY-MM-DDThh:mm:ssZ", doc.CreationInfo.Created)
	}
	seen := map[common.ElementID]bool{}
	for _, p := range doc.Packages {
		id := p.PackageSPDXIdentifier
		switch {
		case !idRE.MatchString(string(id)):
			return fmt.Errorf("package %q: SPDXID %q: want letters, digits, '.' and '-'", p.PackageName, id)
		case seen[id]:
			return fmt.Errorf("SPDXID %s used twice", id)
		case p.PackageName == "":
			return fmt.Errorf("package %s has no name", id)
		case p.PackageDownloadLocation == "":
			return fmt.Errorf("package %s has no downloadLocation", id)
		}
		seen[id] = true
		for _, c := range p.PackageChecksums {
			re, ok := checksumRE[c.Algorithm]
			if !ok || !re.MatchString(c.Value) {
				return fmt.Errorf("package %s: checksum %s %q: want lower-case hex of the algorithm's size", id, c.Algorithm, c.Value)
			}
		}
	}
	for _, r := range doc.Relationships {
		if r.Relationship == "" {
			return fmt.Errorf("relationship %v -> %v has no type", r.RefA, r.RefB)
		}
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		return err
	}
	if _, err := spdxlib.GetDescribedPackageIDs(doc); err != nil {
		return err
	}
	return nil
}

// WriteSBOM writes doc as SPDX JSON to file.
func WriteSBOM(file string, doc *spdx.Document) error {
	return writeAtomic(file, func(w io.Writer) error {
		return spdxjson.Write(doc, w, spdxjson.Indent("  "), spdxjson.EscapeHTML(false))
	})
}

// ReadSBOM reads an SPDX JSON document with the library's reader, as an
// SPDX 2.3 document.
func ReadSBOM(file string) (*spdx.Document, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc := &spdx.Document{}
	if err := spdxjson.ReadInto(f, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return doc, nil
}
