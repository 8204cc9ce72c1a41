package gomod_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"

	"github.com/kube-carry/kube-carry/internal/fixture"
	"github.com/kube-carry/kube-carry/internal/gomod"
)

// fakeTree writes fixture.KubernetesTree into a temporary directory, then
// the changes (slash path → content; "" removes the file).
func fakeTree(t *testing.T, changes map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kubernetes")
	fixture.KubernetesTree(t, dir)
	for name, content := range changes {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if content == "" {
			require.NoError(t, os.Remove(p))
			continue
		}
		fixture.WriteFiles(t, dir, map[string]string{name: content})
	}
	return dir
}

func userModule(t *testing.T, gomodContent string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "user")
	fixture.WriteFiles(t, dir, map[string]string{"go.mod": gomodContent})
	return dir
}

func TestReadTree(t *testing.T) {
	dir := fakeTree(t, nil)
	tr, err := gomod.ReadTree(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, tr.Dir)
	assert.Equal(t, []gomod.Module{
		{Path: "k8s.io/kubernetes", Dir: dir},
		{Path: "k8s.io/api", Dir: filepath.Join(dir, "staging/src/k8s.io/api")},
		{Path: "k8s.io/apimachinery", Dir: filepath.Join(dir, "staging/src/k8s.io/apimachinery")},
	}, tr.Modules, "the staging directories with a go.mod, by path; not the one without")
	assert.Len(t, tr.Staging(), 2)
	assert.Equal(t, "1.25.0", tr.Go)
	assert.Equal(t, []gomod.Godebug{{Key: "default", Value: "go1.25"}}, tr.Godebug)

	t.Run("the workspace settings are the go.work's", func(t *testing.T) {
		dir := fakeTree(t, map[string]string{
			"go.work": "go 1.25.3\n\ntoolchain go1.26.1\n\ngodebug (\n\tdefault=go1.24\n\tpanicnil=1\n)\n\nuse .\n",
		})
		tr, err := gomod.ReadTree(dir)
		require.NoError(t, err)
		assert.Equal(t, "1.25.3", tr.Go)
		assert.Equal(t, "go1.26.1", tr.Toolchain)
		assert.Equal(t, []gomod.Godebug{{"default", "go1.24"}, {"panicnil", "1"}}, tr.Godebug)
	})
	t.Run("without a go.work, the go.mod's", func(t *testing.T) {
		dir := fakeTree(t, map[string]string{"go.work": ""})
		tr, err := gomod.ReadTree(dir)
		require.NoError(t, err)
		assert.Equal(t, "1.25.0", tr.Go)
		assert.Equal(t, []gomod.Godebug{{"default", "go1.25"}}, tr.Godebug)
	})
	t.Run("a relative directory is made absolute", func(t *testing.T) {
		dir := fakeTree(t, nil)
		t.Chdir(filepath.Dir(dir))
		tr, err := gomod.ReadTree("kubernetes")
		require.NoError(t, err)
		assert.True(t, filepath.IsAbs(tr.Dir), tr.Dir)
		for _, m := range tr.Modules {
			assert.True(t, filepath.IsAbs(m.Dir), m.Dir)
		}
	})
}

