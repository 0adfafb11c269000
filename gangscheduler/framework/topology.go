package framework

import (
	"maps"

	"github.com/troupe-ml/troupe/gangscheduler/api"
)

// TopologyOutcome is where the members a gang's topology policy covers
// were placed, for its PodGroup's status.
type TopologyOutcome struct {
	// Levels are the topology's levels, top to bottom, with the domains
	// used and how many members each holds, in rank order.
	Levels []LevelOutcome
	// Unmet lists the preferred rules the placement could not keep, one
	// line each ("rack: pack: 2 domains, not 1"); empty when every rule
	// was kept.
	Unmet []string
}

// LevelOutcome is the domains a gang uses at one level.
type LevelOutcome struct {
	Level   string
	Domains []DomainCount
}

// DomainCount is a domain and how many members it holds.
type DomainCount struct {
	Name    string
	Members int
}

// RecordTopology keeps where a gang committed in this session was placed
// on its topology.
func (ssn *Session) RecordTopology(job api.JobID, o TopologyOutcome) {
	if ssn.topology == nil {
		ssn.topology = map[api.JobID]TopologyOutcome{}
	}
	ssn.topology[job] = o
}

// TopologyOutcomes returns the records of RecordTopology.
func (ssn *Session) TopologyOutcomes() map[api.JobID]TopologyOutcome {
	return maps.Clone(ssn.topology)
}
