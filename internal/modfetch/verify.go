package modfetch

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/kube-carry/kube-carry/internal/pin"
)

// Verify checks a tree that was not assembled from module zips (e.g. cloned
// from the upstream git repository) against the pin: each pinned module's
// directory is packed the way the go command packs a module zip (the same
// files: nested modules, vendor and VCS folders left out) and its h1: hash
// must be the pinned one, the hash the module proxy path checks. The first
// module that differs is an error naming it.
func Verify(p *pin.Pin, pinFile, dir string, progress Progress) error {
	tmp, err := os.MkdirTemp("", "kube-carry-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ordered := append([]pin.Module{p.Main()}, stagingOf(p)...)
	for i, m := range ordered {
		if m.Stub {
			progress("verify: [%d/%d] %s %s (stub: not served, not built)", i+1, len(ordered), m.Path, m.Version)
			continue
		}
		progress("verify: [%d/%d] %s %s", i+1, len(ordered), m.Path, m.Version)
		zipFile := filepath.Join(tmp, fmt.Sprintf("%d.zip", i))
		f, err := os.Create(zipFile)
		if err != nil {
			return err
		}
		err = modzip.CreateFromDir(f, module.Version{Path: m.Path, Version: m.Version}, filepath.Join(dir, m.Dir()))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %s %s: packing %s: %w", pinFile, m.Line, m.Path, m.Version, filepath.Join(dir, m.Dir()), err)
		}
		got, err := HashZip(zipFile)
		if err != nil {
			return err
		}
		if got != m.Sum {
			return fmt.Errorf("%s:%d: %s %s: checksum mismatch: the fetched directory %s hashes to %s, the pin has %s", pinFile, m.Line, m.Path, m.Version, m.Dir(), got, m.Sum)
		}
		if err := os.Remove(zipFile); err != nil {
			return err
		}
	}
	return checkWorkspace(p, pinFile, dir)
}
