// Package pin reads and writes UPSTREAM, the file that pins the upstream
// Kubernetes release the series applies to and the h1: hash of every module
// zip the source tree is assembled from.
package pin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// MainModule is the module that carries the Kubernetes source tree.
const MainModule = "k8s.io/kubernetes"

// StagingPrefix is where a staging module lives inside the tree, followed by
// the module's last path element.
const StagingPrefix = "staging/src/"

// Module is one module the tree is assembled from.
type Module struct {
	Path    string
	Version string
	// Sum is the h1: hash of the module zip; empty for a stub.
	Sum string
	// Stub marks a module the proxy does not serve and nothing builds: the
	// tree gets a go.mod with only a module line in its directory.
	Stub bool
	// Line is where the module is declared in the pin file.
	Line int
}

// Dir is the module's directory relative to the root of the tree.
func (m Module) Dir() string {
	if m.Path == MainModule {
		return "."
	}
	return StagingPrefix + m.Path
}

// Pin is the parsed UPSTREAM file.
type Pin struct {
	// Version is the upstream release, e.g. v1.34.4.
	Version string
	// Date is the time of the upstream release as the module proxy reports
	// it; builds take their date from it so they are reproducible.
	Date    time.Time
	Modules []Module
}

// Main returns the k8s.io/kubernetes module of the pin.
func (p *Pin) Main() Module {
	for _, m := range p.Modules {
		if m.Path == MainModule {
			return m
		}
	}
	return Module{}
}

// StagingVersion maps a Kubernetes release to the version its staging
// modules are published under: v1.34.4 → v0.34.4.
func StagingVersion(release string) (string, error) {
	if !semver.IsValid(release) || semver.Canonical(release) != release {
		return "", fmt.Errorf("%q is not a Kubernetes release version like v1.34.4", release)
	}
	if semver.Major(release) != "v1" {
		return "", fmt.Errorf("%q: only Kubernetes v1.x releases are supported", release)
	}
	return "v0" + strings.TrimPrefix(release, "v1"), nil
}

// ParseError is a problem at one line of a pin file.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ReadFile parses the pin file at path.
func ReadFile(path string) (*Pin, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses pin file content; file names the file in errors.
//
// Format, one directive per line, '#' starts a comment:
//
//	version v1.34.4
//	date 2026-02-10T17:01:43Z
//	module k8s.io/kubernetes v1.34.4 h1:...
//	module k8s.io/api v0.34.4 h1:...
//	stub k8s.io/sample-controller v0.34.4
func Parse(file string, data []byte) (*Pin, error) {
	p := &Pin{}
	perr := func(line int, format string, args ...any) error {
		return &ParseError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	seen := map[string]int{}
	var versionLine, dateLine int
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "version":
			if len(f) != 2 {
				return nil, perr(n, "want `version vX.Y.Z`, got %q", strings.TrimSpace(line))
			}
			if versionLine != 0 {
				return nil, perr(n, "version given twice (first at line %d)", versionLine)
			}
			if _, err := StagingVersion(f[1]); err != nil {
				return nil, perr(n, "%v", err)
			}
			p.Version, versionLine = f[1], n
		case "date":
			if len(f) != 2 {
				return nil, perr(n, "want `date <RFC 3339 time>`, got %q", strings.TrimSpace(line))
			}
			if dateLine != 0 {
				return nil, perr(n, "date given twice (first at line %d)", dateLine)
			}
			t, err := time.Parse(time.RFC3339, f[1])
			if err != nil {
				return nil, perr(n, "date %q is not an RFC 3339 time", f[1])
			}
			p.Date, dateLine = t.UTC(), n
		case "module", "stub":
			m := Module{Line: n, Stub: f[0] == "stub"}
			want := 4
			if m.Stub {
				want = 3
			}
			if len(f) != want {
				if m.Stub {
					return nil, perr(n, "want `stub <module> <version>`, got %q", strings.TrimSpace(line))
				}
				return nil, perr(n, "want `module <module> <version> h1:<hash>`, got %q", strings.TrimSpace(line))
			}
			m.Path, m.Version = f[1], f[2]
			if err := module.Check(m.Path, m.Version); err != nil {
				return nil, perr(n, "%v", err)
			}
			if !m.Stub {
				m.Sum = f[3]
				if err := checkSum(m.Sum); err != nil {
					return nil, perr(n, "%s %s: %v", m.Path, m.Version, err)
				}
			}
			if m.Path != MainModule && !strings.HasPrefix(m.Path, "k8s.io/") {
				return nil, perr(n, "%s is not a Kubernetes staging module (k8s.io/<name>)", m.Path)
			}
			if m.Path == MainModule && m.Stub {
				return nil, perr(n, "%s cannot be a stub", m.Path)
			}
			if first, ok := seen[m.Path]; ok {
				return nil, perr(n, "%s listed twice (first at line %d)", m.Path, first)
			}
			seen[m.Path] = n
			p.Modules = append(p.Modules, m)
		default:
			return nil, perr(n, "unknown directive %q (want version, date, module or stub)", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	end := n + 1
	if versionLine == 0 {
		return nil, perr(end, "no `version` line")
	}
	if dateLine == 0 {
		return nil, perr(end, "no `date` line")
	}
	if _, ok := seen[MainModule]; !ok {
		return nil, perr(end, "no `module %s` line", MainModule)
	}
	staging, _ := StagingVersion(p.Version)
	for _, m := range p.Modules {
		want := staging
		if m.Path == MainModule {
			want = p.Version
		}
		if m.Version != want {
			return nil, perr(m.Line, "%s is at %s but release %s needs %s", m.Path, m.Version, p.Version, want)
		}
	}
	return p, nil
}

func checkSum(sum string) error {
	const prefix = "h1:"
	if !strings.HasPrefix(sum, prefix) {
		return fmt.Errorf("hash %q is not an h1: hash", sum)
	}
	b := strings.TrimPrefix(sum, prefix)
	// h1: is base64 of a SHA-256 digest: 44 characters with padding.
	if d, err := base64.StdEncoding.DecodeString(b); err != nil || len(d) != sha256.Size {
		return fmt.Errorf("hash %q is not an h1: hash (base64 SHA-256)", sum)
	}
	return nil
}

// Write formats p as pin file content.
func (p *Pin) Write(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# The upstream Kubernetes release the series applies to, and the h1: hash of\n")
	b.WriteString("# every module zip the source tree is assembled from (checked on every fetch).\n")
	b.WriteString("# Generated by `make pin VERSION=vX.Y.Z`; do not edit by hand.\n")
	fmt.Fprintf(&b, "version %s\n", p.Version)
	fmt.Fprintf(&b, "date %s\n", p.Date.UTC().Format(time.RFC3339))
	for _, m := range p.Modules {
		if m.Stub {
			fmt.Fprintf(&b, "stub %s %s\n", m.Path, m.Version)
			continue
		}
		fmt.Fprintf(&b, "module %s %s %s\n", m.Path, m.Version, m.Sum)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
