package status

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
	"github.com/troupe-ml/troupe/gangscheduler/framework"
)

var now = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// pod states for gang()
const (
	pending   = "pending"
	bound     = "bound"
	running   = "running"
	succeeded = "succeeded"
	failed    = "failed"
)

// gang makes a job with minMember and one task per state, role "Worker"
// unless the state is written "Role:state".
func gang(minMember int32, states ...string) *api.JobInfo {
	job := st.MakeJob("ns", "pg").MinMember(minMember).Obj()
	job.Tasks = nil
	for i, s := range states {
		role, state, ok := strings.Cut(s, ":")
		if !ok {
			role, state = "Worker", s
		}
		p := st.MakePod("ns", "p"+string(rune('a'+i))).Job("pg").Role(role)
		switch state {
		case bound:
			p.Node("n1")
		case running:
			p.Node("n1").Phase(corev1.PodRunning)
		case succeeded:
			p.Node("n1").Phase(corev1.PodSucceeded)
		case failed:
			p.Node("n1").Phase(corev1.PodFailed)
		}
		if err := job.AddTask(api.NewTaskInfo(job.UID, p.Obj())); err != nil {
			panic(err)
		}
	}
	return job
}

func pgWith(mutate func(*schedulingv1alpha1.PodGroup)) *schedulingv1alpha1.PodGroup {
	pg := &schedulingv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg", Generation: 2},
		Spec:       schedulingv1alpha1.PodGroupSpec{MinMember: 3},
	}
	if mutate != nil {
		mutate(pg)
	}
	return pg
}

func ago(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(now.Add(-d))) }

func condition(ctype string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: ctype, Status: status, Reason: reason, Message: message, ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
}

// waitingFor is the status of a gang pending for a minute, unschedulable
// for reason with message.
func waitingFor(reason, message string) schedulingv1alpha1.PodGroupStatus {
	return schedulingv1alpha1.PodGroupStatus{Phase: "Pending", ScheduleStartTime: ago(time.Minute), Conditions: []metav1.Condition{
		condition("Scheduled", "False", "Waiting", "0 of minMember 3 pods bound"),
		condition("Unschedulable", "True", reason, message),
	}}
}

