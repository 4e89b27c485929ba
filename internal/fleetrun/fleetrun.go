// Package fleetrun is the multi-instance fault run, shared by the fault
// suite (scripts/faults, the long form) and the integration tests (a short
// case): several `ingest serve` processes on one Azurite container, each
// with a data directory of its own, behind the load generator's
// round-robin (logs, login attempts and one attacked user), broken on
// purpose while the load runs:
//
//   - instance 2 gets SIGTERM and is never started again;
//   - instance 1 is killed (kill -9) and restarted on its directory;
//   - instance 3 is killed and its directory drained with `ingest drain`;
//   - then Azurite is frozen (SIGSTOP) for a while.
//
// The faults come in that order: i2 first, so that it is gone before
// the freeze. Instance 0 stays up and the read-back goes through it. Result holds what
// a user would check: every acknowledged event read back once, every blob
// written by one instance only (Report.TargetOf), the busiest partition of
// the login tables in any second (from the entities' write times), and the
// stats table's counts against the blobs' lines.
package fleetrun

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"ingest/blobsink"
	"ingest/internal/azurite"
	"ingest/internal/ingestexec"
	"ingest/loadtest"
	"ingest/logline"
	"ingest/query"
	"ingest/storage"
	"ingest/tablesink"
)

// Instances is the size of the fleet: the survivor and one instance per
// fault.
const Instances = 4

// Config is one run.
type Config struct {
	Bin     string          // the ingest binary
	Dir     string          // scratch: the instances' data directories and logs
	Azurite *azurite.Server // shared by the instances, frozen by the run
	Load    time.Duration   // how long the load generator sends
	Freeze  time.Duration   // how long Azurite is stopped
	Rate    float64         // events/s, open loop, a fifth of them login attempts
	Attack  float64         // attempts/s on one user, on top
	Log     io.Writer       // the run's steps, as they happen
}

// Result is what the run found.
type Result struct {
	Report     *loadtest.Report // the load generator's, with its read-back
	Blobs      int              // blobs in the container
	Lines      int64            // lines in them
	MixedBlobs []string         // blobs holding events two instances took
	Unmapped   int64            // lines whose id no target took (another run's, or corrupted)
	// HottestSecond is the most login attempts of one second (their time,
	// the Time property) in one partition, HottestKey that partition and
	// second: the load the key scheme spreads. HottestWrite is the most
	// entities the service wrote into one partition within one second
	// (their Timestamp): flushes write a few seconds of attempts at once.
	HottestSecond, HottestWrite int
	HottestKey, HottestWriteKey string
	StatsCount                  int64 // events the stats table counts
	DrainTook                   time.Duration
	Exits                       map[string]int // exit codes: SIGTERM'd instance, drain
}

// OK reports whether the run kept every promise, Azure's per-partition
// target among them both ways: the load the keys offer (HottestSecond)
// and what the writes, paced, gave the service (HottestWrite).
func (r *Result) OK() bool {
	v := r.Report.Verify
	return v != nil && r.Report.VerifyErr == "" && v.Lost == 0 && v.Duplicated == 0 && v.Foreign == 0 && v.Accepted > 0 &&
		len(r.MixedBlobs) == 0 && r.Unmapped == 0 && r.HottestSecond < loadtest.AzurePartitionTarget && r.HottestWrite < loadtest.AzurePartitionTarget &&
		r.StatsCount == r.Lines && r.Exits["sigterm"] == 0 && r.Exits["drain"] == 0
}

