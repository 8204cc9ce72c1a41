package csilocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"
)

// SocketPath returns the file of a unix endpoint: unix:///path, unix:/path
// or a plain path.
func SocketPath(endpoint string) (string, error) {
	path := endpoint
	if rest, ok := strings.CutPrefix(endpoint, "unix://"); ok {
		path = rest
	} else if rest, ok := strings.CutPrefix(endpoint, "unix:"); ok {
		path = rest
	} else if strings.Contains(endpoint, "://") {
		return "", fmt.Errorf("endpoint %q: only unix sockets are supported", endpoint)
	}
	if path == "" {
		return "", fmt.Errorf("endpoint %q: no socket path", endpoint)
	}
	return filepath.Clean(path), nil
}

// listenUnix listens on a unix socket at path, replacing a stale socket
// left by an earlier run.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing stale socket: %w", err)
	}
	return net.Listen("unix", path)
}

// Server is a gRPC server on a unix socket.
type Server struct {
	path string
	grpc *grpc.Server
	lis  net.Listener
}

// Listen creates the socket at path and a gRPC server that logs its calls
// (secrets stripped); register services on Server.GRPC before Serve.
func Listen(ctx context.Context, path string) (*Server, error) {
	lis, err := listenUnix(path)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	logCalls := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		logger := logger.WithValues("method", info.FullMethod)
		logger.V(5).Info("Call", "request", protosanitizer.StripSecrets(req))
		resp, err := handler(klog.NewContext(ctx, logger), req)
		if err != nil {
			logger.V(2).Info("Call failed", "err", err)
		} else {
			logger.V(5).Info("Call succeeded", "response", protosanitizer.StripSecrets(resp))
		}
		return resp, err
	}
	return &Server{path: path, grpc: grpc.NewServer(grpc.UnaryInterceptor(logCalls)), lis: lis}, nil
}

// GRPC is the server to register services on.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Serve serves until ctx is done, then stops the server and removes the
// socket.
func (s *Server) Serve(ctx context.Context) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			s.grpc.GracefulStop()
		case <-done:
		}
	}()
	klog.FromContext(ctx).Info("Serving", "socket", s.path)
	err := s.grpc.Serve(s.lis)
	_ = os.Remove(s.path)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
