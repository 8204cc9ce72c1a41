package csilocal

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePools(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    Pools
		wantErr string
	}{
		{name: "doc example", in: `{"pool-ssd": "107374182400", "pool-hdd": "200Gi"}`,
			want: Pools{"pool-ssd": 100 * GiB, "pool-hdd": 200 * GiB}},
		{name: "json number", in: `{"p": 9663676416}`, want: Pools{"p": 9 * GiB}},
		{name: "fraction rounded up to a byte", in: `{"p": "1.5"}`, want: Pools{"p": 2}},
		{name: "zero", in: `{"p": "0"}`, want: Pools{"p": 0}},
		{name: "empty object", in: `{}`, want: Pools{}},
		{name: "negative", in: `{"p": "-1Gi"}`, wantErr: `pool "p": negative capacity`},
		{name: "not a quantity", in: `{"p": "lots"}`, wantErr: `pool "p": invalid capacity`},
		{name: "not an object", in: `["p"]`, wantErr: "is not a JSON object"},
		{name: "null", in: `null`, wantErr: "is not a JSON object"},
		{name: "empty", in: ``, wantErr: "is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePools(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParsePools(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePools(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePools(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParsePoolsFlag(t *testing.T) {
	for _, tc := range []struct {
		in, want, wantErr string
	}{
		{in: "pool-ssd=9Gi", want: `{"pool-ssd":"9Gi"}`},
		{in: "b=200Gi, a=107374182400", want: `{"a":"107374182400","b":"200Gi"}`},
		{in: "a=1Gi,", want: `{"a":"1Gi"}`},
		{in: "", wantErr: "no pools given"},
		{in: "a", wantErr: "want name=size"},
		{in: "=1Gi", wantErr: "want name=size"},
		{in: "a=1Gi,a=2Gi", wantErr: "given twice"},
		{in: "a=-1Gi", wantErr: "negative capacity"},
		{in: "a=x", wantErr: "invalid capacity"},
	} {
		got, err := ParsePoolsFlag(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParsePoolsFlag(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParsePoolsFlag(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		// What the node plugin writes, the controller reads.
		if _, err := ParsePools(got); err != nil {
			t.Errorf("ParsePools(ParsePoolsFlag(%q)): %v", tc.in, err)
		}
	}
}

func TestRoundUpGiB(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{0, 0}, {1, GiB}, {GiB, GiB}, {GiB + 1, 2 * GiB},
		{1500 << 20, 2 * GiB}, {1000 * 1000 * 1000, GiB},
	} {
		if got := RoundUpGiB(tc.in); got != tc.want {
			t.Errorf("RoundUpGiB(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestParseOversellRatio(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"", 1, false}, {"1", 1, false}, {"1.5", 1.5, false}, {"0.9", 0.9, false},
		{"0", 0, true}, {"-1", 0, true}, {"NaN", 0, true}, {"Inf", 0, true}, {"x", 0, true},
	} {
		got, err := ParseOversellRatio(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseOversellRatio(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// gib returns n volumes of size GiB in pool.
func gib(pool string, n int) []Volume {
	var vs []Volume
	for range n {
		vs = append(vs, Volume{Pool: pool, Size: GiB})
	}
	return vs
}

func TestPlace(t *testing.T) {
	nine := Pools{"pool-ssd": 9 * GiB}
	two := Pools{"ssd": 4 * GiB, "hdd": 6 * GiB}
	for _, tc := range []struct {
		name    string
		pools   Pools
		volumes []Volume
		req     Request
		want    string
		wantErr error
		errText string
	}{
		{name: "empty node", pools: nine, req: Request{Size: GiB, Pool: "pool-ssd", Ratio: 1}, want: "pool-ssd"},
		{name: "ninth volume fits exactly", pools: nine, volumes: gib("pool-ssd", 8),
			req: Request{Size: GiB, Pool: "pool-ssd", Ratio: 1}, want: "pool-ssd"},
		{name: "tenth volume of a 9 GiB node", pools: nine, volumes: gib("pool-ssd", 9),
			req:     Request{Size: GiB, Pool: "pool-ssd", Ratio: 1},
			wantErr: ErrNotEnoughSpace, errText: `Not enough free space on node "n": pool "pool-ssd": capacity 9Gi, used 9Gi, requested 1Gi`},
		{name: "class without pool: full node", pools: nine, volumes: gib("pool-ssd", 9),
			req: Request{Size: GiB, Ratio: 1}, wantErr: ErrNotEnoughSpace, errText: "the pools: capacity 9Gi, used 9Gi"},
		{name: "volume without pool counts in the total", pools: two, volumes: gib("", 9),
			req: Request{Size: 2 * GiB, Pool: "hdd", Ratio: 1}, wantErr: ErrNotEnoughSpace, errText: "the pools: capacity 10Gi, used 9Gi"},
		{name: "volume of an unknown pool counts in the total only", pools: two, volumes: gib("gone", 5),
			req: Request{Size: 4 * GiB, Pool: "ssd", Ratio: 1}, want: "ssd"},
		{name: "pool full, other pool free", pools: two, volumes: gib("ssd", 4),
			req: Request{Size: GiB, Pool: "ssd", Ratio: 1}, wantErr: ErrNotEnoughSpace, errText: `pool "ssd": capacity 4Gi, used 4Gi`},
		{name: "without pool: most room", pools: two, volumes: gib("hdd", 3),
			req: Request{Size: GiB, Ratio: 1}, want: "ssd"},
		{name: "without pool: ties by name", pools: Pools{"b": GiB, "a": GiB},
			req: Request{Size: GiB, Ratio: 1}, want: "a"},
		{name: "without pool: total fits, no single pool does", pools: two, volumes: append(gib("ssd", 3), gib("hdd", 5)...),
			req: Request{Size: 2 * GiB, Ratio: 1}, wantErr: ErrNotEnoughSpace, errText: "no single pool has 2Gi free"},
		{name: "oversell 1.5", pools: nine, volumes: gib("pool-ssd", 12),
			req: Request{Size: GiB, Pool: "pool-ssd", Ratio: 1.5}, want: "pool-ssd"},
		{name: "oversell 1.5 full", pools: nine, volumes: gib("pool-ssd", 13),
			req: Request{Size: GiB, Pool: "pool-ssd", Ratio: 1.5}, wantErr: ErrNotEnoughSpace},
		{name: "headroom 0.9", pools: Pools{"p": 10 * GiB}, volumes: gib("p", 9),
			req: Request{Size: GiB, Pool: "p", Ratio: 0.9}, wantErr: ErrNotEnoughSpace},
		{name: "pool not on node", pools: nine, req: Request{Size: GiB, Pool: "pool-hdd", Ratio: 1},
			wantErr: ErrNoPool, errText: `does not have pool "pool-hdd"`},
		{name: "no pools", pools: Pools{}, req: Request{Size: GiB, Ratio: 1}, wantErr: ErrNoPool},
		{name: "zero pool", pools: Pools{"p": 0}, req: Request{Size: GiB, Pool: "p", Ratio: 1}, wantErr: ErrNotEnoughSpace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Place("n", tc.pools, tc.volumes, tc.req)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("Place = %q, %v; want error %v containing %q", got, err, tc.wantErr, tc.errText)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Place = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestUsed(t *testing.T) {
	pools := Pools{"a": 10 * GiB, "b": 10 * GiB}
	vols := []Volume{{Pool: "a", Size: GiB}, {Pool: "a", Size: 2 * GiB}, {Pool: "b", Size: GiB}, {Pool: "", Size: GiB}, {Pool: "c", Size: 3 * GiB}}
	perPool, total := Used(pools, vols)
	if diff := cmp.Diff(map[string]int64{"a": 3 * GiB, "b": GiB}, perPool); diff != "" || total != 8*GiB {
		t.Errorf("Used = %v, %d; want total %d; per pool (-want +got):\n%s", perPool, total, 8*GiB, diff)
	}
}
