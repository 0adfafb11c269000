package status

import (
	"encoding/json"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/troupe-ml/troupe/apis/scheduling/v1alpha1"
)

// TestMergePatchReachesTargetFromEveryOrigin applies the patch mergePatch
// makes to each origin, as the API server would to whichever of them it
// holds, and wants the target every time.
func TestMergePatchReachesTargetFromEveryOrigin(t *testing.T) {
	scheduled := metav1.Condition{Type: schedulingv1alpha1.PodGroupScheduled, Status: metav1.ConditionTrue, Reason: "Bound", Message: "3 of 3"}
	unschedulable := metav1.Condition{Type: schedulingv1alpha1.PodGroupUnschedulable, Status: metav1.ConditionTrue, Reason: "NotEnoughResources", Message: "8 of 8 nodes full"}
	topology := &schedulingv1alpha1.TopologyPlacement{Levels: []schedulingv1alpha1.LevelPlacement{{
		Level: "rack", Domains: []schedulingv1alpha1.DomainMembers{{Name: "r1", Members: 3}},
	}}}
	for _, tc := range []struct {
		name    string
		origins []schedulingv1alpha1.PodGroupStatus
		target  schedulingv1alpha1.PodGroupStatus
	}{{
		name:    "one origin: a plain merge patch",
		origins: []schedulingv1alpha1.PodGroupStatus{{Phase: schedulingv1alpha1.PodGroupPending}},
		target:  schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupRunning, Running: 3},
	}, {
		name: "a failed write set a field the target lacks",
		origins: []schedulingv1alpha1.PodGroupStatus{
			{Phase: schedulingv1alpha1.PodGroupPending},
			{Phase: schedulingv1alpha1.PodGroupRunning, Running: 3, Topology: topology},
		},
		target: schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupPending},
	}, {
		name: "the target is the base again",
		origins: []schedulingv1alpha1.PodGroupStatus{
			{Phase: schedulingv1alpha1.PodGroupPending, Conditions: []metav1.Condition{unschedulable}},
			{Phase: schedulingv1alpha1.PodGroupRunning, Running: 3, Conditions: []metav1.Condition{scheduled}},
		},
		target: schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupPending, Conditions: []metav1.Condition{unschedulable}},
	}, {
		name: "two failed writes, a field each",
		origins: []schedulingv1alpha1.PodGroupStatus{
			{},
			{Phase: schedulingv1alpha1.PodGroupInqueue, Admitted: 3},
			{Phase: schedulingv1alpha1.PodGroupRunning, Running: 3, Topology: topology},
		},
		target: schedulingv1alpha1.PodGroupStatus{Phase: schedulingv1alpha1.PodGroupFailed, Failed: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			wr := write{kind: kindPodGroup, object: &schedulingv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg"}}}
			objs := make([]client.Object, len(tc.origins))
			for i, o := range tc.origins {
				objs[i] = wr.objectWith(objectStatus{podGroup: o})
			}
			patch, err := mergePatch(objs, wr.objectWith(objectStatus{podGroup: tc.target}))
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range objs {
				doc, err := json.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				patched, err := jsonpatch.MergePatch(doc, patch)
				if err != nil {
					t.Fatal(err)
				}
				var got schedulingv1alpha1.PodGroup
				if err := json.Unmarshal(patched, &got); err != nil {
					t.Fatal(err)
				}
				if !equality.Semantic.DeepEqual(got.Status, tc.target) {
					t.Errorf("patch %s applied to origin %d gives %+v, want %+v", patch, i, got.Status, tc.target)
				}
			}
		})
	}
}

func TestFoldEvents(t *testing.T) {
	ev := func(reason, msg string) Event { return Event{Type: "Warning", Reason: reason, Message: msg} }
	for _, tc := range []struct {
		name           string
		earlier, later []Event
		want           []Event
	}{
		{name: "nothing earlier", later: []Event{ev("Unschedulable", "a")}, want: []Event{ev("Unschedulable", "a")}},
		{name: "nothing later", earlier: []Event{ev("Unschedulable", "a")}, want: []Event{ev("Unschedulable", "a")}},
		{
			name:    "a reason again: the latest words only",
			earlier: []Event{ev("Unschedulable", "a")}, later: []Event{ev("Unschedulable", "b")},
			want: []Event{ev("Unschedulable", "b")},
		},
		{
			name:    "other reasons stay, in the order decided",
			earlier: []Event{ev("Unschedulable", "a"), ev("Scheduled", "bound")}, later: []Event{ev("Unschedulable", "b")},
			want: []Event{ev("Scheduled", "bound"), ev("Unschedulable", "b")},
		},
		{
			name:    "the same reason of another type is another event",
			earlier: []Event{{Type: "Normal", Reason: "Unschedulable", Message: "a"}}, later: []Event{ev("Unschedulable", "b")},
			want: []Event{{Type: "Normal", Reason: "Unschedulable", Message: "a"}, ev("Unschedulable", "b")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := foldEvents(tc.earlier, tc.later); !slices.Equal(got, tc.want) {
				t.Errorf("foldEvents = %v, want %v", got, tc.want)
			}
		})
	}
}
