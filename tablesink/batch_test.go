package tablesink

import (
	"fmt"
	"strings"
	"testing"
)

func TestBuildBatches(t *testing.T) {
	big := strings.Repeat("x", 32<<10)
	var ents []Entity
	add := func(pk string, n int, props map[string]any) {
		for i := range n {
			ents = append(ents, Entity{PartitionKey: pk, RowKey: fmt.Sprintf("r%04d", i), Props: props})
		}
	}
	add("small", 250, map[string]any{"A": "x"})
	add("huge", 120, map[string]any{"A": big, "B": big, "C": big}) // ~200 KiB of payload each
	add("one", 1, nil)
	add("small", 10, map[string]any{"A": "replayed"}) // r0000..r0009 again: kept once, last wins
	batches := buildBatches(ents)

	perPK := map[string]int{}
	for _, b := range batches {
		if err := checkBatch(b); err != nil {
			t.Fatalf("batch of %d entities of %s: %v", len(b), b[0].PartitionKey, err)
		}
		perPK[b[0].PartitionKey] += len(b)
		for _, e := range b {
			if e.PartitionKey == "small" && e.RowKey < "r0010" && e.Props["A"] != "replayed" {
				t.Fatalf("duplicate RowKey %s kept the older entity", e.RowKey)
			}
		}
	}
	if perPK["small"] != 250 || perPK["huge"] != 120 || perPK["one"] != 1 {
		t.Fatalf("entities per partition: %v", perPK)
	}
	// Round by round: every partition's first transaction, then every
	// partition's second... small: 100+100+50; huge: split by size (~20
	// per 4 MiB); one: 1.
	var order []string
	var sizes []int
	for _, b := range batches {
		order, sizes = append(order, b[0].PartitionKey), append(sizes, len(b))
	}
	wantOrder := []string{"small", "huge", "one", "small", "huge", "small", "huge"}
	if fmt.Sprint(order[:len(wantOrder)]) != fmt.Sprint(wantOrder) || sizes[0] != 100 || sizes[2] != 1 || sizes[3] != 100 || sizes[5] != 50 {
		t.Fatalf("batches (partition, entities) in the order %v %v, want the partitions round by round: %v...", order, sizes, wantOrder)
	}
	for i, b := range batches {
		if order[i] == "huge" && len(b) >= 100 {
			t.Fatalf("a batch of huge entities was not split by size: %d entities", len(b))
		}
	}
	for _, pk := range order[len(wantOrder):] {
		if pk != "huge" {
			t.Fatalf("batches in the order %v: only huge has more than three", order)
		}
	}
	if len(buildBatches(nil)) != 0 {
		t.Fatal("batches from nothing")
	}
}