var notEnough = &framework.Unschedulable{Reason: "NotEnoughResources", Message: "no pod could be placed; pod ns/pa: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}

// missingMembers ends the Partial condition's message without a session
// record.
const missingMembers = "; the missing members are placed first of all, and the members on nodes are deleted if the gang cannot be completed within the partial-gang grace period"

const diagnosis = "Worker (3 pending): 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."

func TestCompute(t *testing.T) {
	cases := []struct {
		name string
		g    Gang
		// want checks the update
		want       schedulingv1alpha1.PodGroupStatus
		wantEvents []string // "Type/Reason"
		wantPodEvt bool
		// conditions are compared by type, status, reason and message
		// contents (substring)
	}{
		{
			name: "new gang, nothing placed, no finding: Pending, waiting, start time set",
			g:    Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending)},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(0),
				Conditions: []metav1.Condition{{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"}},
			},
		},
		{
			name: "a PodGroup without pods is not considered yet: no start time",
			g:    Gang{PodGroup: pgWith(nil), Job: gang(3)},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase:      "Pending",
				Conditions: []metav1.Condition{{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"}},
			},
		},
		{
			name: "all bound: Running, counts, Scheduled, start and end times",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, bound, bound, running),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Pending", ScheduleStartTime: ago(time.Minute)}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Running", Admitted: 3, Running: 1,
				ScheduleStartTime: ago(time.Minute), ScheduleEndTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "True", Reason: "GangBound", Message: "3 pods bound or running (minMember 3)"},
					{Type: "Unschedulable", Status: "False", Reason: "GangBound"},
				},
			},
			wantEvents: []string{"Normal/Scheduled"},
		},
		{
			name: "does not fit: Unschedulable with the per-role diagnosis, on the PodGroup and its pods",
			g:    Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending), Unschedulable: notEnough, Diagnosis: diagnosis},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
					{Type: "Unschedulable", Status: "True", Reason: "NotEnoughResources", Message: diagnosis},
				},
			},
			wantEvents: []string{"Warning/Unschedulable"},
			wantPodEvt: true,
		},
		{
			name: "still does not fit, for the same reason with a new message: the PodGroup's event, none on its pods",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending), Unschedulable: notEnough, Diagnosis: diagnosis,
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Pending", ScheduleStartTime: ago(time.Minute), Conditions: []metav1.Condition{
					condition("Scheduled", "False", "Waiting", "0 of minMember 3 pods bound"),
					condition("Unschedulable", "True", "NotEnoughResources", "Worker (3 pending): 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(time.Minute),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
					{Type: "Unschedulable", Status: "True", Reason: "NotEnoughResources", Message: diagnosis},
				},
			},
			wantEvents: []string{"Warning/Unschedulable"},
		},
		{
			name: "a new message within the refresh period: the condition is kept, nothing announced",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending), Unschedulable: notEnough, Diagnosis: diagnosis,
				QuietUntil: now.Add(time.Second), Old: waitingFor("NotEnoughResources", "an older fit summary")},
			want: waitingFor("NotEnoughResources", "an older fit summary"),
		},
		{
			name: "a new reason within the refresh period: the condition is kept, nothing announced",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending), QuietUntil: now.Add(time.Second),
				Unschedulable: &framework.Unschedulable{Reason: "TopologyNotSatisfied", Message: "rack: no rack has 3 free nodes"},
				Old:           waitingFor("NotEnoughResources", diagnosis)},
			want: waitingFor("NotEnoughResources", diagnosis),
		},
		{
			name: "a new reason once the refresh period is over: written, on the PodGroup and its pods",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending), QuietUntil: now,
				Unschedulable: &framework.Unschedulable{Reason: "TopologyNotSatisfied", Message: "rack: no rack has 3 free nodes"},
				Old:           waitingFor("NotEnoughResources", diagnosis)},
			want:       waitingFor("TopologyNotSatisfied", "rack: no rack has 3 free nodes"),
			wantEvents: []string{"Warning/Unschedulable"},
			wantPodEvt: true,
		},
		{
			name: "a schedule timeout falling due within the refresh period: written at once",
			g: Gang{PodGroup: pgWith(func(pg *schedulingv1alpha1.PodGroup) { pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](30) }),
				Job: gang(3, pending, pending, pending), Unschedulable: notEnough, Diagnosis: diagnosis, QuietUntil: now.Add(time.Second),
				Old: waitingFor("NotEnoughResources", diagnosis)},
			want:       waitingFor("ScheduleTimeout", "not scheduled within scheduleTimeoutSeconds (30s); still trying. NotEnoughResources: "+diagnosis),
			wantEvents: []string{"Warning/ScheduleTimeout"},
			wantPodEvt: true,
		},
		{
			name: "bound within the refresh period: Unschedulable turns False at once",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, bound, bound, bound), QuietUntil: now.Add(time.Second),
				Old: waitingFor("NotEnoughResources", diagnosis)},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Running", Admitted: 3, ScheduleStartTime: ago(time.Minute), ScheduleEndTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "True", Reason: "GangBound", Message: "3 pods bound or running (minMember 3)"},
					{Type: "Unschedulable", Status: "False", Reason: "GangBound"},
				},
			},
			wantEvents: []string{"Normal/Scheduled"},
		},
		{
			name: "a gang that holds nodes says which, the first three",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending), Unschedulable: notEnough, Diagnosis: diagnosis,
				Holds: []string{"n1", "n2", "n3", "n4"}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
					{Type: "Unschedulable", Status: "True", Reason: "NotEnoughResources",
						Message: diagnosis + "; it holds 4 nodes (n1, n2, n3 and 1 more) from younger or lower-priority gangs until it fits"},
				},
			},
			wantEvents: []string{"Warning/Unschedulable"},
			wantPodEvt: true,
		},
		{
			name: "without a diagnosis the session's message is kept",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending),
				Unschedulable: &framework.Unschedulable{Reason: "NotEnoughPods", Message: "2 pods can run, minMember is 3"}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
					{Type: "Unschedulable", Status: "True", Reason: "NotEnoughPods", Message: "2 pods can run, minMember is 3"},
				},
			},
			wantEvents: []string{"Warning/Unschedulable"},
			wantPodEvt: true,
		},
		{
			name: "admitted this session: Inqueue",
			g:    Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending), Admitted: true},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Inqueue", ScheduleStartTime: ago(0),
				Conditions: []metav1.Condition{{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"}},
			},
		},
		{
			name: "admitted earlier: stays Inqueue",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Inqueue", ScheduleStartTime: ago(time.Second)}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Inqueue", ScheduleStartTime: ago(time.Second),
				Conditions: []metav1.Condition{{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"}},
			},
		},
		{
			name: "admitted earlier, the admission revoked: Pending again",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending), Revoked: true,
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Inqueue", ScheduleStartTime: ago(time.Second)}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(time.Second),
				Conditions: []metav1.Condition{{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"}},
			},
		},
		{
			name: "scheduleTimeoutSeconds passed: ScheduleTimeout, keeps the finding, says it keeps trying",
			g: Gang{PodGroup: pgWith(func(pg *schedulingv1alpha1.PodGroup) { pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](5) }),
				Job: gang(3, pending, pending, pending), Unschedulable: notEnough, Diagnosis: diagnosis,
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Pending", ScheduleStartTime: ago(6 * time.Second), Conditions: []metav1.Condition{
					condition("Scheduled", "False", "Waiting", "0 of minMember 3 pods bound"),
					condition("Unschedulable", "True", "NotEnoughResources", diagnosis),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(6 * time.Second),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
					{Type: "Unschedulable", Status: "True", Reason: "ScheduleTimeout",
						Message: "not scheduled within scheduleTimeoutSeconds (5s); still trying. NotEnoughResources: " + diagnosis},
				},
			},
			wantEvents: []string{"Warning/ScheduleTimeout"},
			wantPodEvt: true,
		},
		{
			name: "timeout not yet due",
			g: Gang{PodGroup: pgWith(func(pg *schedulingv1alpha1.PodGroup) { pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](5) }),
				Job: gang(3, pending, pending, pending), Unschedulable: notEnough, Diagnosis: diagnosis,
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Pending", ScheduleStartTime: ago(4 * time.Second), Conditions: []metav1.Condition{
					condition("Scheduled", "False", "Waiting", "0 of minMember 3 pods bound"),
					condition("Unschedulable", "True", "NotEnoughResources", diagnosis),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(4 * time.Second),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
					{Type: "Unschedulable", Status: "True", Reason: "NotEnoughResources", Message: diagnosis},
				},
			},
		},
		{
			name: "timeout falls due in a cycle without a finding: the last finding is carried",
			g: Gang{PodGroup: pgWith(func(pg *schedulingv1alpha1.PodGroup) { pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](0) }),
				Job: gang(3, pending, pending, pending),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Pending", ScheduleStartTime: ago(time.Second), Conditions: []metav1.Condition{
					condition("Unschedulable", "True", "NotEnoughResources", diagnosis),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(time.Second),
				Conditions: []metav1.Condition{
					{Type: "Unschedulable", Status: "True", Reason: "ScheduleTimeout",
						Message: "not scheduled within scheduleTimeoutSeconds (0s); still trying. NotEnoughResources: " + diagnosis},
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
				},
			},
			wantEvents: []string{"Warning/ScheduleTimeout"},
			wantPodEvt: true,
		},
		{
			name: "minTaskMember unmet: not scheduled although minMember pods are bound",
			g: Gang{PodGroup: pgWith(nil), Job: func() *api.JobInfo {
				j := gang(3, bound, bound, bound, "Master:pending")
				j.MinTaskMember = map[string]int32{"Master": 1}
				return j
			}()},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", Admitted: 3, ScheduleStartTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "3 of minMember 3 pods bound"},
					{Type: "Partial", Status: "True", Reason: "MembersMissing", Message: "3 of minMember 3 members bound, running or done (Master: 0 of minTaskMember 1)" + missingMembers},
				},
			},
			wantEvents: []string{"Warning/PartialGang"},
		},
		{
			name: "a Running gang loses a member: Unknown, and a new attempt starts",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, running, running, pending),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Running", Admitted: 3, Running: 3,
					ScheduleStartTime: ago(time.Hour), ScheduleEndTime: ago(time.Hour), Conditions: []metav1.Condition{
						condition("Scheduled", "True", "GangBound", "3 pods bound or running (minMember 3)"),
						condition("Unschedulable", "False", "GangBound", ""),
					}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Unknown", Admitted: 2, Running: 2, ScheduleStartTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "2 of minMember 3 pods bound"},
					{Type: "Unschedulable", Status: "False", Reason: "GangBound"},
					{Type: "Partial", Status: "True", Reason: "MembersMissing", Message: "2 of minMember 3 members bound, running or done" + missingMembers},
				},
			},
			wantEvents: []string{"Warning/PartialGang"},
		},
		{
			name: "the session's partial record: its reason and message, True since its time",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, running, pending, pending),
				Partial: &framework.PartialGang{Since: now.Add(-time.Hour), Reason: "MembersMissing", Message: "1 of 3, reclaimed at 10:00:30"},
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Inqueue", ScheduleStartTime: ago(time.Hour), Conditions: []metav1.Condition{
					condition("Scheduled", "False", "Waiting", "1 of minMember 3 pods bound"),
					condition("Partial", "True", "MembersMissing", "1 of 3, reclaimed at 10:00:30"),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Inqueue", Admitted: 1, Running: 1, ScheduleStartTime: ago(time.Hour),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "1 of minMember 3 pods bound"},
					{Type: "Partial", Status: "True", Reason: "MembersMissing", Message: "1 of 3, reclaimed at 10:00:30"},
				},
			},
		},
		{
			name: "stuck: the grace has passed and a member has no controller: Warning Stuck",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, running, pending, pending),
				Partial: &framework.PartialGang{Since: now.Add(-time.Hour), Reason: "Stuck", Message: "pod ns/pa has no controller"},
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Inqueue", ScheduleStartTime: ago(time.Hour), Conditions: []metav1.Condition{
					condition("Scheduled", "False", "Waiting", "1 of minMember 3 pods bound"),
					condition("Partial", "True", "MembersMissing", "1 of 3"),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Inqueue", Admitted: 1, Running: 1, ScheduleStartTime: ago(time.Hour),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "1 of minMember 3 pods bound"},
					{Type: "Partial", Status: "True", Reason: "Stuck", Message: "pod ns/pa has no controller"},
				},
			},
			wantEvents: []string{"Warning/Stuck"},
		},
		{
			name: "reclaimed: the members on nodes are being deleted, Partial turns False with the reason",
			g: Gang{PodGroup: pgWith(nil), Job: func() *api.JobInfo {
				j := gang(3, running, pending, pending)
				for _, t := range j.Tasks {
					if t.Status == api.Running {
						t.Status = api.Releasing // the session's eviction
					}
				}
				return j
			}(),
				Partial: &framework.PartialGang{Since: now.Add(-time.Hour), Reason: "Reclaimed", Message: "Gang ns/pg was partial for 30s"},
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Inqueue", ScheduleStartTime: ago(time.Hour), Conditions: []metav1.Condition{
					condition("Scheduled", "False", "Waiting", "1 of minMember 3 pods bound"),
					condition("Partial", "True", "MembersMissing", "1 of 3"),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Inqueue", ScheduleStartTime: ago(time.Hour),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
					{Type: "Partial", Status: "False", Reason: "Reclaimed", Message: "Gang ns/pg was partial for 30s"},
				},
			},
			wantEvents: []string{"Warning/Reclaimed"},
		},
		{
			name: "completed: a partial gang whole again says so",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, running, bound, bound),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Inqueue", ScheduleStartTime: ago(time.Hour), Conditions: []metav1.Condition{
					condition("Scheduled", "False", "Waiting", "1 of minMember 3 pods bound"),
					condition("Partial", "True", "MembersMissing", "1 of 3"),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Running", Admitted: 3, Running: 1, ScheduleStartTime: ago(time.Hour), ScheduleEndTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "True", Reason: "GangBound", Message: "3 pods bound or running (minMember 3)"},
					{Type: "Unschedulable", Status: "False", Reason: "GangBound"},
					{Type: "Partial", Status: "False", Reason: "Whole", Message: "the gang is whole"},
				},
			},
			wantEvents: []string{"Normal/Scheduled"},
		},
		{
			name: "a partial gang torn down: no member bound any more",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Unknown", ScheduleStartTime: ago(time.Hour), Conditions: []metav1.Condition{
					condition("Scheduled", "False", "Waiting", "1 of minMember 3 pods bound"),
					condition("Partial", "True", "MembersMissing", "1 of 3"),
				}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(time.Hour),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"},
					{Type: "Partial", Status: "False", Reason: "NoneBound", Message: "no member is bound any more; the gang is placed whole or not at all once its pods are back"},
				},
			},
		},
		{
			name: "a gang whose first members finished while the others run is whole and Running, not partial",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, succeeded, running, running),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Running", Admitted: 3, Running: 3, ScheduleStartTime: ago(time.Hour), ScheduleEndTime: ago(time.Hour),
					Conditions: []metav1.Condition{
						condition("Scheduled", "True", "GangBound", "3 pods bound or running (minMember 3)"),
						condition("Unschedulable", "False", "GangBound", ""),
					}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Running", Admitted: 2, Running: 2, Succeeded: 1, ScheduleStartTime: ago(time.Hour), ScheduleEndTime: ago(time.Hour),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "True", Reason: "GangBound", Message: "2 pods bound or running, 1 succeeded (minMember 3)"},
					{Type: "Unschedulable", Status: "False", Reason: "GangBound"},
				},
			},
		},
		{
			name: "a Running gang whose pods are all gone gives its admission back: Pending",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, pending, pending, pending),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Running", ScheduleStartTime: ago(time.Hour), ScheduleEndTime: ago(time.Hour)}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Pending", ScheduleStartTime: ago(0),
				Conditions: []metav1.Condition{{Type: "Scheduled", Status: "False", Reason: "Waiting", Message: "0 of minMember 3 pods bound"}},
			},
		},
		{
			name: "every pod succeeded: Finished; conditions and times stay",
			g: Gang{PodGroup: pgWith(nil), Job: gang(3, succeeded, succeeded, succeeded),
				Old: schedulingv1alpha1.PodGroupStatus{Phase: "Running", Admitted: 3, ScheduleStartTime: ago(time.Hour), ScheduleEndTime: ago(time.Hour),
					Conditions: []metav1.Condition{condition("Scheduled", "True", "GangBound", "3 pods bound or running (minMember 3)")}}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Finished", Succeeded: 3, ScheduleStartTime: ago(time.Hour), ScheduleEndTime: ago(time.Hour),
				Conditions: []metav1.Condition{{Type: "Scheduled", Status: "True", Reason: "GangBound", Message: "3 pods bound or running (minMember 3)"}},
			},
			wantEvents: []string{"Normal/Finished"},
		},
		{
			name: "a failure that leaves fewer than minMember able to succeed: Failed",
			g:    Gang{PodGroup: pgWith(nil), Job: gang(3, failed, running, running), Old: schedulingv1alpha1.PodGroupStatus{Phase: "Running"}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Failed", Admitted: 2, Running: 2, Failed: 1,
			},
			wantEvents: []string{"Warning/Failed"},
		},
		{
			name: "a succeeded member counts once toward what can still succeed: Failed",
			g:    Gang{PodGroup: pgWith(nil), Job: gang(3, succeeded, failed, running), Old: schedulingv1alpha1.PodGroupStatus{Phase: "Running"}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Failed", Admitted: 1, Running: 1, Succeeded: 1, Failed: 1,
			},
			wantEvents: []string{"Warning/Failed"},
		},
		{
			name: "a failure with enough pods left is not Failed",
			g:    Gang{PodGroup: pgWith(nil), Job: gang(3, failed, running, running, running), Old: schedulingv1alpha1.PodGroupStatus{Phase: "Running"}},
			want: schedulingv1alpha1.PodGroupStatus{
				Phase: "Running", Admitted: 3, Running: 3, Failed: 1, ScheduleStartTime: ago(0), ScheduleEndTime: ago(0),
				Conditions: []metav1.Condition{
					{Type: "Scheduled", Status: "True", Reason: "GangBound", Message: "3 pods bound or running (minMember 3)"},
					{Type: "Unschedulable", Status: "False", Reason: "GangBound"},
				},
			},
			wantEvents: []string{"Normal/Scheduled"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := Compute(tc.g, now)
			got := u.Status
			if got.Phase != tc.want.Phase || got.Admitted != tc.want.Admitted || got.Running != tc.want.Running ||
				got.Succeeded != tc.want.Succeeded || got.Failed != tc.want.Failed {
				t.Errorf("phase/counts = %s a%d r%d s%d f%d, want %s a%d r%d s%d f%d", got.Phase, got.Admitted, got.Running, got.Succeeded, got.Failed,
					tc.want.Phase, tc.want.Admitted, tc.want.Running, tc.want.Succeeded, tc.want.Failed)
			}
			if !equality.Semantic.DeepEqual(got.ScheduleStartTime, tc.want.ScheduleStartTime) || !equality.Semantic.DeepEqual(got.ScheduleEndTime, tc.want.ScheduleEndTime) {
				t.Errorf("times = %v..%v, want %v..%v", got.ScheduleStartTime, got.ScheduleEndTime, tc.want.ScheduleStartTime, tc.want.ScheduleEndTime)
			}
			if len(got.Conditions) != len(tc.want.Conditions) {
				t.Errorf("conditions = %+v, want %+v", got.Conditions, tc.want.Conditions)
			}
			for _, w := range tc.want.Conditions {
				c := meta.FindStatusCondition(got.Conditions, w.Type)
				if c == nil || c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message {
					t.Errorf("condition %s = %+v, want %+v", w.Type, c, w)
					continue
				}
				if c.ObservedGeneration != 2 {
					t.Errorf("condition %s observedGeneration %d, want 2", w.Type, c.ObservedGeneration)
				}
			}
			var events []string
			for _, e := range u.Events {
				events = append(events, e.Type+"/"+e.Reason)
			}
			if strings.Join(events, ",") != strings.Join(tc.wantEvents, ",") {
				t.Errorf("events = %v, want %v", events, tc.wantEvents)
			}
			if (u.PodEvent != nil) != tc.wantPodEvt {
				t.Errorf("pod event = %+v, want one: %v", u.PodEvent, tc.wantPodEvt)
			}
			if u.PodEvent != nil && (u.PodEvent.Reason != "FailedScheduling" || !strings.Contains(u.PodEvent.Message, meta.FindStatusCondition(got.Conditions, "Unschedulable").Message)) {
				t.Errorf("pod event %+v", u.PodEvent)
			}

			// Computing again over the result changes nothing and
			// announces nothing: a quiet cluster gets no writes.
			again := tc.g
			again.Old = got
			u2 := Compute(again, now.Add(time.Millisecond))
			if !equality.Semantic.DeepEqual(u2.Status, got) {
				t.Errorf("not idempotent:\n%+v\nthen\n%+v", got, u2.Status)
			}
			if len(u2.Events) != 0 || u2.PodEvent != nil {
				t.Errorf("second computation announced %+v %+v", u2.Events, u2.PodEvent)
			}
		})
	}
}

