package tablesink

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStoreTables(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		ctx := context.Background()
		p := uniqueName("tb")
		for _, n := range []string{p + "a", p + "b", p + "c"} {
			if err := st.CreateTable(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.CreateTable(ctx, p+"a"); err != nil {
			t.Fatalf("creating an existing table: %v", err)
		}
		if err := st.CreateTable(ctx, "bad-name"); err == nil {
			t.Fatal("CreateTable accepted an invalid name")
		}
		names, err := st.ListTables(ctx, p)
		if err != nil || !slices.Equal(names, []string{p + "a", p + "b", p + "c"}) {
			t.Fatalf("ListTables = %v, %v", names, err)
		}
		if err := st.DeleteTable(ctx, p+"b"); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteTable(ctx, p+"zz"); err != nil {
			t.Fatalf("deleting an absent table: %v", err)
		}
		names, err = st.ListTables(ctx, p)
		if err != nil || !slices.Equal(names, []string{p + "a", p + "c"}) {
			t.Fatalf("after delete: %v, %v", names, err)
		}
		if _, err := st.Query(ctx, p+"zz", "pk", "", "", 10); !errors.Is(err, ErrTableNotFound) {
			t.Fatalf("Query on a missing table: %v", err)
		}
		if err := st.Batch(ctx, p+"zz", []Entity{{PartitionKey: "a", RowKey: "b"}}); !errors.Is(err, ErrTableNotFound) {
			t.Fatalf("Batch of one on a missing table: %v", err)
		}
		// Azure reports this one inside the transaction's 202 response.
		if err := st.Batch(ctx, p+"zz", []Entity{{PartitionKey: "a", RowKey: "b"}, {PartitionKey: "a", RowKey: "c"}}); !errors.Is(err, ErrTableNotFound) {
			t.Fatalf("Batch of two on a missing table: %v", err)
		}
	})
}

