package modfetch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/kube-carry/kube-carry/internal/pin"
)

// Lister asks the module proxy which versions of a module it has.
type Lister interface {
	// List is the proxy's version list of modPath (it can lag behind what
	// the proxy serves).
	List(modPath string) ([]string, error)
	// Exists reports whether the proxy has modPath at version (its .info);
	// false, nil when it says the version is not available.
	Exists(modPath, version string) (bool, error)
}

// List implements Lister with `go list -m -versions`.
func (g GoCommand) List(modPath string) ([]string, error) {
	out, err := g.goList("-versions", modPath)
	if err != nil {
		return nil, err
	}
	var m struct{ Versions []string }
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("go list -m -versions %s: %v", modPath, err)
	}
	return m.Versions, nil
}

// Exists implements Lister with `go list -m MOD@VERSION`.
func (g GoCommand) Exists(modPath, version string) (bool, error) {
	_, err := g.goList("", modPath+"@"+version)
	var ns *NotServedError
	if errors.As(err, &ns) {
		return false, nil
	}
	return err == nil, err
}

func (g GoCommand) goList(flag, arg string) ([]byte, error) {
	goBin := g.Go
	if goBin == "" {
		goBin = "go"
	}
	dir, err := os.MkdirTemp("", "kube-carry-list-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	args := []string{"list", "-m", "-json"}
	if flag != "" {
		args = append(args, flag)
	}
	cmd := exec.Command(goBin, append(args, arg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if isNotServed(msg) {
			path, version, _ := strings.Cut(arg, "@")
			return nil, &NotServedError{Path: path, Version: version, Detail: msg}
		}
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(append(args, arg), " "), err, msg)
	}
	return stdout.Bytes(), nil
}

// Releases are the patch releases of Kubernetes minor (vA.B) that the proxy
// has, oldest first: its version list, plus the patch releases after the
// newest listed (or after from) that it serves although its list lags.
// Pre-releases are left out.
func Releases(minor, from string, l Lister) ([]string, error) {
	listed, err := l.List(pin.MainModule)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range listed {
		if semver.MajorMinor(v) == minor && semver.Prerelease(v) == "" {
			out = append(out, v)
		}
	}
	if semver.MajorMinor(from) == minor && !slices.Contains(out, from) {
		out = append(out, from)
	}
	slices.SortFunc(out, semver.Compare)
	// Probe the following patch releases (from vA.B.0 when nothing is
	// known) until the proxy has none.
	next := minor + ".0"
	for i := 0; ; i++ {
		if len(out) > 0 {
			var err error
			if next, err = nextPatch(out[len(out)-1]); err != nil {
				return nil, err
			}
		} else if i > 0 {
			break
		}
		ok, err := l.Exists(pin.MainModule, next)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		out = append(out, next)
	}
	return out, nil
}

func nextPatch(v string) (string, error) {
	var major, minor, patch int
	if _, err := fmt.Sscanf(v, "v%d.%d.%d", &major, &minor, &patch); err != nil || semver.Canonical(v) != v {
		return "", fmt.Errorf("%q is not a release version vA.B.C", v)
	}
	return fmt.Sprintf("v%d.%d.%d", major, minor, patch+1), nil
}

// Newest is the newest release of a minor the proxy serves completely
// enough to pin: candidates newer than from are tried newest first with
// Compute, and the first that pins is returned with its pin. skipped says
// why each newer candidate was passed over (e.g. a module the checksum
// database does not know). It returns from (and a nil pin) when nothing
// newer pins.
func Newest(minor, from string, l Lister, dl Downloader, progress Progress) (version string, p *pin.Pin, skipped []string, err error) {
	rels, err := Releases(minor, from, l)
	if err != nil {
		return "", nil, nil, err
	}
	for i := len(rels) - 1; i >= 0; i-- {
		v := rels[i]
		if semver.Compare(v, from) <= 0 {
			break
		}
		progress("bump: trying %s", v)
		np, err := Compute(v, dl, progress)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", v, err))
			progress("bump: %s cannot be pinned: %v", v, err)
			continue
		}
		return v, np, skipped, nil
	}
	return from, nil, skipped, nil
}

// NewestServed is the newest release of minor that the proxy serves whole,
// as make bump needs it to pin the release: k8s.io/kubernetes and every
// staging module it uses (Newest). The rest says why each newer listed
// release is not usable, newest first. Releases of a minor without a pin
// (pinned "") are tried down to the first; "" when the proxy serves none.
// `carry lines` and `make bump` therefore agree on whether a line is
// behind.
func NewestServed(minor, pinned string, l Lister, dl Downloader) (string, []string, error) {
	v, _, skipped, err := Newest(minor, pinned, l, dl, func(string, ...any) {})
	if err != nil {
		return "", nil, err
	}
	var unusable []string
	for _, s := range skipped {
		release, why, _ := strings.Cut(s, ": ")
		unusable = append(unusable, fmt.Sprintf("%s is listed but not usable: %s", release, why))
	}
	return v, unusable, nil
}
