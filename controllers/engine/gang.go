package engine

import (
	"context"
	"fmt"

	"github.com/troupe-ml/troupe/integrations"
)

// gangSpec is the PodGroup contents of a job, from its replicas in the
// framework's order (master, chief or launcher first).
func gangSpec(fw Framework, job Job) integrations.GangSpec {
	var replicas []integrations.Replica
	for _, rtype := range orderedReplicaTypes(fw, job) {
		spec := job.ReplicaSpecs()[rtype]
		replicas = append(replicas, integrations.Replica{
			Role:     integrations.RoleOf(string(rtype)),
			Replicas: *spec.Replicas,
			Template: &spec.Template,
		})
	}
	var policy integrations.SchedulingPolicy
	if sp := job.GetRunPolicy().SchedulingPolicy; sp != nil {
		policy = integrations.SchedulingPolicy{
			MinAvailable:           sp.MinAvailable,
			Queue:                  sp.Queue,
			PriorityClass:          sp.PriorityClass,
			ScheduleTimeoutSeconds: sp.ScheduleTimeoutSeconds,
		}
	}
	return integrations.ComputeGangSpec(replicas, policy)
}

// syncGang keeps the job's PodGroup in line with its spec before any pod is
// created, and reports whether the backend lets pods be created yet.
func (r *Reconciler) syncGang(ctx context.Context, s *scope) (bool, error) {
	if r.gang == nil {
		return true, nil
	}
	state, err := r.gang.SyncPodGroup(ctx, r.client, s.job, *controllerRef(r.fw, s.job), gangSpec(r.fw, s.job))
	if err != nil {
		return false, fmt.Errorf("sync PodGroup: %w", err)
	}
	return state.Admitted, nil
}

// deleteGang removes the PodGroup of a job that no longer needs one.
func (r *Reconciler) deleteGang(ctx context.Context, s *scope) error {
	if r.gang == nil {
		return nil
	}
	if err := r.gang.DeletePodGroup(ctx, r.client, s.job); err != nil {
		return fmt.Errorf("delete PodGroup: %w", err)
	}
	return nil
}
