package tablesink

// buildBatches groups entities into entity group transactions: one
// PartitionKey each, at most MaxBatchEntities entities and MaxBatchBytes of
// payload. A RowKey seen twice in a partition (a record replayed into the
// same flush) is kept once, the last one winning, because Azure refuses a
// transaction that names a row twice. Partitions keep their first-seen order.
func buildBatches(ents []Entity) [][]Entity {
	type part struct {
		rows  map[string]int // RowKey -> index in ents
		order []int
	}
	parts := map[string]*part{}
	var pks []string
	for i := range ents {
		pk := ents[i].PartitionKey
		p := parts[pk]
		if p == nil {
			p = &part{rows: map[string]int{}}
			parts[pk] = p
			pks = append(pks, pk)
		}
		if j, ok := p.rows[ents[i].RowKey]; ok {
			p.order[j] = i
			continue
		}
		p.rows[ents[i].RowKey] = len(p.order)
		p.order = append(p.order, i)
	}
	var batches [][]Entity
	for _, pk := range pks {
		var cur []Entity
		size := batchOverhead
		for _, i := range parts[pk].order {
			cost := batchCost(&ents[i])
			if len(cur) == MaxBatchEntities || len(cur) > 0 && size+cost > MaxBatchBytes {
				batches = append(batches, cur)
				cur, size = nil, batchOverhead
			}
			cur = append(cur, ents[i])
			size += cost
		}
		if len(cur) > 0 {
			batches = append(batches, cur)
		}
	}
	return batches
}
