package main

import (
	"fmt"

	"github.com/kube-carry/kube-carry/internal/harness"
)

// cmdProofTests prints the go test pattern of the harness's tests that a
// proof runs (line) or that only make test LINE=vA.B runs (per-line-only).
func cmdProofTests(args []string) error {
	if len(args) == 1 {
		switch args[0] {
		case "line":
			fmt.Println(harness.RunPattern(harness.LineProofTests))
			return nil
		case "per-line-only":
			fmt.Println(harness.RunPattern(harness.PerLineOnlyTests))
			return nil
		}
	}
	return fmt.Errorf("usage: carry proof-tests line|per-line-only")
}
