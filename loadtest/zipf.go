package loadtest

import (
	"math"
	"math/rand/v2"
)

// zipfRanks draws ranks 0..n-1 with P(k) proportional to 1/(k+1)^s: rank 0
// is the most popular. It wraps math/rand/v2's rejection-inversion sampler,
// which costs O(1) per draw whatever n is.
type zipfRanks struct{ z *rand.Zipf }

func newZipfRanks(r *rand.Rand, s float64, n int) zipfRanks {
	return zipfRanks{z: rand.NewZipf(r, s, 1, uint64(n-1))}
}

func (z zipfRanks) next() int { return int(z.z.Uint64()) }

// logNormal draws long-tailed positive sizes with a given mean: most draws
// are below the mean, a few are many times it, as real log messages are
// (one-line access logs next to stack traces).
type logNormal struct {
	r         *rand.Rand
	mu, sigma float64
	min, max  int
}

// newLogNormal returns sizes with the given mean; sigma 1 puts the median at
// 0.61*mean and the 99.9th percentile near 13*mean.
func newLogNormal(r *rand.Rand, mean int, sigma float64) logNormal {
	return logNormal{
		r:     r,
		mu:    math.Log(float64(mean)) - sigma*sigma/2,
		sigma: sigma,
		min:   min(8, mean),
		max:   64 * mean,
	}
}

func (l logNormal) next() int {
	v := int(math.Exp(l.mu + l.sigma*l.r.NormFloat64()))
	return max(l.min, min(v, l.max))
}

// weighted picks an index with fixed relative weights.
type weighted struct {
	cum []float64
}

func newWeighted(w []float64) weighted {
	cum := make([]float64, len(w))
	t := 0.0
	for i, x := range w {
		t += x
		cum[i] = t
	}
	for i := range cum {
		cum[i] /= t
	}
	return weighted{cum: cum}
}

func (w weighted) pick(r *rand.Rand) int {
	u := r.Float64()
	for i, c := range w.cum {
		if u < c {
			return i
		}
	}
	return len(w.cum) - 1
}
