package topology

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// slot is one domain of a level and what it can take.
type slot struct {
	dom *api.Domain
	// room is how many of the gang's members fit in it (an estimate: see
	// placement.room), its placed members included.
	room int
	// placed is how many of the gang's members are in it already: a
	// domain that holds some is preferred, so that members placed later
	// (a replacement, say) join them.
	placed int
}

// split decides how many of n members go to each domain of one level
// under rule: the counts, aligned with slots. A zero count leaves a domain
// out. It returns an error, for people, when the rule cannot be kept
// with the room there is; the caller decides whether that is final
// (required) or calls for a fallback (preferred). For a preferred spread
// that the room makes uneven it returns the counts with errUneven.
//
// The counts are in members. With a factor F, the rule's arithmetic is
// done in units of F members: every count is a multiple of F, and n must
// be one too. A range bounds every count that is not zero. group, when
// more than 1, is a unit that a rule below asks for (placement.groups):
// the counts are multiples of it too, and the slots' room counts whole
// groups.
func split(rule api.LevelRule, slots []slot, n, group int, implicit bool) ([]int, error) {
	if f := max(rule.Factor, 1); n%f != 0 {
		return nil, fmt.Errorf("%d members are not a multiple of factor %d", n, f)
	}
	f := lcm(max(rule.Factor, 1), max(group, 1))
	if n%f != 0 {
		return nil, fmt.Errorf("%d members do not make whole groups of %d for the level below", n, f)
	}
	lo, hi := ceilDiv(max(rule.Min, 1), f), 0
	if rule.Max > 0 {
		hi = rule.Max / f
		if hi < lo {
			return nil, fmt.Errorf("no multiple of factor %d within range [%d, %d]", f, rule.Min, rule.Max)
		}
	}
	if n/f < lo {
		return nil, fmt.Errorf("%d members are fewer than the range's minimum of %d per domain", n, rule.Min)
	}
	units, placed := make([]int, len(slots)), make([]int, len(slots))
	for i, s := range slots {
		placed[i] = ceilDiv(s.placed, f) // in units, as the room
		u := s.room / f
		if hi > 0 {
			u = min(u, hi)
		}
		if u < lo {
			u = 0
		}
		units[i] = u
	}
	var out []int
	var err error
	switch rule.Kind {
	case api.RuleSpread:
		out, err = spread(units, n/f, lo)
	case api.RulePartition:
		out, err = partition(units, placed, n/f, rule.Partitions, lo, hi)
	default:
		out, err = pack(units, placed, n/f, lo, rule.Required, !implicit)
	}
	if err == nil || errors.Is(err, errUneven) {
		for i, k := range placed {
			if out[i]*f < k {
				return nil, fmt.Errorf("the rule gives %s %d members, fewer than the gang's %d placed there", slots[i].dom.Value, out[i]*f, k)
			}
		}
	}
	var beside *errNoRoomBesidePlaced
	if errors.As(err, &beside) {
		at := slots[beside.at]
		return nil, fmt.Errorf("%s, where the gang's %d placed members are, has room for %d of the %d members", at.dom.Value, at.placed, units[beside.at]*f, n)
	}
	var short *errNoRoom
	if errors.As(err, &short) {
		// Name the roomiest domain, in members.
		best := slots[slices.Index(units, slices.Max(units))]
		return nil, fmt.Errorf("no domain has room for all %d members; the most is %s with %d", n, best.dom.Value, units[slices.Index(units, slices.Max(units))]*f)
	}
	// A preferred rule takes an uneven split, with the error for the
	// status to say how far it is from the rule.
	if err != nil && (!errors.Is(err, errUneven) || rule.Required) {
		return nil, err
	}
	for i := range out {
		out[i] *= f
	}
	return out, err
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

// pack puts n units in as few domains as possible: in one, the one with
// the least room that holds them all (the best fit, which keeps the
// roomier domains whole for bigger gangs), else, unless one is a must,
// the roomiest first. Each domain used gets at least lo. Domains that
// hold placed members are used, each for at least those: in one, that
// must be the one domain that holds them all; else, with joinPlaced, they
// are filled first (a rule the user wrote: fewer new domains), or in
// their turn by room (a level without a rule, whose split serves the
// rules below).
func pack(room, placed []int, n, lo int, one, joinPlaced bool) ([]int, error) {
	out := make([]int, len(room))
	holding := 0
	for _, k := range placed {
		if k > 0 {
			holding++
		}
	}
	best := -1
	for i, r := range room {
		if r >= n && (holding == 0 || placed[i] > 0) && (best < 0 || r < room[best]) {
			best = i
		}
	}
	if best >= 0 && holding <= 1 {
		out[best] = n
		return out, nil
	}
	if one {
		switch holding {
		case 0:
			return nil, &errNoRoom{}
		case 1:
			return nil, &errNoRoomBesidePlaced{at: slices.IndexFunc(placed, func(k int) bool { return k > 0 })}
		}
		return nil, fmt.Errorf("the gang's placed members are in %d domains already", holding)
	}
	order := byRoom(room, false)
	if joinPlaced {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(placed[b], placed[a]) })
	}
	// reserved is what the placed members of the domains not filled yet
	// hold: a domain filled earlier must leave it.
	reserved := 0
	for _, k := range placed {
		reserved += k
	}
	left := n
	for _, i := range order {
		reserved -= placed[i]
		if left == 0 {
			break
		}
		take := min(room[i], left-reserved)
		if take < lo && placed[i] == 0 {
			continue
		}
		// Leave enough for the next domain's minimum, if one is needed.
		if rest := left - take; rest > 0 && rest < lo && placed[i] == 0 {
			take = left - lo
			if take < lo {
				continue
			}
		}
		if take < placed[i] {
			return nil, fmt.Errorf("room for %d of %d members beside the gang's placed ones", n-left+take, n)
		}
		out[i] = take
		left -= take
	}
	if left > 0 {
		return nil, fmt.Errorf("room for %d of %d members", n-left, n)
	}
	return out, nil
}

