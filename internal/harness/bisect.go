package harness

import "fmt"

// Verdict is a suite's result at one commit of the series.
type Verdict int

const (
	// Passes: the suite passed there, or ran no test.
	Passes Verdict = iota
	// Fails: a test failed, the package did not build, or the test
	// binary failed.
	Fails
	// NoPackage: the commit does not have the package.
	NoPackage
)

func (v Verdict) String() string {
	switch v {
	case Passes:
		return "passes"
	case Fails:
		return "fails"
	case NoPackage:
		return "does not have the package"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Bisect returns the index of the first of n commits, in series order, at
// which a suite fails; -1 when it does not fail at the last one. run gives
// the suite's verdict at commit i and is called at most once per commit:
// first at the last commit, then, if the suite fails there, by binary
// search. A commit that does not have the package counts as one where the
// suite does not fail (it comes before the patch that adds the package), so
// the search ends at the first failing commit after the package exists, or
// at 0 when the suite fails on the first commit (upstream) itself.
//
// The commit found fails and the one before it does not. When failures come
// and go along the series (a flaky suite, or a patch that repairs what an
// earlier one broke), it is one such commit, not necessarily the first.
func Bisect(n int, run func(i int) (Verdict, error)) (int, error) {
	if n <= 0 {
		return -1, nil
	}
	seen := map[int]Verdict{}
	fails := func(i int) (bool, error) {
		v, ok := seen[i]
		if !ok {
			var err error
			if v, err = run(i); err != nil {
				return false, err
			}
			seen[i] = v
		}
		return v == Fails, nil
	}
	last, err := fails(n - 1)
	if err != nil || !last {
		return -1, err
	}
	// Invariant: commit hi fails; every commit before lo does not.
	lo, hi := 0, n-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		f, err := fails(mid)
		if err != nil {
			return -1, err
		}
		if f {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi, nil
}
