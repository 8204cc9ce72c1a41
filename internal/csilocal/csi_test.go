package csilocal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/connection"
	"github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	mount "k8s.io/mount-utils"
)

// requireRoot fails the test when it cannot mount.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test bind-mounts directories and must run as root")
	}
}

// tempDir is a temporary directory; at the end of the test every mount
// left under it is an error, and is unmounted before the directory is
// removed.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
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
	})
	return dir
}

// startDriver serves the Identity, Controller and Node services of one
// process on a socket in dir, its volumes in dir/data, until the test
// ends. It returns the socket's path.
func startDriver(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(dir, "csi.sock")
	s, err := Listen(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	csi.RegisterIdentityServer(s.GRPC(), &Identity{Version: "test", Controller: true})
	csi.RegisterControllerServer(s.GRPC(), NewController(ControllerOptions{DataDir: data}))
	csi.RegisterNodeServer(s.GRPC(), NewNode(NodeOptions{NodeID: "node-1", DataDir: data}))
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

func dial(t *testing.T, sock string) *grpc.ClientConn {
	t.Helper()
	conn, err := connection.ConnectWithoutMetrics(context.Background(), "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	conn := dial(t, startDriver(t, dir))
	ctx := context.Background()
	name, err := rpc.GetDriverName(ctx, conn)
	if err != nil || name != DriverName {
		t.Errorf("driver name %q, %v; want %q", name, err, DriverName)
	}
	caps, err := rpc.GetPluginCapabilities(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE, csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS} {
		if !caps[c] {
			t.Errorf("plugin capability %v missing: %v", c, caps)
		}
	}
	info, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetNodeId() != "node-1" || info.GetAccessibleTopology().GetSegments()[TopologyKey] != "node-1" {
		t.Errorf("NodeGetInfo = %v; want node ID and %s node-1", info, TopologyKey)
	}
}

func mountCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

// TestNodePublish publishes a volume read-write and read-only, checks what
// a pod would see, and unpublishes it.
func TestNodePublish(t *testing.T) {
	requireRoot(t)
	dir := tempDir(t)
	conn := dial(t, startDriver(t, dir))
	ctx := context.Background()
	ctrl, node := csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	rw := mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)

	vol, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rw},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1500 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if got := vol.GetVolume().GetCapacityBytes(); got != 2*GiB {
		t.Errorf("capacity %d, want 1500Mi rounded up to %d", got, 2*GiB)
	}
	id := vol.GetVolume().GetVolumeId()
	targetRW, targetRO := filepath.Join(dir, "pods/a/vol"), filepath.Join(dir, "pods/b/vol")
	publish := func(target string, readOnly bool) error {
		_, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: rw, Readonly: readOnly})
		return err
	}
	unpublish := func(target string) error {
		_, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
		return err
	}

	for range 2 { // idempotent
		if err := publish(targetRW, false); err != nil {
			t.Fatalf("publish read-write: %v", err)
		}
	}
	if err := os.WriteFile(filepath.Join(targetRW, "f"), []byte("data"), 0o644); err != nil {
		t.Fatalf("writing into the published volume: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data", id, "f")); err != nil || string(b) != "data" {
		t.Errorf("volume directory has %q, %v; want what the pod wrote", b, err)
	}

	for range 2 {
		if err := publish(targetRO, true); err != nil {
			t.Fatalf("publish read-only: %v", err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(targetRO, "f")); err != nil || string(b) != "data" {
		t.Errorf("read-only target has %q, %v; want the volume's data", b, err)
	}
	if err := os.WriteFile(filepath.Join(targetRO, "g"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing into the read-only target: %v; want EROFS", err)
	}
	if err := publish(targetRO, false); status.Code(err) != codes.AlreadyExists {
		t.Errorf("publishing the read-only target read-write: %v; want AlreadyExists", err)
	}
	if err := publish(targetRW, true); status.Code(err) != codes.AlreadyExists {
		t.Errorf("publishing the read-write target read-only: %v; want AlreadyExists", err)
	}

	for _, target := range []string{targetRW, targetRO} {
		for range 2 {
			if err := unpublish(target); err != nil {
				t.Fatalf("unpublish %s: %v", target, err)
			}
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("target %s still there after unpublish: %v", target, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", id, "f")); err != nil {
		t.Errorf("data gone after unpublish: %v", err)
	}
	if _, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data still there after DeleteVolume: %v", err)
	}
}

// TestRegistration plays the kubelet's plugin watcher against the
// registration socket.
func TestRegistration(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	reg := &Registration{Endpoint: "/var/lib/kubelet/plugins/kubernetes.io.csi.local/csi.sock"}
	s, err := ListenRegistration(ctx, dir, reg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, RegistrationSocket)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("registration socket left after stop: %v", err)
		}
	}()

	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, RegistrationSocket), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := registerapi.NewRegistrationClient(conn)
	info, err := client.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetType() != "CSIPlugin" || info.GetName() != "kubernetes.io.csi.local" || info.GetEndpoint() != reg.Endpoint ||
		len(info.GetSupportedVersions()) != 1 || info.GetSupportedVersions()[0] != "1.0.0" {
		t.Errorf("GetInfo = %v", info)
	}
	if ok, _ := reg.Registered(); ok {
		t.Error("registered before the kubelet said so")
	}
	if _, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: false, Error: "version mismatch"}); err != nil {
		t.Fatal(err)
	}
	if ok, msg := reg.Registered(); ok || msg != "version mismatch" {
		t.Errorf("after a refusal: registered %v, %q", ok, msg)
	}
	if _, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	if ok, msg := reg.Registered(); !ok || msg != "" {
		t.Errorf("after registration: registered %v, %q", ok, msg)
	}
}
