package boltstore

import (
	"bytes"
	"fmt"
)

// Keys are built from string components joined so that byte order of the
// joined key is the order of the component tuple, whatever bytes the
// components hold: NUL inside a component is written as 0x00 0xFF and
// components are separated by 0x00 0x01. Without the escape, a PK holding NUL
// could collide with another PK·SK pair, and a range scan over one partition
// could run into the next.
const (
	escapeByte    = 0x00
	escapedNUL    = 0xFF
	separatorByte = 0x01
)

// appendComponent appends s escaped, without a separator.
func appendComponent(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == escapeByte {
			dst = append(dst, escapeByte, escapedNUL)
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// joinKey joins components, each followed by a separator except the last.
func joinKey(components ...string) []byte {
	n := 0
	for _, c := range components {
		n += len(c) + 2
	}
	dst := make([]byte, 0, n)
	for i, c := range components {
		if i > 0 {
			dst = append(dst, escapeByte, separatorByte)
		}
		dst = appendComponent(dst, c)
	}
	return dst
}

// partitionPrefix is the prefix every key whose first component is s (and
// that has more components) starts with.
func partitionPrefix(s string) []byte {
	return append(appendComponent(nil, s), escapeByte, separatorByte)
}

// splitKey undoes joinKey. It fails on bytes joinKey cannot produce.
func splitKey(key []byte) ([]string, error) {
	var parts []string
	var cur []byte
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c != escapeByte {
			cur = append(cur, c)
			continue
		}
		if i+1 == len(key) {
			return nil, fmt.Errorf("boltstore: key ends inside an escape")
		}
		i++
		switch key[i] {
		case escapedNUL:
			cur = append(cur, escapeByte)
		case separatorByte:
			parts = append(parts, string(cur))
			cur = cur[:0]
		default:
			return nil, fmt.Errorf("boltstore: bad escape 0x00 0x%02x in key", key[i])
		}
	}
	return append(parts, string(cur)), nil
}

// prefixEnd returns the smallest key greater than every key starting with
// prefix, or nil when there is none (prefix is all 0xFF).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