// spread puts n units as evenly as the room allows over every domain that
// can take lo: the counts differ by at most one where the room allows it.
// When there are more domains than n/lo, it uses the roomiest n/lo.
func spread(room []int, n, lo int) ([]int, error) {
	var usable []int
	for i, r := range room {
		if r >= lo && r > 0 {
			usable = append(usable, i)
		}
	}
	if len(usable) == 0 {
		return nil, fmt.Errorf("no domain has room")
	}
	if m := n / lo; len(usable) > m {
		usable = byRoomOf(room, usable, false)[:m]
	}
	out := make([]int, len(room))
	// Water-fill, the tightest domain first: each takes its even share
	// of what is left, or its room if that is less.
	usable = byRoomOf(room, usable, true)
	left := n
	for k, i := range usable {
		share := left / (len(usable) - k)
		out[i] = min(room[i], share)
		left -= out[i]
	}
	// What could not be shared evenly goes one by one to the domains with
	// room, the roomiest first.
	for left > 0 {
		gave := false
		for _, i := range byRoomOf(room, usable, false) {
			if left > 0 && out[i] < room[i] {
				out[i]++
				left--
				gave = true
			}
		}
		if !gave {
			return nil, fmt.Errorf("room for %d of %d members", n-left, n)
		}
	}
	if spreadBy(out, usable) > 1 {
		return out, errUneven
	}
	return out, nil
}

// errNoRoom says no one domain has room for every member (split names
// the roomiest).
type errNoRoom struct{}

func (*errNoRoom) Error() string { return "no domain has room for all the members" }

// errNoRoomBesidePlaced says the one domain that holds the gang's placed
// members has no room for the rest.
type errNoRoomBesidePlaced struct{ at int }

func (*errNoRoomBesidePlaced) Error() string {
	return "no room for all the members beside the placed ones"
}

// errUneven says a spread could place every member, but not evenly: the
// room of some domain is too small for its share.
var errUneven = errors.New("the room is too uneven to spread the members evenly")

// spreadBy is the difference between the largest and the smallest count
// of the domains idx.
func spreadBy(counts []int, idx []int) int {
	lo, hi := counts[idx[0]], counts[idx[0]]
	for _, i := range idx {
		lo, hi = min(lo, counts[i]), max(hi, counts[i])
	}
	return hi - lo
}

// partition puts n units in p domains, in shares that differ by at most
// one, each within [lo, hi] (hi 0: no bound): the largest share in the
// domain with the least room that holds it, and so on; domains that hold
// placed members first, the most first.
func partition(room, placed []int, n, p, lo, hi int) ([]int, error) {
	if p > n {
		return nil, fmt.Errorf("%d partitions of %d members", p, n)
	}
	shares := make([]int, p)
	for i := range shares {
		shares[i] = n / p
		if i < n%p {
			shares[i]++
		}
		if shares[i] < lo || hi > 0 && shares[i] > hi {
			return nil, fmt.Errorf("partitions of %d members fall outside the range", shares[i])
		}
	}
	out := make([]int, len(room))
	used := make([]bool, len(room))
	for _, s := range shares { // largest first: shares is descending
		best := -1
		for i, r := range room {
			if !used[i] && r >= s && placed[i] <= s && (best < 0 || placed[i] > placed[best] || placed[i] == placed[best] && r < room[best]) {
				best = i
			}
		}
		if best < 0 {
			fits := 0
			for i, r := range room {
				if !used[i] && r >= s {
					fits++
				}
			}
			return nil, fmt.Errorf("%d partitions of %d members need %d domains with room for %d; %d more have it", p, n, p, s, fits)
		}
		used[best] = true
		out[best] = s
	}
	for i, k := range placed {
		if k > 0 && !used[i] {
			return nil, fmt.Errorf("the gang's placed members are in more domains than the %d partitions, or in one with too few", p)
		}
	}
	return out, nil
}

// byRoom returns the indexes of room sorted by room, ascending or
// descending; ties keep index order (the domains' name order).
func byRoom(room []int, ascending bool) []int {
	idx := make([]int, len(room))
	for i := range idx {
		idx[i] = i
	}
	return byRoomOf(room, idx, ascending)
}

func byRoomOf(room []int, idx []int, ascending bool) []int {
	out := slices.Clone(idx)
	slices.SortStableFunc(out, func(a, b int) int {
		if ascending {
			return cmp.Compare(room[a], room[b])
		}
		return cmp.Compare(room[b], room[a])
	})
	return out
}

// describe says what a rule asks, for messages: "pack", "partition into
// 2", "spread, 2 to 4 per domain, multiples of 8".
func describe(r api.LevelRule) string {
	var b strings.Builder
	switch r.Kind {
	case api.RuleSpread:
		b.WriteString("spread")
	case api.RulePartition:
		fmt.Fprintf(&b, "partition into %d", r.Partitions)
	default:
		b.WriteString("pack")
	}
	switch {
	case r.Min > 0 && r.Max > 0:
		fmt.Fprintf(&b, ", %d to %d per domain", r.Min, r.Max)
	case r.Min > 0:
		fmt.Fprintf(&b, ", at least %d per domain", r.Min)
	case r.Max > 0:
		fmt.Fprintf(&b, ", at most %d per domain", r.Max)
	}
	if r.Factor > 1 {
		fmt.Fprintf(&b, ", multiples of %d", r.Factor)
	}
	return b.String()
}
