package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/heddle-io/heddle/internal/store"
)

// recordFormat leads every encoded record so the layout can change later
// without misreading old files.
const recordFormat = 1

// A record is an item without its key (the key is the bolt key):
//
//	format byte | uvarint version | string status |
//	uvarint counter count, then (string name, varint value) in name order |
//	index flag byte, then string partition, string sort when set |
//	body (the rest)
//
// where string is a uvarint length and the bytes. Binary rather than JSON:
// bodies are JSON already and would otherwise be base64ed, and every write
// decodes and re-encodes one record.
func encodeRecord(it store.Item) []byte {
	n := 1 + binary.MaxVarintLen64*2 + len(it.Status) + 1 + len(it.Data)
	for name := range it.Counters {
		n += len(name) + binary.MaxVarintLen64*2
	}
	if it.Index != nil {
		n += len(it.Index.Partition) + len(it.Index.Sort) + binary.MaxVarintLen64*2
	}
	b := make([]byte, 0, n)
	b = append(b, recordFormat)
	b = binary.AppendUvarint(b, uint64(it.Version))
	b = appendString(b, it.Status)
	b = binary.AppendUvarint(b, uint64(len(it.Counters)))
	for _, name := range slices.Sorted(maps.Keys(it.Counters)) {
		b = appendString(b, name)
		b = binary.AppendVarint(b, it.Counters[name])
	}
	if it.Index == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = appendString(b, it.Index.Partition)
		b = appendString(b, it.Index.Sort)
	}
	return append(b, it.Data...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errCorrupt = errors.New("boltstore: corrupt record")

// decodeRecord fills everything but the key. The result shares no memory with
// b, which bolt owns only for the life of a transaction.
func decodeRecord(b []byte) (store.Item, error) {
	d := decoder{b: b}
	if format := d.byte(); format != recordFormat {
		if d.err != nil {
			return store.Item{}, d.err
		}
		return store.Item{}, fmt.Errorf("%w: unknown format %d", errCorrupt, format)
	}
	var it store.Item
	version := d.uvarint()
	if version > 1<<62 {
		d.fail("version out of range")
	}
	it.Version = int64(version)
	it.Status = d.string()
	if count := d.uvarint(); count > 0 && d.err == nil {
		// Each counter takes at least two bytes, which bounds the allocation
		// a corrupt count could ask for.
		if count > uint64(len(d.b)/2) {
			d.fail("counter count exceeds record")
		} else {
			it.Counters = make(map[string]int64, count)
			for range count {
				name := d.string()
				if _, dup := it.Counters[name]; dup {
					d.fail("duplicate counter")
				}
				it.Counters[name] = d.varint()
			}
		}
	}
	switch d.byte() {
	case 0:
	case 1:
		it.Index = &store.IndexKey{Partition: d.string(), Sort: d.string()}
	default:
		d.fail("bad index flag")
	}
	if d.err != nil {
		return store.Item{}, d.err
	}
	if len(d.b) > 0 {
		it.Data = slices.Clone(d.b)
	}
	return it, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(why string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errCorrupt, why)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("string exceeds record")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
