package buffer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	full               prometheus.Counter
	refusedFailing     prometheus.Counter
	flushes            *prometheus.CounterVec
	flushErrors        *prometheus.CounterVec
	flushBytes         *prometheus.CounterVec
	flushSeconds       *prometheus.HistogramVec
	walSync            prometheus.Histogram
	walGroup           prometheus.Histogram
	walSegments        prometheus.Gauge
	walSegmentsRemoved prometheus.Counter
	keys               prometheus.Gauge
	walRefused         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, b *Buffer) *metrics {
	m := &metrics{
		full: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_buffer_full_total",
			Help: "Batches refused because --buffer-bytes was used up."}),
		refusedFailing: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_ack_refused_storage_failing_total",
			Help: "Batches refused with 503 under --ack flush because storage was failing."}),
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_flushes_total",
			Help: "Completed flushes of a key's buffer."}, []string{"stream"}),
		flushErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_flush_errors_total",
			Help: "Failed flush attempts (each is retried with backoff)."}, []string{"stream"}),
		flushBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_flushed_bytes_total",
			Help: "Bytes stored by completed flushes."}, []string{"stream"}),
		flushSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ingest_flush_duration_seconds",
			Help: "Time to store one key's buffer, retries included.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"stream"}),
		walSync: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ingest_wal_fsync_duration_seconds",
			Help: "Time in fdatasync per group commit.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		walGroup: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ingest_wal_group_records",
			Help: "Records written per group commit.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}),
		walSegments: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_wal_segments",
			Help: "Write-ahead log segment files on disk."}),
		walSegmentsRemoved: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_wal_segments_removed_total",
			Help: "Write-ahead log segments deleted once all their records were stored."}),
		walRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_wal_refused_total",
			Help: "Batches refused with 503 because of the write-ahead log: its disk failed (disk) or it reached --wal-max-bytes (max_bytes)."}, []string{"reason"}),
		keys: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_buffer_keys",
			Help: "Keys (service and hour, or login day) with a buffer."}),
	}
	// Every stream's series exist from the start, at 0: a dashboard or an
	// alert on errors must not wait for the first error to see the series.
	for _, s := range b.streams {
		m.flushes.WithLabelValues(s.Name)
		m.flushErrors.WithLabelValues(s.Name)
		m.flushBytes.WithLabelValues(s.Name)
	}
	for _, reason := range []string{"disk", "max_bytes"} {
		m.walRefused.WithLabelValues(reason)
	}
	if reg != nil {
		reg.MustRegister(m.full, m.refusedFailing, m.flushes, m.flushErrors, m.flushBytes, m.flushSeconds, m.walSync, m.walGroup,
			m.walSegments, m.walSegmentsRemoved, m.keys, m.walRefused,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ingest_wal_bytes",
				Help: "Bytes of write-ahead log segments on disk, bounded by --wal-max-bytes."}, func() float64 {
				if b.wal == nil {
					return 0
				}
				return float64(b.wal.Bytes())
			}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ingest_buffer_bytes",
				Help: "Bytes accepted and not yet stored, held against --buffer-bytes."}, func() float64 { return float64(b.Used()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ingest_buffer_limit_bytes",
				Help: "The --buffer-bytes budget."}, func() float64 { return float64(b.cfg.BufferBytes) }),
		)
	}
	return m
}

func (m *metrics) observeSync(records int, d time.Duration) {
	m.walSync.Observe(d.Seconds())
	m.walGroup.Observe(float64(records))
}
