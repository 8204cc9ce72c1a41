// Package release makes what operators deploy from a line's cross-compiled
// binaries: the kube-scheduler OCI image (an image layout, an OCI archive of
// it and a docker-archive per architecture), an SPDX SBOM per binary,
// release notes from the patches' trailers, and SHA256SUMS over all of it.
//
// Everything is reproducible: the only clock is the pin's upstream release
// time, every archive is written in a fixed order with fixed owners and
// modes, and nothing about the host (user, paths, time) goes in. Two runs
// on the same binaries with the same Go toolchain give byte-identical
// files; the compressed layers depend on the toolchain's compress/flate,
// the uncompressed layers (diff IDs) do not.
package release

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as: not root, and the uid/gid distroless uses for
// "nonroot", so that Pod securityContexts written for distroless-based
// upstream images (runAsUser: 65532) work unchanged.
const (
	UID      = 65532
	GID      = 65532
	UserName = "nonroot"
)

// BinDir is where the image holds its binary.
const BinDir = "/usr/local/bin"

// License is the SPDX license of Kubernetes and of the fork's patches.
const License = "Apache-2.0"

// OCI annotation and label keys (image-spec annotations.md).
const (
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
	LabelLicenses = "org.opencontainers.image.licenses"
	// AnnotationRefName on a descriptor of a layout's index.json is the
	// tag (image-spec); `skopeo ... oci:DIR:<tag>` selects by it.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationImageName is the full image name containerd gives the image
	// on import (`ctr images import`, `kind load image-archive`); docker
	// load of an OCI archive reads it too. BuildKit's OCI exporter writes
	// both annotations the same way.
	AnnotationImageName = "io.containerd.image.name"
)

// Platform is a target of the release.
type Platform struct {
	OS, Arch string
}

// Platforms are the release's targets, in the order of the image index.
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}

// String is os/arch, as in `docker --platform`.
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Dir is the release directory of the platform's binaries: os-arch.
func (p Platform) Dir() string { return p.OS + "-" + p.Arch }

// ParsePlatform parses os/arch.
func ParsePlatform(s string) (Platform, error) {
	goos, arch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/arm64", s)
	}
	return Platform{goos, arch}, nil
}

// Binary is one platform's build of the image's program.
type Binary struct {
	Platform Platform
	// Path is the file on disk.
	Path string
}

// ImageSpec is what BuildIndex builds: one image of one program per
// platform, on the minimal base of this package.
type ImageSpec struct {
	// Name is the program, its file name in the image and the image
	// title: kube-scheduler.
	Name string
	// Version is the fork version, vX.Y.Z-carry.N.
	Version string
	// Revision is the commit of the patched tree the binaries are built from.
	Revision string
	// Source says where the source is (a URL, or a description).
	Source string
	// Created is the upstream release time from the pin: the image's
	// creation time and the time of every file in it, so that the image
	// depends only on its inputs.
	Created time.Time
	// Binaries are the program per platform; each must be a static ELF
	// binary for its architecture.
	Binaries []Binary
}

// Labels are the image config's labels.
func (s ImageSpec) Labels() map[string]string {
	return map[string]string{
		LabelVersion:  s.Version,
		LabelRevision: s.Revision,
		LabelSource:   s.Source,
		LabelCreated:  s.Created.UTC().Format(time.RFC3339),
		LabelTitle:    s.Name,
		LabelLicenses: License,
	}
}

// Entrypoint is the path of the program in the image.
func (s ImageSpec) Entrypoint() string { return path.Join(BinDir, s.Name) }

func (s ImageSpec) validate() error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, "/ "):
		return fmt.Errorf("image: program name %q: want a file name like kube-scheduler", s.Name)
	case s.Version == "":
		return fmt.Errorf("image %s: no version", s.Name)
	case s.Revision == "":
		return fmt.Errorf("image %s: no revision (the patched tree's commit)", s.Name)
	case s.Created.IsZero():
		return fmt.Errorf("image %s: no creation time (the pin's release time)", s.Name)
	case len(s.Binaries) == 0:
		return fmt.Errorf("image %s: no binaries", s.Name)
	}
	seen := map[Platform]bool{}
	for _, b := range s.Binaries {
		if seen[b.Platform] {
			return fmt.Errorf("image %s: two binaries for %s", s.Name, b.Platform)
		}
		seen[b.Platform] = true
		if b.Platform.OS != "linux" {
			return fmt.Errorf("image %s: platform %s: only linux images are built", s.Name, b.Platform)
		}
		// The base has no libc and no dynamic loader: a binary that is
		// not static, or not for the platform, would fail only when a
		// node runs it.
		if err := CheckELF(b.Path, b.Platform.Arch); err != nil {
			return fmt.Errorf("image %s for %s: %w", s.Name, b.Platform, err)
		}
	}
	return nil
}

