package csilocal

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Identity is the CSI Identity service.
type Identity struct {
	csi.UnimplementedIdentityServer
	// Version is the vendor version reported by GetPluginInfo.
	Version string
	// Controller says whether this process serves the Controller service.
	Controller bool
	// Driver is the driver name; DriverName when empty.
	Driver string
}

// GetPluginInfo reports the driver name, kubernetes.io.csi.local by default.
func (i *Identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: Names{Driver: i.Driver}.orDefault().Driver, VendorVersion: i.Version}, nil
}

// GetPluginCapabilities reports the Controller service (when served) and
// accessibility constraints: every volume is on one node.
func (i *Identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	service := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	caps := []*csi.PluginCapability{service(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS)}
	if i.Controller {
		caps = append(caps, service(csi.PluginCapability_Service_CONTROLLER_SERVICE))
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: caps}, nil
}

// Probe is always ready: the driver has nothing to wait for.
func (i *Identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
