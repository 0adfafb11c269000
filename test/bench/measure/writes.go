package measure

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Writes counts mutating API requests by "VERB resource[/subresource]".
type Writes map[string]float64

// mutating are apiserver_request_total's verbs that change state.
var mutating = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "DELETECOLLECTION": true, "APPLY": true}

// notStored are resources whose POSTs are questions, not writes: a
// scheduler's delegated authentication and authorization ask them.
var notStored = map[string]bool{"tokenreviews": true, "subjectaccessreviews": true, "selfsubjectaccessreviews": true, "selfsubjectrulesreviews": true, "localsubjectaccessreviews": true}

// WritesFrom reads the mutating requests from the API server's
// apiserver_request_total samples.
func WritesFrom(samples []Sample) Writes {
	w := Writes{}
	for _, s := range samples {
		if s.Name != "apiserver_request_total" || !mutating[s.Labels["verb"]] || notStored[s.Labels["resource"]] {
			continue
		}
		key := s.Labels["verb"] + " " + s.Labels["resource"]
		if sub := s.Labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		w[key] += s.Value
	}
	return w
}

// Minus is w less o, key by key, dropping keys that come to zero or less
// (counters only grow; a key below zero means o was not a subset).
func (w Writes) Minus(o Writes) Writes {
	out := Writes{}
	for k, v := range w {
		if d := v - o[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total is the sum over every key.
func (w Writes) Total() float64 {
	var t float64
	for _, v := range w {
		t += v
	}
	return t
}

// String lists the keys by count, largest first: "POST pods/binding 2000,
// PUT podgroups/status 500".
func (w Writes) String() string {
	keys := slices.Collect(maps.Keys(w))
	slices.SortFunc(keys, func(a, b string) int {
		if w[a] != w[b] {
			if w[a] > w[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.FormatFloat(w[k], 'f', -1, 64)
	}
	return strings.Join(parts, ", ")
}
