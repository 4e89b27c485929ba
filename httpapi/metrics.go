package httpapi

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	requests       *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	eventsAccepted prometheus.Counter
	eventsRejected prometheus.Counter
	protocolEvents *prometheus.CounterVec // by protocol (es, loki) and result (accepted, rejected)
	es, loki       protocolCounters
	syslog         protocolCounters
	syslogConns    prometheus.Gauge
	syslogRefused  prometheus.Counter
	syslogDropped  *prometheus.CounterVec
	bytesIn        prometheus.Counter
	inflightFull   prometheus.Counter
	ackTimeouts    prometheus.Counter
	blobsSkipped   prometheus.Counter
	blobsRead      prometheus.Counter
	tailReaders    prometheus.Gauge
	tailDropped    prometheus.Counter
	unauthorized   prometheus.Counter
	reloads        *prometheus.CounterVec

	connsRefused      *prometheus.CounterVec
	connsRefusedPerIP prometheus.Counter

	panics         *prometheus.CounterVec
	queriesRefused prometheus.Counter
	// The tail's fan-out to the other instances of the cluster.
	tailPeerStreams prometheus.Gauge
	tailPeerErrors  prometheus.Counter
	tailPeerBytes   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_http_requests_total",
			Help: "HTTP requests by route and status."}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ingest_http_request_duration_seconds",
			Help: "HTTP request latency by route.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"route"}),
		eventsAccepted: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_events_accepted_total", Help: "Events accepted (log events and login attempts)."}),
		eventsRejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_events_rejected_total", Help: "Lines rejected as invalid."}),
		protocolEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_protocol_events_total",
			Help: "Events of the shippers' protocols (es: Elasticsearch bulk, loki: Loki push, syslog), by result: accepted (also in ingest_events_accepted_total) or rejected."}, []string{"protocol", "result"}),
		bytesIn:      prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_http_body_bytes_total", Help: "Request body bytes received, as sent (compressed or not)."}),
		inflightFull: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_inflight_full_total", Help: "Requests refused because --max-inflight-bytes was used up."}),
		ackTimeouts:  prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_ack_timeouts_total", Help: "Requests under --ack flush answered 202 with stored:false (in the WAL, not yet in storage) when --ack-timeout passed."}),
		blobsSkipped: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_query_blobs_skipped_total", Help: "Blobs a query skipped by their StartTime/EndTime metadata."}),
		blobsRead:    prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_query_blobs_read_total", Help: "Blobs a query read."}),
		tailReaders:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_tail_readers", Help: "Clients following GET /v1/tail."}),
		tailDropped:  prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_tail_dropped_events_total", Help: "Events a slow tail reader did not get (its queue was full); intake never waits for a tail."}),
		unauthorized: prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_http_unauthorized_total", Help: "Requests refused (401) for a missing or unknown bearer token."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_reloads_total",
			Help: "Re-reads of the tokens file and TLS certificate (SIGHUP), by result (ok, error: the previous ones stay)."}, []string{"result"}),
		connsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_conns_refused_total",
			Help: "Connections refused at accept time, by reason (per_ip: --max-conns-per-ip; answered 429 over HTTP, closed under TLS)."}, []string{"reason"}),
	}
	m.connsRefusedPerIP = m.connsRefused.WithLabelValues("per_ip")
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_panics_total",
		Help: "Panics recovered while serving a request, by where (handler: answered 500; stream: the answer ended with an in-band error line). Each is a bug; the stack is in the log."}, []string{"where"})
	m.queriesRefused = prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_queries_refused_total",
		Help: "Reads refused (429) because --max-concurrent-queries were running."})
	m.tailPeerStreams = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_tail_peer_streams",
		Help: "Streams this instance follows from other instances' tails: one per tail client and other live instance."})
	m.tailPeerErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_tail_peer_errors_total",
		Help: "Streams from other instances' tails that failed or ended while wanted (each retried with backoff while the instance is live)."})
	m.tailPeerBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_tail_peer_bytes_total",
		Help: "NDJSON bytes received from other instances' tails."})
	m.es = protocolCounters{m.protocolEvents.WithLabelValues("es", "accepted"), m.protocolEvents.WithLabelValues("es", "rejected")}
	m.loki = protocolCounters{m.protocolEvents.WithLabelValues("loki", "accepted"), m.protocolEvents.WithLabelValues("loki", "rejected")}
	m.syslog = protocolCounters{m.protocolEvents.WithLabelValues("syslog", "accepted"), m.protocolEvents.WithLabelValues("syslog", "rejected")}
	m.syslogConns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ingest_syslog_connections", Help: "Open syslog TCP connections."})
	m.syslogRefused = prometheus.NewCounter(prometheus.CounterOpts{Name: "ingest_syslog_connections_refused_total",
		Help: "Syslog TCP connections closed at once: --syslog-max-conns were open, or the server was shutting down."})
	m.syslogDropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ingest_syslog_messages_dropped_total",
		Help: "Syslog messages dropped, by reason: too_long (over --syslog-max-message-bytes), buffer_full (UDP only: TCP stops reading instead), socket_full (UDP: dropped by the kernel, the socket's receive buffer full)."}, []string{"reason"})
	if reg != nil {
		reg.MustRegister(m.tailPeerStreams, m.tailPeerErrors, m.tailPeerBytes, m.syslogConns, m.syslogRefused, m.syslogDropped)
		reg.MustRegister(m.panics, m.queriesRefused, m.connsRefused, m.requests, m.latency, m.eventsAccepted, m.eventsRejected, m.protocolEvents, m.bytesIn, m.inflightFull, m.ackTimeouts, m.blobsSkipped, m.blobsRead, m.tailReaders, m.tailDropped, m.unauthorized, m.reloads)
	}
	return m
}

// protocolCounters count one protocol's events.
type protocolCounters struct{ accepted, rejected prometheus.Counter }
