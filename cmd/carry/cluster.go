package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kube-carry/kube-carry/internal/cluster"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// cmdClusterUp starts the line as a cluster (make cluster): the line's
// binaries, or with -upstream plain upstream's kube-scheduler and kubelet of
// the same release, or any kube-scheduler and kubelet given.
func cmdClusterUp(args []string) error {
	fs := flag.NewFlagSet("cluster-up", flag.ContinueOnError)
	nodes := fs.Int("nodes", 2, "number of nodes")
	scheduler := fs.String("scheduler", "", "kube-scheduler binary (default: the line's)")
	kubelet := fs.String("kubelet", "", "kubelet binary (default: the line's)")
	upstream := fs.Bool("upstream", false, "plain upstream kube-scheduler and kubelet of the line's release (make cluster-binaries builds them)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	version, p, err := ln.Version()
	if err != nil {
		return err
	}
	t, err := tree.Open(ln.TreeDir())
	if err != nil {
		return fmt.Errorf("line %s has no patched tree: run make LINE=%s first", ln.Name, ln.Name)
	}
	commit, err := t.Line("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	abs := func(dir, name string) string {
		a, _ := filepath.Abs(filepath.Join(dir, name))
		return a
	}
	bin := ln.BinDir()
	b := cluster.Binaries{
		Etcd:              abs(bin, "etcd"),
		APIServer:         abs(bin, "kube-apiserver"),
		ControllerManager: abs(bin, "kube-controller-manager"),
		Scheduler:         abs(bin, "kube-scheduler"),
		Kubelet:           abs(bin, "kubelet"),
		Kubectl:           abs(bin, "kubectl"),
		Agnhost:           abs(bin, "agnhost"),
	}
	flavour := version
	if *upstream {
		b.Scheduler = abs(ln.UpstreamBinDir(), "kube-scheduler")
		b.Kubelet = abs(ln.UpstreamBinDir(), "kubelet")
		flavour = "plain upstream " + p.Version + " kube-scheduler and kubelet"
	}
	if *scheduler != "" {
		b.Scheduler, _ = filepath.Abs(*scheduler)
		flavour += ", kube-scheduler " + b.Scheduler
	}
	if *kubelet != "" {
		b.Kubelet, _ = filepath.Abs(*kubelet)
		flavour += ", kubelet " + b.Kubelet
	}
	dir, err := filepath.Abs(ln.ClusterDir())
	if err != nil {
		return err
	}
	cfg := cluster.Config{Line: ln.Name, Version: flavour, Dir: dir, Nodes: *nodes, Binaries: b, Log: os.Stdout}
	if st, err := cluster.Running(); err != nil {
		return err
	} else if st != nil {
		return &cluster.AlreadyError{State: st}
	}
	if err := cluster.Preflight(cfg); err != nil {
		return err
	}
	imgDir := filepath.Join(ln.OutDir(), "images")
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	fmt.Printf("cluster: line %s: building the agnhost and pause images\n", ln.Name)
	imgs, err := cluster.BuildImages(imgDir, b.Agnhost, version, commit, p.Date)
	if err != nil {
		return err
	}
	cfg.Images, cfg.PauseImage = imgs.Archives, imgs.Pause
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
	kubectl, _ := filepath.Rel(mustGetwd(), b.Kubectl)
	fmt.Printf(`cluster: line %s is up: %s (%s)
  export KUBECONFIG=%s
  %s get nodes -o wide
  workload image: %s (imagePullPolicy: IfNotPresent; no registry is reachable)
  logs: %s
  make cluster-down stops it and removes everything it made
`, ln.Name, joinNodes(st.Nodes), flavour, st.Kubeconfig, kubectl, imgs.Agnhost, filepath.Join(dir, "logs"))
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

func joinNodes(ns []string) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s + " Ready"
}

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return wd
}
