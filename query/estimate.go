package query

import (
	"context"
	"strings"
)

// Estimate is what a query would read, known from blob listings alone.
type Estimate struct {
	Services int   // services with a blob that may match
	Blobs    int   // blobs that may match
	Bytes    int64 // their stored size
	Events   int64 // their EventCount metadata (a blob without it adds none)
}

// EstimateOf lists the blobs q would read, pruned by their metadata as a
// query prunes them (time range and levels), and reads none: it costs the
// query's listings only. A blob that overlaps the range counts whole. The
// other filters of q (host, text, Keep, Grep) are not looked at.
func EstimateOf(ctx context.Context, store Store, q Query) (Estimate, Stats, error) {
	var est Estimate
	var st Stats
	q.Limit, q.Desc = 0, false
	if err := q.Validate(); err != nil {
		return est, st, err
	}
	clampRange(&q)
	if !q.From.Before(q.To) {
		return est, st, nil
	}
	services := map[string]bool{}
	r := newRunner(store, &q, nil, &st)
	defer r.decoders.close()
	err := r.walk(ctx, func(_ context.Context, cands []candidate) error {
		for _, c := range cands {
			est.Blobs++
			est.Bytes += c.size
			est.Events += c.count
			svc, _, _ := strings.Cut(c.name, "/")
			services[svc] = true
		}
		return nil
	})
	est.Services = len(services)
	return est, st, err
}
