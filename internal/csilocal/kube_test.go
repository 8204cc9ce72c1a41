package csilocal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func node(name, hostname, pools string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	if hostname != "" {
		n.Labels[v1.LabelHostname] = hostname
	}
	if pools != "" {
		n.Annotations[PoolsAnnotation] = pools
	}
	return n
}

func class(name string, mode storagev1.VolumeBindingMode, params map[string]string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: ProvisionerName, VolumeBindingMode: &mode, Parameters: params}
}

// pv is a PV of size GiB: of the driver in pool when driver is true, else
// of class; pinned to host by node affinity, or by label when byLabel.
func pv(name, host string, size int64, driver bool, pool, className string, byLabel bool) *v1.PersistentVolume {
	p := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:         v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(size*GiB, resource.BinarySI)},
			StorageClassName: className,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeReleased},
	}
	if driver {
		p.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: DriverName, VolumeHandle: name, VolumeAttributes: map[string]string{AttrPool: pool}}
	} else {
		p.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: "other.csi", VolumeHandle: name}
	}
	if byLabel {
		p.Labels[v1.LabelHostname] = host
	} else {
		p.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{host}}},
		}}}}
	}
	return p
}

func startCluster(t *testing.T, objs ...runtime.Object) *KubeCluster {
	t.Helper()
	return startClusterOf(t, Names{}, objs...)
}

// startClusterOf is startCluster for the driver of names.
func startClusterOf(t *testing.T, names Names, objs ...runtime.Object) *KubeCluster {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	cluster, err := NewKubeCluster(factory, names)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v did not sync", typ)
		}
	}
	return cluster
}

func TestKubeClusterNodeVolumes(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	cluster := startCluster(t,
		node("node-1", "host-1", `{"a": "10Gi", "b": "5Gi"}`),
		node("node-2", "", `{"a": "10Gi"}`),
		node("bare", "", ""),
		node("broken", "", `{"a": "-1"}`),
		class("ld-b", wffc, map[string]string{ParamPool: "b"}),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Provisioner: "other.io/x"},
		pv("by-affinity", "host-1", 1, true, "a", "", false),
		pv("by-label", "host-1", 2, true, "a", "", true),
		pv("by-node-name", "node-1", 4, true, "", "", false),
		pv("of-class", "host-1", 3, false, "", "ld-b", false),
		pv("other-class", "host-1", 7, false, "", "other", false),
		pv("no-class", "host-1", 7, false, "", "", false),
		pv("elsewhere", "node-2", 5, true, "a", "", false),
	)
	for _, tc := range []struct {
		node      string
		wantPools Pools
		want      []Volume
		wantErr   error
	}{
		{node: "host-1", wantPools: Pools{"a": 10 * GiB, "b": 5 * GiB}, want: []Volume{
			{ID: "by-affinity", Pool: "a", Size: GiB},
			{ID: "by-label", Pool: "a", Size: 2 * GiB},
			{ID: "by-node-name", Pool: "", Size: 4 * GiB},
			{ID: "pv/of-class", Pool: "b", Size: 3 * GiB},
		}},
		{node: "node-2", wantPools: Pools{"a": 10 * GiB}, want: []Volume{{ID: "elsewhere", Pool: "a", Size: 5 * GiB}}},
		{node: "bare", wantErr: ErrNoPool},
		{node: "broken", wantErr: ErrNoPool},
		{node: "node-1", wantErr: errors.New(`node "node-1" not found`)}, // its hostname is host-1
		{node: "nowhere", wantErr: errors.New(`node "nowhere" not found`)},
	} {
		t.Run(tc.node, func(t *testing.T) {
			pools, vols, err := cluster.NodeVolumes(tc.node)
			if tc.wantErr != nil {
				if err == nil || (!errors.Is(err, tc.wantErr) && !strings.Contains(err.Error(), tc.wantErr.Error())) {
					t.Fatalf("NodeVolumes(%q) = %v, %v, %v; want error %v", tc.node, pools, vols, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantPools, pools); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, vols); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
		})
	}
	if !cluster.VolumeExists("by-label") || cluster.VolumeExists("of-class") || cluster.VolumeExists("nope") {
		t.Error("VolumeExists: want true only for handles of PVs of the driver")
	}
}

