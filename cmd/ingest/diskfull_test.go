package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ingest/blobsink"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory and
// unmounts it when the test ends (after the servers it holds are stopped:
// cleanups run last-registered first). It needs root, in the machine's
// namespaces or in a user namespace of its own (inUserNamespace).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("cannot mount a tmpfs on %s as root: %v\n%s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("cannot unmount the tmpfs on %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// inUserNamespace runs the test again, in a process of its own that is
// root in new user and mount namespaces (as `unshare --user
// --map-root-user --mount` does), where it may mount a tmpfs; the servers
// it starts live there too, and its mounts are not seen outside. It
// reports whether the caller, not being root, has had the test run that
// way; the caller returns then. Without root or unprivileged user
// namespaces the test cannot run: under CI=true it fails, elsewhere it
// skips.
func inUserNamespace(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() == 0 {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), testBinaryEnv+"="+binary)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		msg := fmt.Sprintf("cannot run %s: it mounts a small tmpfs, which needs root or unprivileged user namespaces, and creating one failed (%v); run the tests as root, or allow user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns)", t.Name(), err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	err := cmd.Wait()
	if err != nil || !strings.Contains(out.String(), "--- PASS: "+t.Name()) {
		t.Fatalf("%s as root in a user namespace: %v\n%s", t.Name(), err, out.Bytes())
	}
	t.Logf("ran as root in a user namespace:\n%s", out.Bytes())
	return true
}

// fill writes a file that leaves about leave bytes free on the filesystem
// of dir (written, not sparse, so tmpfs really holds it).
func fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for left := free - leave; left > 0; left -= int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), left)]); err != nil {
			t.Fatalf("cannot fill the tmpfs: %v", err)
		}
	}
	return path
}

// TestWALDiskFull runs the real binary with its data directory on a 40 MiB
// tmpfs, fills the disk under load, then frees it: new writes get 503 +
// Retry-After naming "no space left on device", /readyz says not ready,
// writes resume by themselves once space returns (no restart), every
// acknowledged event is stored exactly once, and no event of a refused
// batch is ever stored, not even after a restart replays the WAL.
func TestWALDiskFull(t *testing.T) {
	if inUserNamespace(t) {
		return
	}
	mnt := mountTmpfs(t, "40m")
	dir := filepath.Join(mnt, "data")
	args := []string{"--flush-interval", "50ms", "--flush-bytes", "64KiB", "--wal-segment-bytes", "1MiB", "--wal-max-bytes", "32MiB"}
	s := start(t, dir, args...)
	filler := fill(t, mnt, 3<<20)

	client := &http.Client{Timeout: 30 * time.Second}
	var acked, refused []string
	post := func(prefix string) (int, string, http.Header) {
		body := events("full", "h1", prefix, 200) // about 45 KB
		resp, err := client.Post(s.url+"/v1/logs", "application/x-ndjson", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("POST: %v (no request may hang or fail without an answer)", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ids := make([]string, 200)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		}
		if resp.StatusCode == 202 {
			acked = append(acked, ids...)
		} else {
			refused = append(refused, ids...)
		}
		return resp.StatusCode, string(b), resp.Header
	}

	// Fill the disk: some batch must be refused with the cause named.
	sawFull := false
	for n := 0; n < 400 && !sawFull; n++ {
		code, body, h := post(fmt.Sprintf("fill%d", n))
		switch {
		case code == 202:
		case code == 503 && strings.Contains(body, "no space left on device"):
			sawFull = true
			if h.Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After: %s", body)
			}
			resp, err := http.Get(s.url + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			rb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 503 || !strings.Contains(string(rb), "no space left on device") {
				t.Errorf("/readyz with the WAL's disk full = %d %q; want 503 naming the cause", resp.StatusCode, rb)
			}
		case code == 503 || code == 429:
			// Backpressure or the WAL bound: fine, keep filling.
		default:
			t.Fatalf("answer %d while the disk fills: %s (want 202, 429 or 503)", code, body)
		}
	}
	if !sawFull {
		t.Fatalf("no 503 naming \"no space left on device\" after 400 batches on a full disk (%d acknowledged)", len(acked))
	}
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged before the disk filled")
	}

	// Space returns: writes resume without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	resumed := false
	for n := 0; n < 300 && !resumed; n++ {
		code, _, _ := post(fmt.Sprintf("after%d", n))
		resumed = code == 202
		if !resumed {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !resumed {
		t.Fatal("writes did not resume within 30 s after the disk was freed")
	}
	t.Logf("writes resumed %v after the disk was freed, no restart", time.Since(freed).Round(time.Millisecond))
	for n := range 5 {
		if code, body, _ := post(fmt.Sprintf("more%d", n)); code != 202 {
			t.Fatalf("POST after recovery = %d %s", code, body)
		}
	}
	s.waitDrained()
	ready := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && ready != "ready\n"; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(s.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ready = string(b)
	}
	if ready != "ready\n" {
		t.Errorf("/readyz 10 s after the disk recovered: %q", ready)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	// A restart replays the WAL: refused batches must not come back.
	s = start(t, dir, args...)
	s.waitDrained()
	if code := s.stop(); code != 0 {
		t.Fatalf("exit code %d after the restart", code)
	}

	store, err := blobsink.NewFileStore(filepath.Join(dir, "blobs", "logs"))
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := readIDs(t, store, "full/")
	checkExactlyOnce(t, acked, stored)
	back := 0
	for _, id := range refused {
		if stored[id] > 0 {
			back++
			if back <= 5 {
				t.Errorf("event %s of a refused batch is stored: its client was told it failed", id)
			}
		}
	}
	t.Logf("%d events refused while the disk was full, %d of them stored", len(refused), back)
}
