package build

import (
	"os/exec"
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
