package proportion_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-ml/troupe/gangscheduler/plugins/proportion"
)

func TestWaterFill(t *testing.T) {
	tests := []struct {
		name    string
		total   int64
		demands []int64
		weights []int64
		want    []int64
	}{
		{"by weight when all want more", 32, []int64{100, 100}, []int64{1, 3}, []int64{8, 24}},
		{"an idle queue gives its share away", 32, []int64{0, 100}, []int64{3, 1}, []int64{0, 32}},
		{"a small demand is met, the rest flows on", 32, []int64{4, 100}, []int64{3, 1}, []int64{4, 28}},
		{"cascade over rounds", 100, []int64{10, 30, 1000, 1000}, []int64{1, 1, 1, 1}, []int64{10, 30, 30, 30}},
		{"everyone satisfied, rest unused", 100, []int64{10, 20}, []int64{1, 1}, []int64{10, 20}},
		{"rounding: remainders go to the largest, ties to the first", 8, []int64{9, 9, 9}, []int64{1, 1, 1}, []int64{3, 3, 2}},
		{"rounding by weight", 10, []int64{100, 100, 100}, []int64{1, 2, 4}, []int64{1, 3, 6}},
		{"weight below 1 counts as 1", 10, []int64{100, 100}, []int64{0, 1}, []int64{5, 5}},
		{"nothing to share", 0, []int64{5, 5}, []int64{1, 1}, []int64{0, 0}},
		{"huge amounts do not overflow", 1 << 62, []int64{1 << 62, 1 << 62}, []int64{1 << 30, 1 << 30}, []int64{1 << 61, 1 << 61}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := proportion.WaterFill(tt.total, tt.demands, tt.weights); !slices.Equal(got, tt.want) {
				t.Errorf("WaterFill(%d, %v, %v) = %v, want %v", tt.total, tt.demands, tt.weights, got, tt.want)
			}
		})
	}
}

// The properties that define max-min fairness, on random inputs:
//   - no one gets more than it asks;
//   - the sum is min(total, sum of demands);
//   - whoever gets less than it asks has, per unit of weight, at least what
//     anyone else has, up to rounding: each of the two may be one unit off
//     the exact water level, so (got[i]+1)/w_i >= (got[j]-1)/w_j.
func TestWaterFillProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 5000 {
		n := 1 + r.IntN(6)
		demands, weights := make([]int64, n), make([]int64, n)
		var sum int64
		for i := range n {
			demands[i] = r.Int64N(50)
			if r.IntN(4) == 0 {
				demands[i] = 0
			}
			weights[i] = 1 + r.Int64N(5)
			sum += demands[i]
		}
		total := r.Int64N(150)
		got := proportion.WaterFill(total, demands, weights)
		var gotSum int64
		for i := range n {
			if got[i] < 0 || got[i] > demands[i] {
				t.Fatalf("%d %v %v: claimant %d gets %d", total, demands, weights, i, got[i])
			}
			gotSum += got[i]
		}
		if gotSum != min(total, sum) {
			t.Fatalf("%d %v %v: %v sums to %d, want %d", total, demands, weights, got, gotSum, min(total, sum))
		}
		for i := range n {
			if got[i] == demands[i] {
				continue
			}
			for j := range n {
				if (got[i]+1)*weights[j] < (got[j]-1)*weights[i] {
					t.Fatalf("%d %v %v -> %v: unsatisfied %d has less per weight than %d", total, demands, weights, got, i, j)
				}
			}
		}
	}
}
