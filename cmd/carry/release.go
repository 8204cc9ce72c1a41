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
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kube-carry/kube-carry/internal/release"
)

// defaultSource is the image's org.opencontainers.image.source.
const defaultSource = "https://github.com/kube-carry/kube-carry"

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
	return release.Make(ln, *dir, *registry, *source, progress)
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
