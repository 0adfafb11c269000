package reservation_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
	"github.com/troupe-ml/troupe/gangscheduler/plugins/reservation"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  reservation.Config
		want []string // each in the error; none: valid
	}{
		{name: "defaults"},
		{name: "hold at once, several gangs", cfg: reservation.Config{After: &metav1.Duration{}, Gangs: ptr.To(3)}},
		{name: "negative wait", cfg: reservation.Config{After: &metav1.Duration{Duration: -time.Second}}, want: []string{"after: must not be negative, got -1s"}},
		{name: "no gang", cfg: reservation.Config{Gangs: ptr.To(0)}, want: []string{"gangs: must be at least 1, got 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err != nil) != (len(tt.want) > 0) {
				t.Fatalf("Validate() = %v, want errors %v", err, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Which waiting gangs may hold, asked in the session's order; each that
// may holds a node of its own before the next is asked.
func TestMayHold(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	waited := func(name string, d time.Duration) *api.JobInfo {
		return st.MakeJob("ns", name).WaitingSince(now.Add(-d)).Obj()
	}
	fresh := st.MakeJob("ns", "fresh").Obj() // no scheduleStartTime yet
	tests := []struct {
		name  string
		cfg   reservation.Config
		asked []*api.JobInfo
		want  []bool
	}{{
		name:  "by default: waited 5s or more, one gang; the holder may go on holding",
		asked: []*api.JobInfo{waited("a", 4*time.Second), waited("b", 5*time.Second), waited("c", time.Minute), waited("b", 5*time.Second)},
		want:  []bool{false, true, false, true},
	}, {
		name:  "after 0: from the first cycle, a gang without a start time too",
		cfg:   reservation.Config{After: &metav1.Duration{}},
		asked: []*api.JobInfo{fresh},
		want:  []bool{true},
	}, {
		name:  "a gang without a start time has not waited",
		asked: []*api.JobInfo{fresh},
		want:  []bool{false},
	}, {
		name:  "two gangs",
		cfg:   reservation.Config{Gangs: ptr.To(2)},
		asked: []*api.JobInfo{waited("a", time.Minute), waited("b", time.Minute), waited("c", time.Minute)},
		want:  []bool{true, true, false},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []*corev1.Node
			for i := range tt.asked {
				nodes = append(nodes, st.MakeNode(fmt.Sprintf("n%d", i)).Capacity("8", "8Gi", 0).Obj())
			}
			snap := st.MustSnapshot(nodes, nil, nil)
			snap.Now = now
			ssn := framework.OpenSession(snap, reservation.New(tt.cfg))
			for i, job := range tt.asked {
				got := ssn.MayHold(job)
				if got != tt.want[i] {
					t.Errorf("MayHold(%s) #%d = %v, want %v", job.UID, i, got, tt.want[i])
				}
				if got {
					ssn.Hold(job, []*api.NodeInfo{ssn.NodeList[i]})
				}
			}
		})
	}
	// Without the plugin no gang holds.
	if ssn := framework.OpenSession(st.MustSnapshot(nil, nil, nil)); ssn.MayHold(waited("a", time.Hour)) {
		t.Error("a session without the plugin let a gang hold")
	}
}
