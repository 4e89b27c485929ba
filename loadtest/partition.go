package loadtest

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// AzurePartitionTarget is Azure Table storage's scalability target for one
// partition: 2,000 entities (1 KiB each) per second.
const AzurePartitionTarget = 2000

// KeyFunc appends the PartitionKey of a login attempt to dst, as the
// instance (replica, from 0) that received it decides it. The report
// takes the key schemes as functions so it does not depend on how the
// server builds them, only on the keys they produce.
type KeyFunc func(dst, user, id []byte, unixNano int64, replica int) []byte

// Scheme is a named PartitionKey scheme to compare.
type Scheme struct {
	Name        string
	Description string
	Key         KeyFunc
}

// PartitionReport compares how the login attempts of a run spread over
// table partitions under each scheme.
type PartitionReport struct {
	Attempts int64          `json:"attempts"`
	Seconds  float64        `json:"seconds"`
	Target   float64        `json:"target_per_partition"` // entities/s
	Schemes  []SchemeReport `json:"schemes"`
}

// SchemeReport is one scheme's partition load. Rates are entities/s.
type SchemeReport struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Partitions  int     `json:"partitions"` // distinct PartitionKeys touched
	MeanRate    float64 `json:"mean_rate"`  // per partition, over the run
	HottestKey  string  `json:"hottest_key"`
	HottestRate float64 `json:"hottest_rate"` // the busiest partition, over the run
	HottestPeak float64 `json:"hottest_peak"` // its busiest second
	PeakRate    float64 `json:"peak_rate"`    // busiest second of any partition
	// PeakVsTarget is PeakRate / Target: above 1 the partition is throttled.
	PeakVsTarget float64         `json:"peak_vs_target"`
	Top          []PartitionLoad `json:"top"`
	// Ranked is every partition's count, busiest first, downsampled to at
	// most rankedPoints points: the shape of the spread for the charts.
	Ranked []int64 `json:"ranked"`
}

// PartitionLoad is one partition's load.
type PartitionLoad struct {
	Key   string  `json:"key"`
	Count int64   `json:"count"`
	Rate  float64 `json:"rate"`
	Peak  int64   `json:"peak"` // attempts in its busiest second
}

const (
	topPartitions = 10
	rankedPoints  = 120
)

// attempt is one login attempt as sent, and the instance it went to.
type attempt struct {
	user, id []byte
	unixNano int64
	replica  int
}

// partitionAcc counts one scheme's partitions. Per-second counts live in a
// map only while their second is open: attempts are fed in time order
// (give or take one batch), so seconds older than the previous one are
// final and folded into the partition's peak.
type partitionAcc struct {
	scheme Scheme
	idx    map[string]int32
	keys   []string
	counts []int64
	peaks  []int64
	open   map[uint64]int64 // partition<<32 | second -> count
	newest int64            // newest second seen
	buf    []byte
}

func newPartitionAcc(s Scheme) *partitionAcc {
	return &partitionAcc{scheme: s, idx: map[string]int32{}, open: map[uint64]int64{}}
}

func (a *partitionAcc) add(at *attempt, sec int64) {
	a.buf = a.scheme.Key(a.buf[:0], at.user, at.id, at.unixNano, at.replica)
	i, ok := a.idx[string(a.buf)]
	if !ok {
		i = int32(len(a.keys))
		k := string(a.buf)
		a.idx[k] = i
		a.keys = append(a.keys, k)
		a.counts = append(a.counts, 0)
		a.peaks = append(a.peaks, 0)
	}
	a.counts[i]++
	a.open[uint64(i)<<32|uint64(uint32(sec))]++
	if sec > a.newest {
		a.newest = sec
		a.fold(sec - 1)
	}
}

// fold finalises the seconds before the given one.
func (a *partitionAcc) fold(before int64) {
	for k, n := range a.open {
		if int64(uint32(k)) < before {
			p := k >> 32
			a.peaks[p] = max(a.peaks[p], n)
			delete(a.open, k)
		}
	}
}

func (a *partitionAcc) report(seconds float64) SchemeReport {
	a.fold(a.newest + 2)
	r := SchemeReport{Name: a.scheme.Name, Description: a.scheme.Description, Partitions: len(a.keys)}
	if len(a.keys) == 0 || seconds <= 0 {
		return r
	}
	var total int64
	order := make([]int, len(a.keys))
	for i := range order {
		order[i] = i
		total += a.counts[i]
	}
	sort.Slice(order, func(x, y int) bool {
		cx, cy := a.counts[order[x]], a.counts[order[y]]
		if cx != cy {
			return cx > cy
		}
		return a.keys[order[x]] < a.keys[order[y]]
	})
	hot := order[0]
	r.MeanRate = float64(total) / float64(len(a.keys)) / seconds
	r.HottestKey = a.keys[hot]
	r.HottestRate = float64(a.counts[hot]) / seconds
	r.HottestPeak = float64(a.peaks[hot])
	for _, p := range a.peaks {
		r.PeakRate = max(r.PeakRate, float64(p))
	}
	r.PeakVsTarget = r.PeakRate / AzurePartitionTarget
	for _, i := range order[:min(topPartitions, len(order))] {
		r.Top = append(r.Top, PartitionLoad{Key: a.keys[i], Count: a.counts[i], Rate: float64(a.counts[i]) / seconds, Peak: a.peaks[i]})
	}
	// Downsample the ranked counts by taking the first (largest) of each
	// stretch, so the head of the distribution is never averaged away.
	n := len(order)
	pts := min(n, rankedPoints)
	for j := range pts {
		r.Ranked = append(r.Ranked, a.counts[order[j*n/pts]])
	}
	return r
}

// partitionReport replays the login attempts of a run, fed by each (in
// send order), under every scheme.
func partitionReport(schemes []Scheme, seconds float64, each func(func(*attempt))) *PartitionReport {
	accs := make([]*partitionAcc, len(schemes))
	for i, s := range schemes {
		accs[i] = newPartitionAcc(s)
	}
	var n int64
	each(func(at *attempt) {
		n++
		sec := at.unixNano / 1e9
		for _, a := range accs {
			a.add(at, sec)
		}
	})
	pr := &PartitionReport{Attempts: n, Seconds: seconds, Target: AzurePartitionTarget}
	for _, a := range accs {
		pr.Schemes = append(pr.Schemes, a.report(seconds))
	}
	return pr
}

func (pr *PartitionReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "  partitions     %s login attempts over %.1fs; Azure target %s entities/s per partition\n", human(pr.Attempts), pr.Seconds, human(int64(pr.Target)))
	fmt.Fprintf(w, "    %-8s %10s %12s %12s %12s %12s  %s\n", "scheme", "partitions", "mean/s", "hottest/s", "hot peak/s", "peak/target", "hottest key")
	for _, s := range pr.Schemes {
		verdict := "ok"
		if s.PeakVsTarget > 1 {
			verdict = "OVER"
		}
		fmt.Fprintf(w, "    %-8s %10s %12.1f %12.1f %12.0f %8.2fx %-4s %s\n", s.Name, human(int64(s.Partitions)), s.MeanRate, s.HottestRate, s.HottestPeak, s.PeakVsTarget, verdict, strings.ToValidUTF8(s.HottestKey, "?"))
	}
}