// Print writes the figures.
func (r *Result) Print(w io.Writer) {
	v := r.Report.Verify
	if v != nil {
		fmt.Fprintf(w, "  acknowledged %d (logins %d), found %d, lost %d, duplicated %d, unacknowledged but found %d\n",
			v.Accepted, v.Logins.Accepted, v.Found, v.Lost, v.Duplicated, v.Unacked)
	}
	if r.Report.VerifyErr != "" {
		fmt.Fprintf(w, "  read-back: %s\n", r.Report.VerifyErr)
	}
	fmt.Fprintf(w, "  blobs %d, lines %d; blobs holding two instances' events: %d %v; lines of no target: %d\n",
		r.Blobs, r.Lines, len(r.MixedBlobs), r.MixedBlobs, r.Unmapped)
	modelled := 0.0
	if p := r.Report.Partitions; p != nil && len(p.Schemes) > 0 {
		modelled = p.Schemes[0].PeakRate
	}
	fmt.Fprintf(w, "  hottest partition-second %d attempts (%s), read back from the login tables; the load generator's model of %d instances: %.0f\n",
		r.HottestSecond, r.HottestKey, Instances, modelled)
	fmt.Fprintf(w, "  most entities written into one partition within a second: %d (%s)\n", r.HottestWrite, r.HottestWriteKey)
	fmt.Fprintf(w, "  stats table counts %d events, the blobs hold %d\n", r.StatsCount, r.Lines)
	fmt.Fprintf(w, "  exits: SIGTERM'd instance %d, drain %d (took %v)\n", r.Exits["sigterm"], r.Exits["drain"], r.DrainTook.Round(time.Millisecond))
}

// instance is one server of the fleet.
type instance struct {
	name, data string
	stats      string // its --stats-instance
	port       int
	args       []string
	log        *os.File
	p          *ingestexec.Process
}

func (in *instance) start(bin string) error {
	p, err := ingestexec.Serve(bin, in.port, in.log, in.args...)
	in.p = p
	return err
}

// Run runs the scenario and reads everything back.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	conn, container := cfg.Azurite.ConnString(), "fleet"
	fleet := make([]*instance, Instances)
	for i := range fleet {
		in := &instance{name: fmt.Sprintf("i%d", i), data: filepath.Join(cfg.Dir, fmt.Sprintf("i%d", i))}
		in.stats = statsPrefix + in.name
		var err error
		if in.port, err = ingestexec.FreePort(); err != nil {
			return nil, err
		}
		if in.log, err = os.Create(filepath.Join(cfg.Dir, in.name+".log")); err != nil {
			return nil, err
		}
		defer in.log.Close()
		in.args = []string{"--data-dir", in.data, "--storage", conn, "--container", container, "--stats-instance", in.stats,
			"--flush-interval", "200ms", "--storage-try-timeout", "5s", "--shutdown-timeout", "60s", "--log-level", "warn"}
		if err := in.start(cfg.Bin); err != nil {
			return nil, err
		}
		defer func() { in.p.Kill() }() // the process running at the end: a fault may restart it
		fleet[i] = in
	}
	var urls []string
	for _, in := range fleet {
		urls = append(urls, in.p.URL)
	}
	res := &Result{Exits: map[string]int{}}
	var faults sync.WaitGroup
	load := loadConfig(strings.Join(urls, ","), cfg)
	load.BeforeVerify = faults.Wait // the drain's events must be stored before they are read
	done := make(chan error, 1)
	go func() {
		var err error
		res.Report, err = loadtest.Run(ctx, load, io.Discard)
		done <- err
	}()
	breakFleet(cfg, fleet, conn, container, res, &faults)
	if err := <-done; err != nil {
		return nil, err
	}
	if res.Report.Verify == nil {
		return nil, fmt.Errorf("the load generator read nothing back: %s", res.Report.VerifyErr)
	}
	fmt.Fprintf(cfg.Log, "  load done and read back through i0 in %.1fs\n", res.Report.Verify.Seconds)
	if err := readBack(ctx, conn, container, res); err != nil {
		return nil, err
	}
	return res, nil
}

// LoadConfig is the fault runs' load (this one's and the fault suite's):
// logs and login attempts (a fifth), open loop at rate events/s for d,
// gzip, read back at the end.
func LoadConfig(target string, rate float64, d time.Duration) loadtest.Config {
	lc := loadtest.DefaultConfig()
	lc.Target = target
	lc.Rate = rate
	lc.Duration = d
	lc.Concurrency = 8
	lc.Batch = 200
	lc.LoginsRatio = 0.2
	lc.Users = 2000
	lc.Encoding = "gzip"
	lc.Verify = true
	lc.Quiet = true
	return lc
}

