// Package releasetest builds the fake Kubernetes binaries that the release
// tests package: tiny static Go programs laid out like the Kubernetes tree
// (main module k8s.io/kubernetes, the program in cmd/<name>, the version in
// k8s.io/component-base/version replaced by the directory
// staging/src/k8s.io/component-base, and one module from the proxy), so that
// `carry ldflags`-style flags stamp them and their build info has what the
// SBOM reads: a dependency with an h1: sum and a directory replacement.
//
// The builds are offline: the one module dependency, golang.org/x/mod, is a
// dependency of kube-carry itself and therefore in the module cache.
package releasetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/semver"
)

// Dep is the module dependency of the fake binaries.
const Dep = "golang.org/x/mod"

// Product is what a fake binary prints before its version, as kube-scheduler
// does: `kube-scheduler --version` prints "Kubernetes vX.Y.Z-carry.N".
const Product = "Kubernetes"

// Module is the go command's view of Dep in kube-carry's module.
type Module struct {
	Version, Sum, GoModSum, GoVersion string
}

// DepModule is Dep as kube-carry's go.mod requires it, so that it is in
// the module cache, with its go.sum hashes. It asks the go command in the
// working directory (a test's is its package directory, inside kube-carry's
// module; test binaries carry no module list of their own).
func DepModule() (Module, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Sum}} {{.GoModSum}} {{.GoVersion}}", Dep).Output()
	if err != nil {
		return Module{}, fmt.Errorf("go list -m %s: %w (run from inside kube-carry's module)", Dep, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 || !semver.IsValid(f[0]) || !strings.HasPrefix(f[1], "h1:") || !strings.HasPrefix(f[2], "h1:") {
		return Module{}, fmt.Errorf("go list -m %s: want version, sums and go version, got %q", Dep, out)
	}
	return Module{Version: f[0], Sum: f[1], GoModSum: f[2], GoVersion: f[3]}, nil
}

// LDFlags are the -ldflags of `carry ldflags` for version and commit (the
// fake binaries print gitVersion on --version).
func LDFlags(version, commit string) string {
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			fmt.Sprintf("-X '%s.gitVersion=%s'", pkg, version),
			fmt.Sprintf("-X '%s.gitCommit=%s'", pkg, commit))
	}
	return "-s -w " + strings.Join(flags, " ")
}