func TestReadTreeFailures(t *testing.T) {
	t.Run("no tree", func(t *testing.T) {
		_, err := gomod.ReadTree(filepath.Join(t.TempDir(), "absent"))
		assert.ErrorIs(t, err, gomod.ErrNoTree)
	})
	for _, tc := range []struct {
		name    string
		changes map[string]string
		want    []string
	}{
		{"no go.mod", map[string]string{"go.mod": ""}, []string{"no go.mod; not a Kubernetes tree"}},
		{"another module", map[string]string{"go.mod": "module example.com/other\n\ngo 1.25.0\n"},
			[]string{"go.mod: module example.com/other, want module k8s.io/kubernetes; not a Kubernetes tree"}},
		{"a staging module named after another directory", map[string]string{"staging/src/k8s.io/api/go.mod": "module k8s.io/apis\n\ngo 1.25.0\n"},
			[]string{"staging/src/k8s.io/api/go.mod: module \"k8s.io/apis\", want k8s.io/api"}},
		{"a replaced staging module missing", map[string]string{"staging/src/k8s.io/apimachinery/go.mod": ""},
			[]string{"go.mod:14: replaces k8s.io/apimachinery with ./staging/src/k8s.io/apimachinery, which is not a module of the tree", "the tree is incomplete"}},
		{"no staging modules", map[string]string{
			"staging/src/k8s.io/api/go.mod": "", "staging/src/k8s.io/apimachinery/go.mod": "",
			"go.mod": "module k8s.io/kubernetes\n\ngo 1.25.0\n",
		}, []string{filepath.FromSlash("staging/src/k8s.io") + ": no staging modules"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gomod.ReadTree(fakeTree(t, tc.changes))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestReplaces: the block parses as go.mod replaces of every module of the
// tree, to its absolute directory, in one block.
func TestReplaces(t *testing.T) {
	tr, err := gomod.ReadTree(fakeTree(t, nil))
	require.NoError(t, err)
	block := tr.Replaces()
	assert.True(t, strings.HasPrefix(string(block), "replace (\n"), "%s", block)
	assert.True(t, strings.HasSuffix(string(block), ")\n"), "%s", block)
	f, err := modfile.Parse("go.mod", append([]byte("module example.com/user\n\n"), block...), nil)
	require.NoError(t, err)
	var got []gomod.Module
	for _, r := range f.Replace {
		assert.Empty(t, r.Old.Version, "every version of %s is replaced", r.Old.Path)
		got = append(got, gomod.Module{Path: r.Old.Path, Dir: r.New.Path})
	}
	assert.Equal(t, tr.Modules, got)
}

func TestReadUserModule(t *testing.T) {
	tr, err := gomod.ReadTree(fakeTree(t, nil))
	require.NoError(t, err)
	dir := userModule(t, "module example.com/user\n\ngo 1.24\n\nrequire k8s.io/kubernetes v1.37.2\n")
	u, err := gomod.ReadUserModule(dir, tr)
	require.NoError(t, err)
	assert.Equal(t, "example.com/user", u.Path)
	assert.Equal(t, dir, u.Dir)

	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		want string
	}{
		{"no such directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent") }, "absent: no such directory"},
		{"a file", func(t *testing.T) string {
			return filepath.Join(userModule(t, "module example.com/user\n"), "go.mod")
		}, "go.mod: not a directory"},
		{"no go.mod", func(t *testing.T) string { return t.TempDir() }, "has no go.mod: give the directory of a Go module"},
		{"a go.mod that does not parse", func(t *testing.T) string { return userModule(t, "module example.com/user\n\nrequire k8s.io/api\n") },
			"go.mod:3: usage: require module/path v1.2.3"},
		{"a module of the tree", func(t *testing.T) string { return userModule(t, "module k8s.io/api\n") },
			"go.mod:1: module k8s.io/api is a module of the patched tree itself"},
		{"a replace of a tree module", func(t *testing.T) string {
			return userModule(t, "module example.com/user\n\ngo 1.24\n\nreplace example.com/x => ../x\n\nreplace k8s.io/apimachinery => k8s.io/apimachinery v0.33.5\n")
		}, "go.mod:7: replaces k8s.io/apimachinery, which the go.work takes from the patched tree; remove the replace directives"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gomod.ReadUserModule(tc.dir(t), tr)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestWork(t *testing.T) {
	tr, err := gomod.ReadTree(fakeTree(t, nil))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, gomod, wantGo, wantToolchain string
	}{
		{"the tree's go version when the module's is older", "module example.com/user\n\ngo 1.24\n", "1.25.0", ""},
		{"the module's go version and toolchain when newer", "module example.com/user\n\ngo 1.26.2\n\ntoolchain go1.26.3\n", "1.26.2", "go1.26.3"},
		{"no go line", "module example.com/user\n", "1.25.0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := gomod.ReadUserModule(userModule(t, tc.gomod), tr)
			require.NoError(t, err)
			data, err := tr.Work(u, []string{"Line v1.0 (v1.0.0-carry.1)."})
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(string(data), gomod.WorkMarker+"\n// Line v1.0 (v1.0.0-carry.1).\n"), "%s", data)
			wf, err := modfile.ParseWork("go.work", data, nil)
			require.NoError(t, err)
			require.NotNil(t, wf.Go)
			assert.Equal(t, tc.wantGo, wf.Go.Version)
			if tc.wantToolchain == "" {
				assert.Nil(t, wf.Toolchain)
			} else {
				require.NotNil(t, wf.Toolchain)
				assert.Equal(t, tc.wantToolchain, wf.Toolchain.Name)
			}
			require.Len(t, wf.Godebug, 1)
			assert.Equal(t, "default=go1.25", wf.Godebug[0].Key+"="+wf.Godebug[0].Value)
			var uses []string
			for _, use := range wf.Use {
				uses = append(uses, use.Path)
			}
			assert.Equal(t, []string{".", tr.Dir, tr.Modules[1].Dir, tr.Modules[2].Dir}, uses)
			assert.Empty(t, wf.Replace)
		})
	}
}

func TestWriteWork(t *testing.T) {
	tr, err := gomod.ReadTree(fakeTree(t, nil))
	require.NoError(t, err)
	dir := userModule(t, "module example.com/user\n\ngo 1.24\n")
	u, err := gomod.ReadUserModule(dir, tr)
	require.NoError(t, err)
	path, err := tr.WriteWork(u, []string{"first"})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "go.work"), path)
	assert.Contains(t, fixture.ReadFile(t, path), "// first\n")

	t.Run("its own go.work is rewritten", func(t *testing.T) {
		_, err := tr.WriteWork(u, []string{"second"})
		require.NoError(t, err)
		got := fixture.ReadFile(t, path)
		assert.Contains(t, got, "// second\n")
		assert.NotContains(t, got, "// first\n")
		left, _ := filepath.Glob(filepath.Join(dir, ".*"))
		assert.Empty(t, left, "a temporary file is left")
	})
	t.Run("another go.work is left alone", func(t *testing.T) {
		mine := "go 1.25.0\n\nuse (\n\t.\n\t../other\n)\n"
		require.NoError(t, os.WriteFile(path, []byte(mine), 0o644))
		_, err := tr.WriteWork(u, []string{"third"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), path+" exists and was not written by `make gomod`; it is left as it is")
		assert.Equal(t, mine, fixture.ReadFile(t, path))
	})
}
