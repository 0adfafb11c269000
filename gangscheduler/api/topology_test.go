package api_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/troupe-ml/troupe/gangscheduler/api"
	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// The tree has a domain per value of each level under each domain above,
// counted in Domains with the root; a node without every level's label is
// outside it.
func TestTopologyTreeDomainsAndLeaves(t *testing.T) {
	topo := &api.TopologyInfo{Name: "fabric", Levels: []api.TopologyLevel{
		{Name: "block", NodeLabel: "example.com/block"}, {Name: "rack", NodeLabel: "example.com/rack"}, {Name: "host", NodeLabel: corev1.LabelHostname},
	}}
	tests := []struct {
		name        string
		blocks      int
		racks       int // per block; rack r of every block has the same value
		hosts       int // per rack
		outside     bool
		wantDomains int
	}{
		{name: "one node", blocks: 1, racks: 1, hosts: 1, wantDomains: 4},
		{name: "2 blocks x 2 racks x 2 hosts: racks of one value in two blocks are two domains", blocks: 2, racks: 2, hosts: 2, wantDomains: 1 + 2 + 4 + 8},
		{name: "a node without a rack label is outside, and makes no block of its own", blocks: 1, racks: 2, hosts: 1, outside: true, wantDomains: 1 + 1 + 2 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []*corev1.Node
			for b := range tt.blocks {
				for r := range tt.racks {
					for h := range tt.hosts {
						nodes = append(nodes, st.MakeNode(fmt.Sprintf("b%d-r%d-h%d", b, r, h)).
							Label("example.com/block", fmt.Sprintf("b%d", b)).Label("example.com/rack", fmt.Sprintf("r%d", r)).Obj())
					}
				}
			}
			if tt.outside {
				nodes = append(nodes, st.MakeNode("stray").Label("example.com/block", "b9").Obj())
			}
			snap := st.MustSnapshot(nodes, nil, nil)
			tree := snap.TopologyTree(topo)
			if tree.Domains != tt.wantDomains {
				t.Errorf("Domains = %d, want %d", tree.Domains, tt.wantDomains)
			}
			// Every domain has its own ID, 0 to Domains-1.
			ids := map[int]string{}
			var walk func(d *api.Domain)
			walk = func(d *api.Domain) {
				if d.ID < 0 || d.ID >= tree.Domains {
					t.Errorf("domain %q: ID %d outside 0..%d", d.Path(), d.ID, tree.Domains-1)
				} else if other, dup := ids[d.ID]; dup {
					t.Errorf("domains %q and %q share ID %d", other, d.Path(), d.ID)
				}
				ids[d.ID] = d.Path()
				for _, c := range d.Children {
					walk(c)
				}
			}
			walk(tree.Root)
			if len(ids) != tree.Domains {
				t.Errorf("%d domains in the tree, Domains = %d", len(ids), tree.Domains)
			}
			for i, n := range snap.NodeList {
				leaf := tree.Leaf[i]
				if n.Name == "stray" {
					if leaf != nil {
						t.Errorf("stray node in the tree at %s", leaf.Path())
					}
					continue
				}
				if leaf == nil || leaf.Value != n.Name || leaf.Path() != n.Node.Labels["example.com/block"]+"/"+n.Node.Labels["example.com/rack"]+"/"+n.Name {
					t.Errorf("node %s: leaf %v", n.Name, leaf)
				}
			}
		})
	}
}