func TestStoreEntities(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		ctx := context.Background()
		tb := uniqueName("ent")
		if err := st.CreateTable(ctx, tb); err != nil {
			t.Fatal(err)
		}
		when := time.Date(2026, 11, 21, 18, 4, 5, 123456700, time.UTC)
		props := map[string]any{
			"S": "héllo \"quoted\" 'single' \\ / \x01", "B": true, "F": false, "I32": int32(-7), "I64": int64(math.MaxInt64),
			"D": 1.5, "DW": 2.0, "T": when, "Empty": "",
		}
		var ents []Entity
		for i := range 100 {
			ents = append(ents, Entity{PartitionKey: "p1", RowKey: fmt.Sprintf("r%03d", i), Props: props})
		}
		if err := st.Batch(ctx, tb, ents); err != nil {
			t.Fatal(err)
		}
		// Upsert replaces: a second batch with fewer properties.
		if err := st.Batch(ctx, tb, []Entity{{PartitionKey: "p1", RowKey: "r000", Props: map[string]any{"S": "new"}}}); err != nil {
			t.Fatal(err)
		}
		// Another partition sorts around p1 without leaking into its queries.
		for _, pk := range []string{"p", "p0", "p1a", "p2"} {
			if err := st.Batch(ctx, tb, []Entity{{PartitionKey: pk, RowKey: "r000"}}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := st.Query(ctx, tb, "p1", "", "", 1000)
		if err != nil || len(got) != 100 {
			t.Fatalf("Query = %d entities, %v", len(got), err)
		}
		if len(got[0].Props) != 1 || got[0].Props["S"] != "new" {
			t.Fatalf("upsert did not replace: %v", got[0].Props)
		}
		for k, want := range props {
			if k == "DW" {
				want = int32(2) // a whole double reads back as Int32 (no Edm.Double annotation from the service)
			}
			if v := got[1].Props[k]; !equalProp(v, want) {
				t.Errorf("property %s = %#v, want %#v", k, v, want)
			}
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].RowKey >= got[i].RowKey {
				t.Fatalf("not ascending: %s then %s", got[i-1].RowKey, got[i].RowKey)
			}
		}
		got, err = st.Query(ctx, tb, "p1", "r050", "", 10)
		if err != nil || len(got) != 10 || got[0].RowKey != "r050" || got[9].RowKey != "r059" {
			t.Fatalf("range query from r050: %d entities %v, %v", len(got), got, err)
		}
		got, err = st.Query(ctx, tb, "p1", "r050", "r053", 10)
		if err != nil || len(got) != 3 || got[0].RowKey != "r050" || got[2].RowKey != "r052" {
			t.Fatalf("range query [r050, r053): %d entities, %v", len(got), err)
		}

		e, err := st.Get(ctx, tb, "p1", "r001")
		if err != nil || e.ETag == "" || e.Props["S"] != props["S"] {
			t.Fatalf("Get = %+v, %v", e, err)
		}
		if _, err := st.Get(ctx, tb, "p1", "nope"); !errors.Is(err, errNotFound) {
			t.Fatalf("Get missing: %v", err)
		}
		if _, err := st.Insert(ctx, tb, Entity{PartitionKey: "p1", RowKey: "r001"}); !errors.Is(err, errExists) {
			t.Fatalf("Insert existing: %v", err)
		}
		tag, err := st.Insert(ctx, tb, Entity{PartitionKey: "s", RowKey: "x", Props: map[string]any{"A": int64(1)}})
		if err != nil || tag == "" {
			t.Fatalf("Insert: %q, %v", tag, err)
		}
		tag2, err := st.Merge(ctx, tb, Entity{PartitionKey: "s", RowKey: "x", Props: map[string]any{"B": int64(2)}}, tag)
		if err != nil || tag2 == tag {
			t.Fatalf("Merge: %q, %v", tag2, err)
		}
		if _, err := st.Merge(ctx, tb, Entity{PartitionKey: "s", RowKey: "x", Props: map[string]any{"A": int64(9)}}, tag); !errors.Is(err, errPrecondition) {
			t.Fatalf("Merge with a stale ETag: %v", err)
		}
		if _, err := st.Merge(ctx, tb, Entity{PartitionKey: "s", RowKey: "nope"}, tag); !errors.Is(err, errNotFound) {
			t.Fatalf("Merge of a missing entity: %v", err)
		}
		if e, err = st.Get(ctx, tb, "s", "x"); err != nil {
			t.Fatal(err)
		}
		if e.Props["A"] != int64(1) || e.Props["B"] != int64(2) || e.ETag != tag2 {
			t.Fatalf("after merge: %+v (ETag want %s)", e, tag2)
		}
	})
}

func equalProp(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return a == b
}

func TestStoreQueryPages(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		ctx := context.Background()
		tb := uniqueName("pages")
		if err := st.CreateTable(ctx, tb); err != nil {
			t.Fatal(err)
		}
		// 1,250 entities: more than one 1,000-entity page on Azure.
		for b := range 13 {
			var ents []Entity
			for i := b * 100; i < min(1250, (b+1)*100); i++ {
				ents = append(ents, Entity{PartitionKey: "p", RowKey: fmt.Sprintf("%05d", i)})
			}
			if err := st.Batch(ctx, tb, ents); err != nil {
				t.Fatal(err)
			}
		}
		for _, top := range []int{1, 999, 1000, 1001, 1250, 5000} {
			got, err := st.Query(ctx, tb, "p", "", "", top)
			if err != nil || len(got) != min(top, 1250) {
				t.Fatalf("top %d: %d entities, %v", top, len(got), err)
			}
			if got[len(got)-1].RowKey != fmt.Sprintf("%05d", len(got)-1) {
				t.Fatalf("top %d: last RowKey %s", top, got[len(got)-1].RowKey)
			}
		}
	})
}