// loadConfig is the run's load over the targets, with the attacked user.
func loadConfig(targets string, cfg Config) loadtest.Config {
	lc := LoadConfig(targets, cfg.Rate, cfg.Load)
	if cfg.Attack > 0 {
		lc.AttackUser, lc.AttackRate = "victim", cfg.Attack
	}
	return lc
}

// breakFleet starts the faults, each at a set fraction of the load and
// running on its own: SIGTERM i2, kill and restart i1, kill i3 and drain
// its directory, freeze Azurite. faults is done when all are. The stopped
// instance should be gone before the freeze, and has a --shutdown-timeout
// longer than the freeze: one stopped while storage does not answer exits
// at --shutdown-timeout with its log on its volume, for a drain (the
// TestShutdownTimeout case), and here nobody drains it.
func breakFleet(cfg Config, fleet []*instance, conn, container string, res *Result, faults *sync.WaitGroup) {
	begin := time.Now()
	var mu sync.Mutex // res.Exits, cfg.Log
	logf := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(cfg.Log, "  %5.1fs "+format+"\n", append([]any{time.Since(begin).Seconds()}, a...)...)
	}
	at := func(frac float64, fault func()) {
		faults.Go(func() {
			time.Sleep(time.Until(begin.Add(time.Duration(frac * float64(cfg.Load)))))
			fault()
		})
	}
	at(0.2, func() {
		logf("kill -9 i1, restart it")
		fleet[1].p.Kill()
		if err := fleet[1].start(cfg.Bin); err != nil {
			logf("i1 does not restart: %v", err)
		}
	})
	at(0.1, func() {
		logf("SIGTERM i2 (never restarted)")
		code, err := fleet[2].p.Stop(time.Minute)
		if err != nil {
			code = -1
		}
		mu.Lock()
		res.Exits["sigterm"] = code
		mu.Unlock()
		logf("i2 exited %d", code)
	})
	at(0.3, func() {
		logf("kill -9 i3, ingest drain its directory")
		fleet[3].p.Kill()
		began := time.Now()
		out, err := ingestexec.Command(cfg.Bin, "drain", "--data-dir", fleet[3].data, "--storage", conn, "--container", container,
			"--stats-instance", fleet[3].stats, "--log-level", "warn").CombinedOutput()
		code := 0
		if err != nil {
			code = 1
		}
		mu.Lock()
		res.DrainTook, res.Exits["drain"] = time.Since(began), code
		mu.Unlock()
		logf("drain of i3 exited %d %s", code, strings.TrimSpace(string(out)))
	})
	at(0.5, func() {
		logf("freeze Azurite for %v", cfg.Freeze)
		if err := cfg.Azurite.Pause(); err != nil {
			logf("cannot freeze Azurite: %v", err)
			return
		}
		time.Sleep(cfg.Freeze)
		if err := cfg.Azurite.Resume(); err != nil {
			logf("cannot resume Azurite: %v", err)
		}
		logf("Azurite resumed")
	})
}

// readBack reads the container's blobs, the login tables' write times and
// the stats table into res.
func readBack(ctx context.Context, conn, container string, res *Result) error {
	scfg := storage.Config{ConnString: conn}
	bc, err := scfg.BlobClient()
	if err != nil {
		return err
	}
	blobs, err := blobsink.NewAzureStore(ctx, bc, container)
	if err != nil {
		return err
	}
	if err := readBlobs(ctx, blobs, res); err != nil {
		return err
	}
	svc, err := scfg.TableClient()
	if err != nil {
		return err
	}
	if err := hottestSecond(ctx, svc, res); err != nil {
		return err
	}
	res.StatsCount, err = statsTotal(ctx, svc)
	return err
}

