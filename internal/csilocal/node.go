package csilocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	mount "k8s.io/mount-utils"
)

// NodeOptions configure a Node.
type NodeOptions struct {
	// NodeID is the node's name: the CSI node ID.
	NodeID string
	// Topology is the node's kubernetes.io/hostname label; NodeID when
	// empty.
	Topology string
	// DataDir holds a directory per volume.
	DataDir string
	// Mounter mounts; mount.New("") when nil.
	Mounter mount.Interface
}

// Node is the CSI Node service: it publishes a volume as a bind mount of
// the volume's directory under the data dir.
type Node struct {
	csi.UnimplementedNodeServer
	opts NodeOptions
	// mu serializes publishing and unpublishing: the calls of the kubelet
	// for one target path must not interleave.
	mu sync.Mutex
}

// NewNode returns the Node service.
func NewNode(opts NodeOptions) *Node {
	if opts.Mounter == nil {
		opts.Mounter = mount.New("")
	}
	if opts.Topology == "" {
		opts.Topology = opts.NodeID
	}
	return &Node{opts: opts}
}

// NodeGetInfo reports the node name as node ID and kubernetes.io/hostname
// as topology.
func (n *Node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             n.opts.NodeID,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{TopologyKey: n.opts.Topology}},
	}, nil
}

// NodeGetCapabilities: none (no staging, no statistics, no expansion).
func (n *Node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodePublishVolume bind-mounts the volume's directory at the target path,
// read-only when asked. Publishing again with the same read-only setting
// succeeds; with the other, it fails with AlreadyExists.
func (n *Node) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target, vc := req.GetVolumeId(), req.GetTargetPath(), req.GetVolumeCapability()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target path missing")
	case vc == nil:
		return nil, status.Error(codes.InvalidArgument, "volume capability missing")
	case !validID(id):
		return nil, status.Errorf(codes.NotFound, "volume %q not found: not a volume ID of this driver", id)
	}
	if err := checkCapabilities([]*csi.VolumeCapability{vc}); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	readOnly := req.GetReadonly() || vc.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	logger := klog.FromContext(ctx).WithValues("volume", id, "target", target, "readOnly", readOnly)

	n.mu.Lock()
	defer n.mu.Unlock()
	source := filepath.Join(n.opts.DataDir, id)
	if err := os.MkdirAll(source, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "creating the volume's directory: %v", err)
	}
	// World-writable, as a fresh local volume is for pods of any user.
	if err := os.Chmod(source, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "creating the volume's directory: %v", err)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "creating the target path: %v", err)
	}
	mounted, err := n.opts.Mounter.IsMountPoint(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "checking the target path: %v", err)
	}
	if mounted {
		ro, err := n.mountedReadOnly(target)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "checking the target path: %v", err)
		}
		if ro != readOnly {
			return nil, status.Errorf(codes.AlreadyExists, "target path %q is already published with readOnly=%v", target, ro)
		}
		logger.V(4).Info("Already published")
		return &csi.NodePublishVolumeResponse{}, nil
	}
	options := []string{"bind"}
	if readOnly {
		options = append(options, "ro")
	}
	options = append(options, vc.GetMount().GetMountFlags()...)
	if err := n.opts.Mounter.Mount(source, target, "", options); err != nil {
		_ = os.Remove(target)
		return nil, status.Errorf(codes.Internal, "publishing: %v", err)
	}
	logger.Info("Published volume")
	return &csi.NodePublishVolumeResponse{}, nil
}

// mountedReadOnly reports whether the mount at target is read-only.
func (n *Node) mountedReadOnly(target string) (bool, error) {
	mps, err := n.opts.Mounter.List()
	if err != nil {
		return false, err
	}
	abs, err := filepath.EvalSymlinks(target)
	if err != nil {
		return false, err
	}
	// The last mount at a path is the one in effect.
	for _, mp := range slices.Backward(mps) {
		if mp.Path == abs || mp.Path == target {
			return slices.Contains(mp.Opts, "ro"), nil
		}
	}
	return false, fmt.Errorf("no mount at %s in the mount table", target)
}

// NodeUnpublishVolume unmounts the target path and removes it; a target
// path that is not there is already unpublished.
func (n *Node) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target path missing")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	if err := mount.CleanupMountPoint(target, n.opts.Mounter, true); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublishing: %v", err)
	}
	klog.FromContext(ctx).Info("Unpublished volume", "volume", id, "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
