package tablesink

// buildBatches groups entities into entity group transactions: one
// PartitionKey each, at most maxBatchEntities entities and maxBatchBytes of
// payload. A RowKey seen twice in a partition (a record replayed into the
// same flush) is kept once, the last one winning, because Azure refuses a
// transaction that names a row twice. The transactions come round by round,
// every partition's first (in first-seen order), then every partition's
// second, and so on: the transactions a flush has in flight at once go to
// different partitions, rather than all of one bucket's at once against
// Azure's per-partition target of 2,000 entities/s.
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
	perPK := make([][][]Entity, len(pks))
	total, rounds := 0, 0
	for k, pk := range pks {
		var cur []Entity
		size := batchOverhead
		for _, i := range parts[pk].order {
			cost := batchCost(&ents[i])
			if len(cur) == maxBatchEntities || len(cur) > 0 && size+cost > maxBatchBytes {
				perPK[k] = append(perPK[k], cur)
				cur, size = nil, batchOverhead
			}
			cur = append(cur, ents[i])
			size += cost
		}
		if len(cur) > 0 {
			perPK[k] = append(perPK[k], cur)
		}
		total, rounds = total+len(perPK[k]), max(rounds, len(perPK[k]))
	}
	batches := make([][]Entity, 0, total)
	for r := range rounds {
		for _, bs := range perPK {
			if r < len(bs) {
				batches = append(batches, bs[r])
			}
		}
	}
	return batches
}
