package planner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScenariosHaveEveryProperty(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			plan, err := Build(sc.req)
			require.NoError(t, err)
			checkPlan(t, sc.req, plan)

			again, err := Build(sc.req)
			require.NoError(t, err)
			require.Equal(t, plan, again, "the same request must give the same plan")
		})
	}
}
