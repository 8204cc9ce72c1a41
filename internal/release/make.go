package release

// Make, the workflow of `carry release`: what operators deploy, made from a
// line's cross-compiled binaries.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// The release directory. The binaries are inputs, in one folder per
// platform (Platform.Dir); everything else is written by Make.
const (
	// ImageProgram is the program the image runs.
	ImageProgram = "kube-scheduler"
	// LayoutName is the image's OCI layout, ArchiveName the same as an OCI
	// archive.
	LayoutName  = ImageProgram + ".oci"
	ArchiveName = ImageProgram + ".oci.tar"
	// NotesName is the release notes.
	NotesName = "RELEASE-NOTES.md"
	// SBOMSuffix names the SBOM of a binary: <binary><SBOMSuffix>.
	SBOMSuffix = ".spdx.json"
)

// DockerArchiveName is the docker-archive of platform p's image.
func DockerArchiveName(p Platform) string {
	return ImageProgram + "." + p.Dir() + ".docker.tar"
}

// Make makes line l's release in dir from the binaries cross-compiled into
// its platform folders: the image (OCI layout and archive, a docker-archive
// per platform) named for registry, an SBOM per binary, the release notes
// and the sums of every file. source is the image's and SBOMs' source.
// progress reports the image and the files written.
func Make(l line.Line, dir, registry, source string, progress func(format string, args ...any)) error {
	version, p, err := l.Version()
	if err != nil {
		return err
	}
	commit, err := releaseCommit(l, p)
	if err != nil {
		return err
	}
	patches, err := seriesPatches(l)
	if err != nil {
		return err
	}
	ref, err := ImageRef(registry, ImageProgram, version)
	if err != nil {
		return err
	}
	bins, err := releaseBinaries(dir, version, commit)
	if err != nil {
		return err
	}
	if err := cleanRelease(dir); err != nil {
		return err
	}

	var imageBins []Binary
	for _, b := range bins {
		if filepath.Base(b.Path) == ImageProgram {
			imageBins = append(imageBins, b)
		}
	}
	idx, err := BuildIndex(ImageSpec{
		Name:     ImageProgram,
		Version:  version,
		Revision: commit,
		Source:   source,
		Created:  p.Date,
		Binaries: imageBins,
	})
	if err != nil {
		return err
	}
	layoutDir := filepath.Join(dir, LayoutName)
	if err := writeLayout(layoutDir, idx, ref); err != nil {
		return err
	}
	if err := WriteOCIArchive(filepath.Join(dir, ArchiveName), layoutDir, p.Date); err != nil {
		return err
	}
	for _, b := range imageBins {
		img, err := ImageFor(idx, b.Platform)
		if err != nil {
			return err
		}
		if err := WriteDockerArchive(filepath.Join(dir, DockerArchiveName(b.Platform)), ref, img); err != nil {
			return err
		}
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	progress("release: %s@%s (%s)", ref, digest, platformList(imageBins))

	staging, err := pin.StagingVersion(p.Version)
	if err != nil {
		return err
	}
	for _, b := range bins {
		doc, err := SBOM(SBOMSpec{
			Binary:             b.Path,
			Version:            version,
			Upstream:           p.Version,
			LocalModuleVersion: staging,
			Revision:           commit,
			Source:             source,
			Created:            p.Date,
			Patches:            patches,
		})
		if err != nil {
			return err
		}
		if err := WriteSBOM(b.Path+SBOMSuffix, doc); err != nil {
			return err
		}
	}

	sums, err := SumFiles(dir)
	if err != nil {
		return err
	}
	summary, err := Summarize(idx, ref.String())
	if err != nil {
		return err
	}
	notes := &Notes{
		Line:     l.Name,
		Version:  version,
		Upstream: p.Version,
		Released: p.Date,
		Revision: commit,
		Source:   source,
		Image:    summary,
		// The layout's blobs are in the OCI archive and SHA256SUMS; the
		// notes list the files one downloads.
		Artifacts: slices.DeleteFunc(sums, func(s Sum) bool {
			return strings.HasPrefix(s.Path, LayoutName+"/") || s.Path == NotesName
		}),
		Patches: patches,
	}
	if err := os.WriteFile(filepath.Join(dir, NotesName), notes.Markdown(), 0o644); err != nil {
		return err
	}
	all, err := WriteSums(dir)
	if err != nil {
		return err
	}
	progress("release: wrote %s: %d files in %s", filepath.Join(dir, SumsName), len(all), dir)
	return nil
}

// releaseCommit is the commit of line l's patched tree, which must hold
// the pinned release and nothing uncommitted: the image's revision label
// and the SBOMs name it.
func releaseCommit(l line.Line, p *pin.Pin) (string, error) {
	t, err := tree.Open(l.TreeDir())
	if err != nil {
		return "", err
	}
	if _, v, err := t.Base(); err != nil {
		return "", err
	} else if v != p.Version {
		return "", fmt.Errorf("%s: the tree is upstream %s, the line pins %s", l.TreeDir(), v, p.Version)
	}
	dirty, err := t.Dirty()
	if err != nil {
		return "", err
	}
	if len(dirty) > 0 {
		return "", fmt.Errorf("%s: uncommitted changes (%s); a release is made from a clean tree", l.TreeDir(), strings.Join(dirty, ", "))
	}
	return t.Line("rev-parse", "HEAD")
}

// seriesPatches are the patches of line l's series, in order.
func seriesPatches(l line.Line) ([]*series.Patch, error) {
	s, err := series.Read(l.SeriesFile())
	if err != nil {
		return nil, err
	}
	var out []*series.Patch
	for _, e := range s.Entries {
		p, err := series.ReadPatch(s.Path(e))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// releaseBinaries finds the binaries in dir's platform folders and checks
// each is what the release says it is: a static binary of its platform,
// built -trimpath and stamped with version and commit.
func releaseBinaries(dir, version, commit string) ([]Binary, error) {
	var bins []Binary
	var problems []string
	for _, p := range Platforms {
		pdir := filepath.Join(dir, p.Dir())
		entries, err := os.ReadDir(pdir)
		if err != nil {
			return nil, fmt.Errorf("%w (cross-compile the binaries into %s/<platform>/ first)", err, dir)
		}
		found := false
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), SBOMSuffix) || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			file := filepath.Join(pdir, e.Name())
			if !e.Type().IsRegular() {
				problems = append(problems, file+": not a regular file")
				continue
			}
			found = found || e.Name() == ImageProgram
			if err := CheckELF(file, p.Arch); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			st, err := ReadStamp(file)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			for _, c := range []struct{ what, got, want string }{
				{"GOOS/GOARCH", st.GOOS + "/" + st.GOARCH, p.String()},
				{"cgo", fmt.Sprint(st.CGO), "false"},
				{"-trimpath", fmt.Sprint(st.Trimpath), "true"},
			} {
				if c.got != c.want {
					problems = append(problems, fmt.Sprintf("%s: %s is %s, want %s", file, c.what, c.got, c.want))
				}
			}
			if err := CheckStamped(file, version, commit); err != nil {
				problems = append(problems, err.Error())
			}
			bins = append(bins, Binary{Platform: p, Path: file})
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s: no %s", pdir, ImageProgram))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the release binaries (build them from the clean patched tree with `carry ldflags`, CGO_ENABLED=0, -trimpath):\n  %s", strings.Join(problems, "\n  "))
	}
	return bins, nil
}

