package loadtest

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Config is the load generator's settings. The zero value is not usable:
// start from DefaultConfig or RegisterFlags.
type Config struct {
	// Target is the base URL of the ingest server, or of several
	// instances, comma separated: they take the batches in turn
	// (round-robin), a batch refused with 503 or whose connection is
	// refused goes to the next, as a load balancer would send it, and the
	// read-back goes through the first.
	Target      string
	Rate        float64       // events/s, open loop; 0 = closed loop, as fast as possible
	Concurrency int           // workers (and connections)
	Batch       int           // events per request
	Encoding    string        // identity | gzip | zstd
	Duration    time.Duration // run length when Events is 0
	Events      int64         // stop after this many events; 0 = use Duration

	Services  int     // distinct service names
	Hosts     int     // distinct host names
	EventSize int     // mean message size in bytes (long-tailed, lognormal)
	Users     int     // distinct login users
	Zipf      float64 // user popularity skew s > 1

	LoginsRatio float64 // share of events that are login attempts (POST /v1/logins)
	AttackUser  string  // user under a credential-stuffing attack, "" = none
	AttackRate  float64 // attack attempts/s on top of --rate

	Verify     bool   // read everything back and report lost and duplicated ids
	Report     string // write the Report as JSON to this path
	HTML       string // write an HTML page with charts to this path
	Token      string // bearer token
	Seed       int64  // random seed; 0 = from the clock
	Quiet      bool   // no live progress line
	Partitions int    // hash buckets of the login PartitionKey; 0 = the shard package default
	// Replicas is how many instances the partition report models: each
	// judges hot users on the attempts it receives, the server's
	// --hot-user-rate (HotUserRate) shared among them. 0: one per target
	// (the batches each actually took).
	Replicas    int
	HotUserRate float64 // the servers' --hot-user-rate (attempts/s per user, across the instances); 0 = the shard package default
	// BeforeVerify, when set, is called once the load is sent and before
	// the read-back (no flag): a harness breaking the servers finishes
	// there what must be done before everything can be read (a drain).
	BeforeVerify func()
}

// DefaultConfig returns the settings the flags default to.
func DefaultConfig() Config {
	return Config{
		Target:      "http://127.0.0.1:8080",
		Concurrency: 16,
		Batch:       500,
		Encoding:    "identity",
		Duration:    10 * time.Second,
		Services:    8,
		Hosts:       24,
		EventSize:   160,
		Users:       10000,
		Zipf:        1.1,
		LoginsRatio: 0.1,
		AttackRate:  3000,
	}
}

// RegisterFlags registers the load generator's flags on fs, with c's
// values as their defaults (start from DefaultConfig).
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Target, "target", c.Target, "base URL of the ingest server; several, comma separated, take the batches in turn (a batch answered 503 or refused a connection goes to the next) and are read back through the first")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "events per second, open loop (latency measured from the intended send time); 0 = closed loop, as fast as possible")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "concurrent requests (workers and connections)")
	fs.IntVar(&c.Batch, "batch", c.Batch, "events per request")
	fs.StringVar(&c.Encoding, "encoding", c.Encoding, "request body Content-Encoding: identity, gzip or zstd")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long to send (ignored when --events is set)")
	fs.Int64Var(&c.Events, "events", c.Events, "stop after this many events (0 = run for --duration)")
	fs.IntVar(&c.Services, "services", c.Services, "number of distinct services")
	fs.IntVar(&c.Hosts, "hosts", c.Hosts, "number of distinct hosts")
	fs.IntVar(&c.EventSize, "event-size", c.EventSize, "mean message size in bytes (long-tailed distribution)")
	fs.IntVar(&c.Users, "users", c.Users, "number of distinct users attempting logins")
	fs.Float64Var(&c.Zipf, "zipf", c.Zipf, "Zipf skew s (> 1) of user popularity")
	fs.Float64Var(&c.LoginsRatio, "logins-ratio", c.LoginsRatio, "share of events that are login attempts, sent to /v1/logins (0..1)")
	fs.StringVar(&c.AttackUser, "attack-user", c.AttackUser, "add a credential-stuffing attack on this user (mostly failed logins)")
	fs.Float64Var(&c.AttackRate, "attack-rate", c.AttackRate, "attack login attempts per second (with --attack-user)")
	fs.BoolVar(&c.Verify, "verify", c.Verify, "after the run, read every event back through the query API and report lost and duplicated ids")
	fs.StringVar(&c.Report, "report", c.Report, "write the report as JSON to this file")
	fs.StringVar(&c.HTML, "html", c.HTML, "write an HTML page with charts to this file")
	fs.StringVar(&c.Token, "token", c.Token, "bearer token sent in Authorization")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "random seed (0 = from the clock)")
	fs.BoolVar(&c.Quiet, "quiet", c.Quiet, "no live progress line")
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "hash buckets of the login PartitionKey, as the server's --partitions (0 = its default)")
	fs.IntVar(&c.Replicas, "replicas", c.Replicas, "instances the partition report models behind a round-robin, each judging hot users on its share (0 = one per --target)")
	fs.Float64Var(&c.HotUserRate, "hot-user-rate", c.HotUserRate, "the servers' --hot-user-rate, for the partition report (0 = its default)")
}

