package solver

import "fmt"

// RemoveServices takes services off a cluster. It refuses when a service that
// stays requires (at install or run time) a name that only the removed
// services provide. Nodes left running nothing stay in the layout with no
// services; shrink the cluster to delete them.
func RemoveServices(req RemoveServicesRequest) (*Layout, error) {
	cl := &req.Cluster
	existing := copyNodes(cl.Nodes, 0)
	current := uniqueSorted(cl.Services)
	removing := uniqueSorted(req.Services)
	var rs []Reason
	if len(removing) == 0 {
		rs = append(rs, Reason{Code: CodeNoServices, Message: "name at least one service to remove"})
	}
	on := stringSet(current)
	gone := stringSet(removing)
	for _, s := range removing {
		if !on[s] {
			rs = append(rs, Reason{Code: CodeServiceNotOnCluster, Services: []string{s}, Message: fmt.Sprintf("%s is not on the cluster", s)})
		}
	}
	var remaining []string
	for _, s := range current {
		if !gone[s] {
			remaining = append(remaining, s)
		}
	}
	if len(remaining) == 0 && len(removing) > 0 {
		rs = append(rs, Reason{Code: CodeLastServices, Services: removing, Message: "a cluster keeps at least one service; delete the cluster instead"})
	}
	provides := func(services []string) map[string][]string {
		by := map[string][]string{}
		for _, s := range services {
			by[s] = append(by[s], s)
			if d := req.Catalog.Services[s]; d != nil {
				for _, p := range d.Dependencies.Provides {
					by[p] = append(by[p], s)
				}
			}
		}
		return by
	}
	left, before := provides(remaining), provides(current)
	for _, s := range remaining {
		d := req.Catalog.Services[s]
		if d == nil {
			continue
		}
		reqs := uniqueSorted(append(append([]string(nil), d.Dependencies.Install.Requires...), d.Dependencies.Runtime.Requires...))
		for _, r := range reqs {
			if len(left[r]) > 0 || len(before[r]) == 0 {
				continue
			}
			takers := uniqueSorted(before[r])
			if len(takers) == 1 && takers[0] == r {
				rs = append(rs, Reason{Code: CodeRequiredByRemaining, Services: sortedPair(s, r),
					Message: fmt.Sprintf("%s requires %s; remove %s too or keep %s", s, r, s, r)})
				continue
			}
			rs = append(rs, Reason{Code: CodeRequiredByRemaining, Services: uniqueSorted(append([]string{s}, takers...)),
				Message: fmt.Sprintf("%s requires %s, which only %s %s on the cluster; remove %s too or keep %s", s, r, joinAnd(takers), map[bool]string{true: "provides", false: "provide"}[len(takers) == 1], s, joinOr(takers))})
		}
	}
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	var changes []NodeChange
	for i := range existing {
		var keep, dropped []string
		for _, s := range existing[i].Services {
			if gone[s] {
				dropped = append(dropped, s)
			} else {
				keep = append(keep, s)
			}
		}
		if len(dropped) > 0 {
			if keep == nil {
				keep = []string{}
			}
			existing[i].Services = keep
			changes = append(changes, NodeChange{ID: existing[i].ID, Removed: dropped})
		}
	}
	return &Layout{Groups: groupsOfNodes(existing), Nodes: existing, Changed: changes}, nil
}

func joinOr(xs []string) string {
	if len(xs) < 2 {
		return joinAnd(xs)
	}
	return joinAnd(xs[:len(xs)-1]) + " or " + xs[len(xs)-1]
}
