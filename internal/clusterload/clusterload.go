// Package clusterload drives login attempts at several instances and reads
// them back from the day tables, for the suite's test of the cluster-wide
// --hot-user-rate and for the longer measurement in scripts/cluster: one
// user attacked at a rate spread evenly over the instances, other users at
// a normal rate, and then the busiest (partition, second) of what was
// stored, counted by the attempts' Time (when each was accepted) and by
// the table's Timestamp (when each was written).
//
//	acked, err := clusterload.Load{URLs: urls, User: "victim", UserRate: 2700, ...}.Run(ctx)
//	rb, err := clusterload.ReadBack(ctx, svc, tables, prefix, "victim")
package clusterload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"ingest/tablesink"
)

// Load is one run of login attempts against several instances.
type Load struct {
	URLs      []string      // the instances; each takes an equal share of the attacked user
	User      string        // the attacked user
	UserRate  float64       // the attacked user's attempts/s, across all instances
	OtherRate float64       // other users' attempts/s, per instance
	Users     int           // distinct other users
	Duration  time.Duration // how long to send
	Prefix    string        // prefix of every attempt's id: unique per run
	Token     string        // bearer token, if the instances want one
}

// tick is how often each instance is sent what is due.
const tick = 50 * time.Millisecond

// Run sends the attempts and returns the ids acknowledged with 202.
func (l Load) Run(ctx context.Context) ([]string, error) {
	var mu sync.Mutex
	var acked []string
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for i, url := range l.URLs {
		wg.Go(func() {
			ids, err := l.send(ctx, i, url, start)
			mu.Lock()
			defer mu.Unlock()
			acked = append(acked, ids...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	return acked, firstErr
}

// send posts instance i's share every tick until the duration is over.
func (l Load) send(ctx context.Context, i int, url string, start time.Time) ([]string, error) {
	client := &http.Client{Timeout: time.Minute}
	r := rand.New(rand.NewPCG(uint64(i), 7))
	userRate := l.UserRate / float64(len(l.URLs))
	var acked []string
	var sentUser, sentOther, seq int
	t := time.NewTicker(tick)
	defer t.Stop()
	for n := 0; ; n++ {
		elapsed := min(time.Since(start), l.Duration).Seconds()
		var body bytes.Buffer
		var ids []string
		add := func(user string) {
			seq++
			id := fmt.Sprintf("%s-%d-%d", l.Prefix, i, seq)
			ids = append(ids, id)
			fmt.Fprintf(&body, `{"user":%q,"success":false,"ip":"198.51.100.7","id":%q}`+"\n", user, id)
		}
		for due := int(userRate * elapsed); sentUser < due; sentUser++ {
			add(l.User)
		}
		for due := int(l.OtherRate * elapsed); sentOther < due; sentOther++ {
			add(fmt.Sprintf("user%d@example.com", r.IntN(max(l.Users, 1))))
		}
		if len(ids) > 0 {
			ok, err := post(ctx, client, url, l.Token, body.Bytes())
			if err != nil {
				return acked, err
			}
			if ok {
				acked = append(acked, ids...)
			}
		}
		if elapsed >= l.Duration.Seconds() {
			return acked, nil
		}
		select {
		case <-ctx.Done():
			return acked, ctx.Err()
		case <-t.C:
		}
	}
}

// post sends one batch; ok is whether it was acknowledged (202).
func post(ctx context.Context, client *http.Client, url, token string, body []byte) (ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/logins", bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusAccepted, nil
}

// Busiest is the busiest (partition, second) of a read-back.
type Busiest struct {
	PartitionKey string
	Second       time.Time
	Entities     int
}

// Readback is what the day tables hold of a run.
type Readback struct {
	IDs        map[string]int // attempt id: entities holding it
	ByTime     Busiest        // counted by each attempt's Time (its acceptance)
	ByInserted Busiest        // counted by the table's Timestamp (its write)
	// UserPeak is the attacked user's attempts in their busiest second, by
	// Time: the load the user's partitions had to absorb.
	UserPeak int
	// UserPartitions is how many partitions hold the attacked user, and
	// UserAttempts how many of the user's attempts.
	UserPartitions, UserAttempts int
}

// ReadBack reads every entity of the run (ids starting with prefix) from
// tables and finds the busiest (partition, second).
func ReadBack(ctx context.Context, svc *aztables.ServiceClient, tables []string, prefix, user string) (Readback, error) {
	rb := Readback{IDs: map[string]int{}}
	byTime, byInserted, userSec := map[string]int{}, map[string]int{}, map[int64]int{}
	userPKs := map[string]bool{}
	f := fmt.Sprintf("ID ge '%s' and ID lt '%s~'", prefix, prefix)
	sel := "PartitionKey,ID,User,Time,Timestamp"
	for _, table := range tables {
		pager := svc.NewClient(table).NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f, Select: &sel})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				if strings.Contains(err.Error(), string(aztables.TableNotFound)) {
					break
				}
				return rb, fmt.Errorf("cannot read table %s: %w", table, err)
			}
			for _, raw := range page.Entities {
				var e struct {
					PartitionKey, ID, User string
					Time, Timestamp        time.Time
				}
				if err := json.Unmarshal(raw, &e); err != nil {
					return rb, err
				}
				rb.IDs[e.ID]++
				count(byTime, &rb.ByTime, e.PartitionKey, e.Time)
				count(byInserted, &rb.ByInserted, e.PartitionKey, e.Timestamp)
				if e.User == user {
					rb.UserAttempts++
					userPKs[e.PartitionKey] = true
					sec := e.Time.Unix()
					userSec[sec]++
					rb.UserPeak = max(rb.UserPeak, userSec[sec])
				}
			}
		}
	}
	rb.UserPartitions = len(userPKs)
	return rb, nil
}

// count adds one entity of pk at t to counts and keeps the busiest.
func count(counts map[string]int, busiest *Busiest, pk string, t time.Time) {
	sec := t.Truncate(time.Second)
	k := pk + "@" + sec.Format(time.RFC3339)
	counts[k]++
	if n := counts[k]; n > busiest.Entities {
		*busiest = Busiest{PartitionKey: pk, Second: sec, Entities: n}
	}
}

// Tables lists the day tables that attempts accepted between from and to
// are stored in.
func Tables(from, to time.Time) []string {
	var out []string
	for d := from.UTC().Truncate(24 * time.Hour); !d.After(to); d = d.Add(24 * time.Hour) {
		out = append(out, tablesink.TableFor(d.UnixNano()))
	}
	return out
}