func claim(name, className, selectedNode string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: map[string]string{
			"volume.kubernetes.io/storage-provisioner": ProvisionerName,
		}},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &className,
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if selectedNode != "" {
		c.Annotations["volume.kubernetes.io/selected-node"] = selectedNode
	}
	return c
}

// TestProvision runs the driver's controller against a fake API server:
// a node with 6 GiB, 1 GiB of it held by a released PV, and 11 claims of
// 1 GiB selecting it at once. 5 are provisioned, while the provisioning
// controller's workers run in parallel; 6 fail with "Not enough free
// space" and lose their selected node.
func TestProvision(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	objs := []runtime.Object{
		node("node-1", "node-1", `{"pool-ssd": "6Gi"}`),
		class("local-ssd", wffc, map[string]string{ParamPool: "pool-ssd"}),
		class("local-now", immediate, nil),
		pv("old", "node-1", 1, true, "pool-ssd", "local-ssd", false),
		claim("now", "local-now", ""),
	}
	for i := range 11 {
		objs = append(objs, claim(fmt.Sprintf("c%02d", i), "local-ssd", "node-1"))
	}
	client := fake.NewClientset(objs...)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- Run(ctx, Config{Controller: true, Client: client, Latency: 50 * time.Millisecond,
			Endpoint: filepath.Join(t.TempDir(), "csi.sock")})
	}()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	type state struct {
		pvs         map[string]*v1.PersistentVolume // new ones, by claim
		rescheduled []string                        // claims without selected node
		noSpace     []string                        // claims with a "Not enough free space" event
		immediate   string                          // the event of the Immediate claim
	}
	read := func(ctx context.Context) (state, error) {
		s := state{pvs: map[string]*v1.PersistentVolume{}}
		pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return s, err
		}
		for i := range pvs.Items {
			if p := &pvs.Items[i]; p.Spec.ClaimRef != nil {
				s.pvs[p.Spec.ClaimRef.Name] = p
			}
		}
		claims, err := client.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return s, err
		}
		for _, c := range claims.Items {
			if _, ok := c.Annotations["volume.kubernetes.io/selected-node"]; !ok && c.Name != "now" {
				s.rescheduled = append(s.rescheduled, c.Name)
			}
		}
		events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return s, err
		}
		for _, e := range events.Items {
			switch {
			case e.Reason != "ProvisioningFailed":
			case e.InvolvedObject.Name == "now":
				s.immediate = e.Message
			case strings.Contains(e.Message, "Not enough free space"):
				s.noSpace = append(s.noSpace, e.InvolvedObject.Name)
			}
		}
		return s, nil
	}
	var s state
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		s, err = read(ctx)
		return err == nil && len(s.pvs) == 5 && len(s.rescheduled) == 6 && len(s.noSpace) == 6 && s.immediate != "", err
	})
	if err != nil {
		t.Fatalf("waiting for 5 PVs, 6 claims rescheduled with \"Not enough free space\" and the Immediate claim's failure: %v; got %d PVs, rescheduled %v, events %v, %q",
			err, len(s.pvs), s.rescheduled, s.noSpace, s.immediate)
	}
	if diff := cmp.Diff(s.rescheduled, s.noSpace); diff != "" {
		t.Errorf("the claims that lost their node are not those that failed for space (-rescheduled +failed):\n%s", diff)
	}
	if !strings.Contains(s.immediate, "provisions only StorageClasses with volumeBindingMode WaitForFirstConsumer") {
		t.Errorf("Immediate claim's event: %q", s.immediate)
	}

	time.Sleep(200 * time.Millisecond)
	if s2, err := read(ctx); err != nil || len(s2.pvs) != 5 {
		t.Fatalf("after settling: %d PVs, %v; want still 5", len(s2.pvs), err)
	}

	name := slices.Sorted(maps.Keys(s.pvs))[0]
	c, err := client.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := v1.PersistentVolumeSpec{
		Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
		StorageClassName:              "local-ssd",
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
			Driver: DriverName, VolumeHandle: "pvc-" + string(c.UID),
			VolumeAttributes: map[string]string{AttrPool: "pool-ssd", AttrNode: "node-1"},
		}},
		NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"node-1"}}},
		}}}},
	}
	got := s.pvs[name].DeepCopy()
	got.Spec.ClaimRef = nil
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("PV of claim %s (-want +got):\n%s", name, diff)
	}
	if got.Name != "pvc-"+string(c.UID) || got.Annotations["pv.kubernetes.io/provisioned-by"] != ProvisionerName {
		t.Errorf("PV of claim %s: name %q, annotations %v", name, got.Name, got.Annotations)
	}

	// Deleting the released PV frees 1 GiB: a rescheduled claim that
	// selects the node again is provisioned.
	if err := client.CoreV1().PersistentVolumes().Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := client.CoreV1().PersistentVolumeClaims("default").Get(ctx, s.rescheduled[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again.Annotations["volume.kubernetes.io/selected-node"] = "node-1"
	if _, err := client.CoreV1().PersistentVolumeClaims("default").Update(ctx, again, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err = read(ctx)
		return err == nil && s.pvs[again.Name] != nil, err
	})
	if err != nil || len(s.pvs) != 6 {
		t.Errorf("after deleting the old PV, claim %s: %v; %d PVs, want 6", again.Name, err, len(s.pvs))
	}
}

