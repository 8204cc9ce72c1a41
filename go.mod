module github.com/kube-carry/kube-carry

go 1.26.0

require (
	github.com/containerd/containerd/v2 v2.2.9
	github.com/containerd/platforms v1.0.0-rc.2
	github.com/google/go-cmp v0.7.0
	github.com/google/go-containerregistry v0.22.1
	github.com/kballard/go-shellquote v0.0.0-20180428030007-95032a82bc51
	github.com/opencontainers/image-spec v1.1.1
	github.com/spdx/tools-golang v0.5.7
	github.com/stretchr/testify v1.12.1
	golang.org/x/mod v0.42.0
)

require (
	github.com/anchore/go-struct-converter v0.1.0 // indirect
	github.com/containerd/errdefs v1.0.0 // indirect
	github.com/containerd/log v0.1.0 // indirect
	github.com/distribution/reference v0.6.0 // indirect
	github.com/docker/cli v29.7.2+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.3 // indirect
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	gotest.tools/v3 v3.5.2 // indirect
)
