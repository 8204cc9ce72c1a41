// Package csisanity runs csi-sanity (github.com/kubernetes-csi/csi-test)
// against the csilocal driver in the test process. It is a package of its
// own because Ginkgo, which csi-sanity runs on, allows one suite run per
// process (no go test -count=N).
package csisanity

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	mount "k8s.io/mount-utils"

	"github.com/kube-carry/kube-carry/internal/csilocal"
)

// TestSanity runs csi-sanity against the driver in this process.
func TestSanity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("csi-sanity publishes volumes with bind mounts: run the test as root")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmountLeft(t, dir) })
	sock := startDriver(t, dir)

	cfg := sanity.NewTestConfig()
	cfg.Address = "unix:" + sock
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	sanity.Test(t, cfg)

	// csi-sanity deleted every volume it created: no data is left.
	left, err := os.ReadDir(filepath.Join(dir, "data"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("data of a deleted volume left: %s", e.Name())
	}
}

// unmountLeft fails the test for every mount left under dir, and unmounts
// it before the test's cleanup removes dir.
func unmountLeft(t *testing.T, dir string) {
	m := mount.New("")
	mps, err := m.List()
	if err != nil {
		t.Errorf("listing mounts: %v", err)
		return
	}
	for i := len(mps) - 1; i >= 0; i-- {
		if p := mps[i].Path; p == dir || strings.HasPrefix(p, dir+"/") {
			t.Errorf("mount left at %s", p)
			if err := m.Unmount(p); err != nil {
				t.Errorf("unmounting %s: %v", p, err)
			}
		}
	}
}

// startDriver serves the Identity, Controller and Node services of one
// process, without Kubernetes, on a socket in dir, its volumes in
// dir/data, until the test ends. It returns the socket's path.
func startDriver(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(dir, "csi.sock")
	s, err := csilocal.Listen(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	csi.RegisterIdentityServer(s.GRPC(), &csilocal.Identity{Version: "test", Controller: true})
	csi.RegisterControllerServer(s.GRPC(), csilocal.NewController(csilocal.ControllerOptions{DataDir: data}))
	csi.RegisterNodeServer(s.GRPC(), csilocal.NewNode(csilocal.NodeOptions{NodeID: "node-1", DataDir: data}))
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	return sock
}