// readBlobs checks that each blob holds the events of one target only.
func readBlobs(ctx context.Context, store blobsink.Store, res *Result) error {
	var names []string
	if err := store.List(ctx, "", func(b blobsink.BlobInfo) error { names = append(names, b.Name); return nil }); err != nil {
		return err
	}
	res.Blobs = len(names)
	for _, name := range names {
		rc, err := query.OpenBlob(ctx, store, name)
		if err != nil {
			return err
		}
		targets := map[int]bool{}
		sc := bufio.NewScanner(rc)
		sc.Buffer(nil, 8<<20)
		var e logline.Event
		for sc.Scan() {
			res.Lines++
			if err := logline.Parse(sc.Bytes(), &e); err != nil {
				rc.Close()
				return fmt.Errorf("blob %s holds a line that does not parse: %w", name, err)
			}
			t, ok := res.Report.TargetOf(e.ID)
			if !ok {
				res.Unmapped++
				continue
			}
			targets[t] = true
		}
		rc.Close()
		if err := sc.Err(); err != nil {
			return err
		}
		if len(targets) > 1 {
			res.MixedBlobs = append(res.MixedBlobs, name)
		}
	}
	return nil
}

// hottestSecond finds the busiest partition-second of the login tables,
// by attempt time (Time) and by write time (Timestamp).
func hottestSecond(ctx context.Context, svc *aztables.ServiceClient, res *Result) error {
	tables, err := tablesink.NewAzureStore(svc).ListTables(ctx, tablesink.TablePrefix)
	if err != nil {
		return err
	}
	byTime, byWrite := map[string]int{}, map[string]int{}
	bump := func(counts map[string]int, key string, best *int, bestKey *string) {
		counts[key]++
		if counts[key] > *best {
			*best, *bestKey = counts[key], key
		}
	}
	for _, table := range tables {
		err := eachEntity(ctx, svc, table, "PartitionKey,Time,Timestamp", func(e map[string]any) {
			pk, _ := e["PartitionKey"].(string)
			at := table + "/" + pk + " second "
			if t, ok := jsonTime(e["Time"]); ok { // markers have none
				bump(byTime, at+t.Format(time.TimeOnly), &res.HottestSecond, &res.HottestKey)
			}
			if t, ok := jsonTime(e["Timestamp"]); ok {
				bump(byWrite, at+t.Format(time.TimeOnly), &res.HottestWrite, &res.HottestWriteKey)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// jsonTime reads an Edm.DateTime from an entity's JSON.
func jsonTime(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err == nil
}

// statsPrefix starts the fleet's --stats-instance names, which its
// stats entities carry: the account may hold other writers' too.
const statsPrefix = "fleetrun-"

// statsTotal sums the events the fleet's entities of the stats table
// count.
func statsTotal(ctx context.Context, svc *aztables.ServiceClient) (int64, error) {
	var total int64
	err := eachEntity(ctx, svc, "stats", "", func(e map[string]any) {
		if inst, _ := e["Instance"].(string); !strings.HasPrefix(inst, statsPrefix) {
			return
		}
		for k, v := range e {
			if len(k) == 3 && k[0] == 'H' && k[1] >= '0' && k[1] <= '9' && k[2] >= '0' && k[2] <= '9' {
				switch v := v.(type) {
				case float64: // Edm.Int32
					total += int64(v)
				case string: // Edm.Int64 travels as a string
					n, _ := strconv.ParseInt(v, 10, 64)
					total += n
				}
			}
		}
	})
	return total, err
}

// eachEntity calls fn with every entity of table, decoded from JSON
// (selecting only the properties listed in sel, unless empty).
func eachEntity(ctx context.Context, svc *aztables.ServiceClient, table, sel string, fn func(map[string]any)) error {
	var opts aztables.ListEntitiesOptions
	if sel != "" {
		opts.Select = &sel
	}
	pager := svc.NewClient(table).NewListEntitiesPager(&opts)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("cannot list table %s: %w", table, err)
		}
		for _, raw := range page.Entities {
			var e map[string]any
			if err := json.Unmarshal(raw, &e); err != nil {
				return err
			}
			fn(e)
		}
	}
	return nil
}
