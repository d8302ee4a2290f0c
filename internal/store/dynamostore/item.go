package dynamostore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heddle-io/heddle/internal/store"
)

// Attribute names of the single table. Short, because attribute names count
// towards DynamoDB's 400 KB item size and every read unit.
const (
	attrPK        = "pk"  // S: partition key
	attrSK        = "sk"  // S: sort key
	attrVersion   = "v"   // N: bumped by every write
	attrStatus    = "st"  // S: absent when the status is empty
	attrData      = "d"   // B: absent when the body is empty
	attrIndexPK   = "gpk" // S: gsi1 partition; present only on indexed items
	attrIndexSK   = "gsk" // S: gsi1 sort key
	counterPrefix = "c_"  // N: one attribute per counter, c_<name>
	indexName     = "gsi1"
	emptyStatus   = "" // what an absent st attribute stands for
)

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func keyAttrs(k store.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(k.PK), attrSK: str(k.SK)}
}

// marshalItem renders a whole item, version included.
func marshalItem(it store.Item) map[string]types.AttributeValue {
	m := make(map[string]types.AttributeValue, 6+len(it.Counters))
	m[attrPK] = str(it.PK)
	m[attrSK] = str(it.SK)
	m[attrVersion] = num(it.Version)
	if it.Status != "" {
		m[attrStatus] = str(it.Status)
	}
	if len(it.Data) > 0 {
		m[attrData] = &types.AttributeValueMemberB{Value: it.Data}
	}
	for name, v := range it.Counters {
		m[counterPrefix+name] = num(v)
	}
	if it.Index != nil {
		m[attrIndexPK] = str(it.Index.Partition)
		m[attrIndexSK] = str(it.Index.Sort)
	}
	return m
}

// unmarshalItem reads an item; nil or empty attributes mean no item.
func unmarshalItem(m map[string]types.AttributeValue) (*store.Item, error) {
	if len(m) == 0 {
		return nil, nil
	}
	var it store.Item
	var indexPK, indexSK *string
	for name, av := range m {
		var err error
		switch {
		case name == attrPK:
			it.PK, err = asString(av)
		case name == attrSK:
			it.SK, err = asString(av)
		case name == attrVersion:
			it.Version, err = asInt(av)
		case name == attrStatus:
			it.Status, err = asString(av)
		case name == attrData:
			b, ok := av.(*types.AttributeValueMemberB)
			if !ok {
				err = fmt.Errorf("want a binary, got %T", av)
			} else if len(b.Value) > 0 {
				it.Data = b.Value
			}
		case name == attrIndexPK:
			s, e := asString(av)
			indexPK, err = &s, e
		case name == attrIndexSK:
			s, e := asString(av)
			indexSK, err = &s, e
		case strings.HasPrefix(name, counterPrefix):
			var v int64
			if v, err = asInt(av); err == nil {
				if it.Counters == nil {
					it.Counters = make(map[string]int64)
				}
				it.Counters[strings.TrimPrefix(name, counterPrefix)] = v
			}
		}
		if err != nil {
			return nil, fmt.Errorf("dynamostore: attribute %q: %w", name, err)
		}
	}
	if it.PK == "" || it.SK == "" {
		return nil, fmt.Errorf("dynamostore: item without a key")
	}
	if indexPK != nil && indexSK != nil {
		it.Index = &store.IndexKey{Partition: *indexPK, Sort: *indexSK}
	}
	return &it, nil
}

func asString(av types.AttributeValue) (string, error) {
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("want a string, got %T", av)
	}
	return s.Value, nil
}

func asInt(av types.AttributeValue) (int64, error) {
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("want a number, got %T", av)
	}
	return strconv.ParseInt(n.Value, 10, 64)
}

func versionOf(it *store.Item) int64 {
	if it == nil {
		return 0
	}
	return it.Version
}
