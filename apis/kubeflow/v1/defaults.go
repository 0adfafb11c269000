package v1

import "strings"

// canonicalizeReplicaTypes renames map keys that match a known replica type
// but for letter case ("worker", "WORKER") to the canonical name, as
// upstream's defaulting does; the schema rejects two keys that differ only
// by case, so no entry is lost.
func canonicalizeReplicaTypes(specs map[ReplicaType]*ReplicaSpec, known ...ReplicaType) {
	for _, canonical := range known {
		for key, spec := range specs {
			if key != canonical && strings.EqualFold(string(key), string(canonical)) {
				delete(specs, key)
				specs[canonical] = spec
				break
			}
		}
	}
}
