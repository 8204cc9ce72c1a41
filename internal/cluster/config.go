package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Addresses. The control plane listens on the bridge's address in the host
// (and etcd on loopback); each node is a network namespace with the next
// addresses. Pods get 10.214.<node>.0/24 from the node's bridge CNI plugin.
// Service IPs are allocated from 10.215.0.0/24 but not routed (no
// kube-proxy runs).
const (
	controlPlaneIP = "10.213.0.1"
	apiserverPort  = 6443
	etcdPort       = 2479
	etcdPeerPort   = 2480
	serviceCIDR    = "10.215.0.0/24"
	kubernetesSvc  = "10.215.0.1"
	clusterName    = "kube-carry"
	kubeletPort    = 10250
	// The kube-controller-manager's and the kube-scheduler's secure ports,
	// on loopback.
	controllerManagerPort = 10257
	schedulerPort         = 10259
)

func nodeIP(i int) string    { return fmt.Sprintf("10.213.0.%d", 10+i) }
func podSubnet(i int) string { return fmt.Sprintf("10.214.%d.0/24", i) }
func nodeName(i int) string  { return fmt.Sprintf("node%d", i) }
func serverURL() string {
	return "https://" + net.JoinHostPort(controlPlaneIP, strconv.Itoa(apiserverPort))
}
func etcdURL(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// KubeletRootBase holds the kubelets' root folders (--root-dir),
// /var/lib/kube-carry/<node>: not under the cluster's folder, because the
// kubelet and the plugins put unix sockets there, whose paths may not be
// longer than 107 bytes, and a clone of the repository may be deep.
const KubeletRootBase = "/var/lib/kube-carry"

// paths of one node's files, under <cluster>/<node>/ (but for the kubelet's
// root folder).
type nodePaths struct {
	dir string
}

func (p nodePaths) containerdConfig() string { return filepath.Join(p.dir, "containerd.toml") }
func (p nodePaths) containerdSocket() string { return filepath.Join(p.dir, "containerd.sock") }
func (p nodePaths) containerdRoot() string   { return filepath.Join(p.dir, "containerd", "root") }
func (p nodePaths) containerdState() string  { return filepath.Join(p.dir, "containerd", "state") }
func (p nodePaths) runcRoot() string         { return filepath.Join(p.dir, "containerd", "runc") }
func (p nodePaths) optDir() string           { return filepath.Join(p.dir, "containerd", "opt") }
func (p nodePaths) cniConfDir() string       { return filepath.Join(p.dir, "cni", "net.d") }
func (p nodePaths) cniIPAMDir() string       { return filepath.Join(p.dir, "cni", "ipam") }
func (p nodePaths) kubeletRoot() string      { return filepath.Join(KubeletRootBase, filepath.Base(p.dir)) }
func (p nodePaths) kubeletConfig() string    { return filepath.Join(p.dir, "kubelet-config.yaml") }
func (p nodePaths) kubeconfig() string       { return filepath.Join(p.dir, "kubelet.conf") }
func (p nodePaths) podLogs() string          { return filepath.Join(p.dir, "pod-logs") }
func (p nodePaths) volumePlugins() string    { return filepath.Join(p.dir, "volume-plugins") }
func (p nodePaths) pki() string              { return filepath.Join(p.dir, "pki") }

// containerdConfig is the node's containerd configuration: its own root,
// state, socket and runc root so that nodes share nothing; the CRI plugin
// with the cluster's pause image, the node's CNI configuration, network
// namespaces under the state directory (so that cluster-down finds them),
// and restrict_oom_score_adj, without which a runtime that may not lower
// oom_score_adj (a container host, an unprivileged user) cannot start pods.
func containerdConfig(p nodePaths, pauseImage string) string {
	q := strconv.Quote
	return fmt.Sprintf(`version = 2
root = %s
state = %s

[grpc]
  address = %s

[plugins."io.containerd.internal.v1.opt"]
  path = %s

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %s
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %s
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %s
    conf_dir = %s
`, q(p.containerdRoot()), q(p.containerdState()), q(p.containerdSocket()), q(p.optDir()),
		q(pauseImage), q(p.runcRoot()), q(cniBinDir), q(p.cniConfDir()))
}

// cniBinDir is where Debian's containernetworking-plugins puts the plugins.
const cniBinDir = "/usr/lib/cni"

// cniConfig is the node's CNI network: a bridge in the node's namespace
// with the node's pod subnet, masquerading what leaves the node.
func cniConfig(p nodePaths, i int) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "kube-carry",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      "cni0",
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podSubnet(i)}}},
					"dataDir": p.cniIPAMDir(),
				},
			},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is the node's KubeletConfiguration: serving on the node's
// address with a certificate of the cluster's CA, webhook authentication
// and authorization as kubeadm sets them, the cgroupfs driver under the
// node's own cgroup root, and every directory the kubelet writes under the
// node's folder. The cgroup v1 hierarchy is allowed (failCgroupV1: false),
// and the eviction thresholds are low: the nodes share one disk.
func kubeletConfig(p nodePaths, i int, node string) string {
	q := strconv.Quote
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
tlsCertFile: %s
tlsPrivateKeyFile: %s
rotateCertificates: false
serverTLSBootstrap: false
cgroupDriver: cgroupfs
cgroupRoot: %s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: %s
podLogsDir: %s
volumePluginDir: %s
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
staticPodPath: ""
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, nodeIP(i), kubeletPort,
		q(filepath.Join(p.pki(), "ca.crt")), q(filepath.Join(p.pki(), "kubelet.crt")), q(filepath.Join(p.pki(), "kubelet.key")),
		q("/"+cgroupParent+"/"+node), q("unix://"+p.containerdSocket()), q(p.podLogs()), q(p.volumePlugins()))
}

// writeFile writes data to file, creating its directory.
func writeFile(file string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, data, mode)
}

// componentEnv is the environment of every component: the host's PATH
// with sbin (runc, iptables and the mount helpers live there).
func componentEnv() []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "LANG=") || strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	return env
}
