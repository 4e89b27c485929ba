package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"ingest/internal/azurite"
	"ingest/internal/clusterload"
	"ingest/internal/ingestexec"
	"ingest/storage"
)

// clusterArgs are the flags of an instance of a test cluster on Azurite:
// heartbeats fast enough for a test.
func clusterArgs(conn, container, id string, extra ...string) []string {
	return append([]string{"--storage", conn, "--container", container, "--stats-instance", id,
		"--cluster-heartbeat", "200ms", "--cluster-expiry", "1s", "--flush-interval", "100ms"}, extra...)
}

// clusterView is GET /v1/cluster's answer.
type clusterView struct {
	Instances []struct {
		ID, URL, Version string
		Started          time.Time
		Heartbeat        time.Time `json:"last_heartbeat"`
		Self             bool
	}
}

// getWith GETs path with a bearer token.
func (s *server) getWith(path, token string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitCluster polls s's GET /v1/cluster until it lists exactly the ids.
func waitCluster(t *testing.T, s *server, token string, ids ...string) clusterView {
	t.Helper()
	var v clusterView
	var got []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		code, body := s.getWith("/v1/cluster", token)
		if code != 200 {
			t.Fatalf("GET /v1/cluster = %d %s", code, body)
		}
		v = clusterView{}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("GET /v1/cluster: %v: %s", err, body)
		}
		got = got[:0]
		for _, in := range v.Instances {
			got = append(got, in.ID)
		}
		if slices.Equal(got, ids) {
			return v
		}
	}
	t.Fatalf("GET /v1/cluster lists %v, want %v", got, ids)
	return v
}

// TestClusterMembership: instances on one account and container list each
// other under GET /v1/cluster (behind the token gate) with their URL,
// version and last heartbeat. One that stops cleanly leaves at once (an
// observer with a minute's expiry drops it), one killed is dropped after
// the observer's expiry. On the embedded backend the server is alone.
func TestClusterMembership(t *testing.T) {
	conn := azurite.ConnString(t)
	container := fmt.Sprintf("members%d", time.Now().UnixNano()%1e9)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("reader\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var insts []*server
	for i, expiry := range []string{"1s", "1m", "1s", "1s"} {
		id := fmt.Sprintf("i%d", i)
		insts = append(insts, start(t, t.TempDir(), clusterArgs(conn, container, id, "--tokens", tokens, "--cluster-expiry", expiry)...))
	}
	if code, _ := insts[0].getWith("/v1/cluster", ""); code != 401 {
		t.Fatalf("GET /v1/cluster without a token = %d, want 401", code)
	}
	v := waitCluster(t, insts[1], "reader", "i0", "i1", "i2", "i3")
	for i, in := range v.Instances {
		if in.URL != insts[i].url || in.Version == "" || in.Self != (i == 1) || time.Since(in.Heartbeat) > 5*time.Second || in.Started.IsZero() {
			t.Errorf("instance %d listed as %+v, want URL %s, a version, a recent heartbeat, self only for i1", i, in, insts[i].url)
		}
	}
	waitCluster(t, insts[0], "reader", "i0", "i1", "i2", "i3")
	insts[2].stop()
	waitCluster(t, insts[1], "reader", "i0", "i1", "i3") // i2 left: no expiry needed
	insts[3].kill9()
	waitCluster(t, insts[0], "reader", "i0", "i1") // i3 expired
	if _, body := insts[1].getWith("/v1/cluster", "reader"); !strings.Contains(body, `"id":"i3"`) {
		t.Errorf("i1, whose expiry is a minute, dropped the killed i3 at once: %s", body)
	}

	alone := start(t, t.TempDir())
	v = waitCluster(t, alone, "", defaultInstance(t))
	if !v.Instances[0].Self || v.Instances[0].URL != alone.url {
		t.Errorf("embedded backend lists %+v, want this instance at %s", v.Instances, alone.url)
	}
}

// defaultInstance is the instance id a server takes without --stats-instance.
func defaultInstance(t *testing.T) string {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return host
}

// tailLines runs `ingest tail args...` and returns its stdout lines.
func tailLines(t *testing.T, args ...string) <-chan string {
	t.Helper()
	cmd := ingestexec.Command(binary, append([]string{"tail"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("ingest tail's stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// tailIDs reads the ids of the tail's lines until every id of want came,
// then for a further quiet spell (so a duplicate would show), and fails
// on an id seen twice, an id not wanted, or the tail ending.
func tailIDs(t *testing.T, lines <-chan string, want []string) {
	t.Helper()
	seen := map[string]int{}
	missing := len(want)
	deadline := time.After(20 * time.Second)
	var quiet <-chan time.Time
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the tail ended")
			}
			var e struct{ ID string }
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("tail line %q: %v", l, err)
			}
			seen[e.ID]++
			if seen[e.ID] > 1 || !slices.Contains(want, e.ID) {
				t.Fatalf("tail gave %s (%d times), want each of %d events once", e.ID, seen[e.ID], len(want))
			}
			if missing--; missing == 0 {
				quiet = time.After(500 * time.Millisecond)
			}
		case <-quiet:
			return
		case <-deadline:
			t.Fatalf("the tail gave %d of %d events in 20s: %v", len(want)-missing, len(want), seen)
		}
	}
}

// postTo posts n events of service with ids "{prefix}-{i}" to s and returns
// the ids.
func postTo(t *testing.T, s *server, token, service, prefix string, n int) []string {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+"/v1/logs", strings.NewReader(string(events(service, "h", prefix, n))))
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("POST to %s = %s", s.url, resp.Status)
	}
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("%s-%d", prefix, i))
	}
	return ids
}

