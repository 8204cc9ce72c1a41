package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kube-carry/kube-carry/internal/series"
)

// SumsName is the checksum file of a release directory.
const SumsName = "SHA256SUMS"

// Sum is the SHA-256 of one file of a release directory.
type Sum struct {
	// Path is slash-separated, relative to the directory.
	Path   string
	SHA256 string
}

// SumFiles returns the SHA-256 of every regular file under dir, sorted by
// path, except SHA256SUMS itself. Anything but files and directories (a
// symlink, a socket) is an error: sha256sum would follow or choke on it.
func SumFiles(dir string) ([]Sum, error) {
	var sums []Sum
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == SumsName {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file; a release directory holds only files", p)
		}
		// sha256sum escapes such names with a leading backslash; no
		// release file needs them.
		if strings.ContainsAny(rel, "\\\n\r") {
			return fmt.Errorf("%s: a backslash or newline in a release file name", p)
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		sums = append(sums, Sum{Path: rel, SHA256: sum})
		return nil
	})
	// WalkDir's order is per directory ("a/z" before "a b"); sort by the
	// whole path so that the order does not depend on the tree's shape.
	slices.SortFunc(sums, func(a, b Sum) int { return strings.Compare(a.Path, b.Path) })
	return sums, err
}

// FormatSums formats sums as `sha256sum` does, for `sha256sum --check`.
func FormatSums(sums []Sum) []byte {
	var b bytes.Buffer
	for _, s := range sums {
		fmt.Fprintf(&b, "%s  %s\n", s.SHA256, s.Path)
	}
	return b.Bytes()
}

// WriteSums writes dir/SHA256SUMS over every file under dir and returns
// the sums.
func WriteSums(dir string) ([]Sum, error) {
	sums, err := SumFiles(dir)
	if err != nil {
		return nil, err
	}
	return sums, writeAtomic(filepath.Join(dir, SumsName), func(w io.Writer) error {
		_, err := w.Write(FormatSums(sums))
		return err
	})
}

func fileSHA256(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ImageSummary is the image of a release as the notes show it.
type ImageSummary struct {
	// Ref is the name the image is built for.
	Ref string
	// Digest is the image index's.
	Digest string
	// Platforms are the images of the index, in its order.
	Platforms []PlatformImage
}

// PlatformImage is one image of an index.
type PlatformImage struct {
	Platform Platform
	Digest   string
}

// Summarize describes idx, named ref, for the notes.
func Summarize(idx v1.ImageIndex, ref string) (*ImageSummary, error) {
	d, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	s := &ImageSummary{Ref: ref, Digest: d.String()}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			return nil, fmt.Errorf("image %s in the index has no platform", m.Digest)
		}
		s.Platforms = append(s.Platforms, PlatformImage{Platform{m.Platform.OS, m.Platform.Architecture}, m.Digest.String()})
	}
	return s, nil
}

// Notes are the release notes of one fork version.
type Notes struct {
	Line, Version string
	// Upstream is the pinned upstream release, Released its time.
	Upstream string
	Released time.Time
	Revision string
	Source   string
	// Image is the kube-scheduler image; nil when there is none.
	Image *ImageSummary
	// Artifacts are the files the notes list, with their sums.
	Artifacts []Sum
	// Patches are the series, in apply order.
	Patches []*series.Patch
}

// Markdown renders the notes: the release, the image, the artifacts with
// their SHA-256, and per patch its subject, what it fixes (the first
// paragraph of its message), its upstream status, bug, and the trailers
// that ask for its checks (series.Checks: Test:, Regression:, Guards:).
func (n *Notes) Markdown() []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# kube-carry %s", n.Version)
	p("")
	p("Release line %s: Kubernetes %s (upstream release %s) with %d patches.", n.Line, n.Upstream, n.Released.UTC().Format(time.RFC3339), len(n.Patches))
	p("")
	p("- Patched tree commit: %s", code(n.Revision))
	if n.Source != "" {
		p("- Source: %s", n.Source)
	}
	if n.Image != nil {
		p("")
		p("## Image")
		p("")
		p("%s, index %s:", code(n.Image.Ref), code(n.Image.Digest))
		p("")
		p("| platform | image digest |")
		p("|---|---|")
		for _, pi := range n.Image.Platforms {
			p("| %s | %s |", pi.Platform, code(pi.Digest))
		}
		p("")
		if i := strings.LastIndex(n.Image.Ref, ":"); i > strings.LastIndex(n.Image.Ref, "/") {
			p("Deploy by digest: %s.", code(n.Image.Ref[:i]+"@"+n.Image.Digest))
		}
	}
	p("")
	p("## Artifacts")
	p("")
	p("Check them with `sha256sum --check %s` in the release directory.", SumsName)
	p("")
	p("| file | sha256 |")
	p("|---|---|")
	for _, a := range n.Artifacts {
		p("| %s | %s |", code(a.Path), code(a.SHA256))
	}
	p("")
	p("## Patches")
	for i, pt := range n.Patches {
		p("")
		p("### %d. %s", i+1, pt.Subject)
		p("")
		p("%s · Upstream-Status: %s · Bug: %s", code(filepath.Base(pt.File)), trailer(pt, "Upstream-Status"), trailer(pt, "Bug"))
		p("")
		p("%s", FirstParagraph(pt.Body))
		var proofs []string
		for _, t := range pt.Trailers {
			if _, ok := series.CheckOf(t.Key); ok {
				proofs = append(proofs, fmt.Sprintf("- %s: %s", t.Key, code(t.Value)))
			}
		}
		if len(proofs) > 0 {
			p("")
			b.WriteString(strings.Join(proofs, "\n") + "\n")
		}
	}
	return b.Bytes()
}

// FirstParagraph is the text up to the first blank line, its lines joined:
// the symptom, in the patches' message convention.
func FirstParagraph(body string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			break
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, " ")
}

// code formats s as a markdown code span, fenced with more backticks than
// s holds in a row. (Table cells hold only paths and digests, which have no
// '|'.)
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