// Validate checks the settings and says which flag to fix; an empty
// Encoding stands for identity. It changes nothing.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if _, err := parseTargets(c.Target); err != nil {
		errs = append(errs, err)
	}
	if c.Rate < 0 {
		bad("cannot use --rate %g: must be >= 0 (0 = as fast as possible)", c.Rate)
	}
	if c.Concurrency < 1 || c.Concurrency > 10000 {
		bad("cannot use --concurrency %d: must be in 1..10000", c.Concurrency)
	}
	if c.Batch < 1 || c.Batch > 100000 {
		bad("cannot use --batch %d: must be in 1..100000", c.Batch)
	}
	switch c.Encoding {
	case "", "identity", "gzip", "zstd":
	default:
		bad("cannot use --encoding %q: use identity, gzip or zstd", c.Encoding)
	}
	if c.Events < 0 {
		bad("cannot use --events %d: must be >= 0", c.Events)
	}
	if c.Events == 0 && c.Duration <= 0 {
		bad("cannot run: set --duration > 0 or --events > 0")
	}
	if c.Services < 1 {
		bad("cannot use --services %d: must be >= 1", c.Services)
	}
	if c.Hosts < 1 {
		bad("cannot use --hosts %d: must be >= 1", c.Hosts)
	}
	if c.EventSize < 8 || c.EventSize > 1<<20 {
		bad("cannot use --event-size %d: must be in 8..1048576", c.EventSize)
	}
	if c.Batch > 0 && c.EventSize > 0 && int64(c.Batch)*int64(c.EventSize+300) > maxBodyBytes {
		bad("cannot use --batch %d with --event-size %d: request bodies of about %d MiB; lower --batch or --event-size", c.Batch, c.EventSize, int64(c.Batch)*int64(c.EventSize+300)>>20)
	}
	if c.Users < 1 {
		bad("cannot use --users %d: must be >= 1", c.Users)
	}
	if !(c.Zipf > 1) {
		bad("cannot use --zipf %g: the skew must be > 1 (e.g. 1.1)", c.Zipf)
	}
	if c.LoginsRatio < 0 || c.LoginsRatio > 1 {
		bad("cannot use --logins-ratio %g: must be in 0..1", c.LoginsRatio)
	}
	if c.AttackUser != "" && c.AttackRate <= 0 {
		bad("cannot attack %q: set --attack-rate > 0", c.AttackUser)
	}
	if c.AttackUser != "" && strings.ContainsAny(c.AttackUser, "\"\\\n\r") {
		bad("cannot use --attack-user %q: quotes, backslashes and newlines are not allowed", c.AttackUser)
	}
	if c.Partitions < 0 || c.Partitions > 1<<16 {
		bad("cannot use --partitions %d: want 0 (the server's default) or 1..65536", c.Partitions)
	}
	if c.Replicas < 0 || c.Replicas > 1000 {
		bad("cannot use --replicas %d: want 0 (one per --target) or 1..1000", c.Replicas)
	}
	if c.HotUserRate < 0 {
		bad("cannot use --hot-user-rate %g: want 0 (the server's default) or a positive rate", c.HotUserRate)
	}
	return errors.Join(errs...)
}

// maxBodyBytes caps the mean uncompressed request body: the templates are
// held in memory and a server refuses larger bodies anyway.
const maxBodyBytes = 64 << 20

// target is a parsed --target.
type target struct {
	addr string // host:port for the connection
	tls  bool
	base string // scheme://host[:port][/path] without a trailing slash
	host string // Host header
}

// maxTargets bounds --target's list: a batch record keeps the index in a
// byte.
const maxTargets = 255

// parseTargets parses --target: one URL or several, comma separated.
func parseTargets(s string) ([]target, error) {
	var out []target
	for _, part := range strings.Split(s, ",") {
		t, err := parseTarget(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) > maxTargets {
		return nil, fmt.Errorf("cannot use --target with %d URLs: at most %d", len(out), maxTargets)
	}
	return out, nil
}

func parseTarget(s string) (target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return target{}, fmt.Errorf("cannot use --target %q: %v", s, err)
	}
	var t target
	switch u.Scheme {
	case "http":
	case "https":
		t.tls = true
	default:
		return target{}, fmt.Errorf("cannot use --target %q: want http://host:port or https://host:port", s)
	}
	if u.Host == "" {
		return target{}, fmt.Errorf("cannot use --target %q: no host (want http://host:port)", s)
	}
	t.host = u.Host
	t.addr = u.Host
	if u.Port() == "" {
		if t.tls {
			t.addr += ":443"
		} else {
			t.addr += ":80"
		}
	}
	t.base = u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/")
	return t, nil
}
