package csilocal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// Cluster is what the controller reads about nodes. The Kubernetes one
// (NewKubeCluster) reads the pools annotation and the PersistentVolumes.
type Cluster interface {
	// NodeVolumes returns the pools of the node whose topology value
	// (kubernetes.io/hostname) is node, and the volumes already on it.
	// An error wrapping ErrNoPool means the node has no usable pools.
	NodeVolumes(node string) (Pools, []Volume, error)
	// VolumeExists reports whether a volume with the ID exists in the
	// cluster (a PersistentVolume of the driver with that handle).
	VolumeExists(id string) bool
}

// ControllerOptions configure a Controller.
type ControllerOptions struct {
	// Cluster gives the pools and volumes of the nodes. Without it
	// (csi-sanity), volumes are not limited and CreateVolume does not
	// need a node.
	Cluster Cluster
	// Latency is how long CreateVolume works before it carves a volume:
	// it widens the window in which claims are being provisioned.
	Latency time.Duration
	// DataDir, when the node plugin of this process keeps its volumes in
	// it, lets DeleteVolume remove a deleted volume's directory.
	DataDir string
}

// Controller is the CSI Controller service.
type Controller struct {
	csi.UnimplementedControllerServer
	opts ControllerOptions

	mu sync.Mutex
	// volumes are the volumes created since the start, by name.
	volumes map[string]*createdVolume
}

type createdVolume struct {
	name, id, node, pool, reqPool string
	size                          int64
}

// NewController returns the Controller service.
func NewController(opts ControllerOptions) *Controller {
	return &Controller{opts: opts, volumes: map[string]*createdVolume{}}
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// volumeID is the volume ID of a volume name: the name itself when it is
// a safe directory name (Kubernetes' pvc-<uid>), else a hash of it.
func volumeID(name string) string {
	if safeID.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "csi-local-" + hex.EncodeToString(sum[:20])
}

// validID reports whether id can name a directory under the data dir.
func validID(id string) bool {
	return safeID.MatchString(id)
}

// CreateVolume carves a volume of whole GiB from a pool of the node named
// by the accessibility requirements (kubernetes.io/hostname), preferred
// topology first.
func (c *Controller) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	name := req.GetName()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "name missing")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "volume content sources (snapshots, clones) are not supported")
	}
	size, err := volumeSize(req.GetCapacityRange())
	if err != nil {
		return nil, status.Error(codes.OutOfRange, err.Error())
	}
	params := req.GetParameters()
	for k := range params {
		if k != ParamPool && k != ParamOversellRatio {
			return nil, status.Errorf(codes.InvalidArgument, "unknown parameter %q (known: %s, %s)", k, ParamPool, ParamOversellRatio)
		}
	}
	ratio, err := ParseOversellRatio(params[ParamOversellRatio])
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	node := topologyNode(req.GetAccessibilityRequirements())
	if node == "" && c.opts.Cluster != nil {
		return nil, status.Errorf(codes.InvalidArgument, "accessibility requirements with %s missing: a local volume needs a node", TopologyKey)
	}
	want := &createdVolume{name: name, id: volumeID(name), node: node, reqPool: params[ParamPool], size: size}
	logger := klog.FromContext(ctx).WithValues("volume", name, "node", node)

	if v, ok := c.created(name); ok {
		return c.existing(v, want, req.GetCapacityRange())
	}
	if c.opts.Latency > 0 {
		logger.V(4).Info("Provisioning", "latency", c.opts.Latency)
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-time.After(c.opts.Latency):
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.volumes[name]; ok {
		return c.existing(v, want, req.GetCapacityRange())
	}
	want.pool = want.reqPool
	if c.opts.Cluster != nil {
		pools, volumes, err := c.opts.Cluster.NodeVolumes(node)
		if errors.Is(err, ErrNoPool) {
			return nil, status.Error(codes.ResourceExhausted, err.Error())
		}
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "reading node %q: %v", node, err)
		}
		volumes = c.addCreated(node, volumes)
		pool, err := Place(node, pools, volumes, Request{Size: size, Pool: want.reqPool, Ratio: ratio})
		if err != nil {
			logger.Info("Cannot provision", "err", err)
			return nil, status.Error(codes.ResourceExhausted, err.Error())
		}
		want.pool = pool
	}
	c.volumes[name] = want
	logger.Info("Provisioned volume", "id", want.id, "pool", want.pool, "size", size)
	return createResponse(want), nil
}

