package solver

import "math"

// lpTolerance absorbs floating-point error when a fractional bound is
// rounded up to whole rows: a bound of 7.0000001 rows still means 7.
const lpTolerance = 1e-6

// lpWeights is a weight per unit such that no valid row's units weigh more
// than 1 in total. Any such weights bound a cover from below: every row
// covers at most weight 1 of the demand, so demands r need at least
// sum(r[u]*w[u]) rows. Cliques (every weight 1) and the bound sets (weight
// 1/alpha) are special cases; the linear program finds the strongest.
type lpWeights []float64

// need is the number of rows demands r need by these weights.
func (w lpWeights) need(r []int) int {
	sum := 0.0
	for u, x := range w {
		if x > 0 {
			sum += float64(float64(r[u]) * x)
		}
	}
	return int(math.Ceil(sum - float64(lpTolerance*math.Max(1, sum))))
}

// lpBound solves the linear relaxation of covering demands b with the
// component's rows: the least fractional number of rows, found as its
// dual (the heaviest weights per unit under which no row weighs more than
// 1). It returns the rows that relaxation proves necessary and the weights
// that prove it. It catches what cliques and bound sets miss: demands that
// only several overlapping groups together make impossible.
//
// The simplex runs on a dictionary of one row per pattern and one column
// per unit with demand, with Bland's rule, so it cannot cycle. Its answer is
// checked rather than trusted: the weights are scaled down until every
// pattern weighs at most 1, so the bound holds whatever rounding the
// arithmetic did.
func (p *problem) lpBound(ci int, b []int) (int, lpWeights, error) {
	pats, units, _, err := p.needyPatterns(ci, b)
	if err != nil {
		return 0, nil, err
	}
	need, w, _, err := p.lpBoundOn(pats, units, b)
	return need, w, err
}

// lpBoundOn is lpBound over given patterns (from needyPatterns). It also
// returns the relaxation's rows: how many (fractional) rows of each pattern
// an optimal fractional cover uses, which rounding turns into a cover.
func (p *problem) lpBoundOn(pats []bitset, units []int, b []int) (int, lpWeights, []float64, error) {
	if len(units) == 0 {
		return 0, nil, nil, nil
	}
	nu, np := len(units), len(pats)
	col := make(map[int]int, nu)
	for j, u := range units {
		col[u] = j
	}
	// Variables 0..nu-1 are the weights, nu..nu+np-1 the patterns' slacks.
	a := make([][]float64, np)
	rhs := make([]float64, np)
	basic := make([]int, np)
	for i, pat := range pats {
		a[i] = make([]float64, nu)
		for _, u := range pat.members() {
			a[i][col[u]] = 1
		}
		rhs[i] = 1
		basic[i] = nu + i
	}
	nonbasic := make([]int, nu)
	cost := make([]float64, nu)
	for j, u := range units {
		nonbasic[j] = j
		cost[j] = float64(b[u])
	}
	const eps = 1e-9
	perPivot := int64(1 + np*nu/16)
	for {
		if err := p.b.spend(perPivot); err != nil {
			return 0, nil, nil, err
		}
		enter := -1
		for j := range cost {
			if cost[j] > eps && (enter < 0 || nonbasic[j] < nonbasic[enter]) {
				enter = j
			}
		}
		if enter < 0 {
			break
		}
		leave := -1
		best := math.Inf(1)
		for i := range a {
			if a[i][enter] <= eps {
				continue
			}
			ratio := math.Max(rhs[i], 0) / a[i][enter]
			if ratio < best-eps || (ratio <= best+eps && basic[i] < basic[leave]) {
				best, leave = ratio, i
			}
		}
		if leave < 0 {
			// Unbounded: some unit is on no row. The cover fails anyway.
			return 0, nil, nil, nil
		}
		pivot(a, rhs, cost, leave, enter)
		basic[leave], nonbasic[enter] = nonbasic[enter], basic[leave]
	}
	w := make(lpWeights, len(p.units))
	for i, v := range basic {
		if v < nu && rhs[i] > 0 {
			w[units[v]] = rhs[i]
		}
	}
	heaviest := 1.0
	for _, pat := range pats {
		sum := 0.0
		for _, u := range pat.members() {
			sum += w[u]
		}
		heaviest = math.Max(heaviest, sum)
	}
	for u := range w {
		w[u] /= heaviest
	}
	// The primal solution: a pattern's rows are the negated objective
	// coefficient of its slack where that slack is nonbasic.
	rows := make([]float64, np)
	for j, v := range nonbasic {
		if v >= nu && cost[j] < 0 {
			rows[v-nu] = -cost[j]
		}
	}
	return w.need(b), w, rows, nil
}

