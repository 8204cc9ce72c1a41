package release

import (
	"debug/elf"
	"fmt"
	"slices"
	"sort"
)

// elfMachine maps a GOARCH the release builds for to its ELF machine.
var elfMachine = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// CheckELF checks that file is a static 64-bit ELF executable for goarch
// (amd64 or arm64). A binary for the wrong architecture or one that needs
// a dynamic loader (cgo) would be packaged happily and fail only on the
// node, with "exec format error" or "no such file or directory".
func CheckELF(file, goarch string) error {
	want, ok := elfMachine[goarch]
	if !ok {
		archs := make([]string, 0, len(elfMachine))
		for a := range elfMachine {
			archs = append(archs, a)
		}
		sort.Strings(archs)
		return fmt.Errorf("%s: architecture %q: want one of %v", file, goarch, archs)
	}
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s: not an ELF binary: %w", file, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("%s: %s, want a 64-bit binary", file, f.Class)
	}
	if f.Machine != want {
		return fmt.Errorf("%s: built for %s, want %s (%s)", file, f.Machine, want, goarch)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s: ELF type %s, want an executable", file, f.Type)
	}
	if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		return fmt.Errorf("%s: dynamically linked (has an ELF interpreter); build with CGO_ENABLED=0: the image has no libc", file)
	}
	return nil
}
