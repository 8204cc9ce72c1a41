package main

// The release commands: what operators deploy, made from the line's
// cross-compiled binaries (internal/release does the work).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kube-carry/kube-carry/internal/pin"
	"github.com/kube-carry/kube-carry/internal/release"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// The release directory. The binaries are inputs, in one folder per
// platform; everything else is written by `carry release`.
const (
	// imageProgram is the program the image runs.
	imageProgram = "kube-scheduler"
	layoutName   = imageProgram + ".oci"
	archiveName  = imageProgram + ".oci.tar"
	notesName    = "RELEASE-NOTES.md"
	sbomSuffix   = ".spdx.json"
	// defaultSource is the image's org.opencontainers.image.source.
	defaultSource = "https://github.com/kube-carry/kube-carry"
)

func dockerArchiveName(p release.Platform) string {
	return imageProgram + "." + p.Dir() + ".docker.tar"
}

const releaseUsage = `release -dir DIR -registry REGISTRY [-source URL]: make the line's release from the binaries
      cross-compiled (as scripts/build.sh builds, stamped by ` + "`carry ldflags`" + ` from the clean patched tree) into
      DIR/linux-amd64/ and DIR/linux-arm64/ (kube-scheduler in both; every file there is a release binary).
      REGISTRY is where the image is named for (host[/path]): REGISTRY/kube-scheduler:vX.Y.Z-carry.N. Writes:
        DIR/linux-<arch>/<binary>.spdx.json         SPDX 2.3 SBOM of each binary (modules, Go, the patches applied)
        DIR/kube-scheduler.oci/                     OCI image layout: the linux/amd64+arm64 image index, non-root (65532)
        DIR/kube-scheduler.oci.tar                  it as an OCI archive: ctr images import, kind load image-archive, docker load
        DIR/kube-scheduler.linux-<arch>.docker.tar  docker-archive of one platform's image: docker load
        DIR/RELEASE-NOTES.md                        the patches (what each fixes, upstream status, bug, tests), image, sums
        DIR/SHA256SUMS                              every file under DIR: sha256sum --check SHA256SUMS
      Reproducible: the same binaries give the same files.`

const pushUsage = `push -layout DIR [-registry REGISTRY]: push the image index of an OCI layout that ` + "`carry release`" + ` wrote
      (DIR/kube-scheduler.oci) to the name it was made for, or to REGISTRY/kube-scheduler:<its tag>, with the
      credentials of docker/podman login; print the digest (the same as the layout's)`

func init() {
	commands["release"] = command{usage: releaseUsage, run: cmdRelease}
	commands["push"] = command{usage: pushUsage, run: cmdPush, noLine: true}
}

