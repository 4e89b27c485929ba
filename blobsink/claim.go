package blobsink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
)

// MaxSeq is the highest blob number: six digits keep names sorting as
// numbers.
const MaxSeq = 999999

// claimTries bounds the conditional creates of one claim.
const claimTries = 1000

// The claim rule. A writer claims a number with a conditional create; a
// taken number costs one failed create (a round trip and a billed
// transaction). Instances whose first flush of an hour falls at the same
// moment all list the empty prefix and would all try 000001, then 000002,
// and so on: about N/2 failed creates each for N instances. So:
//
//   - A sink that has never met another writer tries the number right
//     after the highest listed (a lone instance numbers 000001, 000002 ...).
//   - After a taken number it jumps to a random one among the next
//     ClaimSpread, and from then on (it shares the account) its first claim
//     of a key starts at a random number among the ClaimSpread after the
//     highest listed. With N concurrent claimers and a spread of 2N or more,
//     most land on a free number at once.
//
// Numbers therefore have gaps, and a key's numbers increase within one
// writer but not in creation order across writers; queries list a prefix
// and order by time, so neither matters to them.

// firstSeq is the number a key's first claim since the start tries, with
// high the highest number listed under the key.
func (s *Sink) firstSeq(high int) int {
	if s.contended.Load() {
		return high + 1 + rand.IntN(s.cfg.ClaimSpread)
	}
	return high + 1
}

// claim creates the first free blob numbered seq or above, by the claim
// rule.
func (s *Sink) claim(ctx context.Context, key string, seq int) (*writer, error) {
	for range claimTries {
		if seq > MaxSeq {
			return nil, fmt.Errorf("cannot claim a blob number under %s: %06d is the highest", key, MaxSeq)
		}
		name := BlobName(key, seq, s.cfg.Compression)
		err := s.store.Create(ctx, name, Meta{}.Map())
		if err == nil {
			s.met.created.Inc()
			return newWriter(name, seq), nil
		}
		if !errors.Is(err, ErrExists) {
			s.met.errors.WithLabelValues("create").Inc()
			return nil, fmt.Errorf("cannot create blob %s: %w", name, err)
		}
		s.met.claimConflicts.Inc()
		s.contended.Store(true)
		seq += 1 + rand.IntN(s.cfg.ClaimSpread)
	}
	return nil, fmt.Errorf("cannot claim a blob number under %s: %d numbers tried are taken", key, claimTries)
}
