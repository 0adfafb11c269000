package scheduler

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

func TestBindSpread(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type answer struct {
		gang, member int
		sent, at     time.Time
		failed       bool
	}
	type spread struct{ requests, answers time.Duration }
	tests := []struct {
		name  string
		gangs []int // members dispatched per gang, in dispatch order
		// answers come back in this order (the order calls reach the
		// tracker, not necessarily the order of their times).
		answers []answer
		want    []spread
	}{
		{
			name:  "a gang's spreads are from its first request and first answer to its last",
			gangs: []int{3},
			answers: []answer{
				{0, 1, ms(1), ms(210), false},
				{0, 0, ms(0), ms(1820), false},
				{0, 2, ms(2), ms(1821), false},
			},
			want: []spread{{2 * time.Millisecond, 1611 * time.Millisecond}},
		},
		{
			name:  "the last call to arrive need not carry the latest answer",
			gangs: []int{2},
			answers: []answer{
				{0, 0, ms(0), ms(500), false},
				{0, 1, ms(0), ms(400), false},
			},
			want: []spread{{0, 100 * time.Millisecond}},
		},
		{
			name:  "gangs whose answers interleave are told apart, each once its own last answer is in",
			gangs: []int{2, 2},
			answers: []answer{
				{0, 0, ms(0), ms(100), false},
				{1, 0, ms(5), ms(110), false},
				{1, 1, ms(6), ms(130), false},
				{0, 1, ms(1), ms(900), false},
			},
			want: []spread{{time.Millisecond, 20 * time.Millisecond}, {time.Millisecond, 800 * time.Millisecond}},
		},
		{
			name:  "a gang with a failed bind is not whole: no spread",
			gangs: []int{3},
			answers: []answer{
				{0, 0, ms(0), ms(100), false},
				{0, 1, ms(0), ms(120), true},
				{0, 2, ms(0), ms(130), false},
			},
		},
		{
			name:    "a lone bind has no spread",
			gangs:   []int{1},
			answers: []answer{{0, 0, ms(0), ms(100), false}},
		},
		{
			name:  "a gang not all answered yet is not told",
			gangs: []int{3},
			answers: []answer{
				{0, 0, ms(0), ms(100), false},
				{0, 1, ms(0), ms(120), false},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []spread
			s := newBindSpread(func(requests, answers time.Duration) { got = append(got, spread{requests, answers}) })
			var gangs [][]framework.Decision
			for _, n := range tc.gangs {
				var g []framework.Decision
				for range n {
					g = append(g, framework.Decision{Task: &api.TaskInfo{}, Node: "node"})
				}
				s.dispatched(g)
				gangs = append(gangs, g)
			}
			for _, a := range tc.answers {
				var err error
				if a.failed {
					err = errors.New("refused")
				}
				s.answer(gangs[a.gang][a.member], a.sent, a.at, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("spreads %v, want %v", got, tc.want)
			}
		})
	}
}
