// Package macros parses and expands Coopr's macro grammar: the %...% forms an
// administrator writes in a cluster's config and in service action fields so
// that one template fits every layout ("%join(map(host.service.zookeeper,
// '$:2181'),',')%" becomes "zk1:2181,zk2:2181,zk3:2181" on a three-node
// ensemble and grows with it on expand).
//
// Text is parsed once into a Template (literal runs and macros, each macro a
// reference with an optional map and join), then expanded per task against a
// Layout (the cluster and its current nodes, indexed by service and ordered by
// node Num) and the node the task runs on. Parsing is separate so the API can
// reject a malformed macro when a template is written, and so the planner can
// ask which services a text depends on (ServicesReferenced) without a layout:
// after an expand or shrink it reconfigures exactly the nodes whose expanded
// text would change.
//
// Grammar (inside a pair of percent signs; spaces are allowed after '(' and
// around ',' and before ')'):
//
//	expr    = "join(" inner "," literal ")" | inner
//	inner   = "map(" ref "," literal ")" | ref
//	ref     = name [ "[" digits "]" ]
//	literal = "'" { not "'" } "'" | `"` { not `"` } `"`
//
// Names: cluster.id, cluster.owner, host.self, ip.self, ip.TYPE.self,
// host.service.S, ip.service.S, ip.TYPE.service.S, num.service.S and
// instance.self.service.S, where TYPE is access_v4 or bind_v4 (bind_v4 when
// omitted) and S a service name. An index (0-based, in node Num order) picks
// one node of host.service and ip.service. Every reference yields a list
// (scalars a list of one); map replaces each '$' of its format with an element
// and the list is joined with the join separator, or "," without a join.
//
// Outside macros, "%%" is a literal percent sign, and a lone '%' with no
// unpaired '%' after it is literal too (Coopr's rule, so "50%" needs no
// escaping); any other '%' opens a macro, and a macro that does not parse is
// an error rather than text, so a typo never reaches a node as a config value.
//
// Differences from Coopr, each deliberate: "%%" expands to "%" (Coopr left it
// doubled); cluster.id is added; a macro that needs a hostname or address the
// layout lacks is an error instead of an empty string, because the engine must
// not write a config with holes (the planner orders such tasks after the nodes
// they name are confirmed). As in Coopr, a service on no node expands to an
// empty list and instance.self.service.S on a node without S to "", since the
// cluster config is expanded on every node.
package macros