// TestClusterTail: `ingest tail` beside one instance (found by its
// server.json, with its local token) shows the events posted to each of
// three instances on one Azurite, each once; an instance started mid-tail
// is picked up, one stopped and one killed are dropped, and the tail goes
// on. Another instance's own tail refuses a wrong tail key.
func TestClusterTail(t *testing.T) {
	conn := azurite.ConnString(t)
	container := fmt.Sprintf("tail%d", time.Now().UnixNano()%1e9)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("writer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dirA := t.TempDir()
	a := start(t, dirA, clusterArgs(conn, container, "a", "--tokens", tokens)...)
	b := start(t, t.TempDir(), clusterArgs(conn, container, "b", "--tokens", tokens)...)
	c := start(t, t.TempDir(), clusterArgs(conn, container, "c", "--tokens", tokens)...)
	waitCluster(t, a, "writer", "a", "b", "c")
	lines := tailLines(t, "--service", "api", "--data-dir", dirA)
	for _, s := range []*server{a, b, c} { // the client's stream and a's on b and c
		waitTailReaders(t, s, 1)
	}
	var want []string
	for _, s := range []*server{a, b, c} {
		want = append(want, postTo(t, s, "writer", "api", "first-"+s.url[len(s.url)-5:], 10)...)
		postTo(t, s, "writer", "web", "other-service", 3) // not followed
	}
	tailIDs(t, lines, want)

	d := start(t, t.TempDir(), clusterArgs(conn, container, "d", "--tokens", tokens)...)
	waitTailReaders(t, d, 1) // a's tail found it
	want = nil
	for _, s := range []*server{a, b, c, d} {
		want = append(want, postTo(t, s, "writer", "api", "second-"+s.url[len(s.url)-5:], 10)...)
	}
	tailIDs(t, lines, want)

	c.stop()
	b.kill9()
	want = nil
	for _, s := range []*server{a, d} {
		want = append(want, postTo(t, s, "writer", "api", "third-"+s.url[len(s.url)-5:], 10)...)
	}
	tailIDs(t, lines, want)
	waitCluster(t, a, "writer", "a", "d")

	if code, body := d.getWith("/v1/tail?service=api&local=1", "not-the-tail-key"); code != 401 {
		t.Fatalf("d's own tail with a wrong key = %d %s, want 401", code, body)
	}
	// Grafana's live tail (Loki's WebSocket) through a sees d's events too.
	grafanaTail(t, a, d, "Bearer writer")
}

// TestClusterHotUser: --hot-user-rate is the cluster's rate. One user
// attacked at 2,700 attempts/s spread evenly over 6 instances (450/s each,
// under the default 500), with other users beside, is salted: no partition
// takes 2,000 entities in any second (by the attempts' Time), every
// accepted attempt is stored once, and the user's history reads back
// whole through every instance.
func TestClusterHotUser(t *testing.T) {
	conn := azurite.ConnString(t)
	nonce := fmt.Sprintf("hot%d", time.Now().UnixNano()%1e9)
	var insts []*server
	var ids, urls []string
	for i := range 6 {
		id := fmt.Sprintf("h%d", i)
		// Heartbeats that stay renewed while Azurite is busy with the load.
		s := start(t, t.TempDir(), clusterArgs(conn, nonce, id, "--cluster-heartbeat", "1s", "--cluster-expiry", "5s")...)
		insts, ids, urls = append(insts, s), append(ids, id), append(urls, s.url)
	}
	for _, s := range insts {
		waitCluster(t, s, "", ids...) // each judges by a sixth of the rate
	}
	user := nonce + "-victim@example.com"
	from := time.Now()
	acked, err := clusterload.Load{URLs: urls, User: user, UserRate: 2700, OtherRate: 100, Users: 1000,
		Duration: 3 * time.Second, Prefix: nonce}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range insts {
		s.waitDrained()
	}
	svc, err := (&storage.Config{ConnString: conn}).TableClient()
	if err != nil {
		t.Fatal(err)
	}
	rb, err := clusterload.ReadBack(context.Background(), svc, clusterload.Tables(from, time.Now()), nonce, user)
	if err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, acked, rb.IDs)
	t.Logf("%d attempts accepted; the user's busiest second %d attempts over %d partitions; busiest partition-second %d (%s at %s) by Time, %d by insert time",
		len(acked), rb.UserPeak, rb.UserPartitions, rb.ByTime.Entities, rb.ByTime.PartitionKey, rb.ByTime.Second.Format(time.TimeOnly), rb.ByInserted.Entities)
	if rb.UserPeak < 2000 {
		t.Fatalf("the attacked user's busiest second holds %d attempts: the load is too light to load one partition past 2,000/s", rb.UserPeak)
	}
	if rb.ByTime.Entities >= 2000 {
		t.Errorf("partition %s took %d entities in the second from %s, want under 2,000", rb.ByTime.PartitionKey, rb.ByTime.Entities, rb.ByTime.Second)
	}
	for _, s := range insts {
		code, body := s.get("/v1/logins/" + user + "?days=2&limit=100000")
		got := countIDs(body)
		if code != 200 || len(got) != rb.UserAttempts {
			t.Fatalf("GET /v1/logins through %s = %d with %d attempts, want the %d stored", s.url, code, len(got), rb.UserAttempts)
		}
		for id, n := range got {
			if n != 1 || rb.IDs[id] != 1 {
				t.Fatalf("GET /v1/logins through %s: attempt %s read %d times, stored %d times", s.url, id, n, rb.IDs[id])
			}
		}
	}
}