// created returns the volume created under name, if any.
func (c *Controller) created(name string) (*createdVolume, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.volumes[name]
	return v, ok
}

// existing answers a CreateVolume of a name that exists: the same volume
// when it satisfies the request, AlreadyExists otherwise.
func (c *Controller) existing(v, want *createdVolume, r *csi.CapacityRange) (*csi.CreateVolumeResponse, error) {
	if v.size < r.GetRequiredBytes() || (r.GetLimitBytes() > 0 && v.size > r.GetLimitBytes()) ||
		v.reqPool != want.reqPool || (want.node != "" && v.node != want.node) {
		return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with other settings (size %d, pool %q, node %q)", v.name, v.size, v.reqPool, v.node)
	}
	return createResponse(v), nil
}

// addCreated adds to volumes, the cluster's volumes on node, the volumes
// created on node that the cluster does not show yet (their PVs are
// being written, or not yet seen). Called with c.mu held.
func (c *Controller) addCreated(node string, volumes []Volume) []Volume {
	seen := map[string]bool{}
	for _, v := range volumes {
		seen[v.ID] = true
	}
	var names []string
	for name, v := range c.volumes {
		if v.node == node && !seen[v.id] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		v := c.volumes[name]
		volumes = append(volumes, Volume{ID: v.id, Pool: v.pool, Size: v.size})
	}
	return volumes
}

func createResponse(v *createdVolume) *csi.CreateVolumeResponse {
	vol := &csi.Volume{VolumeId: v.id, CapacityBytes: v.size, VolumeContext: map[string]string{}}
	if v.pool != "" {
		vol.VolumeContext[AttrPool] = v.pool
	}
	if v.node != "" {
		vol.VolumeContext[AttrNode] = v.node
		vol.AccessibleTopology = []*csi.Topology{{Segments: map[string]string{TopologyKey: v.node}}}
	}
	return &csi.CreateVolumeResponse{Volume: vol}
}

// volumeSize is the size of a new volume: the required bytes rounded up to
// whole GiB (1 GiB when none are required), within the limit.
func volumeSize(r *csi.CapacityRange) (int64, error) {
	required, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if required < 0 || limit < 0 {
		return 0, fmt.Errorf("negative capacity range %d..%d", required, limit)
	}
	size := RoundUpGiB(max(required, 1))
	if limit > 0 && size > limit {
		return 0, fmt.Errorf("capacity range %d..%d holds no whole GiB", required, limit)
	}
	return size, nil
}

// topologyNode is the node of the first preferred, else the first
// requisite topology with a kubernetes.io/hostname segment.
func topologyNode(req *csi.TopologyRequirement) string {
	for _, list := range [][]*csi.Topology{req.GetPreferred(), req.GetRequisite()} {
		for _, t := range list {
			if n := t.GetSegments()[TopologyKey]; n != "" {
				return n
			}
		}
	}
	return ""
}

// checkCapabilities accepts filesystem volumes with single-node access.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	for _, c := range caps {
		if c.GetMount() == nil {
			return errors.New("only filesystem (mount) volumes are supported")
		}
		switch m := c.GetAccessMode().GetMode(); m {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY:
		default:
			return fmt.Errorf("access mode %v is not supported: the volumes are node-local", m)
		}
	}
	return nil
}

// DeleteVolume forgets the volume and, with a data dir, removes its data.
func (c *Controller) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, v := range c.volumes {
		if v.id == id {
			delete(c.volumes, name)
		}
	}
	if c.opts.DataDir != "" && validID(id) {
		if err := os.RemoveAll(filepath.Join(c.opts.DataDir, id)); err != nil {
			return nil, status.Errorf(codes.Internal, "removing the data of volume %q: %v", id, err)
		}
	}
	klog.FromContext(ctx).Info("Deleted volume", "id", id)
	return &csi.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms filesystem, single-node capabilities
// of a volume that exists.
func (c *Controller) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	if !c.exists(id) {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", id)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

func (c *Controller) exists(id string) bool {
	c.mu.Lock()
	for _, v := range c.volumes {
		if v.id == id {
			c.mu.Unlock()
			return true
		}
	}
	c.mu.Unlock()
	return c.opts.Cluster != nil && c.opts.Cluster.VolumeExists(id)
}

// ControllerGetCapabilities: CREATE_DELETE_VOLUME only.
func (c *Controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{
			Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		}},
	}}}, nil
}
