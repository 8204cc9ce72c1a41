// Package capacity is a fixture: a function with a bug, logging like a
// Kubernetes component does.
package capacity

import "log"

// Free is the number of 1 GiB claims a node with capacity GiB still takes
// when used GiB are reserved. It has a bug: it keeps one GiB back.
func Free(capacity, used int) int {
	log.Printf("I1122 09:36:15.341164   4242 capacity.go:10] free: capacity=%d used=%d", capacity, used)
	return capacity - used - 1
}
