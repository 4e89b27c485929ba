package blobsink

import "github.com/prometheus/client_golang/prometheus"

type sinkMetrics struct {
	appended, blocks, metaWrites, created, claimConflicts, resolvedRetries, abandoned prometheus.Counter
	errors                                                                            *prometheus.CounterVec
}

func newSinkMetrics(reg prometheus.Registerer) *sinkMetrics {
	m := &sinkMetrics{
		appended:        prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_appended_bytes_total", Help: "Raw line bytes appended to blobs."}),
		blocks:          prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_blocks_total", Help: "Blocks appended to blobs."}),
		metaWrites:      prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_metadata_writes_total", Help: "Blob metadata writes (about one per flush and blob)."}),
		created:         prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blobs_created_total", Help: "Blobs claimed (created)."}),
		claimConflicts:  prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_claim_conflicts_total", Help: "Blob numbers found already taken by another writer."}),
		resolvedRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_append_resolved_total", Help: "Appends whose lost answer was resolved by reading the blob size."}),
		abandoned:       prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_blob_writers_abandoned_total", Help: "Blob writers given up because their blob changed behind their back (another writer appended, the file was touched) or vanished; the next flush claimed a new blob."}),
		errors:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_blob_errors_total", Help: "Blob storage errors by operation (retried)."}, []string{"op"}),
	}
	if reg != nil {
		reg.MustRegister(m.appended, m.blocks, m.metaWrites, m.created, m.claimConflicts, m.resolvedRetries, m.abandoned, m.errors)
	}
	return m
}
