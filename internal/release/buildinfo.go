package release

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
)

// Stamp is what a binary's Go build info says about how it was built.
type Stamp struct {
	// GoVersion is the toolchain, e.g. go1.26.8.
	GoVersion string
	// Path is the main package, Module the main module.
	Path, Module string
	GOOS, GOARCH string
	CGO          bool
	Trimpath     bool
}

// ReadStamp reads the build info of the Go binary file.
func ReadStamp(file string) (*Stamp, error) {
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: no Go build info: %w", file, err)
	}
	return stampOf(bi), nil
}

func stampOf(bi *debug.BuildInfo) *Stamp {
	s := &Stamp{GoVersion: bi.GoVersion, Path: bi.Path, Module: bi.Main.Path}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "GOOS":
			s.GOOS = kv.Value
		case "GOARCH":
			s.GOARCH = kv.Value
		case "CGO_ENABLED":
			s.CGO = kv.Value == "1"
		case "-trimpath":
			s.Trimpath = kv.Value == "true"
		}
	}
	return s
}

// CheckStamped checks that the binary file holds the fork version and the
// tree commit that `carry ldflags` stamps into it with -X. The build info
// cannot tell: the go command leaves -ldflags out of it under -trimpath
// (they may hold paths), and -s strips the symbols. The -X values are
// string data in the binary, so a binary built for another version or
// from another commit lacks them.
func CheckStamped(file, version, commit string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var missing []string
	for _, s := range []struct{ what, value string }{{"version", version}, {"commit", commit}} {
		if s.value == "" || !bytes.Contains(data, []byte(s.value)) {
			missing = append(missing, fmt.Sprintf("%s %q", s.what, s.value))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: not stamped with %s (build it with `carry ldflags` from that tree)", file, strings.Join(missing, " and "))
	}
	return nil
}