// cleanRelease refuses files in dir that `carry release` does not know
// (everything in dir goes in SumsName), then removes the SBOMs an earlier
// run wrote: a binary removed since must not keep one. The other outputs
// are replaced as they are written.
func cleanRelease(dir string) error {
	known := map[string]bool{LayoutName: true, ArchiveName: true, NotesName: true, SumsName: true}
	for _, p := range Platforms {
		known[p.Dir()] = true
		known[DockerArchiveName(p)] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var unknown []string
	for _, e := range entries {
		if !known[e.Name()] {
			unknown = append(unknown, e.Name())
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%s: not release files: %s; the release directory holds only the platform folders and what `carry release` writes", dir, strings.Join(unknown, ", "))
	}
	for _, p := range Platforms {
		sboms, err := filepath.Glob(filepath.Join(dir, p.Dir(), "*"+SBOMSuffix))
		if err != nil {
			return err
		}
		for _, s := range sboms {
			if err := os.Remove(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeLayout replaces the layout at dir: written beside it, then moved in
// place, so that an interrupted release leaves the old one or none.
func writeLayout(dir string, idx v1.ImageIndex, ref name.Tag) error {
	tmp := line.Aside(dir, line.StageNew)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := WriteLayout(tmp, idx, ref); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// platformList names the platforms of bins, for messages.
func platformList(bins []Binary) string {
	var out []string
	for _, b := range bins {
		out = append(out, b.Platform.String())
	}
	return strings.Join(out, ", ")
}
