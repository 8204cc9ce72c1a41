package release

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// WriteLayout writes idx as an OCI image layout in the new directory dir:
// index.json lists one descriptor, the image index, annotated with the tag
// (AnnotationRefName) and the full name ref (AnnotationImageName) that
// importers name the image by.
func WriteLayout(dir string, idx v1.ImageIndex, ref name.Tag) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		// Appending to an existing layout would leave the old image in
		// index.json beside the new one.
		return fmt.Errorf("OCI layout: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	err = p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationRefName:   ref.TagStr(),
		AnnotationImageName: ref.String(),
	}))
	if err != nil {
		return err
	}
	// The layout package writes blobs 0600 (temporary files renamed) and
	// index.json 0777 less the umask; a layout served or copied for others
	// must be readable by them, and nothing in it is executable.
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	})
}

// ReadLayout reads a layout that WriteLayout wrote: its one image index and
// the name it was written for.
func ReadLayout(dir string) (v1.ImageIndex, name.Tag, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, name.Tag{}, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, name.Tag{}, err
	}
	if len(im.Manifests) != 1 || !im.Manifests[0].MediaType.IsIndex() {
		return nil, name.Tag{}, fmt.Errorf("%s: want an OCI layout with one image index in index.json, got %d descriptors", dir, len(im.Manifests))
	}
	desc := im.Manifests[0]
	ref, err := name.NewTag(desc.Annotations[AnnotationImageName], name.StrictValidation)
	if err != nil {
		return nil, name.Tag{}, fmt.Errorf("%s: index.json: annotation %s: %w", dir, AnnotationImageName, err)
	}
	idx, err := top.ImageIndex(desc.Digest)
	if err != nil {
		return nil, name.Tag{}, err
	}
	return idx, ref, nil
}

// WriteOCIArchive writes the layout directory dir as a tar file: the OCI
// archive that `ctr images import`, `kind load image-archive` and `docker
// load` (Docker 25 and later) take. Entries are in lexical order, with
// mtime, owner root and modes 0755/0644, so the archive depends only on the
// layout's contents.
func WriteOCIArchive(file, dir string, mtime time.Time) error {
	return writeAtomic(file, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		// WalkDir visits in lexical order.
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			switch {
			case d.IsDir():
				return tw.WriteHeader(header(entry{name: rel + "/", mode: 0o755}, 0, mtime))
			case d.Type().IsRegular():
				return copyInto(tw, p, rel, mtime)
			default:
				return fmt.Errorf("%s: not a regular file or directory; an OCI layout has none", p)
			}
		})
		if err != nil {
			return err
		}
		return tw.Close()
	})
}

func copyInto(tw *tar.Writer, file, rel string, mtime time.Time) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(header(entry{name: rel, mode: 0o644}, st.Size(), mtime)); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// WriteDockerArchive writes img as a docker-archive tar file (what `docker
// save` writes and every `docker load` reads), tagged ref in its
// manifest.json.
func WriteDockerArchive(file string, ref name.Tag, img v1.Image) error {
	return writeAtomic(file, func(w io.Writer) error { return tarball.Write(ref, img, w) })
}

// writeAtomic writes file through write, so that a failed or killed write
// leaves no partial file under the final name.
func writeAtomic(file string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), file)
}

// ImageFor returns the image of platform p in idx.
func ImageFor(idx v1.ImageIndex, p Platform) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Arch {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("the image index has no image for %s", p)
}

// ErrDigestMismatch is a registry that serves another digest than the one
// pushed (e.g. one that converts manifests).
var ErrDigestMismatch = errors.New("the registry serves another digest than the one pushed")

// Push pushes the image index of the layout at dir as ref, with the
// credentials of the user's docker or podman configuration
// (authn.DefaultKeychain: ~/.docker/config.json, $DOCKER_CONFIG,
// $REGISTRY_AUTH_FILE, containers/auth.json), and checks that the registry
// then serves the pushed digest for ref. It returns the digest.
func Push(ctx context.Context, dir string, ref name.Tag, opts ...remote.Option) (v1.Hash, error) {
	idx, _, err := ReadLayout(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	want, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.WriteIndex(ref, idx, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	got, err := remote.Head(ref, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("checking %s after the push: %w", ref, err)
	}
	if got.Digest != want {
		return v1.Hash{}, fmt.Errorf("%s: %w: pushed %s, serves %s", ref, ErrDigestMismatch, want, got.Digest)
	}
	return want, nil
}
