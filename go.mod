module github.com/kube-carry/kube-carry

go 1.26.0

require (
	github.com/kballard/go-shellquote v0.0.0-20180428030007-95032a82bc51
	golang.org/x/mod v0.42.0
)