func TestKeepPoolsAnnotation(t *testing.T) {
	client := fake.NewClientset(node("node-1", "node-1", ""), node("node-2", "node-2", `{"x": "1Gi"}`))
	ctx, cancel := context.WithCancel(context.Background())
	value := `{"pool-ssd":"9Gi"}`
	done, err := KeepPoolsAnnotation(ctx, client, "node-1", PoolsAnnotation, value)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	annotation := func(name string) string {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Annotations[PoolsAnnotation]
	}
	if got := annotation("node-1"); got != value {
		t.Fatalf("annotation after start: %q, want %q", got, value)
	}
	if err := patchPools(ctx, client, "node-1", PoolsAnnotation, `{"pool-ssd":"1Gi"}`); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return annotation("node-1") == value, nil
	}); err != nil {
		t.Errorf("annotation not restored: %q", annotation("node-1"))
	}
	if got := annotation("node-2"); got != `{"x": "1Gi"}` {
		t.Errorf("another node's annotation changed: %q", got)
	}
}

// TestRunNode runs both modes in one process against a fake API server,
// as cmd/csi-local does by default, and checks what the kubelet and the
// scheduler see: the registration socket, NodeGetInfo and the pools
// annotation.
func TestRunNode(t *testing.T) {
	dir := t.TempDir()
	client := fake.NewClientset(node("node-1", "host-1", ""))
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(dir, "plugins", DriverName, "csi.sock")
	ran := make(chan error, 1)
	go func() {
		ran <- Run(ctx, Config{Controller: true, Node: true, Client: client, Endpoint: "unix://" + sock,
			NodeName: "node-1", Pools: `{"pool-ssd":"9Gi"}`, DataDir: filepath.Join(dir, "data"),
			RegistrationDir: filepath.Join(dir, "plugins_registry")})
	}()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	reg := filepath.Join(dir, "plugins_registry", RegistrationSocket)
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err1 := os.Stat(reg)
		_, err2 := os.Stat(sock)
		return err1 == nil && err2 == nil, nil
	}); err != nil {
		t.Fatalf("sockets %s and %s not created: %v", reg, sock, err)
	}
	regConn, err := grpc.NewClient("unix://"+reg, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer regConn.Close()
	info, err := registerapi.NewRegistrationClient(regConn).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil || info.GetEndpoint() != sock || info.GetName() != DriverName {
		t.Errorf("GetInfo = %v, %v; want endpoint %s", info, err, sock)
	}

	conn := dial(t, sock)
	ni, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != "node-1" || ni.GetAccessibleTopology().GetSegments()[TopologyKey] != "host-1" {
		t.Errorf("NodeGetInfo = %v, %v; want node-1 with the node's hostname label host-1", ni, err)
	}
	caps, err := rpc.GetControllerCapabilities(ctx, conn)
	if err != nil || !caps[csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME] {
		t.Errorf("controller capabilities %v, %v", caps, err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil || n.Annotations[PoolsAnnotation] != `{"pool-ssd":"9Gi"}` {
		t.Errorf("node annotation %q, %v", n.Annotations[PoolsAnnotation], err)
	}
}
