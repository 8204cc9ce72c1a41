package cluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kube-carry/kube-carry/internal/line"
	"github.com/kube-carry/kube-carry/internal/tree"
)

// Options select what runs on a line's cluster.
type Options struct {
	// Nodes is the number of nodes (default 2).
	Nodes int
	// Upstream runs plain upstream's kube-scheduler and kubelet of the
	// line's release (make cluster-binaries builds them).
	Upstream bool
	// Scheduler and Kubelet, when set, are binaries to run instead.
	Scheduler, Kubelet string
	Log                io.Writer
}

// ForLine is the cluster of line l: its binaries (make, make etcd, make
// cluster-binaries), or the ones opts names, and its images, built into
// _output/<line>/images. Flavour says which binaries run, for messages and
// reports: the fork version, or plain upstream vX.Y.Z.
func ForLine(l line.Line, opts Options) (cfg Config, flavour string, err error) {
	version, p, err := l.Version()
	if err != nil {
		return cfg, "", err
	}
	t, err := tree.Open(l.TreeDir())
	if err != nil {
		return cfg, "", fmt.Errorf("line %s has no patched tree: run make LINE=%s first", l.Name, l.Name)
	}
	commit, err := t.Line("rev-parse", "HEAD")
	if err != nil {
		return cfg, "", err
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		return a
	}
	bin := l.BinDir()
	b := Binaries{
		Etcd:              abs(filepath.Join(bin, "etcd")),
		APIServer:         abs(filepath.Join(bin, "kube-apiserver")),
		ControllerManager: abs(filepath.Join(bin, "kube-controller-manager")),
		Scheduler:         abs(filepath.Join(bin, "kube-scheduler")),
		Kubelet:           abs(filepath.Join(bin, "kubelet")),
		Kubectl:           abs(filepath.Join(bin, "kubectl")),
		Agnhost:           abs(filepath.Join(bin, "agnhost")),
	}
	flavour = version
	if opts.Upstream {
		b.Scheduler = abs(filepath.Join(l.UpstreamBinDir(), "kube-scheduler"))
		b.Kubelet = abs(filepath.Join(l.UpstreamBinDir(), "kubelet"))
		flavour = "plain upstream " + p.Version + " kube-scheduler and kubelet"
	}
	if opts.Scheduler != "" {
		b.Scheduler = abs(opts.Scheduler)
		flavour += ", kube-scheduler " + b.Scheduler
	}
	if opts.Kubelet != "" {
		b.Kubelet = abs(opts.Kubelet)
		flavour += ", kubelet " + b.Kubelet
	}
	cfg = Config{Line: l.Name, Version: flavour, Dir: abs(l.ClusterDir()), Nodes: opts.Nodes, Binaries: b, Log: opts.Log}
	if err := Preflight(cfg); err != nil {
		return cfg, "", err
	}
	imgDir := l.ImagesDir()
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return cfg, "", err
	}
	cfg.logf("line %s: building the agnhost and pause images", l.Name)
	imgs, err := BuildImages(imgDir, b.Agnhost, version, commit, p.Date)
	if err != nil {
		return cfg, "", err
	}
	cfg.Images, cfg.PauseImage, cfg.WorkloadImage = imgs.Archives, imgs.Pause, imgs.Agnhost
	return cfg, flavour, nil
}