func cmdRelease(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	dir := fs.String("dir", "", "the release directory")
	registry := fs.String("registry", "", "the registry (host[/path]) the image is named for")
	source := fs.String("source", defaultSource, "the source of the release, for the image label and SBOMs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *registry == "" || fs.NArg() != 0 {
		return errors.New("usage: carry " + strings.SplitN(releaseUsage, ":", 2)[0])
	}
	version, p, err := ln.Version()
	if err != nil {
		return err
	}
	commit, err := releaseCommit(p)
	if err != nil {
		return err
	}
	patches, err := seriesPatches()
	if err != nil {
		return err
	}
	ref, err := release.ImageRef(*registry, imageProgram, version)
	if err != nil {
		return err
	}
	bins, err := releaseBinaries(*dir, version, commit)
	if err != nil {
		return err
	}
	if err := cleanRelease(*dir); err != nil {
		return err
	}

	var imageBins []release.Binary
	for _, b := range bins {
		if filepath.Base(b.Path) == imageProgram {
			imageBins = append(imageBins, b)
		}
	}
	idx, err := release.BuildIndex(release.ImageSpec{
		Name:     imageProgram,
		Version:  version,
		Revision: commit,
		Source:   *source,
		Created:  p.Date,
		Binaries: imageBins,
	})
	if err != nil {
		return err
	}
	layoutDir := filepath.Join(*dir, layoutName)
	if err := writeLayout(layoutDir, idx, ref); err != nil {
		return err
	}
	if err := release.WriteOCIArchive(filepath.Join(*dir, archiveName), layoutDir, p.Date); err != nil {
		return err
	}
	for _, b := range imageBins {
		img, err := release.ImageFor(idx, b.Platform)
		if err != nil {
			return err
		}
		if err := release.WriteDockerArchive(filepath.Join(*dir, dockerArchiveName(b.Platform)), ref, img); err != nil {
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
		doc, err := release.SBOM(release.SBOMSpec{
			Binary:             b.Path,
			Version:            version,
			Upstream:           p.Version,
			LocalModuleVersion: staging,
			Revision:           commit,
			Source:             *source,
			Created:            p.Date,
			Patches:            patches,
		})
		if err != nil {
			return err
		}
		if err := release.WriteSBOM(b.Path+sbomSuffix, doc); err != nil {
			return err
		}
	}

	sums, err := release.SumFiles(*dir)
	if err != nil {
		return err
	}
	summary, err := release.Summarize(idx, ref.String())
	if err != nil {
		return err
	}
	notes := &release.Notes{
		Line:     ln.Name,
		Version:  version,
		Upstream: p.Version,
		Released: p.Date,
		Revision: commit,
		Source:   *source,
		Image:    summary,
		// The layout's blobs are in the OCI archive and SHA256SUMS; the
		// notes list the files one downloads.
		Artifacts: slices.DeleteFunc(sums, func(s release.Sum) bool {
			return strings.HasPrefix(s.Path, layoutName+"/") || s.Path == notesName
		}),
		Patches: patches,
	}
	if err := os.WriteFile(filepath.Join(*dir, notesName), notes.Markdown(), 0o644); err != nil {
		return err
	}
	all, err := release.WriteSums(*dir)
	if err != nil {
		return err
	}
	progress("release: wrote %s: %d files in %s", filepath.Join(*dir, release.SumsName), len(all), *dir)
	return nil
}

// releaseCommit is the commit of the line's patched tree, which must hold
// the pinned release and nothing uncommitted: the image's revision label
// and the SBOMs name it.
func releaseCommit(p *pin.Pin) (string, error) {
	t, err := tree.Open(ln.TreeDir())
	if err != nil {
		return "", err
	}
	if _, v, err := t.Base(); err != nil {
		return "", err
	} else if v != p.Version {
		return "", fmt.Errorf("%s: the tree is upstream %s, the line pins %s", ln.TreeDir(), v, p.Version)
	}
	dirty, err := t.Dirty()
	if err != nil {
		return "", err
	}
	if len(dirty) > 0 {
		return "", fmt.Errorf("%s: uncommitted changes (%s); a release is made from a clean tree", ln.TreeDir(), strings.Join(dirty, ", "))
	}
	return t.Line("rev-parse", "HEAD")
}

func seriesPatches() ([]*series.Patch, error) {
	s, err := series.Read(ln.SeriesFile())
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
func releaseBinaries(dir, version, commit string) ([]release.Binary, error) {
	var bins []release.Binary
	var problems []string
	for _, p := range release.Platforms {
		pdir := filepath.Join(dir, p.Dir())
		entries, err := os.ReadDir(pdir)
		if err != nil {
			return nil, fmt.Errorf("%w (cross-compile the binaries into %s/<platform>/ first)", err, dir)
		}
		found := false
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), sbomSuffix) || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			file := filepath.Join(pdir, e.Name())
			if !e.Type().IsRegular() {
				problems = append(problems, file+": not a regular file")
				continue
			}
			found = found || e.Name() == imageProgram
			if err := release.CheckELF(file, p.Arch); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			st, err := release.ReadStamp(file)
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
			if err := release.CheckStamped(file, version, commit); err != nil {
				problems = append(problems, err.Error())
			}
			bins = append(bins, release.Binary{Platform: p, Path: file})
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s: no %s", pdir, imageProgram))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the release binaries (build them from the clean patched tree with `carry ldflags`, CGO_ENABLED=0, -trimpath):\n  %s", strings.Join(problems, "\n  "))
	}
	return bins, nil
}

// cleanRelease refuses files in dir that `carry release` does not know
// (everything in dir goes in SHA256SUMS), then removes the SBOMs an earlier
// run wrote: a binary removed since must not keep one. The other outputs
// are replaced as they are written.
func cleanRelease(dir string) error {
	known := map[string]bool{layoutName: true, archiveName: true, notesName: true, release.SumsName: true}
	for _, p := range release.Platforms {
		known[p.Dir()] = true
		known[dockerArchiveName(p)] = true
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
	for _, p := range release.Platforms {
		sboms, err := filepath.Glob(filepath.Join(dir, p.Dir(), "*"+sbomSuffix))
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
	tmp := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".new")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := release.WriteLayout(tmp, idx, ref); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

func platformList(bins []release.Binary) string {
	var out []string
	for _, b := range bins {
		out = append(out, b.Platform.String())
	}
	return strings.Join(out, ", ")
}

func cmdPush(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	layoutDir := fs.String("layout", "", "the OCI layout carry release wrote")
	registry := fs.String("registry", "", "push to REGISTRY/<image>:<tag> instead of the name the layout was made for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *layoutDir == "" || fs.NArg() != 0 {
		return errors.New("usage: carry " + strings.SplitN(pushUsage, ":", 2)[0])
	}
	_, _, err := push(*layoutDir, *registry, os.Stdout)
	return err
}

// push pushes the layout to its name or to registry, and prints ref@digest.
func push(layoutDir, registry string, out io.Writer) (string, name.Tag, error) {
	_, ref, err := release.ReadLayout(layoutDir)
	if err != nil {
		return "", name.Tag{}, err
	}
	if registry != "" {
		ref, err = release.ImageRef(registry, path.Base(ref.RepositoryStr()), ref.TagStr())
		if err != nil {
			return "", name.Tag{}, err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	digest, err := release.Push(ctx, layoutDir, ref)
	if err != nil {
		return "", name.Tag{}, err
	}
	fmt.Fprintf(out, "push: %s@%s\n", ref, digest)
	return digest.String(), ref, nil
}
