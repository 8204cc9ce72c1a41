// Package status reports where the release lines stand against upstream:
// for `carry lines`, each line's pinned release, the newest release of its
// minor the module proxy serves, its revision, patches and end of life; for
// `carry matrix -newest`, the releases a watch of upstream checks.
package status

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/modfetch"
	"github.com/kube-carry/kube-carry/internal/series"
	"github.com/kube-carry/kube-carry/internal/txn"
)

// LineInfo is one row of `carry lines`, also written as JSON
// (line.LinesFile).
type LineInfo struct {
	Line     string `json:"line"`
	Pinned   string `json:"pinned"`
	Newest   string `json:"newest_served"`
	Behind   bool   `json:"behind"`
	Revision int    `json:"revision"`
	Version  string `json:"version"`
	Patches  int    `json:"patches"`
	EOL      string `json:"end_of_life,omitempty"`
	// Unusable are newer releases the proxy lists but cannot serve whole.
	Unusable []string `json:"unusable,omitempty"`
}

// Lines is the state of every line of the repository at root, oldest
// first. Unless offline, the module proxy is asked for the newest release
// of each line's minor (Newest is "?" when offline).
func Lines(root string, offline bool) ([]LineInfo, error) {
	lines, err := line.List(root)
	if err != nil {
		return nil, err
	}
	var infos []LineInfo
	for _, l := range lines {
		v, p, err := l.Version()
		if err != nil {
			return nil, err
		}
		n, _ := l.Revision()
		s, err := series.Read(l.SeriesFile())
		if err != nil {
			return nil, err
		}
		eol, err := l.EOL()
		if err != nil {
			return nil, err
		}
		info := LineInfo{Line: l.Name, Pinned: p.Version, Newest: "?", Revision: n, Version: v, Patches: len(s.Entries), EOL: eol}
		if !offline {
			newest, unusable, err := newestServed(l.Name, p.Version)
			if err != nil {
				return nil, fmt.Errorf("line %s: %w", l.Name, err)
			}
			info.Newest, info.Unusable = newest, unusable
			info.Behind = newest != p.Version
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// WriteTable prints infos as the table of `carry lines`, then the newer
// releases the proxy lists but cannot serve.
func WriteTable(w io.Writer, infos []LineInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tPINNED\tNEWEST SERVED\tREVISION\tPATCHES\tEND OF LIFE")
	for _, i := range infos {
		newest := i.Newest
		if i.Behind {
			newest += " (behind: make bump LINE=" + i.Line + ")"
		}
		eol := "-"
		if i.EOL != "" {
			eol = i.EOL
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d (%s)\t%d\t%s\n", i.Line, i.Pinned, newest, i.Revision, i.Version, i.Patches, eol)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, i := range infos {
		for _, u := range i.Unusable {
			fmt.Fprintf(w, "  %s: %s\n", i.Line, u)
		}
	}
	return nil
}

// WriteJSON writes infos as line.LinesFile of the repository at root.
func WriteJSON(root string, infos []LineInfo) error {
	data, err := json.MarshalIndent(infos, "", "  ")
	if err != nil {
		return err
	}
	file := line.LinesFile(root)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return txn.WriteFile(file, append(data, '\n'))
}

// newestServed asks the module proxy, through the go command, for the
// newest release of minor it serves (modfetch.NewestServed).
func newestServed(minor, pinned string) (string, []string, error) {
	g := modfetch.GoCommand{}
	return modfetch.NewestServed(minor, pinned, g, g)
}

// NewestReleases are the releases a watch of upstream checks: the newest
// patch release the proxy serves of every supported line's minor, and of
// the minors after the newest line that the proxy has already, for the
// repository at root.
func NewestReleases(root string) ([]string, error) {
	lines, err := line.List(root)
	if err != nil {
		return nil, err
	}
	supported, err := line.Supported(lines)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range supported {
		p, err := l.Pin()
		if err != nil {
			return nil, err
		}
		newest, _, err := newestServed(l.Name, p.Version)
		if err != nil {
			return nil, fmt.Errorf("line %s: %w", l.Name, err)
		}
		out = append(out, newest)
	}
	next := supported[len(supported)-1].Name
	for {
		var major, minor int
		if _, err := fmt.Sscanf(next, "v%d.%d", &major, &minor); err != nil {
			return nil, err
		}
		next = fmt.Sprintf("v%d.%d", major, minor+1)
		newest, _, err := newestServed(next, "")
		if err != nil {
			return nil, err
		}
		if newest == "" {
			return out, nil
		}
		out = append(out, newest)
	}
}
