package csilocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// GiB is the unit the provisioner allocates in (docs/local-dynamic.md,
// "Sizes: rounding to GiB").
const GiB = int64(1) << 30

// Pools are a node's pools: pool name → total capacity in bytes.
type Pools map[string]int64

// Total is the sum of the capacities.
func (p Pools) Total() int64 {
	var sum int64
	for _, c := range p {
		sum += c
	}
	return sum
}

// ParsePools parses the value of the node annotation PoolsAnnotation: a
// JSON object, pool name → capacity, each capacity a number of bytes or a
// resource quantity, as a JSON string or a JSON number, not negative; a
// fractional quantity is rounded up to a whole byte.
func ParsePools(annotation string) (Pools, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(annotation), &raw); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object: %w", PoolsAnnotation, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object: null", PoolsAnnotation)
	}
	pools := make(Pools, len(raw))
	for name, v := range raw {
		text := string(v)
		var s string
		if json.Unmarshal(v, &s) == nil {
			text = s
		}
		bytes, err := parseSize(text)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: pool %q: %w", PoolsAnnotation, name, err)
		}
		pools[name] = bytes
	}
	return pools, nil
}

// ParsePoolsFlag parses pools given as name=size,... (sizes as resource
// quantities, e.g. pool-ssd=9Gi,pool-hdd=200Gi) and returns the value of
// the annotation PoolsAnnotation that advertises them. The sizes are kept
// as written.
func ParsePoolsFlag(s string) (string, error) {
	pools := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, size, ok := strings.Cut(item, "=")
		name, size = strings.TrimSpace(name), strings.TrimSpace(size)
		if !ok || name == "" || size == "" {
			return "", fmt.Errorf("pool %q: want name=size", item)
		}
		if _, dup := pools[name]; dup {
			return "", fmt.Errorf("pool %q given twice", name)
		}
		if _, err := parseSize(size); err != nil {
			return "", fmt.Errorf("pool %q: %w", name, err)
		}
		pools[name] = size
	}
	if len(pools) == 0 {
		return "", errors.New("no pools given")
	}
	out, err := json.Marshal(pools) // keys sorted
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func parseSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("invalid capacity %q: %w", s, err)
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("negative capacity %q", s)
	}
	return q.Value(), nil // rounds up to a whole byte
}

// RoundUpGiB rounds a size in bytes up to whole GiB.
func RoundUpGiB(bytes int64) int64 {
	if bytes <= 0 {
		return 0
	}
	return (bytes + GiB - 1) / GiB * GiB
}

// ParseOversellRatio parses a StorageClass's oversellRatio: a decimal
// greater than 0, finite; empty means 1.
func ParseOversellRatio(s string) (float64, error) {
	if s == "" {
		return 1, nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(r) || math.IsInf(r, 0) || r <= 0 {
		return 0, fmt.Errorf("invalid %s %q: want a finite decimal greater than 0", ParamOversellRatio, s)
	}
	return r, nil
}

// Volume is a volume on a node, as the accounting sees it.
type Volume struct {
	// ID is the CSI volume ID (the PV's volumeHandle).
	ID string
	// Pool is the pool it was carved from; "" or a pool the node does not
	// advertise counts in the node's total only.
	Pool string
	// Size in bytes.
	Size int64
}

// Request is a volume to place on a node.
type Request struct {
	// Size in bytes, whole GiB.
	Size int64
	// Pool is the StorageClass's pool; "" lets Place choose one.
	Pool string
	// Ratio is the StorageClass's oversellRatio (> 0).
	Ratio float64
}

var (
	// ErrNotEnoughSpace is returned by Place when the volume does not fit.
	ErrNotEnoughSpace = errors.New("Not enough free space")
	// ErrNoPool is returned by Place when the node does not have the
	// requested pool, or has no pools at all.
	ErrNoPool = errors.New("pool not found")
)

// Used sums the sizes of volumes: per pool of pools, and in total.
// A volume whose pool is not among pools counts in the total only.
func Used(pools Pools, volumes []Volume) (perPool map[string]int64, total int64) {
	perPool = map[string]int64{}
	for _, v := range volumes {
		total += v.Size
		if _, ok := pools[v.Pool]; ok {
			perPool[v.Pool] += v.Size
		}
	}
	return perPool, total
}

// fits is the scheduler's rule: ratio × capacity ≥ requested + used.
func fits(ratio float64, capacity, requested, used int64) bool {
	return ratio*float64(capacity) >= float64(requested)+float64(used)
}

// Place chooses the pool of node for req, given the node's pools and the
// volumes already on it, with the scheduler's checks
// (docs/local-dynamic.md, "What is checked"): for a request with a pool P,
// ratio × capacity(P) ≥ size + used(P) and ratio × Σ capacity ≥ size +
// used(all). Without a pool, the sum check holds and the volume goes into
// the pool with the most room in which it fits (the first by name among
// equals). The error wraps ErrNoPool or ErrNotEnoughSpace and says what
// was free.
func Place(node string, pools Pools, volumes []Volume, req Request) (string, error) {
	if len(pools) == 0 {
		return "", fmt.Errorf("%w: node %q has no local-dynamic pools (annotation %s)", ErrNoPool, node, PoolsAnnotation)
	}
	perPool, total := Used(pools, volumes)
	if req.Pool != "" {
		if _, ok := pools[req.Pool]; !ok {
			return "", fmt.Errorf("%w: node %q does not have pool %q", ErrNoPool, node, req.Pool)
		}
	}
	if req.Pool != "" && !fits(req.Ratio, pools[req.Pool], req.Size, perPool[req.Pool]) {
		return "", notEnough(node, req.Pool, pools[req.Pool], perPool[req.Pool], req)
	}
	if !fits(req.Ratio, pools.Total(), req.Size, total) {
		return "", notEnough(node, "", pools.Total(), total, req)
	}
	if req.Pool != "" {
		return req.Pool, nil
	}
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	sort.Strings(names)
	best, bestRoom := "", math.Inf(-1)
	for _, name := range names {
		if !fits(req.Ratio, pools[name], req.Size, perPool[name]) {
			continue
		}
		if room := req.Ratio*float64(pools[name]) - float64(perPool[name]); room > bestRoom {
			best, bestRoom = name, room
		}
	}
	if best == "" {
		return "", fmt.Errorf("%w on node %q: no single pool has %s free for the volume (ratio %g)",
			ErrNotEnoughSpace, node, quantity(req.Size), req.Ratio)
	}
	return best, nil
}

func notEnough(node, pool string, capacity, used int64, req Request) error {
	what := "the pools"
	if pool != "" {
		what = fmt.Sprintf("pool %q", pool)
	}
	return fmt.Errorf("%w on node %q: %s: capacity %s, used %s, requested %s (ratio %g)",
		ErrNotEnoughSpace, node, what, quantity(capacity), quantity(used), quantity(req.Size), req.Ratio)
}

func quantity(bytes int64) string {
	return resource.NewQuantity(bytes, resource.BinarySI).String()
}