// Build builds the fake program name for linux/goarch into out, stamped
// with ldflags, as scripts/build.sh builds the real ones: CGO_ENABLED=0,
// -trimpath. src is a scratch directory for the fake tree (reused across
// builds: the go build cache then makes a second program or architecture
// a link only).
func Build(src, name, goarch, ldflags, out string) error {
	dep, err := DepModule()
	if err != nil {
		return err
	}
	// As in Kubernetes: the staging module is replaced by its directory in
	// go.mod and is a module of the workspace (go.work), which is how the
	// tree builds, so that the build info lists it as (devel).
	files := map[string]string{
		"go.mod": fmt.Sprintf("module k8s.io/kubernetes\n\ngo %s\n\nrequire (\n\t%s %s\n\tk8s.io/component-base v0.0.0\n)\n\n"+
			"replace k8s.io/component-base => ./staging/src/k8s.io/component-base\n", dep.GoVersion, Dep, dep.Version),
		"go.sum":  fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", Dep, dep.Version, dep.Sum, Dep, dep.Version, dep.GoModSum),
		"go.work": fmt.Sprintf("go %s\n\nuse (\n\t.\n\t./staging/src/k8s.io/component-base\n)\n", dep.GoVersion),
		"staging/src/k8s.io/component-base/go.mod": "module k8s.io/component-base\n\ngo 1.22\n",
		"staging/src/k8s.io/component-base/version/version.go": `// Package version holds what -ldflags -X stamps.
package version

var (
	gitVersion = "v0.0.0-master+$Format:%H$"
	gitCommit  = ""
)

// Get is the stamped version.
func Get() string { return gitVersion }

// Commit is the stamped commit.
func Commit() string { return gitCommit }
`,
		"cmd/" + name + "/main.go": `// Command ` + name + ` is a fake: it prints its stamped version.
package main

import (
	"os"

	"golang.org/x/mod/semver"
	"k8s.io/component-base/version"
)

func main() {
	// Like kube-scheduler's --version=raw, which prints the commit too
	// (and so keeps the stamped commit in the binary).
	if len(os.Args) == 2 && os.Args[1] == "--version=raw" {
		os.Stdout.WriteString(version.Get() + " " + version.Commit() + "\n")
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		v := version.Get()
		if !semver.IsValid(v) {
			os.Stderr.WriteString("invalid version " + v + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("` + Product + ` " + v + "\n")
		return
	}
	os.Stderr.WriteString("usage: ` + name + ` --version\n")
	os.Exit(2)
}
`,
	}
	src, err = filepath.Abs(src)
	if err != nil {
		return err
	}
	for rel, content := range files {
		p := filepath.Join(src, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", abs, "./cmd/"+name)
	cmd.Dir = src
	cmd.Env = append(os.Environ(),
		"GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0",
		// Offline: the module cache has the dependency, go.sum its hashes.
		"GOFLAGS=-buildvcs=false", "GOPROXY=off",
		"GOWORK="+filepath.Join(src, "go.work"), "GOTOOLCHAIN=local",
	)
	if outb, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the fake %s for linux/%s: %v\n%s", name, goarch, err, outb)
	}
	return nil
}

// PatchFile is a fixture patch in the series' format.
type PatchFile struct {
	// Name is the file name, <slug>.patch.
	Name    string
	Subject string
	// Body is the message between subject and trailers.
	Body string
	// Trailers are the `Key: value` lines.
	Trailers []string
}

// Write writes the patch into dir as `git format-patch --no-stat
// --zero-commit` would, touching one file, and returns its path.
func (p PatchFile) Write(dir string) (string, error) {
	content := "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n" +
		"From: kube-carry <kube-carry@invalid>\n" +
		"Date: Tue, 27 Oct 2026 12:01:04 +0000\n" +
		"Subject: " + p.Subject + "\n" +
		"\n" + strings.TrimSpace(p.Body) + "\n\n" +
		strings.Join(p.Trailers, "\n") + "\n\n" +
		"diff --git a/pkg/scheduler/" + p.Name + ".go b/pkg/scheduler/" + p.Name + ".go\n" +
		"new file mode 100644\n" +
		"index 0000000000000000000000000000000000000000..823aafd0712b6c533df84b17d9b7ac6ae43e66fa\n" +
		"--- /dev/null\n" +
		"+++ b/pkg/scheduler/" + p.Name + ".go\n" +
		"@@ -0,0 +1 @@\n" +
		"+package scheduler\n"
	file := filepath.Join(dir, p.Name)
	return file, os.WriteFile(file, []byte(content), 0o644)
}

// Patches are two fixture patches: a fix and a guard test.
var Patches = []PatchFile{
	{
		Name:    "volumebinding-local-dynamic-capacity.patch",
		Subject: "volumebinding: check local-dynamic capacity of a node in Filter",
		Body: "Pods with local-dynamic volumes are scheduled to nodes whose\n" +
			"storage pools cannot hold them.\n\n" +
			"Root cause: VolumeBinding has no notion of the pools. Fix: check them.",
		Trailers: []string{
			"Upstream-Status: Inappropriate [fork-only: local-dynamic storage]",
			"Bug: seed 000 (local-dynamic over-scheduling)",
			"Test: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamic'",
			"Regression: ./pkg/scheduler/framework/plugins/volumebinding -run '^TestLocalDynamicCapacityFilter$'",
		},
	},
	{
		Name:    "scheduler-upstream-fix-guards.patch",
		Subject: "scheduler: guard tests for upstream fixes",
		Body:    "Upstream fixed the snapshot bug; these tests keep it fixed.",
		Trailers: []string{
			"Upstream-Status: Pending",
			"Bug: seed 001 (scheduler snapshot drops nodes)",
			"Test: ./pkg/scheduler/backend/cache -run '^TestGuard'",
			"Regression: none (guards a fix upstream already has)",
			"Guards: mutants/nodetree-persistent-cursors.patch ./pkg/scheduler/backend/cache -run '^TestGuardSnapshot$'",
		},
	},
}