// TestStoreRefusesOverLimits checks that our code enforces Azure's limits
// on both backends, whatever Azurite would accept.
func TestStoreRefusesOverLimits(t *testing.T) {
	big := strings.Repeat("x", 32<<10) // 64 KiB in UTF-16: the largest string property
	many := map[string]any{}
	for i := range 253 {
		many[fmt.Sprintf("P%d", i)] = int32(i)
	}
	huge := map[string]any{}
	for i := range 17 {
		huge[fmt.Sprintf("P%d", i)] = big // 17 x 64 KiB > 1 MiB
	}
	n := func(count int, pk func(int) string, props map[string]any) []Entity {
		var ents []Entity
		for i := range count {
			ents = append(ents, Entity{PartitionKey: pk(i), RowKey: fmt.Sprint(i), Props: props})
		}
		return ents
	}
	same := func(int) string { return "p" }
	bad := map[string][]Entity{
		"101 entities":          n(101, same, nil),
		"two partitions":        n(2, func(i int) string { return fmt.Sprint("p", i) }, nil),
		"over 4 MiB":            n(50, same, map[string]any{"A": big, "B": big, "C": big}),
		"253 properties":        n(1, same, many),
		"entity over 1 MiB":     n(1, same, huge),
		"string over 64 KiB":    n(1, same, map[string]any{"A": big + "y"}),
		"slash in key":          n(1, func(int) string { return "a/b" }, nil),
		"control char in key":   n(1, func(int) string { return "a\x01" }, nil),
		"key over 1 KiB":        n(1, func(int) string { return strings.Repeat("k", 513) }, nil),
		"bad property name":     n(1, same, map[string]any{"a-b": "x"}),
		"reserved name":         n(1, same, map[string]any{"Timestamp": "x"}),
		"unsupported type":      n(1, same, map[string]any{"A": []int{1}}),
		"duplicate RowKey":      {{PartitionKey: "p", RowKey: "r"}, {PartitionKey: "p", RowKey: "r"}},
		"empty transaction":     {},
		"invalid UTF-8 in prop": n(1, same, map[string]any{"A": "\xff"}),
	}
	forEachStore(t, func(t *testing.T, st Store) {
		ctx := context.Background()
		tb := uniqueName("limits")
		if err := st.CreateTable(ctx, tb); err != nil {
			t.Fatal(err)
		}
		for name, ents := range bad {
			if err := st.Batch(ctx, tb, ents); err == nil {
				t.Errorf("%s: Batch accepted it", name)
			}
		}
		for _, pk := range []string{"p", "p0", "p1"} {
			if c := countRows(t, st, tb, pk); c != 0 {
				t.Errorf("refused batches wrote %d entities to %s", c, pk)
			}
		}
		// The limits themselves are fine: 100 entities, 64 KiB strings.
		if err := st.Batch(ctx, tb, n(100, same, nil)); err != nil {
			t.Errorf("100 entities: %v", err)
		}
		if err := st.Batch(ctx, tb, n(30, same, map[string]any{"A": big})); err != nil {
			t.Errorf("30 entities of 64 KiB: %v", err)
		}
	})
}

func TestEntityJSONLen(t *testing.T) {
	for _, e := range []Entity{
		{PartitionKey: "p\"", RowKey: "r\\"},
		{PartitionKey: "p", RowKey: "r", Props: map[string]any{
			"S": "a\x01\n\"\\é\xff日本", "B": true, "F": false, "I": int32(-5), "L": int64(-1 << 62), "D": 1.25,
			"N": math.NaN(), "P": math.Inf(1), "M": math.Inf(-1), "T": time.Unix(0, 123456789).UTC(), "X": []int{},
		}},
	} {
		if got, want := entityJSONLen(&e), len(appendEntityJSON(nil, &e)); got != want {
			t.Errorf("entityJSONLen = %d, encoded length %d: %s", got, want, appendEntityJSON(nil, &e))
		}
	}
}