// BuildIndex builds the multi-platform image index of spec: an OCI image
// index with one OCI image per platform, sorted by platform. Each image has
// two layers: the base (users, groups, /tmp; the same layer on every
// platform) and the program at BinDir/<name>, mode 0755.
//
// Each binary is read to digest its layer here, and read again whenever
// the layer is read uncompressed (the compressed layer is kept in memory),
// so the files must not change until the index is written; a binary whose
// size changed fails the write.
func BuildIndex(spec ImageSpec) (v1.ImageIndex, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	bins := slices.Clone(spec.Binaries)
	slices.SortFunc(bins, func(a, b Binary) int { return strings.Compare(a.Platform.String(), b.Platform.String()) })

	base, err := layerOf(func(tw *tar.Writer) error { return writeBase(tw, spec.Created) })
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, b := range bins {
		img, err := buildImage(spec, b, base)
		if err != nil {
			return nil, fmt.Errorf("image %s for %s: %w", spec.Name, b.Platform, err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				Platform: &v1.Platform{OS: b.Platform.OS, Architecture: b.Platform.Arch},
			},
		})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

func buildImage(spec ImageSpec, b Binary, base v1.Layer) (v1.Image, error) {
	st, err := os.Stat(b.Path)
	if err != nil {
		return nil, err
	}
	bin, err := layerOf(func(tw *tar.Writer) error { return writeProgram(tw, spec, b.Path, st.Size()) })
	if err != nil {
		return nil, fmt.Errorf("program layer: %w", err)
	}
	created := v1.Time{Time: spec.Created.UTC()}
	cfg := &v1.ConfigFile{
		Architecture: b.Platform.Arch,
		OS:           b.Platform.OS,
		Created:      created,
		Config: v1.Config{
			User:       fmt.Sprintf("%d:%d", UID, GID),
			Entrypoint: []string{spec.Entrypoint()},
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			WorkingDir: "/",
			Labels:     spec.Labels(),
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "kube-carry: base: users root, nobody, " + UserName + "; /tmp"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: created, CreatedBy: fmt.Sprintf("kube-carry: %s %s", spec.Entrypoint(), spec.Version)}},
	)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// layerOf makes a gzip OCI layer whose tar stream write produces. The
// stream is produced again whenever the layer is read uncompressed;
// write must therefore give the same bytes every time.
func layerOf(write func(*tar.Writer) error) (v1.Layer, error) {
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			tw := tar.NewWriter(pw)
			err := write(tw)
			if err == nil {
				err = tw.Close()
			}
			pw.CloseWithError(err)
		}()
		return pr, nil
	}
	return tarball.LayerFromOpener(opener, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// entry is one file or directory of a layer.
type entry struct {
	name     string // relative, directories end in /
	mode     int64
	uid, gid int
	data     string
}

// Base files: enough for a static Go program to run as a non-root user and
// for tools that resolve the user by name (ps, kubectl debug, id).
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// baseEntries, sorted by name (tar readers do not need the order, but a
// fixed order is what makes the layer reproducible).
var baseEntries = []entry{
	{name: "etc/", mode: 0o755},
	{name: "etc/group", mode: 0o644, data: group},
	{name: "etc/passwd", mode: 0o644, data: passwd},
	{name: "home/", mode: 0o755},
	{name: "home/nonroot/", mode: 0o700, uid: UID, gid: GID},
	{name: "root/", mode: 0o700},
	// Sticky and world-writable, as on any Linux system: Go's os.TempDir
	// and anything that writes scratch files expect it.
	{name: "tmp/", mode: 0o1777},
}

func header(e entry, size int64, mtime time.Time) *tar.Header {
	h := &tar.Header{
		Name: e.name,
		Mode: e.mode,
		Uid:  e.uid,
		Gid:  e.gid,
		// No user or group names: they would come from the host otherwise
		// and the image's /etc/passwd is what names them.
		ModTime: mtime.UTC(),
		// USTAR carries no access or change time and whole seconds only.
		Format: tar.FormatUSTAR,
	}
	if strings.HasSuffix(e.name, "/") {
		h.Typeflag = tar.TypeDir
	} else {
		h.Typeflag = tar.TypeReg
		h.Size = size
	}
	return h
}

func writeBase(tw *tar.Writer, mtime time.Time) error {
	for _, e := range baseEntries {
		if err := tw.WriteHeader(header(e, int64(len(e.data)), mtime)); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, e.data); err != nil {
			return err
		}
	}
	return nil
}

func writeProgram(tw *tar.Writer, spec ImageSpec, file string, size int64) error {
	for _, dir := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(header(entry{name: dir, mode: 0o755}, 0, spec.Created)); err != nil {
			return err
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(header(entry{name: strings.TrimPrefix(spec.Entrypoint(), "/"), mode: 0o755}, size, spec.Created)); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%s changed while the image was built (%d bytes, was %d)", file, n, size)
	}
	return nil
}

// ImageRef is the image's name, <registry>/<name>:<version>. registry is a
// registry host with an optional repository path, e.g.
// registry.example.com/kube-carry.
func ImageRef(registry, program, version string) (name.Tag, error) {
	registry = strings.TrimSuffix(registry, "/")
	if registry == "" {
		return name.Tag{}, fmt.Errorf("no registry: give the registry (and path) the image is named for, e.g. registry.example.com/kube-carry")
	}
	s := registry + "/" + program + ":" + version
	// Strict: no defaulting to Docker Hub or to :latest, so that the name
	// in the archives is exactly the one given.
	t, err := name.NewTag(s, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image name %s: %w", s, err)
	}
	return t, nil
}
