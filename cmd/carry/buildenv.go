package main

import (
	"fmt"

	"github.com/kube-carry/kube-carry/internal/build"
)

// cmdBuildEnv prints the go settings and the program lists of every build
// (internal/build) as shell code, for scripts/lib.sh.
func cmdBuildEnv(args []string) error {
	if len(args) != 0 {
		return fmt.Errorf("build-env takes no arguments")
	}
	fmt.Print(build.Shell())
	return nil
}