// TestClusterQueryPageLive: the query page's live switch, on one instance,
// shows an event posted to another (headless Chromium).
func TestClusterQueryPageLive(t *testing.T) {
	browser := chromium(t)
	conn := azurite.ConnString(t)
	container := fmt.Sprintf("page%d", time.Now().UnixNano()%1e9)
	a := start(t, t.TempDir(), clusterArgs(conn, container, "pa")...)
	b := start(t, t.TempDir(), clusterArgs(conn, container, "pb")...)
	waitCluster(t, a, "", "pa", "pb")
	bctx := headless(t, browser)
	if err := chromedp.Run(bctx, chromedp.Navigate(a.url+"/?service=api&live=1")); err != nil {
		t.Fatal(err)
	}
	waitTailReaders(t, b, 1) // a's page tail follows b
	if code, body := b.post("/v1/logs", "application/x-ndjson", "", []byte(`{"service":"api","level":"error","msg":"accepted by the other instance"}`)); code != 202 {
		t.Fatalf("POST to b = %d %s", code, body)
	}
	err := chromedp.Run(bctx, chromedp.Poll(`[...document.querySelectorAll('#rows .row')].some(r => r.textContent.includes('accepted by the other instance'))`,
		nil, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		t.Fatalf("the event posted to the other instance did not appear live: %v", err)
	}
}
