// Package capacity is a fixture whose test does not compile.
package capacity

// Free is the number of claims a node still takes.
func Free(capacity, used int) int { return capacity - used }
