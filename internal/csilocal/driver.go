package csilocal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	mount "k8s.io/mount-utils"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

// Config is what Run runs: the controller, the node plugin, or both.
type Config struct {
	// Controller runs the Controller service and the provisioning
	// controller; Node runs the Node service, the kubelet registration and
	// the pools annotation.
	Controller, Node bool
	// Endpoint is the CSI socket (unix:///path or a path).
	Endpoint string
	// Client reaches the API server.
	Client kubernetes.Interface
	// Version is the vendor version of GetPluginInfo.
	Version string
	// Names are the names the driver runs under; the zero Names are
	// DefaultNames.
	Names Names

	// Latency is how long provisioning a volume takes (controller).
	Latency time.Duration
	// LeaderElection makes the provisioning controller elect a leader
	// (a Lease in LeaderElectionNamespace), for several replicas.
	LeaderElection          bool
	LeaderElectionNamespace string
	// CapacityNamespace, when not empty, makes the controller publish
	// CSIStorageCapacity objects there, refreshed every CapacityInterval
	// (CapacityPublisher).
	CapacityNamespace string
	CapacityInterval  time.Duration

	// NodeName is the name of the node's Node object (node).
	NodeName string
	// Pools is the value for the node's pools annotation (ParsePoolsFlag);
	// empty leaves the annotation alone.
	Pools string
	// DataDir holds the volumes' directories (node).
	DataDir string
	// RegistrationDir is the kubelet's plugin registry directory; empty
	// does not register with the kubelet.
	RegistrationDir string
	// KubeletEndpoint is the CSI socket's path as the kubelet sees it
	// (when the driver runs in a container); Endpoint's path when empty.
	KubeletEndpoint string
	// Mounter mounts (node); mount.New("") when nil.
	Mounter mount.Interface
}

// Run runs the driver until ctx is done or a part of it fails.
func Run(ctx context.Context, cfg Config) error {
	if !cfg.Controller && !cfg.Node {
		return errors.New("nothing to run: neither controller nor node")
	}
	if cfg.Client == nil {
		return errors.New("no Kubernetes client")
	}
	if cfg.Node && (cfg.NodeName == "" || cfg.DataDir == "") {
		return errors.New("the node plugin needs a node name and a data directory")
	}
	sock, err := SocketPath(cfg.Endpoint)
	if err != nil {
		return err
	}
	names := cfg.Names.orDefault()
	logger := klog.FromContext(ctx)
	// Returning early stops what has started.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)

	var node *Node
	if cfg.Node {
		n, err := WaitForNode(ctx, cfg.Client, cfg.NodeName)
		if err != nil {
			return err
		}
		// The kubelet labels the node with the topology NodeGetInfo
		// reports, and refuses a value other than the label's.
		topology := n.Labels[v1.LabelHostname]
		if cfg.Pools != "" {
			done, err := KeepPoolsAnnotation(ctx, cfg.Client, cfg.NodeName, names.PoolsAnnotation(), cfg.Pools)
			if err != nil {
				return err
			}
			g.Go(func() error { <-done; return nil })
		}
		node = NewNode(NodeOptions{NodeID: cfg.NodeName, Topology: topology, DataDir: cfg.DataDir, Mounter: cfg.Mounter})
	}

	var ctrl *Controller
	if cfg.Controller {
		factory := informers.NewSharedInformerFactory(cfg.Client, controller.DefaultResyncPeriod)
		cluster, err := NewKubeCluster(factory, names)
		if err != nil {
			return err
		}
		opts := ControllerOptions{Cluster: cluster, Latency: cfg.Latency}
		if cfg.Node {
			opts.DataDir = cfg.DataDir // the volumes are on this host
		}
		ctrl = NewController(opts)
		pcOpts := []func(*controller.ProvisionController) error{
			controller.ClaimsInformer(factory.Core().V1().PersistentVolumeClaims().Informer()),
			controller.VolumesInformer(factory.Core().V1().PersistentVolumes().Informer()),
			controller.ClassesInformer(factory.Storage().V1().StorageClasses().Informer()),
			controller.NodesLister(factory.Core().V1().Nodes().Lister()),
			controller.LeaderElection(cfg.LeaderElection),
		}
		if cfg.LeaderElectionNamespace != "" {
			pcOpts = append(pcOpts, controller.LeaderElectionNamespace(cfg.LeaderElectionNamespace))
		}
		if cfg.CapacityNamespace != "" {
			publisher, err := NewCapacityPublisher(CapacityOptions{
				Client: cfg.Client, Names: names, Namespace: cfg.CapacityNamespace, Interval: cfg.CapacityInterval, Cluster: cluster,
				Nodes: factory.Core().V1().Nodes().Lister(), Classes: factory.Storage().V1().StorageClasses(),
				Synced: []cache.InformerSynced{
					factory.Core().V1().Nodes().Informer().HasSynced,
					factory.Storage().V1().StorageClasses().Informer().HasSynced,
					factory.Core().V1().PersistentVolumes().Informer().HasSynced,
				},
			})
			if err != nil {
				return err
			}
			g.Go(func() error {
				publisher.Run(ctx)
				return nil
			})
		}
		prov := &Provisioner{Controller: ctrl, Names: names}
		pc := controller.NewProvisionController(ctx, cfg.Client, names.Provisioner, prov, pcOpts...)
		if names.legacyProvisioner() {
			// Upstream hands neither claims nor released volumes of a
			// kubernetes.io/ provisioner to it (docs/local-dynamic.md).
			annotator, err := NewClaimAnnotator(cfg.Client, factory)
			if err != nil {
				return err
			}
			releaser, err := NewVolumeReleaser(cfg.Client, factory, prov)
			if err != nil {
				return err
			}
			g.Go(func() error {
				annotator.Run(ctx)
				return nil
			})
			g.Go(func() error {
				releaser.Run(ctx)
				return nil
			})
		}
		factory.Start(ctx.Done())
		g.Go(func() error {
			pc.Run(ctx)
			factory.Shutdown()
			return nil
		})
	}

	server, err := Listen(ctx, sock)
	if err != nil {
		return fmt.Errorf("CSI endpoint: %w", err)
	}
	csi.RegisterIdentityServer(server.GRPC(), &Identity{Version: cfg.Version, Controller: cfg.Controller, Driver: names.Driver})
	if ctrl != nil {
		csi.RegisterControllerServer(server.GRPC(), ctrl)
	}
	if node != nil {
		csi.RegisterNodeServer(server.GRPC(), node)
	}
	g.Go(func() error { return server.Serve(ctx) })

	if cfg.Node && cfg.RegistrationDir != "" {
		endpoint := cfg.KubeletEndpoint
		if endpoint == "" {
			endpoint = sock
		}
		reg, err := ListenRegistration(ctx, cfg.RegistrationDir, &Registration{Endpoint: endpoint, Driver: names.Driver})
		if err != nil {
			return fmt.Errorf("kubelet registration: %w", err)
		}
		g.Go(func() error { return reg.Serve(ctx) })
	}
	logger.Info("Running", "driver", names.Driver, "provisioner", names.Provisioner, "controller", cfg.Controller, "node", cfg.Node, "endpoint", sock)
	return g.Wait()
}
