package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kube-carry/kube-carry/internal/cluster"
)

// cmdClusterUp starts the line as a cluster (make cluster): the line's
// binaries, or with -upstream plain upstream's kube-scheduler and kubelet of
// the same release, or any kube-scheduler and kubelet given.
func cmdClusterUp(args []string) error {
	fs := flag.NewFlagSet("cluster-up", flag.ContinueOnError)
	var opts cluster.Options
	fs.IntVar(&opts.Nodes, "nodes", 2, "number of nodes")
	fs.StringVar(&opts.Scheduler, "scheduler", "", "kube-scheduler binary (default: the line's)")
	fs.StringVar(&opts.Kubelet, "kubelet", "", "kubelet binary (default: the line's)")
	fs.BoolVar(&opts.Upstream, "upstream", false, "plain upstream kube-scheduler and kubelet of the line's release (make cluster-binaries builds them)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opts.Log = os.Stdout
	if st, err := cluster.Running(); err != nil {
		return err
	} else if st != nil {
		return &cluster.AlreadyError{State: st}
	}
	cfg, flavour, err := cluster.ForLine(ln, opts)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := cluster.Up(ctx, cfg)
	if err != nil {
		var already *cluster.AlreadyError
		if errors.As(err, &already) {
			return err
		}
		return fmt.Errorf("line %s: %w", ln.Name, err)
	}
	kubectl := cfg.Binaries.Kubectl
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, kubectl); err == nil {
			kubectl = r
		}
	}
	fmt.Printf(`cluster: line %s is up: %s Ready (%s)
  export KUBECONFIG=%s
  %s get nodes -o wide
  workload image: %s (imagePullPolicy: IfNotPresent; no registry is reachable)
  logs: %s
  make cluster-down stops it and removes everything it made
`, ln.Name, strings.Join(st.Nodes, ", "), flavour, st.Kubeconfig, kubectl, st.Image, filepath.Join(st.Dir, "logs"))
	return nil
}

func cmdClusterDown(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q", args)
	}
	// The marker names the running cluster's folder; without one, what a
	// cluster of this line left is found by its folder and by the names
	// every cluster uses.
	dir := ""
	if st, err := cluster.Running(); err != nil {
		return err
	} else if st == nil {
		dir = ln.ClusterDir()
	}
	_, err := cluster.Down(dir, os.Stdout)
	return err
}