// A Running gang's transition time and times are kept cycle after cycle.
func TestComputeKeepsTransitionTimes(t *testing.T) {
	old := schedulingv1alpha1.PodGroupStatus{Phase: "Running", Admitted: 3, ScheduleStartTime: ago(time.Hour), ScheduleEndTime: ago(time.Hour),
		Conditions: []metav1.Condition{
			condition("Scheduled", "True", "GangBound", "3 pods bound or running (minMember 3)"),
			condition("Unschedulable", "False", "GangBound", ""),
		}}
	u := Compute(Gang{PodGroup: pgWith(nil), Job: gang(3, bound, bound, bound), Old: old}, now)
	if !equality.Semantic.DeepEqual(u.Status, old) {
		t.Errorf("status changed:\n%+v\nwant\n%+v", u.Status, old)
	}
}

func TestComputeQueue(t *testing.T) {
	var u QueueUsage
	u.Add(schedulingv1alpha1.PodGroupRunning, gang(2, bound, running))
	u.Add(schedulingv1alpha1.PodGroupPending, gang(2, pending, pending))
	u.Add(schedulingv1alpha1.PodGroupInqueue, gang(1, pending))
	u.Add(schedulingv1alpha1.PodGroupFinished, gang(1, succeeded))
	got := ComputeQueue(&schedulingv1alpha1.Queue{}, u)
	if got.State != "Open" || got.Running != 1 || got.Pending != 1 || got.Inqueue != 1 {
		t.Errorf("status = %+v", got)
	}
	// gang() pods request nothing but the pod itself: nothing to report.
	if got.Allocated != nil {
		t.Errorf("allocated = %v, want none", got.Allocated)
	}

	job := st.MakeJob("ns", "g").Obj()
	job.Tasks = nil
	for _, p := range []*corev1.Pod{
		st.MakePod("ns", "a").Job("g").Req("1500m", "1Gi").GPU(2).Node("n").Obj(),
		st.MakePod("ns", "b").Job("g").Req("500m", "1Gi").Node("n").Phase(corev1.PodRunning).Obj(),
		st.MakePod("ns", "c").Job("g").Req("8", "8Gi").Obj(), // pending: holds nothing
	} {
		if err := job.AddTask(api.NewTaskInfo(job.UID, p)); err != nil {
			t.Fatal(err)
		}
	}
	var u2 QueueUsage
	u2.Add(schedulingv1alpha1.PodGroupRunning, job)
	got = ComputeQueue(&schedulingv1alpha1.Queue{Spec: schedulingv1alpha1.QueueSpec{State: "Closed"}}, u2)
	if got.State != "Closed" {
		t.Errorf("state %s, want Closed (the spec's)", got.State)
	}
	want := corev1.ResourceList{"cpu": mustQ("2"), "memory": mustQ("2Gi"), st.GPU: mustQ("2")}
	if !equality.Semantic.DeepEqual(got.Allocated, want) {
		t.Errorf("allocated = %v, want %v", got.Allocated, want)
	}
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

// PartialSince reads the start of the current partial spell from the
// Partial condition, so that the grace period survives a scheduler
// restart; a False or missing condition means not partial.
func TestPartialSince(t *testing.T) {
	since := now.Add(-time.Minute)
	cond := func(status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: "Partial", Status: status, Reason: "MembersMissing", LastTransitionTime: metav1.NewTime(since)}}
	}
	if got := PartialSince(schedulingv1alpha1.PodGroupStatus{Conditions: cond(metav1.ConditionTrue)}); got == nil || !got.Equal(since) {
		t.Errorf("PartialSince(True) = %v, want %v", got, since)
	}
	if got := PartialSince(schedulingv1alpha1.PodGroupStatus{Conditions: cond(metav1.ConditionFalse)}); got != nil {
		t.Errorf("PartialSince(False) = %v, want nil", got)
	}
	if got := PartialSince(schedulingv1alpha1.PodGroupStatus{}); got != nil {
		t.Errorf("PartialSince(no condition) = %v, want nil", got)
	}
}
