package proportion

import (
	"cmp"
	"math/bits"
	"slices"
)

// WaterFill divides total among claimants by weight, max-min fair
// ("water-filling"). Claimant i asks for demands[i] and has weight
// weights[i] (a weight below 1 counts as 1). The result:
//
//   - nobody gets more than its demand;
//   - the amounts add up to min(total, sum of demands): nothing is held back
//     while someone still wants it;
//   - a claimant that gets less than its demand got at least as much per unit
//     of weight as anybody else, up to rounding (each amount is within one
//     unit of the exact water level): a claimant that wants less than its
//     weighted share gets what it wants, and the rest is split again among
//     the others by weight.
//
// It works in rounds: every claimant whose unmet demand fits in its weighted
// share of what is left is satisfied; when none is, what is left is split by
// weight and the filling ends. Amounts are whole units (millicores, bytes,
// devices): the last split rounds down and hands the units left over by
// rounding out one each, largest remainder first, ties to the lower index,
// so the result is exact and deterministic. Arithmetic is in 128 bits, so
// bytes times weights cannot overflow.
func WaterFill(total int64, demands, weights []int64) []int64 {
	got := make([]int64, len(demands))
	weight := func(i int) uint64 { return uint64(max(weights[i], 1)) }
	var active []int
	for i, d := range demands {
		if d > 0 {
			active = append(active, i)
		}
	}
	left := max(total, 0)
	for len(active) > 0 && left > 0 {
		var w uint64
		for _, i := range active {
			w += weight(i)
		}
		// Claimants whose unmet demand fits in their share of this round:
		// need/weight_i <= left/w, compared as need*w <= left*weight_i.
		var rest []int
		satisfied := int64(0)
		for _, i := range active {
			need := demands[i] - got[i]
			nh, nl := bits.Mul64(uint64(need), w)
			sh, sl := bits.Mul64(uint64(left), weight(i))
			if nh < sh || nh == sh && nl <= sl {
				got[i] = demands[i]
				satisfied += need
			} else {
				rest = append(rest, i)
			}
		}
		if satisfied > 0 {
			left -= satisfied // at most left: each need was at most its share
			active = rest
			continue
		}
		// Nobody is satisfied: split what is left by weight, and stop.
		type remainder struct {
			i   int
			rem uint64
		}
		rems := make([]remainder, 0, len(rest))
		handed := int64(0)
		for _, i := range rest {
			hi, lo := bits.Mul64(uint64(left), weight(i))
			q, rem := bits.Div64(hi, lo, w) // q <= left, so hi < w
			got[i] += int64(q)
			handed += int64(q)
			rems = append(rems, remainder{i, rem})
		}
		slices.SortStableFunc(rems, func(a, b remainder) int { return cmp.Compare(b.rem, a.rem) })
		// Fewer units are left over than claimants, and each claimant's
		// floor was below its unmet demand, so one more unit fits.
		for k := int64(0); k < left-handed; k++ {
			got[rems[k].i]++
		}
		left = 0
	}
	return got
}
