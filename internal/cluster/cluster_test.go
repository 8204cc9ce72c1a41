package cluster

import (
	"crypto/x509"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCertificates: every certificate chains to the cluster's CA for its
// usage, with the user and groups the apiserver's authorizers expect.
func TestCertificates(t *testing.T) {
	ca, err := newCA("kubernetes")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	for _, tc := range []struct {
		name  string
		s     subject
		usage x509.ExtKeyUsage
	}{
		{"kubelet client", subject{cn: "system:node:node1", groups: []string{"system:nodes"}, client: true}, x509.ExtKeyUsageClientAuth},
		{"admin", subject{cn: "kubernetes-admin", groups: []string{"kubeadm:cluster-admins"}, client: true}, x509.ExtKeyUsageClientAuth},
		{"kubelet serving", subject{cn: "system:node:node1", server: true, ips: []net.IP{net.ParseIP(nodeIP(1))}}, x509.ExtKeyUsageServerAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp, err := ca.issue(tc.s)
			require.NoError(t, err)
			_, err = kp.cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{tc.usage}})
			require.NoError(t, err)
			assert.Equal(t, tc.s.cn, kp.cert.Subject.CommonName)
			assert.Equal(t, tc.s.groups, kp.cert.Subject.Organization)
			other := x509.ExtKeyUsageServerAuth
			if tc.usage == other {
				other = x509.ExtKeyUsageClientAuth
			}
			_, err = kp.cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{other}})
			assert.Error(t, err, "a certificate is good for its own usage only")
		})
	}
	t.Run("kubeconfig", func(t *testing.T) {
		kp, err := ca.issue(subject{cn: "system:kube-scheduler", client: true})
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), "scheduler.conf")
		require.NoError(t, writeKubeconfig(file, serverURL(), ca, "system:kube-scheduler", kp))
		rc, err := clientcmd.BuildConfigFromFlags("", file)
		require.NoError(t, err)
		assert.Equal(t, "https://10.213.0.1:6443", rc.Host)
		assert.Equal(t, ca.certPEM, rc.CAData)
		assert.Equal(t, kp.certPEM, rc.CertData)
	})
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`:             "/a/b",
		`/a\040b`:          "/a b",
		`/x\011y\134z`:     "/x\ty\\z",
		`/trailing\04`:     `/trailing\04`,
		`/_output/v1.37/c`: "/_output/v1.37/c",
	} {
		assert.Equal(t, want, unescapeMount(in), in)
	}
}

// TestNodeFiles: each node's CNI network has its own subnet and IPAM
// folder, and the containerd configuration keeps every path under the
// node's folder.
func TestNodeFiles(t *testing.T) {
	dir := t.TempDir()
	p1, p2 := nodePaths{dir: filepath.Join(dir, "node1")}, nodePaths{dir: filepath.Join(dir, "node2")}
	var subnets []string
	for i, p := range []nodePaths{p1, p2} {
		b, err := cniConfig(p, i+1)
		require.NoError(t, err)
		var conf struct {
			Plugins []struct {
				IPAM struct {
					Ranges  [][]struct{ Subnet string }
					DataDir string
				}
			}
		}
		require.NoError(t, json.Unmarshal(b, &conf))
		subnets = append(subnets, conf.Plugins[0].IPAM.Ranges[0][0].Subnet)
		assert.Equal(t, p.cniIPAMDir(), conf.Plugins[0].IPAM.DataDir)
	}
	assert.Equal(t, []string{"10.214.1.0/24", "10.214.2.0/24"}, subnets)
	c := containerdConfig(p1, "kube-carry.local/pause:v1")
	for _, want := range []string{p1.containerdRoot(), p1.containerdState(), p1.containerdSocket(), p1.runcRoot(), p1.cniConfDir(), "netns_mounts_under_state_dir = true", "restrict_oom_score_adj = true"} {
		assert.Contains(t, c, want)
	}
	assert.NotContains(t, c, p2.dir)
	k := kubeletConfig(p1, 1, "node1")
	assert.Contains(t, k, `cgroupRoot: "/kube-carry/node1"`)
	assert.Contains(t, k, "address: 10.213.0.11")
}
