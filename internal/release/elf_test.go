package release_test

import (
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/release"
)

func TestCheckELF(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755))
	for _, tc := range []struct {
		name, file, arch, err string
	}{
		{"amd64", bins["amd64"], "amd64", ""},
		{"arm64", bins["arm64"], "arm64", ""},
		{"amd64 as arm64", bins["amd64"], "arm64", "built for EM_X86_64, want EM_AARCH64 (arm64)"},
		{"arm64 as amd64", bins["arm64"], "amd64", "built for EM_AARCH64, want EM_X86_64 (amd64)"},
		{"not ELF", script, "amd64", "not an ELF binary"},
		{"unknown arch", bins["amd64"], "riscv64", `architecture "riscv64": want one of [amd64 arm64]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := release.CheckELF(tc.file, tc.arch)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// The fake arm64 binary is what the release tests take it for, by
// debug/elf directly rather than through CheckELF.
func TestFakeArm64BinaryIsAArch64(t *testing.T) {
	f, err := elf.Open(bins["arm64"])
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, elf.EM_AARCH64, f.Machine)
	assert.Equal(t, elf.ELFCLASS64, f.Class)
	assert.False(t, slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }), "static")
}

// A dynamically linked binary of the host is refused: the image has no
// loader to run it.
func TestCheckELFRefusesDynamicBinaries(t *testing.T) {
	const sh = "/bin/sh"
	f, err := elf.Open(sh)
	if err != nil || runtime.GOOS != "linux" {
		t.Skipf("%s is not an ELF binary here", sh)
	}
	dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	f.Close()
	if !dynamic || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("%s is not a dynamically linked amd64 or arm64 binary", sh)
	}
	err = release.CheckELF(sh, runtime.GOARCH)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dynamically linked")
}
