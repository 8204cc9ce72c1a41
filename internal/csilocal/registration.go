package csilocal

import (
	"context"
	"path/filepath"
	"sync"

	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// RegistrationSocket is the file name of the registration socket in the
// kubelet's plugin registry directory (/var/lib/kubelet/plugins_registry):
// short, so that its path fits a unix socket's 107 bytes also under a
// deep kubelet root.
const RegistrationSocket = "csi-local-reg.sock"

// SupportedVersions are the CSI versions the kubelet is told about.
var SupportedVersions = []string{"1.0.0"}

// Registration answers the kubelet's plugin watcher, which finds the
// registration socket in its plugin registry directory, asks GetInfo and
// reports the outcome with NotifyRegistrationStatus. It does what
// node-driver-registrar does for other drivers.
type Registration struct {
	registerapi.UnimplementedRegistrationServer
	// Endpoint is the CSI socket as the kubelet reaches it.
	Endpoint string
	// Driver is the driver name; DriverName when empty.
	Driver string

	mu         sync.Mutex
	registered bool
	lastError  string
}

// GetInfo tells the kubelet the plugin type, driver name, CSI endpoint
// and versions.
func (r *Registration) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	klog.FromContext(ctx).V(2).Info("Kubelet asked for plugin info", "endpoint", r.Endpoint)
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              Names{Driver: r.Driver}.orDefault().Driver,
		Endpoint:          r.Endpoint,
		SupportedVersions: SupportedVersions,
	}, nil
}

// NotifyRegistrationStatus records and logs the kubelet's verdict.
func (r *Registration) NotifyRegistrationStatus(ctx context.Context, status *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.mu.Lock()
	r.registered, r.lastError = status.GetPluginRegistered(), status.GetError()
	r.mu.Unlock()
	logger := klog.FromContext(ctx)
	if status.GetPluginRegistered() {
		logger.Info("Registered with the kubelet")
	} else {
		logger.Error(nil, "The kubelet refused the registration", "error", status.GetError())
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Registered reports whether the kubelet registered the plugin, and its
// error when it refused.
func (r *Registration) Registered() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered, r.lastError
}

// ListenRegistration creates the registration socket in dir and a server
// for r on it.
func ListenRegistration(ctx context.Context, dir string, r *Registration) (*Server, error) {
	s, err := Listen(ctx, filepath.Join(dir, RegistrationSocket))
	if err != nil {
		return nil, err
	}
	registerapi.RegisterRegistrationServer(s.GRPC(), r)
	return s, nil
}
