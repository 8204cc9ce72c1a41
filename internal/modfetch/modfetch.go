// Package modfetch assembles an upstream Kubernetes source tree from the Go
// module proxy: k8s.io/kubernetes plus every staging module restored under
// staging/src/k8s.io/<name>, each zip checked against the pin.
package modfetch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/kube-carry/kube-carry/internal/pin"
)

// Downloaded is what the go command reports for one downloaded module.
type Downloaded struct {
	Path    string
	Version string
	Zip     string
	Info    string
	Sum     string
	Time    time.Time
}

// Downloader fetches module zips. The go command is the real one: it goes
// through GOPROXY and verifies every zip against the checksum database.
type Downloader interface {
	Download(path, version string) (*Downloaded, error)
}

// NotServedError means the module proxy has no such module version.
type NotServedError struct {
	Path, Version, Detail string
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("%s@%s is not served by the module proxy: %s", e.Path, e.Version, e.Detail)
}

// GoCommand downloads with `go mod download -json`.
type GoCommand struct {
	// Go is the go binary; "go" when empty.
	Go string
}

// Download implements Downloader.
func (g GoCommand) Download(modPath, version string) (*Downloaded, error) {
	goBin := g.Go
	if goBin == "" {
		goBin = "go"
	}
	dir, err := os.MkdirTemp("", "kube-carry-download-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(goBin, "mod", "download", "-json", modPath+"@"+version)
	// Outside any module or workspace, so nothing of the caller's leaks in.
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out struct {
		Path, Version, Zip, Info, Sum, Error string
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("%s@%s: go mod download: %v: %s", modPath, version, runErr, strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("%s@%s: go mod download printed no JSON: %v", modPath, version, err)
	}
	if out.Error != "" {
		if isNotServed(out.Error) {
			return nil, &NotServedError{Path: modPath, Version: version, Detail: out.Error}
		}
		return nil, fmt.Errorf("%s@%s: %s", modPath, version, out.Error)
	}
	if runErr != nil {
		return nil, fmt.Errorf("%s@%s: go mod download: %v: %s", modPath, version, runErr, strings.TrimSpace(stderr.String()))
	}
	d := &Downloaded{Path: out.Path, Version: out.Version, Zip: out.Zip, Info: out.Info, Sum: out.Sum}
	if out.Info != "" {
		var info struct{ Time time.Time }
		if data, err := os.ReadFile(out.Info); err == nil && json.Unmarshal(data, &info) == nil {
			d.Time = info.Time
		}
	}
	return d, nil
}

func isNotServed(msg string) bool {
	// The last: what a GOPROXY=file:// proxy says of a missing version.
	for _, s := range []string{"404 Not Found", "410 Gone", "403 Forbidden", "not available", "unknown revision", "invalid version", "no such file or directory"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Progress receives one line per step.
type Progress func(format string, args ...any)

// HashZip is the h1: hash of a module zip, as go.sum and UPSTREAM record it.
func HashZip(zipPath string) (string, error) {
	return dirhash.HashZip(zipPath, dirhash.Hash1)
}

// Assemble builds the tree of p into dir, which must not exist or be empty.
// Every zip's h1: hash must equal the pinned one; every staging module the
// tree's go.work uses must be pinned. On error dir may hold a partial tree:
// the caller assembles into a temporary directory and renames it on success.
func Assemble(p *pin.Pin, pinFile, dir string, dl Downloader, progress Progress) error {
	mainMod := p.Main()
	ordered := append([]pin.Module{mainMod}, stagingOf(p)...)
	for i, m := range ordered {
		if m.Stub {
			progress("fetch: [%d/%d] %s %s (stub: not served, not built)", i+1, len(ordered), m.Path, m.Version)
			if err := writeStub(filepath.Join(dir, m.Dir()), m.Path, goVersionOf(dir)); err != nil {
				return err
			}
			continue
		}
		progress("fetch: [%d/%d] %s %s", i+1, len(ordered), m.Path, m.Version)
		d, err := dl.Download(m.Path, m.Version)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", pinFile, m.Line, err)
		}
		got, err := HashZip(d.Zip)
		if err != nil {
			return fmt.Errorf("%s:%d: %s %s: hashing %s: %w", pinFile, m.Line, m.Path, m.Version, d.Zip, err)
		}
		if got != m.Sum {
			return fmt.Errorf("%s:%d: %s %s: checksum mismatch: the module zip has %s, UPSTREAM pins %s", pinFile, m.Line, m.Path, m.Version, got, m.Sum)
		}
		target := filepath.Join(dir, m.Dir())
		if err := modzip.Unzip(target, module.Version{Path: m.Path, Version: m.Version}, d.Zip); err != nil {
			return fmt.Errorf("%s %s: unpacking %s: %w", m.Path, m.Version, d.Zip, err)
		}
	}
	return checkWorkspace(p, pinFile, dir)
}

func stagingOf(p *pin.Pin) []pin.Module {
	var out []pin.Module
	for _, m := range p.Modules {
		if m.Path != pin.MainModule {
			out = append(out, m)
		}
	}
	return out
}

// checkWorkspace proves that the tree's go.work uses exactly the pinned
// staging modules: a module missing from the pin would leave a hole.
func checkWorkspace(p *pin.Pin, pinFile, dir string) error {
	want, err := WorkspaceModules(dir)
	if err != nil {
		return err
	}
	pinned := map[string]bool{}
	for _, m := range stagingOf(p) {
		pinned[m.Path] = true
	}
	var missing, extra []string
	for _, w := range want {
		if !pinned[w] {
			missing = append(missing, w)
		}
		delete(pinned, w)
	}
	for m := range pinned {
		extra = append(extra, m)
	}
	sort.Strings(extra)
	if len(missing) > 0 {
		return fmt.Errorf("%s: staging module %s is used by go.work of %s %s but not pinned; recompute the pin with `make pin VERSION=%s`", pinFile, strings.Join(missing, ", "), pin.MainModule, p.Version, p.Version)
	}
	if len(extra) > 0 {
		return fmt.Errorf("%s: %s pinned but not used by go.work of %s %s", pinFile, strings.Join(extra, ", "), pin.MainModule, p.Version)
	}
	return nil
}

// WorkspaceModules lists the staging modules that the go.work of the tree at
// dir uses, by module path.
func WorkspaceModules(dir string) ([]string, error) {
	name := filepath.Join(dir, "go.work")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (is this a Kubernetes tree of v1.30 or newer?)", pin.MainModule, err)
	}
	wf, err := modfile.ParseWork(name, data, nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range wf.Use {
		p := path.Clean(filepath.ToSlash(u.Path))
		if p == "." {
			continue
		}
		rest, ok := strings.CutPrefix(p, pin.StagingPrefix)
		if !ok {
			return nil, fmt.Errorf("%s:%d: use %s is not a staging module", name, u.Syntax.Start.Line, u.Path)
		}
		out = append(out, rest)
	}
	sort.Strings(out)
	return out, nil
}

func goVersionOf(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return ""
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil || f.Go == nil {
		return ""
	}
	return f.Go.Version
}

func writeStub(dir, modPath, goVersion string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f := &modfile.File{}
	if err := f.AddModuleStmt(modPath); err != nil {
		return err
	}
	if goVersion != "" {
		if err := f.AddGoStmt(goVersion); err != nil {
			return err
		}
	}
	data, err := f.Format()
	if err != nil {
		return err
	}
	comment := []byte("// kube-carry stub: the module proxy does not serve this module and nothing builds it.\n")
	return os.WriteFile(filepath.Join(dir, "go.mod"), append(comment, data...), 0o644)
}

// Compute makes the pin of a release: it downloads k8s.io/kubernetes at
// release, reads which staging modules its go.work uses, and downloads each
// at the matching v0 version. A sample-* module the proxy does not serve
// becomes a stub; any other module it does not serve is an error naming it.
func Compute(release string, dl Downloader, progress Progress) (*pin.Pin, error) {
	staging, err := pin.StagingVersion(release)
	if err != nil {
		return nil, err
	}
	progress("pin: %s %s", pin.MainModule, release)
	d, err := dl.Download(pin.MainModule, release)
	if err != nil {
		return nil, err
	}
	if d.Time.IsZero() {
		return nil, fmt.Errorf("%s@%s: the module proxy reported no release time", pin.MainModule, release)
	}
	p := &pin.Pin{Version: release, Date: d.Time.UTC()}
	sum, err := HashZip(d.Zip)
	if err != nil {
		return nil, err
	}
	p.Modules = append(p.Modules, pin.Module{Path: pin.MainModule, Version: release, Sum: sum})

	tmp, err := os.MkdirTemp("", "kube-carry-pin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := extractFile(d.Zip, pin.MainModule+"@"+release+"/go.work", filepath.Join(tmp, "go.work")); err != nil {
		return nil, fmt.Errorf("%s@%s: %w", pin.MainModule, release, err)
	}
	mods, err := WorkspaceModules(tmp)
	if err != nil {
		return nil, err
	}
	for i, m := range mods {
		progress("pin: [%d/%d] %s %s", i+1, len(mods), m, staging)
		d, err := dl.Download(m, staging)
		var ns *NotServedError
		if errors.As(err, &ns) && strings.HasPrefix(path.Base(m), "sample-") {
			progress("pin: %s %s is not served; it becomes a stub (nothing builds it)", m, staging)
			p.Modules = append(p.Modules, pin.Module{Path: m, Version: staging, Stub: true})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("staging module %s: %w", m, err)
		}
		sum, err := HashZip(d.Zip)
		if err != nil {
			return nil, err
		}
		p.Modules = append(p.Modules, pin.Module{Path: m, Version: staging, Sum: sum})
	}
	return p, nil
}

func extractFile(zipPath, name, dst string) error {
	zr, err := openZip(zipPath)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != name {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, rc); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}
	return fmt.Errorf("%s has no %s", zipPath, name)
}
