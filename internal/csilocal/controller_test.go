package csilocal

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// staticCluster is a cluster that never sees the volumes the controller
// creates, as when their PVs are not written or not watched yet.
type staticCluster struct {
	pools   map[string]Pools
	volumes map[string][]Volume
}

func (c *staticCluster) NodeVolumes(node string) (Pools, []Volume, error) {
	p, ok := c.pools[node]
	if !ok {
		return nil, nil, fmt.Errorf("%w: node %q has no pools", ErrNoPool, node)
	}
	return p, c.volumes[node], nil
}

func (c *staticCluster) VolumeExists(string) bool { return false }

func createReq(name, node string, bytes int64, params map[string]string) *csi.CreateVolumeRequest {
	r := &csi.CreateVolumeRequest{
		Name:               name,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: bytes},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)},
		Parameters:         params,
	}
	if node != "" {
		r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{TopologyKey: node}}}}
	}
	return r
}

// TestCreateVolumeInFlight creates 11 volumes of 1 GiB at once on a node
// with 9 GiB, 1 GiB of it used, while the cluster shows none of them:
// the controller counts what it created itself, so 8 fit and 3 fail.
func TestCreateVolumeInFlight(t *testing.T) {
	ctrl := NewController(ControllerOptions{
		Cluster: &staticCluster{
			pools:   map[string]Pools{"node-1": {"pool-ssd": 9 * GiB}},
			volumes: map[string][]Volume{"node-1": {{ID: "old", Pool: "pool-ssd", Size: GiB}}},
		},
		Latency: 20 * time.Millisecond,
	})
	var wg sync.WaitGroup
	codes := make([]codes.Code, 11)
	for i := range codes {
		wg.Go(func() {
			_, err := ctrl.CreateVolume(context.Background(), createReq(fmt.Sprintf("pvc-%d", i), "node-1", GiB, map[string]string{ParamPool: "pool-ssd"}))
			codes[i] = status.Code(err)
		})
	}
	wg.Wait()
	count := map[string]int{}
	for _, c := range codes {
		count[c.String()]++
	}
	if count["OK"] != 8 || count["ResourceExhausted"] != 3 {
		t.Errorf("results %v; want 8 OK and 3 ResourceExhausted", count)
	}
}

func TestCreateVolumeErrors(t *testing.T) {
	ctrl := NewController(ControllerOptions{Cluster: &staticCluster{
		pools: map[string]Pools{"node-1": {"a": 4 * GiB, "b": 4 * GiB}},
	}})
	ctx := context.Background()
	if _, err := ctrl.CreateVolume(ctx, createReq("existing", "node-1", GiB, map[string]string{ParamPool: "a"})); err != nil {
		t.Fatal(err)
	}
	block := createReq("block", "node-1", GiB, nil)
	block.VolumeCapabilities[0].AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	multi := createReq("multi", "node-1", GiB, nil)
	multi.VolumeCapabilities[0].AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	limited := createReq("limited", "node-1", GiB+1, nil)
	limited.CapacityRange.LimitBytes = GiB + 2
	for _, tc := range []struct {
		name     string
		req      *csi.CreateVolumeRequest
		want     codes.Code
		wantSize int64
		wantPool string
	}{
		{name: "fits", req: createReq("v1", "node-1", 2*GiB-1, map[string]string{ParamPool: "b"}), want: codes.OK, wantSize: 2 * GiB, wantPool: "b"},
		{name: "no pool param: most room", req: createReq("v2", "node-1", 1500<<20, nil), want: codes.OK, wantSize: 2 * GiB, wantPool: "a"},
		{name: "same again", req: createReq("existing", "node-1", GiB, map[string]string{ParamPool: "a"}), want: codes.OK, wantSize: GiB, wantPool: "a"},
		{name: "same name, bigger", req: createReq("existing", "node-1", 2*GiB, map[string]string{ParamPool: "a"}), want: codes.AlreadyExists},
		{name: "same name, other pool", req: createReq("existing", "node-1", GiB, map[string]string{ParamPool: "b"}), want: codes.AlreadyExists},
		{name: "pool full", req: createReq("v3", "node-1", 4*GiB, map[string]string{ParamPool: "a"}), want: codes.ResourceExhausted},
		{name: "oversold", req: createReq("v4", "node-1", 4*GiB, map[string]string{ParamPool: "a", ParamOversellRatio: "2"}), want: codes.OK, wantSize: 4 * GiB, wantPool: "a"},
		{name: "pool not on node", req: createReq("v5", "node-1", GiB, map[string]string{ParamPool: "c"}), want: codes.ResourceExhausted},
		{name: "node without pools", req: createReq("v6", "node-2", GiB, nil), want: codes.ResourceExhausted},
		{name: "no node", req: createReq("v7", "", GiB, nil), want: codes.InvalidArgument},
		{name: "unknown parameter", req: createReq("v8", "node-1", GiB, map[string]string{"poool": "a"}), want: codes.InvalidArgument},
		{name: "invalid ratio", req: createReq("v9", "node-1", GiB, map[string]string{ParamOversellRatio: "0"}), want: codes.InvalidArgument},
		{name: "block", req: block, want: codes.InvalidArgument},
		{name: "multi-node", req: multi, want: codes.InvalidArgument},
		{name: "no whole GiB in range", req: limited, want: codes.OutOfRange},
		{name: "no name", req: createReq("", "node-1", GiB, nil), want: codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := ctrl.CreateVolume(ctx, tc.req)
			if status.Code(err) != tc.want {
				t.Fatalf("CreateVolume: %v; want code %v", err, tc.want)
			}
			if err != nil {
				return
			}
			v := resp.GetVolume()
			if v.GetCapacityBytes() != tc.wantSize || v.GetVolumeContext()[AttrPool] != tc.wantPool ||
				v.GetAccessibleTopology()[0].GetSegments()[TopologyKey] != "node-1" {
				t.Errorf("volume %v; want size %d, pool %q, on node-1", v, tc.wantSize, tc.wantPool)
			}
		})
	}
}
