package csilocal

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func TestNamesOf(t *testing.T) {
	for _, tc := range []struct {
		driver  string
		want    Names
		wantErr string
	}{
		{driver: DriverName, want: DefaultNames},
		{driver: "lvm.example.com", want: Names{Driver: "lvm.example.com", Provisioner: "lvm.example.com"}},
		{driver: "kubernetes.io/csi.local", wantErr: "not a CSI driver name"},
		{driver: "", wantErr: "not a CSI driver name"},
		{driver: strings.Repeat("a", 64), wantErr: "not a CSI driver name"},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			got, err := NamesOf(tc.driver)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NamesOf(%q) = %v, %v; want error %q", tc.driver, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NamesOf(%q) = %v, %v; want %v", tc.driver, got, err, tc.want)
			}
		})
	}
	if got := (Names{}).PoolsAnnotation(); got != PoolsAnnotation {
		t.Errorf("the zero Names' pools annotation is %q, want %q", got, PoolsAnnotation)
	}
	if got := (Names{Driver: "lvm.example.com", Provisioner: "lvm.example.com"}).PoolsAnnotation(); got != "csi.volume.kubernetes.io/lvm.example.com" {
		t.Errorf("pools annotation of lvm.example.com: %q", got)
	}
}

// TestKubeClusterOtherDriver checks that a driver running under other
// names reads its own pools annotation and counts only its own PVs and the
// PVs of its own classes, on a node that also has the default driver.
func TestKubeClusterOtherDriver(t *testing.T) {
	names, err := NamesOf("lvm.example.com")
	if err != nil {
		t.Fatal(err)
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	n := node("node-1", "", `{"a": "100Gi"}`)
	n.Annotations[names.PoolsAnnotation()] = `{"ssd": "9Gi"}`
	lvmPV := pv("lvm-pv", "node-1", 1, false, "", "", false)
	lvmPV.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: names.Driver, VolumeHandle: "lvm-pv", VolumeAttributes: map[string]string{AttrPool: "ssd"}}
	cluster := startClusterOf(t, names,
		n,
		class("ld", wffc, nil),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lvm"}, Provisioner: names.Provisioner, VolumeBindingMode: &wffc, Parameters: map[string]string{ParamPool: "ssd"}},
		pv("default-driver", "node-1", 2, true, "a", "", false),
		pv("of-default-class", "node-1", 3, false, "", "ld", false),
		pv("of-lvm-class", "node-1", 4, false, "", "lvm", false),
		lvmPV,
	)
	pools, vols, err := cluster.NodeVolumes("node-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Pools{"ssd": 9 * GiB}, pools); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	want := []Volume{{ID: "lvm-pv", Pool: "ssd", Size: GiB}, {ID: "pv/of-lvm-class", Pool: "ssd", Size: 4 * GiB}}
	if diff := cmp.Diff(want, vols); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	if !cluster.VolumeExists("lvm-pv") || cluster.VolumeExists("default-driver") {
		t.Error("VolumeExists: want true only for handles of PVs of lvm.example.com")
	}
}

// TestDriverNameReported checks that GetPluginInfo and the kubelet
// registration report the driver's name.
func TestDriverNameReported(t *testing.T) {
	ctx := context.Background()
	for _, driver := range []string{"", "lvm.example.com"} {
		want := driver
		if want == "" {
			want = DriverName
		}
		info, err := (&Identity{Driver: driver}).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		if err != nil || info.GetName() != want {
			t.Errorf("GetPluginInfo of %q: %v, %v; want %s", driver, info, err, want)
		}
		reg, err := (&Registration{Driver: driver, Endpoint: "/csi.sock"}).GetInfo(ctx, &registerapi.InfoRequest{})
		if err != nil || reg.GetName() != want {
			t.Errorf("registration of %q: %v, %v; want %s", driver, reg, err, want)
		}
	}
}
