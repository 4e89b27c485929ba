// Command pgo refreshes cmd/ingest/default.pgo, the CPU profile `go build`
// and `go run` optimize the ingest binary with (profile-guided
// optimization: hot calls inlined, hot code laid out together). It builds
// ingest without the old profile, serves it on loopback with --pprof and
// profiles it under the load generator twice: the bench's events (about
// 300 bytes, --ack wal) and small events with logins (--event-size 20, 10%
// logins); then merges both profiles. Bounded: under a minute once built,
// traffic to 127.0.0.1 only. Run it through scripts/pgo.sh.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"ingest/internal/ingestexec"
)

func main() {
	out := "cmd/ingest/default.pgo"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	dir, err := os.MkdirTemp("", "ingest-pgo-")
	check(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "ingest")
	build := exec.Command("go", "build", "-pgo=off", "-o", bin, "ingest/cmd/ingest")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	check(build.Run())
	srv, err := ingestexec.Serve(bin, 0, nil, "--data-dir", filepath.Join(dir, "data"), "--pprof", "--log-level", "warn")
	check(err)
	defer srv.Stop(time.Minute)
	bench := profile(srv, bin, dir, "bench", "--event-size", "60", "--logins-ratio", "0")
	small := profile(srv, bin, dir, "small", "--event-size", "20", "--logins-ratio", "0.1")
	merged, err := exec.Command("go", "tool", "pprof", "-proto", bench, small).Output()
	check(err)
	check(os.WriteFile(out, merged, 0o644))
	fmt.Printf("pgo: wrote %s (%d bytes)\n", out, len(merged))
}

// profile takes 12 s of CPU profile in the middle of 18 s of load with
// the given load generator flags, into dir/name.pprof.
func profile(srv *ingestexec.Process, bin, dir, name string, flags ...string) string {
	load := ingestexec.Command(bin, append([]string{"loadtest", "--target", srv.URL, "--batch", "1000",
		"--concurrency", "8", "--duration", "18s", "--quiet"}, flags...)...)
	check(load.Start())
	time.Sleep(3 * time.Second)
	resp, err := http.Get(srv.URL + "/debug/pprof/profile?seconds=12")
	check(err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		check(fmt.Errorf("profile: %s", resp.Status))
	}
	path := filepath.Join(dir, name+".pprof")
	f, err := os.Create(path)
	check(err)
	_, err = io.Copy(f, resp.Body)
	check(err)
	check(f.Close())
	check(load.Wait())
	return path
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgo:", err)
		os.Exit(1)
	}
}
