package retry

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics counts retries by operation: ingest_retries_total{op}.
type Metrics struct {
	retries *prometheus.CounterVec
}

// NewMetrics registers ingest_retries_total with reg (nil: not exported).
// Several packages may call it with one registry: they share the counter.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_retries_total",
		Help: "Retries of failed storage and disk operations, by operation (each after a jittered exponential backoff)."}, []string{"op"})
	if reg != nil {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err) // a different metric of the same name: a programming error
			}
			c = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return &Metrics{retries: c}
}

// Declare makes op's series exist at 0 before its first retry, so that a
// scrape (and an alert on its rate) sees it from the start.
func (m *Metrics) Declare(op string) {
	if m != nil {
		m.retries.WithLabelValues(op)
	}
}

func (m *Metrics) inc(op string) {
	if m != nil {
		m.retries.WithLabelValues(op).Inc()
	}
}

// Count is the number of retries counted for op (for tests and status pages).
func (m *Metrics) Count(op string) float64 {
	if m == nil {
		return 0
	}
	c, err := m.retries.GetMetricWithLabelValues(op)
	if err != nil {
		return 0
	}
	return counterValue(c)
}

// counterValue reads a counter without a registry round trip.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
