package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	// containerd's importer hashes blobs with the digest package, which
	// needs the algorithm registered (ctr imports it too).
	_ "crypto/sha256"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/containerd/platforms"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Imported is an image that containerd's importer found in an archive.
type Imported struct {
	// Name is the name containerd stores the image under
	// (io.containerd.image.name).
	Name string
	// Configs are the image's configs by platform ("linux/amd64").
	Configs map[string]ocispec.Image
}

// ContainerdImport imports an image archive, an OCI archive or a docker
// archive, with containerd's own importer (core/images/archive, what `ctr
// images import` runs, on a node of `kind load image-archive` too, and
// what Docker's containerd image store runs for `docker load`) into a
// content store in storeDir. Then, for each image the archive names, it
// resolves every platform's manifest, checks that every blob the platform
// needs was imported, and reads its config: an archive whose blobs do not
// match their digests, or that names no image, is an error.
func ContainerdImport(ctx context.Context, file, storeDir string) ([]Imported, error) {
	store, err := local.NewStore(storeDir)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	imported, err := importImages(ctx, store, f)
	if err != nil {
		return nil, fmt.Errorf("%s: containerd import: %w", file, err)
	}
	return imported, nil
}

// importImages imports the archive r into store and reads back each image
// it names, as ContainerdImport describes.
func importImages(ctx context.Context, store content.Store, r io.Reader) ([]Imported, error) {
	indexDesc, err := archive.ImportIndex(ctx, store, r)
	if err != nil {
		return nil, err
	}
	var index ocispec.Index
	if err := readJSON(ctx, store, indexDesc, &index); err != nil {
		return nil, fmt.Errorf("the index: %w", err)
	}
	if len(index.Manifests) == 0 {
		return nil, errors.New("the archive holds no image")
	}
	var imported []Imported
	for _, desc := range index.Manifests {
		name := desc.Annotations[images.AnnotationImageName]
		if name == "" {
			return nil, fmt.Errorf("image %s has no %s: ctr would import it without a name", desc.Digest, images.AnnotationImageName)
		}
		ps, err := images.Platforms(ctx, store, desc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		im := Imported{Name: name, Configs: map[string]ocispec.Image{}}
		for _, p := range ps {
			platform := platforms.Format(p)
			config, err := platformConfig(ctx, store, desc, p)
			if err != nil {
				return nil, fmt.Errorf("%s for %s: %w", name, platform, err)
			}
			im.Configs[platform] = config
		}
		imported = append(imported, im)
	}
	return imported, nil
}

// platformConfig checks that every blob of the image's platform p is in
// store and returns the platform's config.
func platformConfig(ctx context.Context, store content.Store, desc ocispec.Descriptor, p ocispec.Platform) (ocispec.Image, error) {
	var config ocispec.Image
	match := platforms.OnlyStrict(p)
	available, _, _, missing, err := images.Check(ctx, store, desc, match)
	if err != nil {
		return config, err
	}
	if !available {
		var digests []string
		for _, m := range missing {
			digests = append(digests, m.Digest.String())
		}
		return config, fmt.Errorf("blobs missing: %s", strings.Join(digests, ", "))
	}
	configDesc, err := images.Config(ctx, store, desc, match)
	if err != nil {
		return config, err
	}
	if err := readJSON(ctx, store, configDesc, &config); err != nil {
		return config, fmt.Errorf("the config: %w", err)
	}
	return config, nil
}

func readJSON(ctx context.Context, store content.Provider, desc ocispec.Descriptor, v any) error {
	b, err := content.ReadBlob(ctx, store, desc)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
