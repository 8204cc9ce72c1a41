// Command csi-local runs kube-carry's node-local CSI driver for tests
// (internal/csilocal): the stand-in for the local-dynamic driver
// kubernetes.io.csi.local. --mode=controller runs the provisioner,
// --mode=node the node plugin (one per node), --mode=controller,node both
// in one process.
//
//	csi-local --mode=node --node-name=node-1 --pools=pool-ssd=9Gi --kubeconfig=kubelet.conf
//	  (CSI socket /var/lib/kubelet/plugins/kubernetes.io.csi.local/csi.sock, volumes
//	  in /var/lib/csi-local, registration in /var/lib/kubelet/plugins_registry)
//	csi-local --mode=controller --kubeconfig=admin.conf --provision-latency=2s \
//	  --endpoint=/run/csi-local/controller.sock
//
// --driver-name runs it as another node-local CSI driver, whose
// StorageClasses (provisioner: the driver name) opt into the fork's
// capacity check with the annotation kube-carry.io/capacity-source.
// --enable-capacity makes the controller publish CSIStorageCapacity objects
// (one per node and StorageClass, refreshed --capacity-poll-interval after
// the last refresh and at once for a class added or deleted)
// for upstream's storage capacity tracking, as external-provisioner does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kube-carry/kube-carry/internal/csilocal"
)

func main() {
	err := run(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		klog.ErrorS(err, "csi-local failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

func run(args []string) error {
	fs := flag.NewFlagSet("csi-local", flag.ContinueOnError)
	klog.InitFlags(fs)
	var cfg csilocal.Config
	mode := fs.String("mode", "controller,node", "what to run: controller, node, or controller,node")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server; empty: $KUBECONFIG, ~/.kube/config, else the in-cluster configuration")
	driverName := fs.String("driver-name", csilocal.DriverName, "the CSI driver name; the StorageClass provisioner is "+csilocal.ProvisionerName+" for the default and the driver name for any other")
	pools := fs.String("pools", "", "node: the node's pools as name=size,... (e.g. pool-ssd=9Gi), written into the Node's annotation csi.volume.kubernetes.io/<driver name>; empty leaves the annotation alone")
	fs.StringVar(&cfg.Endpoint, "endpoint", "", "CSI socket (unix:///path or a path); default /var/lib/kubelet/plugins/<driver name>/csi.sock")
	fs.DurationVar(&cfg.Latency, "provision-latency", 0, "controller: how long provisioning a volume takes")
	fs.BoolVar(&cfg.LeaderElection, "leader-election", false, "controller: elect a leader among replicas")
	fs.StringVar(&cfg.LeaderElectionNamespace, "leader-election-namespace", "", "controller: namespace of the leader election Lease")
	enableCapacity := fs.Bool("enable-capacity", false, "controller: publish the free capacity of each node and StorageClass as CSIStorageCapacity objects, as external-provisioner --enable-capacity does")
	fs.StringVar(&cfg.CapacityNamespace, "capacity-namespace", "kube-system", "controller: namespace of the CSIStorageCapacity objects")
	fs.DurationVar(&cfg.CapacityInterval, "capacity-poll-interval", time.Minute, "controller: how long after a refresh of the CSIStorageCapacity objects the next one comes (a StorageClass of the driver added or deleted refreshes them at once)")
	fs.StringVar(&cfg.NodeName, "node-name", os.Getenv("NODE_NAME"), "node: name of this node's Node object (default: $NODE_NAME, else the host name)")
	fs.StringVar(&cfg.DataDir, "data-dir", "/var/lib/csi-local", "node: directory holding a directory per volume")
	fs.StringVar(&cfg.RegistrationDir, "kubelet-registration-dir", "/var/lib/kubelet/plugins_registry", "node: the kubelet's plugin registry directory; empty: do not register with the kubelet")
	fs.StringVar(&cfg.KubeletEndpoint, "kubelet-registration-path", "", "node: the CSI socket's path as the kubelet sees it (default: the --endpoint path)")
	fs.StringVar(&cfg.Version, "version", "dev", "vendor version reported by GetPluginInfo")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	names, err := csilocal.NamesOf(*driverName)
	if err != nil {
		return fmt.Errorf("--driver-name: %w", err)
	}
	cfg.Names = names
	if cfg.Endpoint == "" {
		cfg.Endpoint = "/var/lib/kubelet/plugins/" + names.Driver + "/csi.sock"
	}

	for _, m := range strings.Split(*mode, ",") {
		switch strings.TrimSpace(m) {
		case "controller":
			cfg.Controller = true
		case "node":
			cfg.Node = true
		default:
			return fmt.Errorf("--mode: unknown mode %q (want controller, node or controller,node)", m)
		}
	}
	if !*enableCapacity {
		cfg.CapacityNamespace = ""
	} else if !cfg.Controller {
		return fmt.Errorf("--enable-capacity is for --mode=controller")
	} else if cfg.CapacityNamespace == "" || cfg.CapacityInterval <= 0 {
		return fmt.Errorf("--enable-capacity needs a --capacity-namespace and a positive --capacity-poll-interval")
	}
	if cfg.Node && cfg.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--node-name not given: %w", err)
		}
		cfg.NodeName = host
	}
	if *pools != "" {
		if !cfg.Node {
			return fmt.Errorf("--pools is for --mode=node")
		}
		value, err := csilocal.ParsePoolsFlag(*pools)
		if err != nil {
			return fmt.Errorf("--pools: %w", err)
		}
		cfg.Pools = value
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	restConfig, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	restConfig.UserAgent = "csi-local/" + cfg.Version
	cfg.Client, err = kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return csilocal.Run(klog.NewContext(ctx, klog.Background()), cfg)
}
