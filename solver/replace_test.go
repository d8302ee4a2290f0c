package solver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReplaceSwapsNodesForNewOnesWithTheirLayout(t *testing.T) {
	t.Parallel()
	cl, sp := hadoopCluster(t, 4, nil)
	l, err := Replace(ReplaceRequest{Cluster: cl, Catalog: sp.cat, NodeIDs: []string{"c1-1003", "c1-1001"}})
	require.NoError(t, err)
	requireValid(t, sp, l.Nodes)
	require.Equal(t, []string{"c1-1001", "c1-1003"}, l.RemovedNodes)
	require.Equal(t, []string{"c1-1004", "c1-1005"}, l.NewNodes, "numbered after every node, the lost ones too")
	require.Len(t, l.Nodes, 4)
	require.Equal(t, cl.Nodes[0], l.Nodes[0], "the other nodes keep exactly what they have")
	require.Equal(t, cl.Nodes[2], l.Nodes[1])
	require.Equal(t, cl.Nodes[1].NodeLayout, l.Nodes[2].NodeLayout)
	require.Equal(t, cl.Nodes[3].NodeLayout, l.Nodes[3].NodeLayout)
	require.NotEmpty(t, l.Nodes[3].Flavor, "the provider's flavor of the hardware type")
}

func TestReplaceRefusesUnknownAndRepeatedNodes(t *testing.T) {
	t.Parallel()
	cl, sp := hadoopCluster(t, 3, nil)
	for _, ids := range [][]string{nil, {"c1-9999"}, {"c1-1000", "c1-1000"}} {
		_, err := Replace(ReplaceRequest{Cluster: cl, Catalog: sp.cat, NodeIDs: ids})
		var re *RequestError
		require.ErrorAs(t, err, &re, "%v", ids)
	}
}
