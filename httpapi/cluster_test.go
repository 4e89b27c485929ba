package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ingest/buffer"
	"ingest/cluster"
)

// TestClusterRoute: GET /v1/cluster lists the membership's live instances
// (404 without one), behind the token gate.
func TestClusterRoute(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("admin\n"), 0o600)
	f := newFixture(t, Config{TokensFile: tokens}, buffer.Config{})
	auth := map[string]string{"Authorization": "Bearer admin"}
	if code, _, body := f.do(t, "GET", "/v1/cluster", auth, nil); code != 404 {
		t.Fatalf("GET /v1/cluster without a membership = %d %s, want 404", code, body)
	}
	m := cluster.New(cluster.DefaultConfig(), cluster.Member{ID: "i-0", Version: "v9"}, nil, nil, nil)
	m.Start(context.Background(), "http://10.0.0.1:8080")
	f.srv.deps.Cluster = m
	if code, _, _ := f.do(t, "GET", "/v1/cluster", nil, nil); code != 401 {
		t.Fatalf("GET /v1/cluster without a token = %d, want 401", code)
	}
	code, _, body := f.do(t, "GET", "/v1/cluster", auth, nil)
	var ans struct {
		Instances []map[string]any `json:"instances"`
	}
	if err := json.Unmarshal([]byte(body), &ans); code != 200 || err != nil || len(ans.Instances) != 1 {
		t.Fatalf("GET /v1/cluster = %d %s (%v)", code, body, err)
	}
	in := ans.Instances[0]
	if in["id"] != "i-0" || in["url"] != "http://10.0.0.1:8080" || in["version"] != "v9" || in["self"] != true || in["last_heartbeat"] == nil {
		t.Fatalf("instance %v", in)
	}
	if _, ok := in["TailKey"]; ok || len(in) != 6 {
		t.Fatalf("instance %v: want exactly id, url, version, started, last_heartbeat, self (never the tail key)", in)
	}
}

// TestTailKey: another instance's tail key opens this instance's own tail
// (local=1) and nothing else; a client's token opens either.
func TestTailKey(t *testing.T) {
	defer func(d time.Duration) { tailHeartbeat = d }(tailHeartbeat)
	tailHeartbeat = 50 * time.Millisecond // notice the readers leaving quickly
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("admin\n"), 0o600)
	f := newFixture(t, Config{TokensFile: tokens}, buffer.Config{})
	m := cluster.New(cluster.DefaultConfig(), cluster.Member{ID: "i-0"}, nil, nil, nil)
	f.srv.deps.Cluster = m
	status := func(path, token string) int {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // a tail streams until the client goes
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://ingest"+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/v1/tail?service=api&local=1", m.TailKey(), 200},
		{"/v1/tail?service=api&local=1", "admin", 200},
		{"/v1/tail?service=api", "admin", 200},
		{"/v1/tail?service=api&local=1", "wrong", 401},
		{"/v1/tail?service=api&local=1", m.TailKey()[:63], 401},
		{"/v1/tail?service=api", m.TailKey(), 401},
		{"/v1/services", m.TailKey(), 401},
		{"/v1/cluster", m.TailKey(), 401},
	} {
		if got := status(c.path, c.token); got != c.want {
			t.Errorf("GET %s with %.8s... = %d, want %d", c.path, c.token, got, c.want)
		}
	}
}