// pivot exchanges the basic variable of row r with the nonbasic variable of
// column j in the dictionary x_B = rhs - a x_N, objective z = cost x_N.
// Products are converted explicitly, which keeps the compiler from fusing
// them into multiply-adds on some architectures (arm64, for one): the same
// request must give the same layout on every machine.
func pivot(a [][]float64, rhs, cost []float64, r, j int) {
	row := a[r]
	inv := 1 / row[j]
	rhs[r] *= inv
	for k := range row {
		if k != j {
			row[k] *= inv
		}
	}
	row[j] = inv
	for i := range a {
		if i == r {
			continue
		}
		f := a[i][j]
		if f == 0 {
			continue
		}
		rhs[i] -= float64(f * rhs[r])
		for k := range a[i] {
			if k != j {
				a[i][k] -= float64(f * row[k])
			}
		}
		a[i][j] = -f * inv
	}
	f := cost[j]
	for k := range cost {
		if k != j {
			cost[k] -= float64(f * row[k])
		}
	}
	cost[j] = -f * inv
}

// roundCover turns the relaxation's fractional rows into whole ones: first
// every pattern rounded up, which covers everything; failing that, every
// pattern rounded down and the demand left over placed first-fit on the
// rows that remain. Either succeeds whenever the relaxation leaves about as
// many spare rows as units, so the exhaustive search is only needed where
// the fractional and the whole answers are close.
func (p *problem) roundCover(ci int, pats []bitset, lpRows []float64, b []int, m int) ([]seg, bool, error) {
	if lpRows == nil {
		return nil, false, nil
	}
	var up, down []seg
	upRows, downRows := 0, 0
	for i, y := range lpRows {
		if y <= lpTolerance {
			continue
		}
		lo := int(math.Floor(y + lpTolerance))
		hi := int(math.Ceil(y - lpTolerance))
		if hi > 0 {
			up = append(up, seg{set: pats[i], n: hi})
			upRows += hi
		}
		if lo > 0 {
			down = append(down, seg{set: pats[i], n: lo})
			downRows += lo
		}
	}
	if upRows <= m && p.covers(ci, up, b) {
		return p.trim(cloneSegs(up), b), true, nil
	}
	if downRows > m {
		return nil, false, nil
	}
	left := append([]int(nil), b...)
	for _, s := range down {
		for _, u := range s.set.members() {
			left[u] = max(left[u]-s.n, 0)
		}
	}
	for v := 0; v < fitOrders; v++ {
		rest, rows, err := p.firstFit(p.comps[ci], left, m-downRows, v)
		if err != nil {
			return nil, false, err
		}
		if all := append(cloneSegs(down), rest...); rows <= m-downRows && p.covers(ci, all, b) {
			return p.trim(all, b), true, nil
		}
	}
	return nil, false, nil
}

// cloneSegs copies segs with sets of their own, which trim may change.
func cloneSegs(segs []seg) []seg {
	out := make([]seg, len(segs))
	for i, s := range segs {
		out[i] = seg{set: s.set.clone(), hw: s.hw, img: s.img, n: s.n}
	}
	return out
}

// covers checks that segs hold every unit of component ci at least b[u]
// times: rounded floating-point rows are checked, not trusted.
func (p *problem) covers(ci int, segs []seg, b []int) bool {
	cov := make([]int, len(p.units))
	for _, s := range segs {
		for _, u := range s.set.members() {
			cov[u] += s.n
		}
	}
	for _, u := range p.comps[ci] {
		if cov[u] < b[u] {
			return false
		}
	}
	return true
}
