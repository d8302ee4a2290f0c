package memqueue

// ring is a double-ended queue on a growable circular buffer: amortized O(1)
// at both ends and no allocation per element, unlike container/list.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) len() int { return r.n }

func (r *ring[T]) grow() {
	if r.n < len(r.buf) {
		return
	}
	next := make([]T, max(8, 2*len(r.buf)))
	for i := range r.n {
		next[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = next, 0
}

func (r *ring[T]) pushBack(v T) {
	r.grow()
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

func (r *ring[T]) pushFront(v T) {
	r.grow()
	r.head = (r.head - 1 + len(r.buf)) % len(r.buf)
	r.buf[r.head] = v
	r.n++
}

// front returns the first element; the ring must not be empty.
func (r *ring[T]) front() T { return r.buf[r.head] }

// popFront removes and returns the first element; the ring must not be empty.
func (r *ring[T]) popFront() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero // let the garbage collector have it
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	if r.n == 0 {
		r.head = 0
	}
	return v
}
