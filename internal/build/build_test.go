package build

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestShell: bash reads back exactly the settings and lists.
func TestShell(t *testing.T) {
	script := Shell() + `printf '%s\n' "$GOFLAGS" "$CGO_ENABLED" "${BINARIES[*]}" "${#BINARIES[@]}" "${CLUSTER_PROGRAMS[*]}" "${#CLUSTER_PROGRAMS[@]}"`
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	want := []string{
		"-trimpath -buildvcs=false", "0",
		strings.Join(Binaries, " "), "2",
		strings.Join(ClusterPrograms, " "), "4",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("bash read\n%q\nwant\n%q", got, want)
	}
	if e := Env(); len(e) != 2 || e[0] != "GOFLAGS=-trimpath -buildvcs=false" || e[1] != "CGO_ENABLED=0" {
		t.Errorf("Env() = %q", e)
	}
}

// TestParseSettings: settings.env's lines, and the mistakes in them that
// ParseSettings names.
func TestParseSettings(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Setting
		wantErr    string
	}{
		{
			name: "settings, comments and blank lines",
			text: "# comment\n\nGOFLAGS=-trimpath -buildvcs=false\n  CGO_ENABLED=0  \n",
			want: []Setting{{"GOFLAGS", "-trimpath -buildvcs=false"}, {"CGO_ENABLED", "0"}},
		},
		{name: "no equals sign", text: "GOFLAGS -trimpath\n", wantErr: `line 1: "GOFLAGS -trimpath" is not NAME=value`},
		{name: "lower-case name", text: "# c\ngoflags=-trimpath\n", wantErr: `line 2: "goflags" is not an environment variable's name`},
		{name: "empty value", text: "CGO_ENABLED=\n", wantErr: "line 1: CGO_ENABLED has no value"},
		{name: "quoted value", text: `GOFLAGS="-trimpath"` + "\n", wantErr: "line 1: the value of GOFLAGS holds a quote"},
		{name: "variable in value", text: "GOFLAGS=$X\n", wantErr: "line 1: the value of GOFLAGS holds a quote, '$'"},
		{name: "set twice", text: "CGO_ENABLED=0\nCGO_ENABLED=1\n", wantErr: "line 2: CGO_ENABLED is set twice"},
		{name: "nothing set", text: "# only a comment\n", wantErr: "no settings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSettings(tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSettings() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("ParseSettings() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSettingsFile: the embedded settings.env parses, and it keeps
// -trimpath, on which the shared build cache of the worktrees and the
// reproducible build rest.
func TestSettingsFile(t *testing.T) {
	s, err := ParseSettings(settingsFile)
	if err != nil {
		t.Fatal(err)
	}
	var goflags string
	for _, st := range s {
		if st.Name == "GOFLAGS" {
			goflags = st.Value
		}
	}
	if !slices.Contains(strings.Fields(goflags), "-trimpath") {
		t.Errorf("settings.env: GOFLAGS=%q, want -trimpath among them", goflags)
	}
}
