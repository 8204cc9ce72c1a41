package harness_test

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kube-carry/kube-carry/internal/harness"
)

const (
	P = harness.Passes
	F = harness.Fails
	N = harness.NoPackage
)

// maxRuns is the most commits Bisect may run of n: the last one, then a
// binary search.
func maxRuns(n int) int { return 1 + bits.Len(uint(n-1)) }

// bisect runs Bisect over verdicts and returns its result and the commits
// it ran, failing the test when it ran one twice.
func bisect(t *testing.T, verdicts []harness.Verdict) (int, []int) {
	t.Helper()
	var ran []int
	got, err := harness.Bisect(len(verdicts), func(i int) (harness.Verdict, error) {
		require.NotContains(t, ran, i, "commit %d ran twice", i)
		ran = append(ran, i)
		return verdicts[i], nil
	})
	require.NoError(t, err)
	return got, ran
}

func TestBisect(t *testing.T) {
	for _, tc := range []struct {
		name     string
		verdicts []harness.Verdict
		want     int
		// wantRan are the commits run, in order.
		wantRan []int
	}{
		{
			name:     "a suite that passes on the patched tree runs once and blames no commit",
			verdicts: []harness.Verdict{P, P, P, P, P},
			want:     -1,
			wantRan:  []int{4},
		},
		{
			name:     "a suite that runs on none of the commits blames none",
			verdicts: []harness.Verdict{N, N, N},
			want:     -1,
			wantRan:  []int{2},
		},
		{
			name:     "a suite broken by patch 3 of 4 is blamed on patch 3",
			verdicts: []harness.Verdict{P, P, P, F, F},
			want:     3,
			wantRan:  []int{4, 2, 3},
		},
		{
			name:     "a suite broken by the last patch is blamed on it",
			verdicts: []harness.Verdict{P, P, P, P, F},
			want:     4,
			wantRan:  []int{4, 2, 3},
		},
		{
			name:     "a suite that fails on upstream itself is blamed on the upstream commit",
			verdicts: []harness.Verdict{F, F, F, F, F},
			want:     0,
			wantRan:  []int{4, 2, 1, 0},
		},
		{
			name:     "a package that a patch adds failing is blamed on that patch, the commits before it do not have the package",
			verdicts: []harness.Verdict{N, N, F, F, F},
			want:     2,
			wantRan:  []int{4, 2, 1},
		},
		{
			name:     "a package that a patch adds and a later patch breaks is blamed on the later patch",
			verdicts: []harness.Verdict{N, N, P, F, F},
			want:     3,
			wantRan:  []int{4, 2, 3},
		},
		{
			name:     "a series of one failing commit blames it",
			verdicts: []harness.Verdict{F},
			want:     0,
			wantRan:  []int{0},
		},
		{
			name:     "an empty series blames nothing",
			verdicts: nil,
			want:     -1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ran := bisect(t, tc.verdicts)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantRan, ran)
		})
	}
}

// TestBisectOfEverySeriesWithOneBreak tries every series of up to 17
// commits in which a package appears at some commit and the suite breaks
// at some commit from then on: Bisect finds the break in at most
// 1 + ⌈log2 n⌉ runs, and has run the commit before it (Suite.Before).
func TestBisectOfEverySeriesWithOneBreak(t *testing.T) {
	for n := 1; n <= 17; n++ {
		for appears := 0; appears < n; appears++ {
			for breaks := appears; breaks <= n; breaks++ {
				verdicts := make([]harness.Verdict, n)
				for i := range verdicts {
					switch {
					case i < appears:
						verdicts[i] = N
					case i < breaks:
						verdicts[i] = P
					default:
						verdicts[i] = F
					}
				}
				want := breaks
				if breaks == n {
					want = -1
				}
				got, ran := bisect(t, verdicts)
				require.Equal(t, want, got, "series %v", verdicts)
				require.LessOrEqual(t, len(ran), maxRuns(n), "series %v ran %v", verdicts, ran)
				if want > 0 {
					require.Contains(t, ran, want-1, "series %v: the commit before the culprit was run", verdicts)
				}
			}
		}
	}
}

func TestBisectWhenFailuresComeAndGoFindsAFailingCommitAfterOneThatDoesNotFail(t *testing.T) {
	// Upstream fails, patch 1 repairs the suite, patch 3 breaks it again.
	verdicts := []harness.Verdict{F, P, P, F, F}
	got, _ := bisect(t, verdicts)
	require.GreaterOrEqual(t, got, 1)
	assert.Equal(t, F, verdicts[got])
	assert.NotEqual(t, F, verdicts[got-1])
}

func TestBisectStopsAtAnErrorOfTheRun(t *testing.T) {
	boom := errors.New("git checkout failed")
	var ran []int
	got, err := harness.Bisect(5, func(i int) (harness.Verdict, error) {
		ran = append(ran, i)
		if i == 2 {
			return 0, boom
		}
		return F, nil
	})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, -1, got)
	assert.Equal(t, []int{4, 2}, ran)
}

func TestVerdictString(t *testing.T) {
	var got []string
	for _, v := range []harness.Verdict{P, F, N} {
		got = append(got, v.String())
	}
	assert.Equal(t, "passes, fails, does not have the package", strings.Join(got, ", "))
	assert.Equal(t, "Verdict(7)", fmt.Sprint(harness.Verdict(7)))
}
