package es

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Config holds what ingest tells Elasticsearch clients about itself.
type Config struct {
	// Version is the version.number of the root document ("": the
	// default). Beats refuse an Elasticsearch older than themselves, and
	// Logstash and the clients pick their protocol by its major version.
	Version string
}

// DefaultConfig returns the settings the flags default to.
func DefaultConfig() Config { return Config{Version: "8.19.0"} }

// RegisterFlags adds the flags to fs, with c's values as defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Version, "es-version", c.Version,
		"Elasticsearch version that /v1/es/ claims to be (Filebeat wants one at least its own; keep the major at 8)")
}

// Validate checks the settings.
func (c *Config) Validate() error {
	if c.Version == "" {
		return nil
	}
	parts := strings.Split(c.Version, ".")
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil || len(parts) != 3 {
			return fmt.Errorf("cannot use --es-version %q: want MAJOR.MINOR.PATCH, like 8.19.0", c.Version)
		}
	}
	return nil
}

// AppendInfo appends the root document (GET /), which clients read the
// version from.
func (c *Config) AppendInfo(dst []byte) []byte {
	version := c.Version
	if version == "" {
		version = DefaultConfig().Version
	}
	return fmt.Appendf(dst, `{"name":"ingest","cluster_name":"ingest","cluster_uuid":"ingest-0000000000000000000","version":{"number":%q,`+
		`"build_flavor":"default","build_type":"tar","build_hash":"0000000000000000000000000000000000000000","build_date":"2026-01-01T00:00:00.000Z",`+
		`"build_snapshot":false,"lucene_version":"9.12.0","minimum_wire_compatibility_version":"7.17.0","minimum_index_compatibility_version":"7.0.0"},`+
		`"tagline":"You Know, for Search"}`, version)
}

// Setup is the answer to a call outside _bulk, by its path below the base
// (no leading slash, "_cluster/health"): the few documents clients read,
// and for every set-up call (index templates, ILM policies, ingest
// pipelines, data streams, aliases, index creation) an acknowledgement:
// ingest has no indices to set up, and a shipper that could not set them
// up would not start.
func Setup(path []byte) string {
	first, _, _ := bytes.Cut(path, []byte{'/'})
	switch string(first) {
	case "_cluster":
		return `{"cluster_name":"ingest","status":"green","timed_out":false,"number_of_nodes":1,"number_of_data_nodes":1,` +
			`"active_primary_shards":0,"active_shards":0,"relocating_shards":0,"initializing_shards":0,"unassigned_shards":0,` +
			`"delayed_unassigned_shards":0,"number_of_pending_tasks":0,"number_of_in_flight_fetch":0,"task_max_waiting_in_queue_millis":0,` +
			`"active_shards_percent_as_number":100.0}`
	case "_license":
		return `{"license":{"status":"active","uid":"00000000-0000-0000-0000-000000000000","type":"basic","issue_date":"2026-01-01T00:00:00.000Z",` +
			`"issue_date_in_millis":1767225600000,"max_nodes":1000,"max_resource_units":null,"issued_to":"ingest","issuer":"ingest","start_date_in_millis":-1}}`
	case "_xpack":
		return `{"build":{"hash":"0000000","date":"2026-01-01T00:00:00.000Z"},` +
			`"license":{"uid":"00000000-0000-0000-0000-000000000000","type":"basic","mode":"basic","status":"active"},` +
			`"features":{"ilm":{"available":true,"enabled":true},"security":{"available":true,"enabled":true}}}`
	case "_nodes":
		return `{"_nodes":{"total":0,"successful":0,"failed":0},"cluster_name":"ingest","nodes":{}}`
	}
	return `{"acknowledged":true}`
}
