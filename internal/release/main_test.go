package release_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-carry/kube-carry/internal/release"
	"github.com/kube-carry/kube-carry/internal/release/releasetest"
	"github.com/kube-carry/kube-carry/internal/series"
)

// The fixture release: what a line's `carry version`, pin and tree give.
const (
	version      = "v1.37.2-carry.1"
	upstream     = "v1.37.2"
	commit       = "0123456789abcdef0123456789abcdef01234567"
	source       = "https://github.com/kube-carry/kube-carry"
	registryName = "registry.example.com/kube-carry"
	imageRef     = registryName + "/kube-scheduler:" + version
)

// created is the pin's release time.
var created = time.Date(2026, 10, 27, 12, 1, 4, 0, time.UTC)

// The fake binaries, built once by TestMain: kube-scheduler per platform.
var (
	fixtureDir string
	bins       = map[string]string{} // arch → file
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "release-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fixtureDir = dir
	for _, p := range release.Platforms {
		out := filepath.Join(dir, "bin", p.Dir(), "kube-scheduler")
		if err := releasetest.Build(filepath.Join(dir, "src"), "kube-scheduler", p.Arch, releasetest.LDFlags(version, commit), out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		bins[p.Arch] = out
	}
	return m.Run()
}

func spec() release.ImageSpec {
	return release.ImageSpec{
		Name:     "kube-scheduler",
		Version:  version,
		Revision: commit,
		Source:   source,
		Created:  created,
		Binaries: []release.Binary{
			// Out of order on purpose: the index is sorted by platform.
			{Platform: release.Platform{OS: "linux", Arch: "arm64"}, Path: bins["arm64"]},
			{Platform: release.Platform{OS: "linux", Arch: "amd64"}, Path: bins["amd64"]},
		},
	}
}

// fixturePatches writes the fixture series into a new directory and parses
// it as the commands do.
func fixturePatches(t *testing.T) []*series.Patch {
	t.Helper()
	dir := t.TempDir()
	var out []*series.Patch
	for _, pf := range releasetest.Patches {
		file, err := pf.Write(dir)
		if err != nil {
			t.Fatal(err)
		}
		p, err := series.ReadPatch(file)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}
