package cluster

import (
	"fmt"
	"path"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/kube-carry/kube-carry/internal/release"
)

// ImageRegistry names the cluster's images: no registry is reachable, every
// image is built here and imported into the nodes, and pods use them with
// imagePullPolicy IfNotPresent or Never.
const ImageRegistry = "kube-carry.local"

// Images are the cluster's image archives and names.
type Images struct {
	// Agnhost runs upstream's agnhost (entrypoint agnhost; its
	// subcommands as the container's args).
	Agnhost string
	// Pause is agnhost pause: the pods' sandbox image.
	Pause string
	// Archives are the docker archives to import into the nodes.
	Archives []string
}

// BuildImages builds the agnhost and pause images from the agnhost binary
// of the line's tree into dir, as docker archives, named
// kube-carry.local/{agnhost,pause}:<version>.
func BuildImages(dir, agnhost, version, revision string, created time.Time) (*Images, error) {
	idx, err := release.BuildIndex(release.ImageSpec{
		Name:     "agnhost",
		Version:  version,
		Revision: revision,
		Source:   "k8s.io/kubernetes/test/images/agnhost of the line's patched tree",
		Created:  created,
		Binaries: []release.Binary{{Platform: release.Platform{OS: "linux", Arch: "amd64"}, Path: agnhost}},
	})
	if err != nil {
		return nil, err
	}
	img, err := release.ImageFor(idx, release.Platform{OS: "linux", Arch: "amd64"})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Cmd = []string{"pause"}
	// The sandbox runs as root, like upstream's pause image.
	cfg.Config.User = "0:0"
	pause, err := mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	out := &Images{
		Agnhost: fmt.Sprintf("%s/agnhost:%s", ImageRegistry, version),
		Pause:   fmt.Sprintf("%s/pause:%s", ImageRegistry, version),
	}
	for _, im := range []struct {
		ref string
		img v1.Image
	}{{out.Agnhost, img}, {out.Pause, pause}} {
		tag, err := name.NewTag(im.ref, name.StrictValidation)
		if err != nil {
			return nil, err
		}
		file := filepath.Join(dir, path.Base(tag.RepositoryStr())+".tar")
		if err := release.WriteDockerArchive(file, tag, im.img); err != nil {
			return nil, fmt.Errorf("image %s: %w", im.ref, err)
		}
		out.Archives = append(out.Archives, file)
	}
	return out, nil
}
