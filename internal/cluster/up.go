package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// upper brings one cluster up.
type upper struct {
	cfg Config
	st  *State
	ca  *keyPair
}

func (u *upper) path(elem ...string) string {
	return filepath.Join(append([]string{u.st.Dir}, elem...)...)
}

func (u *upper) node(i int) nodePaths { return nodePaths{dir: u.path(nodeName(i))} }

func (u *upper) run(ctx context.Context) error {
	start := time.Now()
	u.cfg.logf("line %s (%s): %d nodes in %s", u.cfg.Line, u.cfg.Version, len(u.st.Nodes), u.st.Dir)
	if err := u.certificates(); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if err := u.nodeFiles(); err != nil {
		return err
	}
	u.cfg.logf("network: bridge %s %s/24; nodes in network namespaces", bridgeName, controlPlaneIP)
	if err := setupBridge(); err != nil {
		return err
	}
	for i, n := range u.st.Nodes {
		if err := setupNodeNetwork(n, nodeIP(i+1)); err != nil {
			return err
		}
	}
	if err := setupCgroups(u.st.Nodes); err != nil {
		return err
	}
	if err := u.controlPlane(ctx); err != nil {
		return err
	}
	for i := range u.st.Nodes {
		if err := u.containerd(ctx, i+1); err != nil {
			return err
		}
	}
	for i := range u.st.Nodes {
		if err := u.kubelet(i + 1); err != nil {
			return err
		}
	}
	if err := u.waitNodesReady(ctx, 3*time.Minute); err != nil {
		return err
	}
	// Pods cannot be created before the controller-manager made the
	// namespace's default service account.
	cs, err := u.client(u.path("admin.conf"))
	if err != nil {
		return err
	}
	if err := waitFor(ctx, nil, "made the default service account", time.Minute, func() error {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	u.cfg.logf("up in %s: %d nodes Ready", time.Since(start).Round(time.Second), len(u.st.Nodes))
	return nil
}

// certificates makes the cluster's CA and every certificate and
// kubeconfig, with the users and groups kubeadm gives them.
func (u *upper) certificates() error {
	pki := u.path("pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	ca, err := newCA("kubernetes")
	if err != nil {
		return err
	}
	u.ca = ca
	if err := ca.write(pki, "ca"); err != nil {
		return err
	}
	if err := writeServiceAccountKey(pki); err != nil {
		return err
	}
	apiserver, err := ca.issue(subject{
		cn: "kube-apiserver", server: true,
		dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		ips: []net.IP{net.ParseIP(controlPlaneIP), net.ParseIP(kubernetesSvc), net.ParseIP("127.0.0.1")},
	})
	if err != nil {
		return err
	}
	if err := apiserver.write(pki, "apiserver"); err != nil {
		return err
	}
	// What kubeadm calls apiserver-kubelet-client: the apiserver's
	// identity towards the kubelets (logs, exec), a cluster admin.
	kc, err := ca.issue(subject{cn: "kube-apiserver-kubelet-client", groups: []string{"kubeadm:cluster-admins"}, client: true})
	if err != nil {
		return err
	}
	if err := kc.write(pki, "apiserver-kubelet-client"); err != nil {
		return err
	}
	for _, k := range []struct {
		file, user string
		groups     []string
	}{
		// kubeadm's admin.conf is a member of kubeadm:cluster-admins,
		// bound to cluster-admin; super-admin.conf is system:masters and
		// only used to create that binding.
		{"admin.conf", "kubernetes-admin", []string{"kubeadm:cluster-admins"}},
		{"super-admin.conf", "kubernetes-super-admin", []string{"system:masters"}},
		{"controller-manager.conf", "system:kube-controller-manager", nil},
		{"scheduler.conf", "system:kube-scheduler", nil},
	} {
		kp, err := ca.issue(subject{cn: k.user, groups: k.groups, client: true})
		if err != nil {
			return err
		}
		if err := writeKubeconfig(u.path(k.file), serverURL(), ca, k.user, kp); err != nil {
			return err
		}
	}
	for i, n := range u.st.Nodes {
		p := u.node(i + 1)
		if err := os.MkdirAll(p.pki(), 0o700); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(p.pki(), "ca.crt"), ca.certPEM, 0o644); err != nil {
			return err
		}
		// The Node authorizer knows a kubelet by this user and group.
		client, err := ca.issue(subject{cn: "system:node:" + n, groups: []string{"system:nodes"}, client: true})
		if err != nil {
			return err
		}
		if err := writeKubeconfig(p.kubeconfig(), serverURL(), ca, "system:node:"+n, client); err != nil {
			return err
		}
		serving, err := ca.issue(subject{cn: "system:node:" + n, groups: []string{"system:nodes"}, server: true,
			dns: []string{n}, ips: []net.IP{net.ParseIP(nodeIP(i + 1))}})
		if err != nil {
			return err
		}
		if err := serving.write(p.pki(), "kubelet"); err != nil {
			return err
		}
	}
	return nil
}

// nodeFiles writes each node's containerd, CNI and kubelet configuration.
func (u *upper) nodeFiles() error {
	for i, n := range u.st.Nodes {
		p := u.node(i + 1)
		for _, d := range []string{p.containerdRoot(), p.containerdState(), p.runcRoot(), p.optDir(), p.cniIPAMDir(), p.kubeletRoot(), p.podLogs(), p.volumePlugins()} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := writeFile(p.containerdConfig(), []byte(containerdConfig(p, u.cfg.PauseImage)), 0o644); err != nil {
			return err
		}
		cni, err := cniConfig(p, i+1)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(p.cniConfDir(), "10-kube-carry.conflist"), cni, 0o644); err != nil {
			return err
		}
		if err := writeFile(p.kubeletConfig(), []byte(kubeletConfig(p, i+1, n)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// start starts a component in the background, in its own session so that
// it outlives carry and an interrupt of make, with its output in
// logs/<[node-]name>.log; with netns, inside that network namespace.
func (u *upper) start(name, node, netns, binary string, args ...string) (*Component, error) {
	c := Component{Name: name, Node: node, Binary: binary, Args: args, Netns: netns}
	c.Log = u.path("logs", c.logName())
	if err := startComponent(&c, u.st.Dir); err != nil {
		return nil, err
	}
	u.st.Components = append(u.st.Components, c)
	if err := u.st.save(); err != nil {
		return nil, err
	}
	u.cfg.logf("started %s (pid %d, log %s)", c.Label(), c.PID, c.Log)
	return &u.st.Components[len(u.st.Components)-1], nil
}

func startComponent(c *Component, dir string) error {
	f, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var cmd *exec.Cmd
	if c.Netns != "" {
		// nsenter execs the component: the pid is the component's. Only
		// the network namespace changes: the kubelet and containerd share
		// the host's mounts, as on a real node.
		cmd = exec.Command("nsenter", append([]string{"--net=" + filepath.Join(netnsDir, c.Netns), "--", c.Binary}, c.Args...)...)
	} else {
		cmd = exec.Command(c.Binary, c.Args...)
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = componentEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", c.Label(), err)
	}
	c.PID = cmd.Process.Pid
	// Reap it if it exits while carry still runs.
	go func() { _ = cmd.Wait() }()
	for range 50 {
		if t, err := startTicks(c.PID); err == nil {
			c.Tick = t
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s exited at once; see %s", c.Label(), c.Log)
}

// Start starts a stopped component of the running cluster again, with the
// arguments it was first started with.
func (st *State) Start(name, node string) error {
	for i, c := range st.Components {
		if c.Name != name || c.Node != node {
			continue
		}
		if alive(c.PID, c.Tick) {
			return fmt.Errorf("%s is running (pid %d)", c.Label(), c.PID)
		}
		if err := startComponent(&c, st.Dir); err != nil {
			return err
		}
		st.Components[i] = c
		return st.save()
	}
	return fmt.Errorf("no component %s", Component{Name: name, Node: node}.Label())
}

// failed wraps err with the component and the end of its log.
func failed(c *Component, err error) error {
	return fmt.Errorf("%s: %w (log %s):\n%s", c.Label(), err, c.Log, tail(c.Log, 15))
}

func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "  (no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// waitFor polls check until it succeeds, the component exits, or timeout.
func waitFor(ctx context.Context, c *Component, what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if c != nil && !alive(c.PID, c.Tick) {
			return failed(c, fmt.Errorf("exited before %s", what))
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("not %s after %s: %v", what, timeout, last)
			if c != nil {
				return failed(c, err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// healthURL is where a control-plane component says it is healthy:
// kube-apiserver's /readyz, the controller-manager's and the scheduler's
// /healthz; "" for the others.
func healthURL(name string) string {
	switch name {
	case "kube-apiserver":
		return serverURL() + "/readyz"
	case "kube-controller-manager":
		return fmt.Sprintf("https://127.0.0.1:%d/healthz", controllerManagerPort)
	case "kube-scheduler":
		return fmt.Sprintf("https://127.0.0.1:%d/healthz", schedulerPort)
	}
	return ""
}

// waitHealthy waits until c's health URL (healthURL) answers 200, as what,
// to a client of the cluster's CA (pool). The controller-manager's and the
// scheduler's serving certificates are self-signed (--cert-dir); the
// apiserver's is the CA's.
func waitHealthy(ctx context.Context, c *Component, pool *x509.CertPool, what string) error {
	url := healthURL(c.Name)
	if url == "" {
		return nil
	}
	insecure := c.Name != "kube-apiserver"
	return waitFor(ctx, c, what, 2*time.Minute, func() error { return httpsGet(url, pool, insecure) })
}

// httpsGet checks that url answers 200 to a client of the CAs in pool.
func httpsGet(url string, pool *x509.CertPool, insecure bool) error {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, InsecureSkipVerify: insecure}} //nolint:gosec // the components' self-signed serving certificates
	cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// caPool is the cluster's CA as a certificate pool.
func (u *upper) caPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(u.ca.cert)
	return pool
}

func (u *upper) client(kubeconfig string) (*kubernetes.Clientset, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// controlPlane starts etcd, the apiserver, the admin binding, the
// controller-manager and the scheduler, each waited for.
func (u *upper) controlPlane(ctx context.Context) error {
	b := u.cfg.Binaries
	pki := u.path("pki")
	etcd, err := u.start("etcd", "", "", b.Etcd,
		"--name=kube-carry", "--data-dir="+u.path("etcd"),
		"--listen-client-urls="+etcdURL(etcdPort), "--advertise-client-urls="+etcdURL(etcdPort),
		"--listen-peer-urls="+etcdURL(etcdPeerPort), "--initial-advertise-peer-urls="+etcdURL(etcdPeerPort),
		"--initial-cluster=kube-carry="+etcdURL(etcdPeerPort), "--listen-metrics-urls=", "--log-level=warn")
	if err != nil {
		return err
	}
	if err := waitFor(ctx, etcd, "healthy", time.Minute, func() error {
		resp, err := http.Get(etcdURL(etcdPort) + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/health: %s", resp.Status)
		}
		return nil
	}); err != nil {
		return err
	}
	api, err := u.start("kube-apiserver", "", "", b.APIServer,
		"--advertise-address="+controlPlaneIP, "--bind-address="+controlPlaneIP, "--secure-port="+itoa(apiserverPort),
		"--etcd-servers="+etcdURL(etcdPort),
		"--client-ca-file="+filepath.Join(pki, "ca.crt"),
		"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
		"--kubelet-client-certificate="+filepath.Join(pki, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+filepath.Join(pki, "apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+filepath.Join(pki, "ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--service-cluster-ip-range="+serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true", "--enable-bootstrap-token-auth=true",
		"--cert-dir="+u.path("pki", "apiserver-generated"))
	if err != nil {
		return err
	}
	if err := waitHealthy(ctx, api, u.caPool(), "ready"); err != nil {
		return err
	}
	if err := u.adminBinding(ctx); err != nil {
		return err
	}
	common := []string{
		"--bind-address=127.0.0.1", "--leader-elect=false",
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"),
	}
	cm, err := u.start("kube-controller-manager", "", "", b.ControllerManager, append(common,
		"--kubeconfig="+u.path("controller-manager.conf"),
		"--authentication-kubeconfig="+u.path("controller-manager.conf"),
		"--authorization-kubeconfig="+u.path("controller-manager.conf"),
		"--secure-port="+itoa(controllerManagerPort),
		"--cluster-signing-cert-file="+filepath.Join(pki, "ca.crt"),
		"--cluster-signing-key-file="+filepath.Join(pki, "ca.key"),
		"--root-ca-file="+filepath.Join(pki, "ca.crt"),
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--use-service-account-credentials=true",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--cert-dir="+u.path("pki", "controller-manager-generated"))...)
	if err != nil {
		return err
	}
	sched, err := u.start("kube-scheduler", "", "", b.Scheduler, append(common,
		"--kubeconfig="+u.path("scheduler.conf"),
		"--authentication-kubeconfig="+u.path("scheduler.conf"),
		"--authorization-kubeconfig="+u.path("scheduler.conf"),
		"--secure-port="+itoa(schedulerPort),
		"--cert-dir="+u.path("pki", "scheduler-generated"))...)
	if err != nil {
		return err
	}
	for _, c := range []*Component{cm, sched} {
		if err := waitHealthy(ctx, c, u.caPool(), "healthy"); err != nil {
			return err
		}
	}
	return nil
}

// adminBinding binds kubeadm:cluster-admins to cluster-admin, as kubeadm
// does with super-admin.conf, so that admin.conf works.
func (u *upper) adminBinding(ctx context.Context) error {
	cs, err := u.client(u.path("super-admin.conf"))
	if err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:cluster-admins"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "kubeadm:cluster-admins"}},
	}
	return waitFor(ctx, nil, "bound", time.Minute, func() error {
		_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// containerd starts node i's containerd in the node's namespace and
// imports the cluster's images into it.
func (u *upper) containerd(ctx context.Context, i int) error {
	n := nodeName(i)
	p := u.node(i)
	bin, err := lookPath("containerd")
	if err != nil {
		return err
	}
	c, err := u.start("containerd", n, netnsName(n), bin, "--config="+p.containerdConfig())
	if err != nil {
		return err
	}
	ctrBin, err := lookPath("ctr")
	if err != nil {
		return err
	}
	ctr := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, ctrBin, append([]string{"--address=" + p.containerdSocket(), "--namespace=k8s.io"}, args...)...)
		cmd.Env = componentEnv()
		return cmd.CombinedOutput()
	}
	if err := waitFor(ctx, c, "serving", time.Minute, func() error {
		out, err := ctr("version")
		if err != nil {
			return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, img := range u.cfg.Images {
		u.cfg.logf("node %s: importing %s", n, filepath.Base(img))
		if out, err := ctr("images", "import", img); err != nil {
			return failed(c, fmt.Errorf("ctr images import %s: %v: %s", img, err, bytes.TrimSpace(out)))
		}
	}
	return nil
}

// kubelet starts node i's kubelet in the node's namespace.
func (u *upper) kubelet(i int) error {
	n := nodeName(i)
	p := u.node(i)
	_, err := u.start("kubelet", n, netnsName(n), u.cfg.Binaries.Kubelet,
		"--config="+p.kubeletConfig(), "--kubeconfig="+p.kubeconfig(),
		"--root-dir="+p.kubeletRoot(), "--cert-dir="+p.pki(),
		"--hostname-override="+n, "--node-ip="+nodeIP(i))
	return err
}

// waitNodesReady waits until every node is registered and Ready.
func (u *upper) waitNodesReady(ctx context.Context, timeout time.Duration) error {
	cs, err := u.client(u.path("admin.conf"))
	if err != nil {
		return err
	}
	u.cfg.logf("waiting for %s to be Ready", strings.Join(u.st.Nodes, ", "))
	var kubelets []*Component
	for i := range u.st.Components {
		if u.st.Components[i].Name == "kubelet" {
			kubelets = append(kubelets, &u.st.Components[i])
		}
	}
	return waitFor(ctx, nil, "Ready", timeout, func() error {
		for _, k := range kubelets {
			if !alive(k.PID, k.Tick) {
				return failed(k, fmt.Errorf("exited"))
			}
		}
		for _, n := range u.st.Nodes {
			node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("node %s: %w", n, err)
			}
			if msg, ok := ready(node); !ok {
				return fmt.Errorf("node %s: %s (log %s)", n, msg, u.st.Logs("kubelet", n))
			}
		}
		return nil
	})
}

func ready(n *corev1.Node) (string, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return fmt.Sprintf("Ready=%s: %s", c.Status, c.Message), c.Status == corev1.ConditionTrue
		}
	}
	return "no Ready condition", false
}

// Run starts another program as part of the running cluster (a CSI driver,
// a scenario's helper), with its log in logs/ beside the components'. It is
// recorded in the state file, so Down stops it, before the runtimes and the
// control plane. With node set, it runs in that node's network namespace.
func (st *State) Run(name, node, binary string, args ...string) (*Component, error) {
	c := Component{Name: name, Node: node, Binary: binary, Args: args}
	if node != "" {
		c.Netns = netnsName(node)
	}
	c.Log = filepath.Join(st.Dir, "logs", c.logName())
	if err := startComponent(&c, st.Dir); err != nil {
		return nil, err
	}
	st.Components = append(st.Components, c)
	if err := st.save(); err != nil {
		return nil, err
	}
	return &st.Components[len(st.Components)-1], nil
}
