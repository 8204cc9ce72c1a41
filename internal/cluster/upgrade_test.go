package cluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

func TestCheckSkew(t *testing.T) {
	api := version.MustParseSemantic("v1.36.5-carry.1")
	for _, tc := range []struct {
		component, version string
		want               string // a part of the error, or "" for allowed
	}{
		{"kube-scheduler", "v1.36.5-carry.1", ""},
		{"kube-scheduler", "v1.36.4", ""},
		{"kube-scheduler", "v1.35.8-carry.1", ""},
		{"kube-scheduler", "v1.37.2-carry.1", "kube-scheduler v1.37.2-carry.1 is newer than kube-apiserver v1.36.5-carry.1"},
		{"kube-scheduler", "v1.34.9", "kube-scheduler v1.34.9 is 2 minors older than kube-apiserver v1.36.5-carry.1"},
		{"kube-controller-manager", "v1.37.0", "kube-controller-manager v1.37.0 is newer"},
		{"kube-controller-manager", "v1.34.0", "at most 1 minor(s) older"},
		{"kubelet", "v1.33.1", ""},
		{"kubelet", "v1.32.1", "kubelet v1.32.1 is 4 minors older"},
		{"kubelet", "v1.37.2-carry.1", "kubelet v1.37.2-carry.1 is newer than kube-apiserver v1.36.5-carry.1"},
	} {
		t.Run(tc.component+" "+tc.version, func(t *testing.T) {
			err := CheckSkew(tc.component, version.MustParseSemantic(tc.version), api)
			checkErr(t, err, tc.want)
		})
	}
}

func TestCheckHop(t *testing.T) {
	for _, tc := range []struct {
		from, to, want string
	}{
		{"v1.35.8-carry.1", "v1.36.5-carry.1", ""},
		{"v1.36.4-carry.1", "v1.36.5-carry.1", ""},
		{"v1.35.8-carry.1", "v1.37.2-carry.1", "kube-apiserver v1.35.8-carry.1 → v1.37.2-carry.1 skips 1 minor(s)"},
		{"v1.37.2-carry.1", "v1.36.5-carry.1", "kube-apiserver v1.37.2-carry.1 → v1.36.5-carry.1 goes back a minor"},
	} {
		t.Run(tc.from+"→"+tc.to, func(t *testing.T) {
			checkErr(t, CheckHop(version.MustParseSemantic(tc.from), version.MustParseSemantic(tc.to)), tc.want)
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want != "" && err == nil:
		t.Fatalf("allowed, want an error with %q", want)
	case want != "":
		var se *SkewError
		if !errors.As(err, &se) {
			t.Errorf("error %v is not a SkewError", err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// fakeBinary is a program that reports version v, as a Kubernetes binary
// does with --version.
func fakeBinary(t *testing.T, name, v string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho Kubernetes "+v+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplaceRefusesAndChangesNothing: a replacement that the skew policy
// forbids fails naming both versions, before any process is stopped or the
// state changes.
func TestReplaceRefusesAndChangesNothing(t *testing.T) {
	// Each component is a live process (sleep) whose binary reports the
	// version of the line it stands for.
	component := func(name, node, v string) Component {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		tick, err := startTicks(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return Component{Name: name, Node: node, Binary: fakeBinary(t, name, v), PID: cmd.Process.Pid, Tick: tick}
	}
	st := &State{Dir: t.TempDir(), Components: []Component{
		component("kube-apiserver", "", "v1.36.5-carry.1"),
		component("kube-controller-manager", "", "v1.36.5-carry.1"),
		component("kube-scheduler", "", "v1.35.8-carry.1"),
		component("kubelet", "node1", "v1.36.5-carry.1"),
		component("kubelet", "node2", "v1.33.7"),
	}}
	before := slices.Clone(st.Components)
	for _, tc := range []struct {
		name, node, version, want string
	}{
		{"kube-scheduler", "", "v1.37.2-carry.1", "kube-scheduler v1.37.2-carry.1 is newer than kube-apiserver v1.36.5-carry.1"},
		{"kubelet", "node1", "v1.37.2-carry.1", "kubelet v1.37.2-carry.1 is newer than kube-apiserver v1.36.5-carry.1"},
		{"kube-apiserver", "", "v1.38.0-carry.1", "kube-apiserver v1.36.5-carry.1 → v1.38.0-carry.1 skips 1 minor(s)"},
		// The scheduler would be two minors behind a v1.37 apiserver,
		// node2's kubelet four.
		{"kube-apiserver", "", "v1.37.2-carry.1", "kube-apiserver v1.36.5-carry.1 → v1.37.2-carry.1 would leave kube-scheduler: kube-scheduler v1.35.8-carry.1 is 2 minors older than kube-apiserver v1.37.2-carry.1"},
		{"kube-apiserver", "", "v1.37.0", "; and kubelet on node2: kubelet v1.33.7 is 4 minors older than kube-apiserver v1.37.0"},
	} {
		t.Run(tc.name+" "+tc.version, func(t *testing.T) {
			err := st.Replace(context.Background(), tc.name, tc.node, fakeBinary(t, tc.name, tc.version))
			checkErr(t, err, tc.want)
			if !reflect.DeepEqual(st.Components, before) {
				t.Errorf("the state changed:\n%v\nwant\n%v", st.Components, before)
			}
			for _, c := range before {
				if !alive(c.PID, c.Tick) {
					t.Errorf("%s (pid %d) was stopped", c.Label(), c.PID)
				}
			}
			if _, err := os.Stat(filepath.Join(st.Dir, "state.json")); err == nil {
				t.Error("state.json was written")
			}
		})
	}
}
