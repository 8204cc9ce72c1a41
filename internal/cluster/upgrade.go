package cluster

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// Kubernetes' version skew policy, as far as the components of this
// cluster go (https://kubernetes.io/releases/version-skew-policy/):
// kube-controller-manager and kube-scheduler must not be newer than
// kube-apiserver and may be one minor older; the kubelet must not be newer
// and may be three minors older; kube-apiserver moves one minor at a time.
var olderAllowed = map[string]uint{
	"kube-controller-manager": 1,
	"kube-scheduler":          1,
	"kubelet":                 3,
}

// BinaryVersion is the version a Kubernetes binary reports with --version
// ("Kubernetes v1.36.5-carry.1").
func BinaryVersion(binary string) (*version.Version, error) {
	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w: %s", binary, err, strings.TrimSpace(string(out)))
	}
	s := strings.TrimSpace(string(out))
	v, err := version.ParseSemantic(strings.TrimPrefix(s, "Kubernetes "))
	if err != nil {
		return nil, fmt.Errorf("%s --version printed %q, not Kubernetes vX.Y.Z: %w", binary, s, err)
	}
	return v, nil
}

// SkewError is a replacement that Kubernetes' version skew policy forbids.
// Nothing was changed.
type SkewError struct{ msg string }

func (e *SkewError) Error() string { return e.msg }

func minorsBehind(v, of *version.Version) int {
	return (int(of.Major())-int(v.Major()))*1000 + int(of.Minor()) - int(v.Minor())
}

func vstr(v *version.Version) string { return "v" + v.String() }

// CheckSkew says whether a component of version v may run against a
// kube-apiserver of version api.
func CheckSkew(component string, v, api *version.Version) error {
	older, ok := olderAllowed[component]
	if !ok {
		return nil
	}
	behind := minorsBehind(v, api)
	switch {
	case behind < 0:
		return &SkewError{fmt.Sprintf("%s %s is newer than kube-apiserver %s: Kubernetes' version skew policy allows %s at most as new as kube-apiserver; upgrade kube-apiserver first",
			component, vstr(v), vstr(api), component)}
	case behind > int(older):
		return &SkewError{fmt.Sprintf("%s %s is %d minors older than kube-apiserver %s: Kubernetes' version skew policy allows %s at most %d minor(s) older; upgrade %s first",
			component, vstr(v), behind, vstr(api), component, older, component)}
	}
	return nil
}

// CheckHop says whether kube-apiserver may move from version from to to:
// by one minor at most, and not back (this project does not roll back an
// apiserver's minor; docs/upgrade.md, "Rolling back").
func CheckHop(from, to *version.Version) error {
	switch d := minorsBehind(from, to); {
	case d > 1:
		return &SkewError{fmt.Sprintf("kube-apiserver %s → %s skips %d minor(s): upgrade one minor at a time, through each release line",
			vstr(from), vstr(to), d-1)}
	case d < 0:
		return &SkewError{fmt.Sprintf("kube-apiserver %s → %s goes back a minor: roll back the scheduler and the kubelets, not the apiserver (docs/upgrade.md, Rolling back)",
			vstr(from), vstr(to))}
	}
	return nil
}

// Versions are the versions of the cluster's running components, by
// Label (kubelet on node1).
func (st *State) Versions() (map[string]*version.Version, error) {
	vs := map[string]*version.Version{}
	for _, c := range st.Components {
		if c.Name != "kube-apiserver" && olderAllowed[c.Name] == 0 {
			continue
		}
		v, err := BinaryVersion(c.Binary)
		if err != nil {
			return nil, err
		}
		vs[c.Label()] = v
	}
	return vs, nil
}

// Replace stops a component (gracefully: a kubelet leaves its pods and
// volumes in place) and starts binary in its place with the same
// arguments, as an upgrade or a rollback of that component does. It first
// checks the replacement against Kubernetes' version skew policy with the
// versions the cluster runs, and refuses, changing nothing, what the
// policy forbids: a component newer than kube-apiserver or too far behind
// it, an apiserver hop that skips a minor or goes back, or an apiserver
// that would leave another component too far behind.
//
// A control-plane component is then waited for until it is healthy
// (kube-apiserver /readyz, the others /healthz); a kubelet's node is for
// the caller to wait for (Ready, with its new kubeletVersion).
func (st *State) Replace(ctx context.Context, name, node, binary string) error {
	idx := -1
	for i, c := range st.Components {
		if c.Name == name && c.Node == node {
			idx = i
		}
	}
	if idx < 0 {
		return fmt.Errorf("no component %s", Component{Name: name, Node: node}.Label())
	}
	if name != "kube-apiserver" && olderAllowed[name] == 0 {
		return fmt.Errorf("%s: only kube-apiserver, kube-controller-manager, kube-scheduler and kubelets are replaced", name)
	}
	to, err := BinaryVersion(binary)
	if err != nil {
		return err
	}
	vs, err := st.Versions()
	if err != nil {
		return err
	}
	api := vs["kube-apiserver"]
	if api == nil {
		return fmt.Errorf("the cluster has no kube-apiserver")
	}
	if name == "kube-apiserver" {
		if err := CheckHop(api, to); err != nil {
			return err
		}
		var left []string
		for _, c := range st.Components {
			if v := vs[c.Label()]; v != nil && c.Name != "kube-apiserver" {
				if err := CheckSkew(c.Name, v, to); err != nil {
					left = append(left, c.Label()+": "+err.Error())
				}
			}
		}
		if len(left) > 0 {
			return &SkewError{fmt.Sprintf("kube-apiserver %s → %s would leave %s", vstr(api), vstr(to), strings.Join(left, "; and "))}
		}
	} else if err := CheckSkew(name, to, api); err != nil {
		return err
	}
	c := st.Components[idx]
	if err := stopProcess(c.PID, c.Tick, 30*time.Second); err != nil {
		return fmt.Errorf("stopping %s: %w", c.Label(), err)
	}
	c.Binary = binary
	if err := startComponent(&c, st.Dir); err != nil {
		return err
	}
	st.Components[idx] = c
	if err := st.save(); err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(st.Dir, "pki", "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return waitHealthy(ctx, &st.Components[idx], pool, "healthy after the replacement")
}
